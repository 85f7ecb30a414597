"""Prints a program, parses the printed text and prints it again; fails unless the two agree.

Used by the lit tests as `%roundtrip FILE [--lossless]`.
"""

from __future__ import annotations

import sys

from mgxir.drivers.roundtrip import roundtrip_main

if __name__ == "__main__":
    args = sys.argv[1:]
    files = [a for a in args if not a.startswith("--")] or ["-"]
    sys.exit(roundtrip_main(files[0], lossless="--lossless" in args, from_log="--from-log" in args))
