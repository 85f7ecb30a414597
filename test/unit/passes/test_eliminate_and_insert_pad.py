"""eliminate_pad and insert_pad: which pads they fold or insert, in programs built through the API."""

from __future__ import annotations

import numpy as np

from mgxir.interp.interpreter import run_program
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.text.printer import print_program
from mgxir.verifier import verify

WINDOW = {"stride": (1,), "dilation": (1,), "group": 1, "padding_mode": 0}


def conv(program: Program, x: Instruction, padding: tuple[int, ...], spatial: int = 1) -> Instruction:
    channels = x.shape.lens[1]
    w = program.main.add_parameter(f"w{len(program.main)}", Shape.make(DType.float, (2, channels, *(3,) * spatial)))
    window = {"stride": (1,) * spatial, "dilation": (1,) * spatial, "group": 1, "padding_mode": 0}
    return program.main.add_instruction("convolution", [x, w], padding=padding, **window)


def pooling(x: Instruction, mode: str, padding: tuple[int, ...]) -> Instruction:
    return x.parent.add_instruction(
        "pooling", [x], mode=mode, padding=padding, stride=(1,), lengths=(2,), dilations=(1,), lp_order=2
    )


def pad(x: Instruction, pads: tuple[int, ...], value: float = 0.0) -> Instruction:
    return x.parent.add_instruction("pad", [x], pads=pads, value=value)


def run_pass(program: Program, pipeline: str) -> tuple[PassContext, list[np.ndarray]]:
    rng = np.random.default_rng(2)
    values = {p.param_name: rng.standard_normal(p.shape.lens).astype(np.float32) for p in program.main if p.is_param}
    before = run_program(program, values)
    context = PassContext()
    for p in parse_pipeline(pipeline):
        p.apply(program, context)
    verify(program)
    after = run_program(program, values)
    for a, b in zip(after, before, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    return context, after


def op_names(program: Program) -> list[str]:
    return [i.op.defn.name for i in program.main if not (i.is_param or i.is_literal or i.is_return)]


def test_eliminate_pad_folds_after_skipped_pads() -> None:
    """Pads it must leave (a non-zero value, a negative pad, one before average pooling, one before
    a plain op) come first; the zero pad of a 1-d convolution after them is still folded."""
    program = Program()
    x = program.main.add_parameter("x", Shape.make(DType.float, (1, 3, 8)))
    outputs = [
        conv(program, pad(x, (0, 0, 1, 0, 0, 1), value=1.0), (0, 0)),
        conv(program, pad(x, (0, 0, -1, 0, 0, 0)), (0, 0)),
        pooling(pad(x, (0, 0, 1, 0, 0, 1)), "average", (0, 0)),
        program.main.add_instruction("neg", [pad(x, (0, 0, 1, 0, 0, 1))]),
        conv(program, pad(x, (0, 0, 2, 0, 0, 1)), (1, 1)),
    ]
    program.main.add_return(outputs)
    context, _ = run_pass(program, "eliminate_pad,dce")
    assert context.statistics["pads folded into convolution"] == 1, print_program(program)
    assert sum(n for what, n in context.statistics.items() if what.startswith("pads folded")) == 1
    assert op_names(program).count("pad") == 4
    assert outputs[-1].op["padding"] == (3, 2) and outputs[-1].args[0] is x


def test_insert_pad_before_one_dimensional_windows() -> None:
    """Asymmetric padding becomes a pad before a 1-d convolution and max pooling, also after ops
    it leaves (symmetric padding, average pooling)."""
    program = Program()
    x = program.main.add_parameter("x", Shape.make(DType.float, (1, 3, 8)))
    outputs = [
        program.main.add_instruction("neg", [x]),
        conv(program, x, (1, 1)),
        pooling(x, "average", (1, 0)),
        conv(program, x, (2, 1)),
        pooling(x, "max", (0, 1)),
    ]
    program.main.add_return(outputs)
    context, _ = run_pass(program, "insert_pad")
    assert context.statistics["pads inserted before convolution"] == 1, print_program(program)
    assert context.statistics["pads inserted before pooling"] == 1
    assert sum(context.statistics.values()) == 2
    assert [o.args[0].op.defn.name for o in outputs[1:]] == ["@param", "@param", "pad", "pad"]
