"""Passes over programs and the pass manager that runs pipelines of them (see `registry.py`)."""
