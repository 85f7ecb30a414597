"""mgx-translate's driver: read a program in one format, verify it, write it in another.

`mgxir.tools.mgx_translate` only declares the options and calls `translate_main(TranslateOptions(...))`.

Formats plug in through two tables, one entry each, naming "module:function"; a format's module is
imported only when a command uses that format, so its dependencies (MLIR, ONNX, msgpack) cost nothing
to the others:
- `WRITERS`: `--to NAME` (also spelled `--to-NAME`) -> `write(program, output, options, sink)`, which
  writes the program to `output` (None or `-`: standard output), atomically, with
  `mgxir.drivers.common.write_output` (it takes text or bytes);
- `READERS`: `--from NAME` (also `--from-NAME`) -> `read(path, options, sink) -> Program` (path `-`:
  standard input); the driver verifies what a reader returns.
`options` is a mapping of the format-specific options the front end declares (ONNX's dimensions,
for example), by parameter name; a format reads the ones it knows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.drivers.common import check_output_path, load_entry, run_guarded
from mgxir.ir.program import Program
from mgxir.text.parser import read_program
from mgxir.text.writer import write_program
from mgxir.verifier import verify

Options = Mapping[str, Any]
Writer = Callable[[Program, str | None, Options, DiagnosticSink], None]
Reader = Callable[[str, Options, DiagnosticSink], Program]

WRITERS: dict[str, str] = {
    "mgx": "mgxir.drivers.translate:write_mgx",
    "mgx-lossless": "mgxir.drivers.translate:write_mgx_lossless",
}
READERS: dict[str, str] = {
    "mgx": "mgxir.drivers.translate:read_mgx",
    "log": "mgxir.drivers.translate:read_log",
}


def write_mgx(program: Program, output: str | None, options: Options, sink: DiagnosticSink) -> None:
    """MIGraphX's text, as MIGraphX prints it."""
    write_program(program, output)


def write_mgx_lossless(program: Program, output: str | None, options: Options, sink: DiagnosticSink) -> None:
    """The text with every literal value kept (a sidecar .npz beside a large output file)."""
    write_program(program, output, lossless=True)


def read_mgx(path: str, options: Options, sink: DiagnosticSink) -> Program:
    return read_program(path, sink)


def read_log(path: str, options: Options, sink: DiagnosticSink) -> Program:
    """The program printed inside MIGraphX log output (the last one, or after `log_pass`)."""
    return read_program(path, sink, from_log=True, log_pass=options.get("log_pass"))


@dataclasses.dataclass
class TranslateOptions:
    input: str = "-"
    to: str = "mgx"
    source: str = "mgx"
    output: str | None = None
    # format-specific options by name (None: not given)
    format_options: dict[str, Any] = dataclasses.field(default_factory=dict)


def translate_main(options: TranslateOptions) -> int:
    """Runs mgx-translate; returns the exit code."""
    return run_guarded(lambda sink: _translate(options, sink))


def _translate(options: TranslateOptions, sink: DiagnosticSink) -> int:
    write: Writer = _entry(WRITERS, options.to, "--to")
    read: Reader = _entry(READERS, options.source, "--from")
    check_output_path(options.output)
    program = read(options.input, options.format_options, sink)
    verify(program, sink)
    write(program, options.output, options.format_options, sink)
    return 0


def _entry(table: dict[str, str], name: str, flag: str) -> Any:
    if name not in table:
        raise MgxError(f"unknown format '{name}' for {flag} (available: {', '.join(table)})")
    return load_entry(table[name])


def spelled_formats(argv: list[str]) -> list[str]:
    """`--to-NAME` and `--from-NAME` as `--to=NAME` and `--from=NAME`, for the formats in the tables
    (mlir-translate's style)."""
    out = []
    for word in argv:
        for prefix, table in (("--to-", WRITERS), ("--from-", READERS)):
            if word.startswith(prefix) and word[len(prefix) :] in table:
                word = f"{prefix[:-1]}={word[len(prefix) :]}"
                break
        out.append(word)
    return out
