"""Prints a program, parses the printed text and prints it again; fails unless the two agree.

Used by the lit tests as `%roundtrip FILE [--lossless]`.
"""

from __future__ import annotations

import sys

from mgxir.diagnostics import DiagnosticSink
from mgxir.text.parser import parse_program, read_program
from mgxir.text.printer import PrintOptions, print_program
from mgxir.tools.common import run_guarded
from mgxir.verifier import verify


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    lossless = "--lossless" in args
    from_log = "--from-log" in args
    files = [a for a in args if not a.startswith("--")] or ["-"]

    def body(sink: DiagnosticSink) -> int:
        program = read_program(files[0], sink, from_log=from_log)
        verify(program, sink)
        first = print_program(program, PrintOptions(lossless=lossless))
        again = parse_program(first, "<printed>", sink=sink)
        verify(again, sink)
        second = print_program(again, PrintOptions(lossless=lossless))
        if first != second:
            import difflib

            diff = "".join(difflib.unified_diff(first.splitlines(True), second.splitlines(True), "first", "second"))
            print(f"round trip changed the text:\n{diff}", file=sys.stderr)
            return 1
        sys.stdout.write(second)
        return 0

    return run_guarded(body)


if __name__ == "__main__":
    sys.exit(main())
