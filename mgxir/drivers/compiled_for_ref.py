"""The second evaluation behind `mgx-run --verify` when the target is ref itself.

MIGraphX's `verify` runs a program compiled for the target and compiled for ref and compares them.
Comparing the interpreter with itself would always agree, so for the ref target the program is run
as given on one side and, on the other, as the `ref` pipeline compiles it (normalize_ops, pads made
explicit, auto_contiguous, ref_lowering to `ref::` operators) on a copy: a mistake in those passes or
in an operator's normalized or lowered form shows as a difference.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from mgxir.diagnostics import DiagnosticSink
from mgxir.interp.interpreter import Interpreter
from mgxir.ir.operation import RuntimeValue
from mgxir.ir.program import Program
from mgxir.passes.manager import PassManager
from mgxir.passes.registry import parse_pipeline
from mgxir.verifier import verify

REF_PIPELINE = "ref"


def compile_for_ref(program: Program, sink: DiagnosticSink | None = None) -> Program:
    """A copy of `program` after the `ref` pipeline, verified."""
    sink = sink or DiagnosticSink()
    copy = program.clone()
    PassManager(parse_pipeline(REF_PIPELINE)).run(copy, sink)
    verify(copy, sink)
    return copy


def run_compiled_for_ref(
    program: Program, params: Mapping[str, np.ndarray], sink: DiagnosticSink | None = None
) -> list[RuntimeValue]:
    """`program`'s outputs for `params`, computed by the interpreter on the program compiled for ref."""
    compiled = compile_for_ref(program, sink)
    with np.errstate(all="ignore"):
        return Interpreter(compiled, sink).run(params)
