"""The input formats every tool reads, told apart by their content, and the translations behind
mgx-translate's format tables, in the driver's `Writer`/`Reader` form.

Each adapter imports its translation library only when called, so a command pays only for the
formats it uses (MLIR's bindings alone take most of a second to load).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.program import Program
from mgxir.text.writer import write_output

Options = Mapping[str, Any]


# -- input formats, by content ------------------------------------------------------------------

_SNIFF_BYTES = 4096  # how much of an input `input_format` looks at

# MLIR text: its first line that is not blank or a `//` comment opens a module or a function, or
# defines an attribute or type alias (`#map = ...`; program text's `#` lines are comments)
_MLIR_TEXT = re.compile(
    rb"\A(?:[ \t]*(?://[^\n]*)?\r?\n)*[ \t]*"
    rb'(?:module[ \t]*(?:\{|@|attributes\b)|func\.func\b|"builtin\.module"|[#!][\w$.-]+[ \t]*=)'
)
# msgpack's maps (fixmap, map 16, map 32): MIGraphX's .mxr is one map with no magic number
_MSGPACK_MAP = frozenset([*range(0x80, 0x90), 0xDE, 0xDF])
# the protobuf tags ModelProto's fields begin with, fields written in number order: ir_version (1,
# varint) first where set, else producer_name (2), ..., graph (7), opset_import (8)
_ONNX_FIRST_TAGS = frozenset([0x08, 0x12, 0x1A, 0x22, 0x2A, 0x32, 0x3A, 0x42])


# control characters text does not hold (tabs, line breaks, form feeds and ANSI colours' ESC it may)
_BINARY = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")


def _is_text(head: bytes) -> bool:
    if _BINARY.search(head):
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:  # text unless a character is only cut off where `head` stops
        return e.reason == "unexpected end of data" and len(head) == _SNIFF_BYTES
    return True


class InputFormat(NamedTuple):
    """An input format: what it is called in messages, its reader ("module:function",
    `read(path, options, sink) -> Program`) and whether these first bytes of a file are in it (None:
    read only when named, `--from NAME`)."""

    what: str
    reader: str
    recognise: Callable[[bytes], bool] | None


# The input formats, in the order `input_format` tries them; `--from NAME` names one.
INPUT_FORMATS: dict[str, InputFormat] = {
    "mlirbc": InputFormat("MLIR bytecode", "mgxir.drivers.formats:read_mlir", lambda head: head.startswith(b"ML\xefR")),
    "mxr": InputFormat(
        ".mxr", "mgxir.drivers.formats:read_mxr", lambda head: head[:1] != b"" and head[0] in _MSGPACK_MAP
    ),
    "onnx": InputFormat(
        "ONNX",
        "mgxir.drivers.formats:read_onnx",
        lambda head: head[:1] == b"\x08" or (head[:1] != b"" and head[0] in _ONNX_FIRST_TAGS and not _is_text(head)),
    ),
    "json": InputFormat("JSON", "mgxir.drivers.formats:read_json", lambda head: head.lstrip()[:1] == b"{"),
    "mlir": InputFormat("MLIR", "mgxir.drivers.formats:read_mlir", lambda head: _MLIR_TEXT.match(head) is not None),
    "mgx": InputFormat("program text", "mgxir.drivers.translate:read_mgx", _is_text),
    "log": InputFormat("a MIGraphX log", "mgxir.drivers.translate:read_log", None),  # program text among noise
    "py": InputFormat("a Python reproducer", "mgxir.drivers.formats:read_py", None),  # code: run only when asked
}


def input_format(path: str) -> str:
    """The format of the input at `path` (`-`: standard input, looked at without consuming it), from
    its first bytes; one clear error for a binary file that is none of the formats."""
    head = _head(path)
    for name, form in INPUT_FORMATS.items():
        if form.recognise is not None and form.recognise(head):
            return name
    readable = ", ".join(form.what for form in INPUT_FORMATS.values() if form.recognise is not None)
    where = "standard input" if path == "-" else path
    raise MgxError(f"{where} is in none of the formats mgxir reads ({readable}; --from-py for a Python reproducer)")


def _head(path: str) -> bytes:
    if path == "-":
        # looked at without being consumed; a standard input of text alone (no bytes under it) is text
        peek = getattr(getattr(sys.stdin, "buffer", None), "peek", None)
        return peek(_SNIFF_BYTES)[:_SNIFF_BYTES] if peek is not None else b""
    try:
        with open(path, "rb") as f:
            return f.read(_SNIFF_BYTES)
    except OSError as e:
        raise MgxError(f"cannot read {path}: {e.strerror or e}") from None


def read_input(path: str, options: Options, sink: DiagnosticSink, name: str | None = None) -> Program:
    """The program in the input at `path`, read as format `name` (None: as its content says)."""
    from mgxir.drivers.common import load_entry

    form = INPUT_FORMATS[name if name is not None else input_format(path)]
    return load_entry(form.reader)(path, options, sink)


# -- ONNX ------------------------------------------------------------------------------------


def read_onnx(path: str, options: Options, sink: DiagnosticSink) -> Program:
    """What MIGraphX's ONNX parser builds from the model (`migraphx-driver read`'s options)."""
    from mgxir.translate.onnx import import_model, options_from_text

    onnx_options = options_from_text(
        options.get("input_dim") or (),
        options.get("dim_param") or (),
        options.get("dyn_input_dim") or (),
        options.get("default_dim_value"),
        options.get("batch"),
        bool(options.get("skip_unknown_operators")),
    )
    return import_model(path, onnx_options, sink)


# -- MLIR --------------------------------------------------------------------------------------


def write_mlir(program: Program, output: str | None, options: Options, sink: DiagnosticSink) -> None:
    """MLIR text in upstream dialects (tosa, linalg, tensor, arith, math), verified by MLIR."""
    from mgxir.translate.mlir import api

    write_output(api.mlir_text(program, sink), output)


def write_mlirbc(program: Program, output: str | None, options: Options, sink: DiagnosticSink) -> None:
    """MLIR bytecode (`bytecode_version` pins the format)."""
    from mgxir.translate.mlir import api

    write_output(api.mlir_bytecode(program, options.get("bytecode_version"), sink), output)


def read_mlir(path: str, options: Options, sink: DiagnosticSink) -> Program:
    """MLIR text or bytecode that `--to-mlir`/`--to-mlirbc` wrote."""
    from mgxir.translate.mlir import api

    return api.program_from_mlir(*api.read_bytes(path))


def mlir_of_split_input(path: str, output: str | None, sink: DiagnosticSink) -> None:
    """`--split-input-file --to-mlir`: each `// -----` part translated on its own."""
    from mgxir.translate.mlir import api

    data, filename = api.read_bytes(path)
    write_output(api.mlir_text_of_chunks(data.decode(), filename, sink), output)


def programs_of_split_mlir(path: str, output: str | None, sink: DiagnosticSink) -> None:
    """`--split-input-file --from-mlir`: each `// -----` part of MLIR text read back on its own."""
    from mgxir.translate.mlir import api

    data, filename = api.read_bytes(path)
    write_output(api.programs_of_mlir_chunks(data.decode(), filename, sink), output)


def mlir_lowering_table(output: str | None) -> None:
    """`--list-lowerings`: what each operator lowers to (docs/mlir-lowerings.md is this output)."""
    from mgxir.translate.mlir import table

    write_output(table.lowering_table(), output)


# -- SPIR-V ------------------------------------------------------------------------------------


def write_spirv(program: Program, output: str | None, options: Options, sink: DiagnosticSink) -> None:
    """One SPIR-V kernel per fused module and a manifest, into the folder `output`."""
    from mgxir.translate.spirv import emit_spirv

    emit_spirv(program, sink, output)


def write_spvasm(program: Program, output: str | None, options: Options, sink: DiagnosticSink) -> None:
    """The same kernels as SPIR-V assembly text."""
    from mgxir.translate.spirv import emit_spvasm

    emit_spvasm(program, sink, output)


# -- MIGraphX's files, Python reproducers, Graphviz --------------------------------------------


def write_mxr(program: Program, output: str | None, options: Options, sink: DiagnosticSink) -> None:
    """A .mxr file (msgpack) as `migraphx.save` writes it."""
    from mgxir.translate.mxr import write_mxr as write

    write(program, output)


def write_json(program: Program, output: str | None, options: Options, sink: DiagnosticSink) -> None:
    """The program as MIGraphX's JSON."""
    from mgxir.translate.mxr import write_json_program

    write_json_program(program, output)


def write_py(program: Program, output: str | None, options: Options, sink: DiagnosticSink) -> None:
    """A Python script in the style of MIGraphX's `--py` output that rebuilds the program."""
    from mgxir.translate.py.writer import write_py_program

    write_py_program(program, output)


def write_dot(program: Program, output: str | None, options: Options, sink: DiagnosticSink) -> None:
    """A Graphviz drawing (DOT text): names and shapes on nodes, colours by operator family."""
    from mgxir.translate.dot import write_dot as write

    write(program, output)


def write_svg(program: Program, output: str | None, options: Options, sink: DiagnosticSink) -> None:
    """The drawing as SVG, through Graphviz's `dot` program."""
    from mgxir.translate.dot import write_svg as write

    write(program, output)


def read_mxr(path: str, options: Options, sink: DiagnosticSink) -> Program:
    from mgxir.translate.mxr import read_mxr as read

    return read(path, sink)


def read_json(path: str, options: Options, sink: DiagnosticSink) -> Program:
    from mgxir.translate.mxr import read_json_program

    return read_json_program(path, sink)


def read_py(path: str, options: Options, sink: DiagnosticSink) -> Program:
    """A MIGraphX `--py` reproducer, run against mgxir's `migraphx`-compatible building API."""
    from mgxir.translate.py.reader import read_py_program

    return read_py_program(path, sink, bool(options.get("allow_undefined")))
