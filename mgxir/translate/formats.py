"""The file formats mgx-translate reads and writes besides program text, by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.program import Program
from mgxir.text.parser import read_program
from mgxir.translate.dot import write_dot, write_svg
from mgxir.translate.mxr import read_json_program, read_mxr, write_json_program, write_mxr
from mgxir.translate.py.reader import read_py_program
from mgxir.translate.py.writer import write_py_program

Reader = Callable[[str, DiagnosticSink, bool], Program]
Writer = Callable[[Program, "str | None"], None]

READERS: dict[str, Reader] = {
    "text": lambda path, sink, allow_undefined: read_program(path, sink, allow_undefined=allow_undefined),
    "log": lambda path, sink, allow_undefined: read_program(path, sink, from_log=True, allow_undefined=allow_undefined),
    "mxr": lambda path, sink, allow_undefined: read_mxr(path, sink),
    "json": lambda path, sink, allow_undefined: read_json_program(path, sink),
    "py": read_py_program,
}

WRITERS: dict[str, Writer] = {
    "mxr": write_mxr,
    "json": write_json_program,
    "py": write_py_program,
    "dot": write_dot,
    "svg": write_svg,
}


def chosen(flags: Mapping[str, bool], option_prefix: str, default: str | None = None) -> str | None:
    """The one format whose flag is set (`--from-mxr` ...), `default` when none; MgxError for two."""
    on = [name for name, set_ in flags.items() if set_]
    if len(on) > 1:
        raise MgxError("choose one of " + ", ".join(f"{option_prefix}{name}" for name in on))
    return on[0] if on else default


def read_input(path: str, source_format: str, sink: DiagnosticSink, allow_undefined: bool = False) -> Program:
    return READERS[source_format](path, sink, allow_undefined)


def write_result(program: Program, target_format: str, output: str | None) -> None:
    WRITERS[target_format](program, output)
