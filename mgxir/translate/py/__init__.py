"""Python reproducers: MIGraphX's `--py` scripts read (`--from-py`) and written (`--to-py`)."""
