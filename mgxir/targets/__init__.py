"""Targets: where a lowered program runs."""
