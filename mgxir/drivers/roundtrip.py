"""The round trip the lit tests check (`%roundtrip`): print, parse the printed text, print again."""

from __future__ import annotations

import difflib
import sys

from mgxir.diagnostics import DiagnosticSink
from mgxir.drivers.common import run_guarded
from mgxir.text.parser import parse_program, read_program
from mgxir.text.printer import PrintOptions, print_program
from mgxir.verifier import verify


def roundtrip_main(path: str, lossless: bool = False, from_log: bool = False) -> int:
    """Prints the second print; exit code 1 (with the diff) unless both prints agree."""

    def body(sink: DiagnosticSink) -> int:
        program = read_program(path, sink, from_log=from_log)
        verify(program, sink)
        first = print_program(program, PrintOptions(lossless=lossless))
        again = parse_program(first, "<printed>", sink=sink)
        verify(again, sink)
        second = print_program(again, PrintOptions(lossless=lossless))
        if first != second:
            diff = "".join(difflib.unified_diff(first.splitlines(True), second.splitlines(True), "first", "second"))
            print(f"round trip changed the text:\n{diff}", file=sys.stderr)
            return 1
        sys.stdout.write(second)
        return 0

    return run_guarded(body)
