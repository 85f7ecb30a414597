"""MIGraphX's program files: `.mxr` (msgpack, `migraphx.save`) and `.json` (`migraphx-driver --json`).

One value model (`program_to_value` / `program_from_value`), two encodings (`encoding.py`).
"""

from __future__ import annotations

import contextlib
import gc
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from mgxir.diagnostics import DiagnosticSink, Location, MgxError
from mgxir.ir.program import Program
from mgxir.text.writer import write_output
from mgxir.translate.mxr.encoding import from_json, from_msgpack, to_json, to_msgpack
from mgxir.translate.mxr.program import (
    FILE_VERSION,
    MIGRAPHX_VERSION,
    READABLE_VERSIONS,
    program_from_value,
    program_to_value,
)

__all__ = [
    "FILE_VERSION",
    "MIGRAPHX_VERSION",
    "READABLE_VERSIONS",
    "json_text",
    "load_json",
    "load_mxr",
    "mxr_bytes",
    "program_from_value",
    "program_to_value",
    "read_json_program",
    "read_mxr",
    "write_json_program",
    "write_mxr",
]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The value trees are millions of small containers that die together: Python's cycle
    collector would only rescan them again and again."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def mxr_bytes(program: Program) -> bytes:
    """The `.mxr` file MIGraphX's `migraphx.save(p, file)` would write for `program`."""
    with _collector_paused():
        return to_msgpack(program_to_value(program))


def json_text(program: Program) -> str:
    """The text `migraphx-driver ... --json` prints for `program`."""
    with _collector_paused():
        return to_json(program_to_value(program))


def load_mxr(data: bytes, filename: str = "<mxr>", sink: DiagnosticSink | None = None) -> Program:
    with _collector_paused():
        try:
            value = from_msgpack(data)
        except ValueError as e:
            raise MgxError(f"{filename}: not a MIGraphX .mxr file: {e}") from None
        return program_from_value(value, filename, sink)


def load_json(text: str, filename: str = "<json>", sink: DiagnosticSink | None = None) -> Program:
    with _collector_paused():
        try:
            value = from_json(text)
        except json.JSONDecodeError as e:
            lines = text.split("\n")
            line = lines[e.lineno - 1] if 0 < e.lineno <= len(lines) else ""
            source = line if len(line) < 400 else None
            raise MgxError(f"invalid JSON: {e.msg}", Location(filename, e.lineno, e.colno), source) from None
        return program_from_value(value, filename, sink)


def _read_bytes(path: str | Path) -> tuple[bytes, str]:
    if str(path) == "-":
        return sys.stdin.buffer.read(), "<stdin>"
    try:
        return Path(path).read_bytes(), str(path)
    except OSError as e:
        raise MgxError(f"cannot read {path}: {e.strerror or e}") from None


def read_mxr(path: str | Path, sink: DiagnosticSink | None = None) -> Program:
    """Loads a `.mxr` file (`-` reads standard input)."""
    data, filename = _read_bytes(path)
    return load_mxr(data, filename, sink)


def read_json_program(path: str | Path, sink: DiagnosticSink | None = None) -> Program:
    """Loads a program MIGraphX wrote as JSON (`-` reads standard input)."""
    data, filename = _read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MgxError(f"{filename} is not UTF-8 text (a binary .mxr file? use --from-mxr)") from None
    return load_json(text, filename, sink)


def write_mxr(program: Program, output: str | None) -> None:
    """Writes the `.mxr` bytes to `output` atomically (standard output for None or `-`)."""
    write_output(mxr_bytes(program), output)


def write_json_program(program: Program, output: str | None) -> None:
    write_output(json_text(program) + "\n", output)
