"""Where translations go: standard output, or a file written atomically."""

from __future__ import annotations

import sys

from mgxir.text.writer import write_atomically


def write_output(data: str | bytes, output: str | None) -> None:
    """Writes to standard output for None or `-`, else to the file through a rename."""
    if output is None or output == "-":
        if isinstance(data, str):
            sys.stdout.write(data)
        else:
            sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        write_atomically(output, data)
