"""mgxir's Python API: what the tools do, as functions on programs (`import mgxir`; docs/api.md).

    >>> import mgxir
    >>> p = mgxir.parse('''
    ... x = @param:x -> float_type, {2}, {1}
    ... @1 = relu(x)
    ... ''')
    >>> mgxir.run(p, {"x": [-1.0, 2.0]})[0]
    array([0., 2.], dtype=float32)

Each function calls the drivers the tools call (`mgxir.drivers.translate`'s READERS and WRITERS
tables, the pass registry, `mgxir.drivers.run`'s targets through `run_on_target`), so a program
behaves here as it does on the command line. Mistakes raise `mgxir.MgxError`, whose `str` is the
tool's one-line message; warnings go to `sink` (a `mgxir.DiagnosticSink`), or to standard error when
none is given.
"""

from __future__ import annotations

import builtins
import os
import sys
from collections.abc import Mapping
from typing import IO, Any

import numpy as np

from mgxir.diagnostics import DiagnosticSink, MgxError, did_you_mean
from mgxir.drivers.common import load_entry, register_target_ops
from mgxir.drivers.run import (
    FILLS,
    RunOptions,
    filled,
    run_on_target,
    to_parameter_type,
)
from mgxir.drivers.run import (
    target_options as run_target_options,
)
from mgxir.drivers.translate import READERS, WRITERS
from mgxir.interp import check_memory
from mgxir.ir.operation import RuntimeValue
from mgxir.ir.program import Program
from mgxir.ops import register_all_ops
from mgxir.records import Record
from mgxir.targets.base import compiled, find_target
from mgxir.text.parser import parse_program
from mgxir.text.writer import render
from mgxir.verifier import verify as _verify

# file suffix -> the READERS/WRITERS name `load` and `save` use when no format is given; `.py` is
# not here: a reproducer is a program to run, read only when asked for (`format="py"`)
READ_SUFFIXES: dict[str, str] = {
    ".mgx": "mgx",
    ".txt": "mgx",
    ".log": "log",
    ".onnx": "onnx",
    ".mlir": "mlir",
    ".mxr": "mxr",
    ".json": "json",
}
WRITE_SUFFIXES: dict[str, str] = {
    ".mgx": "mgx-lossless",  # a saved program reads back with every literal value
    ".txt": "mgx-lossless",
    ".mlir": "mlir",
    ".mlirbc": "mlirbc",
    ".spvasm": "spvasm",
    ".mxr": "mxr",
    ".json": "json",
    ".py": "py",
    ".dot": "dot",
    ".svg": "svg",
}


def _registered() -> None:
    register_all_ops()
    register_target_ops()


def _done(sink: DiagnosticSink | None, own: DiagnosticSink) -> None:
    """Prints the warnings collected in `own` where the caller gave no sink of theirs."""
    if sink is None:
        own.flush()


def parse(text: str, filename: str = "<string>", *, verify: bool = True, sink: DiagnosticSink | None = None) -> Program:
    """A program from its text; with `verify` (the default), checked and with every result shape
    filled in, as `mgx-opt` prints it.

    >>> p = mgxir.parse("x = @param:x -> float_type, {2, 3}, {3, 1}\\n@1 = relu(x)\\n")
    >>> [ins.op.name for ins in p.main]
    ['@param', 'relu']
    """
    _registered()
    own = sink or DiagnosticSink()
    program = parse_program(text, filename, sink=own)
    if verify:
        _verify(program, own)
    _done(sink, own)
    return program


def load(
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    verify: bool = True,
    sink: DiagnosticSink | None = None,
    **format_options: Any,
) -> Program:
    """A program from a file: text, a MIGraphX log, ONNX (`batch=`, `input_dim=[...]` as
    `migraphx-driver read`), MLIR, .mxr or JSON, by its suffix or `format` (a `--from` name of
    mgx-translate; `"py"` runs a MIGraphX reproducer script)."""
    _registered()
    path = os.fspath(path)
    if format is None:
        format = READ_SUFFIXES.get(os.path.splitext(path)[1], "mgx")
    read = load_entry(_format(READERS, format, "load"))
    own = sink or DiagnosticSink()
    program = read(path, format_options, own)
    if verify:
        _verify(program, own)
    _done(sink, own)
    return program


def to_text(program: Program, *, lossless: bool = False) -> str:
    """The program as MIGraphX prints it; `lossless` keeps every literal value exactly.

    >>> print(mgxir.to_text(mgxir.parse("x = @param:x -> float_type, {2}, {1}\\n@1 = neg(x)\\n")), end="")
    module: "main"
    x = @param:x -> float_type, {2}, {1}
    @1 = neg(x) -> float_type, {2}, {1}
    <BLANKLINE>
    """
    return render(program, lossless)[0]


def print_text(program: Program, *, lossless: bool = False, file: IO[str] | None = None) -> None:
    """Prints `to_text(program)` (to standard output, or `file`); `mgxir.print`."""
    builtins.print(to_text(program, lossless=lossless), end="", file=file or sys.stdout)


def verify(program: Program, sink: DiagnosticSink | None = None, *, runnable: bool = False) -> Program:
    """Checks definitions, arities and shapes (filling in missing result shapes); raises MgxError
    at the first problem and returns the program otherwise."""
    _registered()
    own = sink or DiagnosticSink()
    _verify(program, own, runnable=runnable)
    _done(sink, own)
    return program


def run_passes(program: Program, pipeline: str, *, sink: DiagnosticSink | None = None) -> Program:
    """Runs a pass pipeline (`mgx-opt -p` text: `"dce,simplify_algebra"`, `"fuse"`, `"O"`) on the
    program in place, verifying after each pass; returns the program.

    >>> p = mgxir.parse("x = @param:x -> float_type, {2}, {1}\\n@1 = relu(x)\\n@2 = neg(x)\\n@3 = @return(@2)\\n")
    >>> [ins.op.name for ins in mgxir.run_passes(p, "dce").main]
    ['@param', 'neg', '@return']
    """
    from mgxir.drivers.opt import load_target_passes, mlir_pipeline
    from mgxir.passes.manager import Instrumentation, PassManager
    from mgxir.passes.registry import parse_pipeline

    _registered()
    text = mlir_pipeline(pipeline)
    load_target_passes(text)
    own = sink or DiagnosticSink()
    PassManager(parse_pipeline(text), Instrumentation(verify_each=True)).run(program, own)
    _done(sink, own)
    return program


class Compiled(Record):
    """A program bound to a target (`mgxir.compile`); `compiled.run(inputs)` runs it there."""

    def __init__(self, program: Program, options: RunOptions):
        self.program = program
        self.options = options

    @property
    def target(self) -> str:
        return self.options.target

    def run(
        self,
        inputs: Mapping[str, Any] | None = None,
        *,
        fill: str | None = None,
        seed: int = 0,
        sink: DiagnosticSink | None = None,
    ) -> list[RuntimeValue]:
        """The outputs of `main` for parameter values by name (arrays, or what `np.asarray` takes);
        a parameter not given is an error unless `fill` is "random", "zeros" or "ones"."""
        own = sink or DiagnosticSink()
        params = parameter_values(self.program, inputs or {}, fill, seed)
        outputs = run_on_target(self.program, params, self.options, own)
        _done(sink, own)
        return outputs


def compile(program: Program, target: str = "ref", **target_options: Any) -> Compiled:
    """The program checked to run (shapes known, values fit in memory) and bound to a target of
    `mgx-run --target`: ref, iree, cpu, vulkan or gpu, with that target's options (`device="cuda"`,
    `exhaustive_tune=True`, ...), compiled for it now (IREE's module, NVRTC's kernels) and kept for
    the process (`mgxir.targets.base.compiled`): the runs load what this compiled.

    >>> compiled = mgxir.compile(mgxir.parse("x = @param:x -> float_type, {2}, {1}\\n@1 = abs(x)\\n"))
    >>> compiled.run({"x": [-3, 4]})
    [array([3., 4.], dtype=float32)]
    """
    _registered()
    options = RunOptions(target=target, **target_options)
    chosen = find_target(target)  # an unknown target fails here
    sink = DiagnosticSink()
    _verify(program, sink, runnable=True)
    check_memory(program)
    compiled(chosen, program, run_target_options(chosen, options), sink)
    return Compiled(program, options)


def run(
    program: Program | Compiled,
    inputs: Mapping[str, Any] | None = None,
    *,
    target: str = "ref",
    fill: str | None = None,
    seed: int = 0,
    sink: DiagnosticSink | None = None,
) -> list[RuntimeValue]:
    """Runs `main` (on the reference interpreter unless `target` says otherwise) and returns its
    outputs: `compile(program, target).run(inputs, fill=..., seed=...)`."""
    compiled = program if isinstance(program, Compiled) else compile(program, target)
    return compiled.run(inputs, fill=fill, seed=seed, sink=sink)


def parameter_values(program: Program, inputs: Mapping[str, Any], fill: str | None, seed: int) -> dict[str, np.ndarray]:
    """Values for the parameters of `main`, each in its parameter's type; the others filled per
    `fill` (an error for None, as mgx-run without --fill)."""
    if fill is not None and fill not in FILLS:
        raise MgxError(f"fill must be random, zeros or ones, not '{fill}'")
    shapes = {p.param_name: p.shape for p in program.main.parameters()}
    for name in inputs:
        if name not in shapes:
            hint = did_you_mean(name, shapes)
            raise MgxError(f"input '{name}' is not a parameter of main{hint} (parameters: {', '.join(shapes)})")
    rng = np.random.default_rng(seed)
    values = {}
    for name, shape in shapes.items():
        if name in inputs:
            given = np.asarray(inputs[name])
            values[name] = given if shape.is_dynamic else to_parameter_type(name, given, shape)
        elif fill is None or fill == "none" or shape.is_dynamic:
            raise MgxError(f"no input for parameter '{name}': give it, or fill='random' (or zeros, ones)")
        else:
            values[name] = filled(shape, fill, rng)
    return values


def save(
    program: Program,
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    sink: DiagnosticSink | None = None,
    **format_options: Any,
) -> None:
    """Writes the program, atomically, in the format its suffix names (`.mgx` lossless text,
    `.mxr`, `.json`, `.mlir`, `.mlirbc`, `.py`, `.dot`, `.svg`, `.spvasm`) or `format` (a `--to`
    name of mgx-translate: "mgx" for MIGraphX's own elided text, "spirv" for a folder of kernels)."""
    _registered()
    path = os.fspath(path)
    if format is None:
        suffix = os.path.splitext(path)[1]
        if suffix not in WRITE_SUFFIXES:
            raise MgxError(f"save: no format for '{suffix or path}': give format= (one of {', '.join(WRITERS)})")
        format = WRITE_SUFFIXES[suffix]
    write = load_entry(_format(WRITERS, format, "save"))
    own = sink or DiagnosticSink()
    write(program, path, format_options, own)
    _done(sink, own)


def _format(table: dict[str, str], name: str, function: str) -> str:
    if name not in table:
        raise MgxError(f"{function}: unknown format '{name}'{did_you_mean(name, table)} (formats: {', '.join(table)})")
    return table[name]
