"""simplify_algebra's convolution and dot rewrites keep results: each program below triggers one
rewrite (checked by the pass statistics), and the interpreter gives the same outputs before and after.
A pattern that matches but declines changes nothing and costs one round."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from test_pass_differential import rms_ok

from mgxir.interp.interpreter import run_program
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes import simplify_algebra
from mgxir.passes.base import PassContext
from mgxir.passes.propagate_constant import ConstantAnalysis
from mgxir.passes.rewrite import MATCHED_UNCHANGED
from mgxir.passes.simplify_algebra import SimplifyAlgebra, linear
from mgxir.text.printer import print_program
from mgxir.verifier import verify


class Builder:
    """A main module with random float parameters and literals."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.program = Program()
        self.main = self.program.create_module("main")
        self.params: dict[str, np.ndarray] = {}

    def param(self, name: str, *lens: int) -> Instruction:
        self.params[name] = self.rng.uniform(-1, 1, size=lens).astype(np.float32)
        return self.main.add_parameter(name, Shape.make(DType.float, lens))

    def literal(self, *lens: int) -> Instruction:
        data = self.rng.uniform(-1, 1, size=lens).astype(np.float32)
        return self.main.add_literal(Literal(Shape.make(DType.float, lens), data))

    def op(self, name: str, *args: Instruction, **attributes: object) -> Instruction:
        return self.main.add_instruction(name, list(args), **attributes)

    def ret(self, *values: Instruction) -> None:
        self.main.add_return(list(values))


def mul_conv(b: Builder) -> None:
    x = b.param("x", 1, 3, 6, 6)
    conv = b.op("convolution", x, b.literal(4, 3, 3, 3), padding=(1, 1), stride=(2, 2))
    scale = b.op("broadcast", b.literal(4), axis=1, out_lens=(1, 4, 3, 3))
    b.ret(b.op("mul", conv, scale))


def mul_conv_multibroadcast(b: Builder) -> None:
    x = b.param("x", 2, 3, 5, 5)
    conv = b.op("convolution", x, b.literal(4, 3, 3, 3))
    scale = b.op("multibroadcast", b.literal(4, 1, 1), out_lens=(2, 4, 3, 3))
    b.ret(b.op("mul", scale, conv))


def mul_slice_conv(b: Builder) -> None:
    x = b.param("x", 1, 5, 4, 4)
    conv = b.op("convolution", x, b.literal(6, 5, 1, 1))
    first = b.op("slice", conv, axes=(1,), starts=(2,), ends=(5,))
    scale = b.op("broadcast", b.literal(3), axis=1, out_lens=(1, 3, 4, 4))
    mul = b.op("mul", first, scale)
    second = b.op("slice", conv, axes=(1,), starts=(0,), ends=(2,))
    b.ret(mul, second)


def mul_dot_n(b: Builder) -> None:
    dot = b.op("dot", b.param("a", 2, 5, 3), b.literal(2, 3, 4))
    scale = b.op("multibroadcast", b.literal(1, 1, 4), out_lens=(2, 5, 4))
    b.ret(b.op("mul", dot, scale))


def mul_dot_m(b: Builder) -> None:
    dot = b.op("dot", b.literal(2, 5, 3), b.param("b", 2, 3, 4))
    scale = b.op("multibroadcast", b.literal(1, 5, 1), out_lens=(2, 5, 4))
    b.ret(b.op("mul", scale, dot))


def mul_dot_scalar(b: Builder) -> None:
    dot = b.op("dot", b.param("a", 5, 3), b.literal(3, 4))
    scale = b.op("multibroadcast", b.literal(1), out_lens=(5, 4))
    b.ret(b.op("mul", dot, scale))


def dot_mul_a(b: Builder) -> None:
    scale = b.op("multibroadcast", b.literal(1, 1, 3), out_lens=(2, 5, 3))
    mul = b.op("mul", b.param("a", 2, 5, 3), scale)
    b.ret(b.op("dot", mul, b.literal(2, 3, 4)))


def dot_mul_b(b: Builder) -> None:
    scale = b.op("broadcast", b.literal(3), axis=1, out_lens=(2, 3, 4))
    mul = b.op("mul", scale, b.param("b", 2, 3, 4))
    b.ret(b.op("dot", b.literal(2, 5, 3), mul))


def dot_slice(b: Builder) -> None:
    dot = b.op("dot", b.param("a", 2, 6, 3), b.param("b", 2, 3, 5))
    b.ret(b.op("slice", dot, axes=(0, -2, 2), starts=(1, 1, -3), ends=(2, 4, 5)))


def dot_add(b: Builder) -> None:
    add = b.op("add", b.literal(4, 3), b.param("x", 4, 3))
    b.ret(b.op("dot", add, b.literal(3, 5)))


def dot_add_flipped(b: Builder) -> None:
    add = b.op("add", b.param("x", 3, 5), b.literal(3, 5))
    b.ret(b.op("dot", b.literal(4, 3), add))


def conv_add(b: Builder) -> None:
    add = b.op("add", b.literal(1, 3, 6, 6), b.param("x", 1, 3, 6, 6))
    b.ret(b.op("convolution", add, b.literal(2, 3, 3, 3), padding=(1, 1)))


def add_convs(b: Builder) -> None:
    first = b.op("convolution", b.param("x", 1, 3, 5, 5), b.literal(4, 3, 3, 3))
    second = b.op("convolution", b.param("y", 1, 2, 5, 5), b.literal(4, 2, 3, 3))
    b.ret(b.op("add", first, second))


def add_convs_strides(b: Builder) -> None:
    first = b.op("convolution", b.param("x", 1, 3, 8, 8), b.literal(4, 3, 1, 1), stride=(2, 2))
    second = b.op("convolution", b.param("y", 1, 2, 4, 4), b.literal(4, 2, 1, 1))
    b.ret(b.op("add", first, second))


def horiz_dot(b: Builder) -> None:
    x = b.param("x", 2, 4, 3)
    late = b.op("transpose", b.literal(2, 5, 3), permutation=(0, 2, 1))
    first = b.op("dot", x, b.literal(2, 3, 4))
    second = b.op("dot", x, late)
    b.ret(b.op("relu", first), second, b.op("neg", x))


def horiz_conv(b: Builder) -> None:
    x = b.param("x", 1, 3, 6, 6)
    first = b.op("convolution", x, b.literal(2, 3, 3, 3), padding=(1, 1))
    second = b.op("convolution", x, b.literal(2, 3, 3, 3), padding=(1, 1))
    b.ret(first, second)


def dot_broadcast(b: Builder) -> None:
    xb = b.op("broadcast", b.param("x", 3), axis=3, out_lens=(2, 4, 5, 3))
    yb = b.op("multibroadcast", b.param("y", 3, 6), out_lens=(2, 4, 3, 6))
    b.ret(b.op("dot", xb, yb))


def concat_conv(b: Builder) -> None:
    first = b.op("convolution", b.param("x", 1, 4, 5, 5), b.literal(2, 2, 3, 3), group=2)
    second = b.op("convolution", b.param("y", 1, 4, 5, 5), b.literal(2, 2, 3, 3), group=2)
    b.ret(b.op("concat", first, second, axis=1))


def conv_broadcast_input(b: Builder) -> None:
    xb = b.op("broadcast", b.param("x", 3), axis=1, out_lens=(1, 3, 5, 5))
    b.ret(b.op("convolution", xb, b.literal(4, 3, 3, 3), stride=(2, 2)))


def conv_broadcast_input_batch(b: Builder) -> None:
    xb = b.op("multibroadcast", b.param("x", 2, 3, 1, 1), out_lens=(2, 3, 5, 4))
    b.ret(b.op("convolution", xb, b.literal(4, 3, 3, 2)))


def conv_broadcast_input_padded(b: Builder) -> None:
    xb = b.op("broadcast", b.param("x", 3), axis=1, out_lens=(1, 3, 7, 6))
    b.ret(b.op("convolution", xb, b.literal(4, 3, 3, 3), padding=(1, 2, 1, 0)))


CASES: list[tuple[str, Callable[[Builder], None]]] = [
    ("find_mul_conv", mul_conv),
    ("find_mul_conv", mul_conv_multibroadcast),
    ("find_mul_slice_conv", mul_slice_conv),
    ("find_mul_dot", mul_dot_n),
    ("find_mul_dot", mul_dot_m),
    ("find_mul_dot", mul_dot_scalar),
    ("find_dot_mul", dot_mul_a),
    ("find_dot_mul", dot_mul_b),
    ("find_dot_slice", dot_slice),
    ("find_dot_add", dot_add),
    ("find_dot_add", dot_add_flipped),
    ("find_conv_add", conv_add),
    ("find_add_convs", add_convs),
    ("find_add_convs", add_convs_strides),
    ("find_conv_dot_horiz_fusion", horiz_dot),
    ("find_conv_dot_horiz_fusion", horiz_conv),
    ("find_dot_broadcast", dot_broadcast),
    ("find_concat_conv", concat_conv),
    ("find_conv_broadcast_input", conv_broadcast_input),
    ("find_conv_broadcast_input", conv_broadcast_input_batch),
    ("find_conv_broadcast_input", conv_broadcast_input_padded),
]


def _count(module: Module, name: str) -> int:
    return sum(1 for ins in module if ins.op.defn.name == name)


@pytest.mark.parametrize(("rewrite", "build"), CASES, ids=[f"{r}-{b.__name__}" for r, b in CASES])
def test_rewrite_keeps_results(rewrite: str, build: Callable[[Builder], None]) -> None:
    builder = Builder(seed=len(rewrite) * 31 + len(build.__name__))
    build(builder)
    program = builder.program
    verify(program)
    before = run_program(program, builder.params)
    text_before = print_program(program)
    context = PassContext()
    SimplifyAlgebra().apply(program, context)
    verify(program)
    assert print_program(program) != text_before
    assert context.statistics[f"{rewrite} applied"] > 0, dict(context.statistics)
    after = run_program(program, builder.params)
    assert len(before) == len(after)
    for reference, result in zip(before, after):
        assert rms_ok(np.asarray(result), np.asarray(reference))


def test_horizontal_fusion_leaves_one_dot() -> None:
    builder = Builder(seed=7)
    horiz_dot(builder)
    SimplifyAlgebra().apply(builder.program, PassContext())
    assert _count(builder.program.main, "dot") == 1


def test_declined_horizontal_fusion_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two convolutions of one input with different output channel counts match
    find_conv_dot_horiz_fusion but stay apart: one round, no change counted, the module unchanged."""
    builder = Builder(seed=11)
    x = builder.param("x", 1, 3, 6, 6)
    first = builder.op("convolution", x, builder.literal(4, 3, 3, 3), padding=(1, 1))
    second = builder.op("convolution", x, builder.literal(2, 3, 3, 3), padding=(1, 1))
    builder.ret(first, second)
    outcomes: list[object] = []

    def recorded(module: Module, ins: Instruction, constant: ConstantAnalysis) -> object:
        outcome = linear.find_conv_dot_horiz_fusion(module, ins, constant)
        if ins is x:
            outcomes.append(outcome)
        return outcome

    rewrites = tuple(recorded if r is linear.find_conv_dot_horiz_fusion else r for r in simplify_algebra.REWRITES)
    monkeypatch.setattr(simplify_algebra, "REWRITES", rewrites)
    text_before = print_program(builder.program)
    context = PassContext()
    SimplifyAlgebra().apply(builder.program, context)
    assert outcomes == [MATCHED_UNCHANGED]
    assert not any(key.endswith(" applied") for key in context.statistics), dict(context.statistics)
    assert print_program(builder.program) == text_before
