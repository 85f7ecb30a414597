"""Analyses that passes share: facts about IR computed on demand, no rewriting."""
