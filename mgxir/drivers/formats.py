"""The translations behind mgx-translate's format tables, in the driver's `Writer`/`Reader` form.

Each adapter imports its translation library only when called, so a command pays only for the
formats it uses (MLIR's bindings alone take most of a second to load).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mgxir.diagnostics import DiagnosticSink
from mgxir.ir.program import Program
from mgxir.text.writer import write_output

Options = Mapping[str, Any]


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
    """A Graphviz drawing (DOT text): submodules as clusters, shapes on edges."""
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
