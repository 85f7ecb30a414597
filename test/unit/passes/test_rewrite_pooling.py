"""rewrite_pooling: which poolings become reduces or gathers, and that the result computes the same."""

from __future__ import annotations

import numpy as np
import pytest

from mgxir.interp.interpreter import run_program
from mgxir.ir.dtype import DType
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.text.printer import print_program
from mgxir.verifier import verify


def pooling_program(lens: tuple[int, ...], *windows: dict) -> Program:
    program = Program()
    x = program.main.add_parameter("x", Shape.make(DType.float, lens))
    spatial = len(lens) - 2
    defaults = {"padding": (0,) * spatial, "stride": (1,) * spatial, "dilations": (1,) * spatial, "lp_order": 2}
    program.main.add_return([program.main.add_instruction("pooling", [x], **{**defaults, **w}) for w in windows])
    return program


def rewritten(program: Program) -> PassContext:
    x = np.random.default_rng(4).standard_normal(program.main.get_parameter("x").shape.lens).astype(np.float32)
    before = run_program(program, {"x": x})
    context = PassContext()
    for p in parse_pipeline("rewrite_pooling,dce"):
        p.apply(program, context)
    verify(program)
    for a, b in zip(run_program(program, {"x": x}), before, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=print_program(program))
    return context


def counts(context: PassContext) -> tuple[int, int]:
    return context.statistics["pooling became a reduce"], context.statistics["dilated pooling gathered"]


def test_whole_window_poolings() -> None:
    """lpnorm and padded whole windows stay; those after them still become reduces."""
    program = pooling_program(
        (1, 2, 4, 4),
        {"mode": "lpnorm", "lengths": (4, 4)},
        {"mode": "max", "lengths": (4, 4), "padding": (1, 1)},
        {"mode": "average", "lengths": (4, 4)},
        {"mode": "max", "lengths": (4, 4)},
    )
    assert counts(rewritten(program)) == (2, 0)
    names = [ins.op.defn.name for ins in program.main.return_instruction.args]
    assert names == ["pooling", "pooling", "reduce_mean", "reduce_max"]


@pytest.mark.parametrize(
    ("window", "gathered"),
    [
        ({"mode": "max", "lengths": (2, 2), "dilations": (2, 1), "stride": (2, 1)}, True),
        ({"mode": "max", "lengths": (2, 3), "dilations": (2, 2), "padding": (1, 0, 2, 1)}, True),
        ({"mode": "max", "lengths": (2, 2), "dilations": (2, 2), "padding": (1, 2)}, True),
        ({"mode": "average", "lengths": (2, 2), "dilations": (2, 2), "padding": (1, 1)}, False),
        ({"mode": "max", "lengths": (2, 2), "dilations": (2, 2), "ceil_mode": 1, "stride": (2, 2)}, False),
    ],
)
def test_dilated_pooling(window: dict, gathered: bool) -> None:
    program = pooling_program((1, 2, 7, 6), window)
    assert counts(rewritten(program)) == (0, int(gathered))
    assert (program.main.return_instruction.args[0].args[0].op.defn.name == "gather") == gathered


@pytest.mark.parametrize(("elements", "gathered"), [(100_000, True), (100_001, False)])
def test_dilated_pooling_input_limit(elements: int, gathered: bool) -> None:
    program = pooling_program((1, 1, elements), {"mode": "max", "lengths": (2,), "dilations": (2,)})
    assert counts(rewritten(program)) == (0, int(gathered))
