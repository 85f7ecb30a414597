"""Whole-pass cases for simplify_algebra's tests: the output text and statistics of a program, checked
to verify and to compute the same results as before."""

from __future__ import annotations

import math

import numpy as np
from test_pass_differential import parameter_values, rms_ok

from mgxir.interp.interpreter import run_program
from mgxir.passes.base import PassContext
from mgxir.passes.simplify_algebra import SimplifyAlgebra
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.verifier import verify


def simplified(text: str) -> tuple[str, dict[str, int]]:
    """simplify_algebra's output for the program `text`, checked to verify and to compute the same,
    and how many times each rewrite applied."""
    program = parse_program(text)
    params = parameter_values(program, 0)
    before = [np.asarray(o) for o in run_program(program, params)]
    context = PassContext()
    SimplifyAlgebra().apply(program, context)
    verify(program)
    after = [np.asarray(o) for o in run_program(program, params)]
    assert [a.shape for a in after] == [b.shape for b in before]
    assert all(rms_ok(a, b) for a, b in zip(after, before))
    applied = {k.removesuffix(" applied"): n for k, n in context.statistics.items() if k.endswith(" applied")}
    return print_program(program), applied


def reprinted(text: str) -> str:
    return print_program(parse_program(text))


def module(*lines: str) -> str:
    return 'module: "main"\n' + "\n".join(lines) + "\n"


def params(*specs: str) -> list[str]:
    """`name lens` pairs ("x 2,3") as standard float parameters."""
    out = []
    for spec in specs:
        name, lens = spec.split()
        dims = [int(d) for d in lens.split(",")]
        strides = [math.prod(dims[i + 1 :]) for i in range(len(dims))]
        out.append(
            f"{name} = @param:{name} -> float_type, {{{', '.join(map(str, dims))}}}, {{{', '.join(map(str, strides))}}}"
        )
    return out
