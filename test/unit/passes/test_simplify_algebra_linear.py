"""simplify_algebra's convolution and dot rewrites keep results: each program below triggers one
rewrite (checked by the pass statistics), and the interpreter gives the same outputs before and after.
A pattern that matches but declines changes nothing and costs one round."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from simplify_cases import module, reprinted, simplified
from test_pass_differential import rms_ok

from mgxir.interp.interpreter import run_program
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.program import Program
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.passes import simplify_algebra
from mgxir.passes.base import PassContext
from mgxir.passes.propagate_constant import ConstantAnalysis
from mgxir.passes.rewrite import MATCHED_UNCHANGED, Rewriter
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


# simplify_algebra's linear rewrites: the helpers that decide MIGraphX's choices (stride factors of
# fused convolutions, which users group together and in which order, what must move before the shared
# input), exactly (written against the mutants scripts/mutation.py found surviving).


class Chain:
    """Instructions appended in order to one module."""

    def __init__(self) -> None:
        self.program = Program()
        self.main = self.program.create_module("main")

    def param(self, name: str, *lens: int) -> Instruction:
        return self.main.add_parameter(name, Shape.make(DType.float, lens))

    def op(self, name: str, *args: Instruction, **attributes: object) -> Instruction:
        return self.main.add_instruction(name, list(args), **attributes)


def _conv(*stride: int) -> object:
    return make_op("convolution", padding=(0,) * len(stride), stride=stride, dilation=(1,) * len(stride))


@pytest.mark.parametrize(
    ("x", "y", "factor"),
    [
        ((4, 4), (2, 2), 2),
        ((6, 6), (2, 2), 3),
        ((4, 4), (3, 3), 0),
        ((4, 2), (2, 2), 0),
        ((4, 4), (2, 1), 0),
        ((4, 4), (4, 4), 1),
    ],
)
def test_stride_factor_is_a_whole_symmetric_ratio_or_zero(x: tuple[int, ...], y: tuple[int, ...], factor: int) -> None:
    result = linear._stride_factor(_conv(*x), _conv(*y))
    assert result == factor
    assert type(result) is int  # it becomes a step's steps


def test_stride_factor_of_a_one_dimensional_convolution_is_zero() -> None:
    assert linear._stride_factor(_conv(4), _conv(2, 2)) == 0
    assert linear._stride_factor(_conv(4, 4), _conv(2)) == 0


def test_axis_equal_needs_the_axis_inside_the_lens() -> None:
    assert linear._axis_equal((2, 3), (2, 5), 1)
    assert not linear._axis_equal((2, 3), (2, 3), 2)
    assert not linear._axis_equal((2, 3), (4, 3), 1)


def test_same_kind_convolutions_differ_only_in_input_channels_dots_in_the_last_axis() -> None:
    c = Chain()
    x = c.param("x", 1, 3, 6, 6)
    w_a, w_b, w_c = c.param("wa", 2, 3, 3, 3), c.param("wb", 4, 3, 3, 3), c.param("wc", 2, 3, 3, 1)
    conv_a, conv_b, conv_c = (c.op("convolution", x, w) for w in (w_a, w_b, w_c))
    assert linear._same_kind(conv_a, conv_a)
    assert not linear._same_kind(conv_a, conv_b)  # output channels (axis 0 of the weights) differ
    assert not linear._same_kind(conv_a, conv_c)
    y = c.param("y", 2, 3)
    dot_a, dot_b = c.op("dot", y, c.param("da", 3, 4)), c.op("dot", y, c.param("db", 3, 7))
    assert linear._same_kind(dot_a, dot_b)
    assert not linear._same_kind(conv_a, dot_a)
    neg_a, neg_b = c.op("neg", y), c.op("neg", x)
    assert linear._same_kind(neg_a, neg_b)  # not fusable: the same operation is enough


def test_same_kind_convolutions_compare_the_weights_but_for_axis_1() -> None:
    c = Chain()
    x, z = c.param("x", 1, 3, 6, 6), c.param("z", 1, 5, 6, 6)
    conv_a = c.op("convolution", x, c.param("wa", 2, 3, 3, 3))
    conv_b = c.op("convolution", z, c.param("wb", 2, 5, 3, 3))
    assert linear._same_kind(conv_a, conv_b)


@pytest.mark.parametrize(
    ("items", "start", "expected", "split"),
    [
        ([1, 2, 3, 4, 5, 6], 0, [6, 2, 4, 3, 5, 1], 3),
        ([2, 4, 6], 0, [2, 4, 6], 3),
        ([1, 3, 5], 0, [1, 3, 5], 0),
        ([9, 1, 2, 3, 4], 1, [9, 4, 2, 3, 1], 3),
        ([1, 1, 1, 2, 2], 0, [2, 2, 1, 1, 1], 2),
        ([9, 9, 1, 2], 2, [9, 9, 2, 1], 3),  # the items before start stay out of it
    ],
)
def test_partition_swaps_from_both_ends_as_libstdcxx(  # expected orders worked by hand from std::partition
    items: list[int], start: int, expected: list[int], split: int
) -> None:
    assert linear._partition(items, start, len(items), lambda v: v % 2 == 0) == split
    assert items == expected


def test_slices_follow_only_when_no_other_slice_of_the_convolution_comes_first() -> None:
    c = Chain()
    x = c.param("x", 1, 3, 4, 4)
    conv = c.op("convolution", x, c.param("w", 6, 3, 1, 1))
    between = c.op("neg", x)
    first = c.op("slice", conv, axes=(1,), starts=(0,), ends=(2,))
    unrelated = c.op("neg", between)
    second = c.op("slice", conv, axes=(1,), starts=(2,), ends=(6,))
    assert linear._slices_follow(first, conv)
    assert not linear._slices_follow(second, conv)
    assert unrelated in c.main


def test_instructions_after_runs_to_the_last_member_of_the_group() -> None:
    c = Chain()
    x = c.param("x", 2)
    y = c.op("neg", x)
    z = c.op("abs", y)
    w = c.op("relu", z)
    c.op("tanh", w)
    assert linear._instructions_after(x, [z]) == {y, z}
    assert linear._instructions_after(x, [w, y]) == {y, z, w}


def test_depends_on_follows_only_the_instructions_after_the_input() -> None:
    c = Chain()
    x = c.param("x", 2)
    y = c.op("neg", x)
    z = c.op("abs", y)
    other = c.param("o", 2)
    assert linear._depends_on(x, [z], {y, z})
    assert linear._depends_on(x, [other, z], {y, z})
    assert not linear._depends_on(x, [z], {z})  # y is before x's position: not looked through
    assert not linear._depends_on(x, [other], {y, z})
    assert not linear._depends_on(x, [], {y, z})


def test_still_after_drops_the_first_of_each_earlier_instruction_only() -> None:
    c = Chain()
    a, b = c.param("a", 2), c.param("b", 2)
    assert linear._still_after([a, a, b, a], {b}) == [a, b, a]
    assert linear._still_after([b, b], {b}) == [b, b]


def _fuse_declined(c: Chain, x: Instruction, group: list[Instruction]) -> None:
    """_fuse_group declines: it says so and leaves the module as it was."""
    before = print_program(c.program)
    assert linear._fuse_group(Rewriter(c.main), x, group) is False
    assert print_program(c.program) == before


def test_fuse_group_declines_groups_it_cannot_fuse() -> None:
    c = Chain()
    x = c.param("x", 1, 3, 6, 6)
    y = c.param("y", 3, 3)
    _fuse_declined(c, y, [c.op("neg", y), c.op("neg", y)])  # not horizontally fusable
    _fuse_declined(c, y, [c.op("dot", y, c.param("w", 3, 4)), c.op("dot", c.param("v", 2, 3), y)])  # y second
    # kernels of different sizes: the weights do not concatenate
    _fuse_declined(
        c, x, [c.op("convolution", x, c.param("k3", 2, 3, 3, 3)), c.op("convolution", x, c.param("k1", 2, 3, 1, 1))]
    )
    grouped = [c.op("convolution", x, c.param(f"g{i}", 3, 1, 3, 3), group=3) for i in range(2)]
    _fuse_declined(c, x, grouped)  # grouped convolutions: concatenated weights would mix the groups
    # a weight computed from the shared input cannot move before it
    _fuse_declined(c, y, [c.op("dot", y, c.param("u", 3, 4)), c.op("dot", y, c.op("neg", y))])
    verify(c.program)


def test_fuse_group_says_it_fused() -> None:
    c = Chain()
    y = c.param("y", 2, 3)
    first, second = c.op("dot", y, c.param("a", 3, 4)), c.op("dot", y, c.param("b", 3, 5))
    assert linear._fuse_group(Rewriter(c.main), y, [first, second]) is True
    assert sum(1 for ins in c.main if ins.op.defn.name == "dot") == 1
    verify(c.program)


def _simplified_keeps_results(builder: Builder) -> PassContext:
    program = builder.program
    verify(program)
    before = run_program(program, builder.params)
    context = PassContext()
    SimplifyAlgebra().apply(program, context)
    verify(program)
    after = run_program(program, builder.params)
    for reference, result in zip(before, after, strict=True):
        assert rms_ok(np.asarray(result), np.asarray(reference))
    return context


def test_horizontal_fusion_of_three_dots_slices_each_its_own_columns() -> None:
    b = Builder(seed=3)
    x = b.param("x", 2, 3)
    b.ret(*(b.op("dot", x, b.literal(3, n)) for n in (4, 5, 6)))
    context = _simplified_keeps_results(b)
    assert context.statistics["find_conv_dot_horiz_fusion applied"] == 1
    slices = [ins.op for ins in b.main if ins.op.defn.name == "slice"]
    assert [(op["starts"], op["ends"]) for op in slices] == [((0,), (4,)), ((4,), (9,)), ((9,), (15,))]


def test_horizontal_fusion_moves_a_late_weight_and_all_its_inputs_before_the_input() -> None:
    b = Builder(seed=5)
    x = b.param("x", 2, 3)
    early = b.op("dot", x, b.literal(3, 4))
    c = b.op("neg", b.literal(3, 4))
    late = b.op("add", b.op("abs", c), b.op("relu", c))  # two inputs after x, sharing one
    b.ret(early, b.op("dot", x, late))
    context = _simplified_keeps_results(b)
    assert context.statistics["find_conv_dot_horiz_fusion applied"] == 1


@pytest.mark.parametrize(
    ("lens", "padding"),
    [((7, 6), (1, 2, 1, 0)), ((7, 6), (1, 0, 1, 1)), ((3, 6), (1, 1, 1, 1)), ((6, 3), (1, 1, 1, 1))],
)
def test_padded_convolution_of_a_broadcast_input_keeps_results_without_empty_slices(
    lens: tuple[int, int], padding: tuple[int, ...]
) -> None:
    b = Builder(seed=9)
    xb = b.op("broadcast", b.param("x", 3), axis=1, out_lens=(1, 3, *lens))
    b.ret(b.op("convolution", xb, b.literal(4, 3, 3, 3), padding=padding))
    context = _simplified_keeps_results(b)
    assert context.statistics["find_conv_broadcast_input applied"] >= 1
    for ins in b.main:
        if ins.op.defn.name == "slice":
            assert all(end > start for start, end in zip(ins.op["starts"], ins.op["ends"], strict=True)), ins.op


def test_from_int4_follows_views_reshapes_dequantizelinear_and_all_int4_concats() -> None:
    """MIGraphX's from_int4, which keeps find_dot_mul and find_mul_dot from folding into int4 weights."""
    c = Chain()
    packed = c.main.add_parameter("w", Shape.make(DType.uint8, (4, 2)))
    unpacked = c.op("unpack_int4", packed)
    reshaped = c.op("reshape", unpacked, dims=[2, 8])
    scale = c.param("s", 2, 8)
    dequantized = c.op("dequantizelinear", reshaped, scale)
    viewed = c.op("transpose", dequantized, permutation=[1, 0])
    other = c.param("x", 2, 8)
    assert linear._from_int4(unpacked)
    assert linear._from_int4(reshaped)
    assert linear._from_int4(dequantized)
    assert linear._from_int4(viewed)
    assert linear._from_int4(c.op("concat", dequantized, dequantized, axis=0))
    assert not linear._from_int4(c.op("concat", dequantized, other, axis=0))
    assert not linear._from_int4(c.op("neg", dequantized))
    assert not linear._from_int4(c.op("add", dequantized, other))
    assert not linear._from_int4(other)


CONV_1X1 = "convolution[padding={0, 0, 0, 0},stride={1, 1},dilation={1, 1},group=1,padding_mode=0]"


def _conv_line(result: str, args: str, padding: str, stride: str, out: str) -> str:
    dilation = ", ".join(["1"] * (stride.count(",") + 1))
    return (
        f"{result} = convolution[padding={{{padding}}},stride={{{stride}}},dilation={{{dilation}}},group=1,"
        f"padding_mode=0]({args}) -> float_type, {out}"
    )


KEPT = {
    "find_conv_add_leaves_a_convolution_used_twice": module(
        "@0 = @literal{2} -> float_type, {1, 1, 1, 1}, {1, 1, 1, 1}",
        "@1 = @literal{1, 2, 3, 4, 5, 6, 7, 8, 9} -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
        "x = @param:x -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
        "@3 = add(x,@1) -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
        "@4 = " + CONV_1X1 + "(@3,@0) -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
        "@5 = relu(@4) -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
        "@6 = @return(@4,@5)",
    ),
    # 1x1 convolutions of different strides fuse only without padding, with 1x1 two-dimensional kernels
    # and strides that divide
    "find_add_convs_leaves_padded_1x1_convolutions_of_different_strides": module(
        "@0 = @literal{2} -> float_type, {1, 1, 1, 1}, {1, 1, 1, 1}",
        "@1 = @literal{3} -> float_type, {1, 1, 1, 1}, {1, 1, 1, 1}",
        "x = @param:x -> float_type, {1, 1, 4, 4}, {16, 16, 4, 1}",
        "y = @param:y -> float_type, {1, 1, 10, 10}, {100, 100, 10, 1}",
        _conv_line("@4", "x,@0", "1, 1, 1, 1", "1, 1", "{1, 1, 6, 6}, {36, 36, 6, 1}"),
        _conv_line("@5", "y,@1", "1, 1, 1, 1", "2, 2", "{1, 1, 6, 6}, {36, 36, 6, 1}"),
        "@6 = add(@4,@5) -> float_type, {1, 1, 6, 6}, {36, 36, 6, 1}",
        "@7 = @return(@6)",
    ),
    "find_add_convs_leaves_1x3_convolutions_of_different_strides": module(
        "@0 = @literal{1, 2, 3} -> float_type, {1, 1, 1, 3}, {3, 3, 3, 1}",
        "@1 = @literal{4, 5, 6} -> float_type, {1, 1, 1, 3}, {3, 3, 3, 1}",
        "x = @param:x -> float_type, {1, 1, 4, 6}, {24, 24, 6, 1}",
        "y = @param:y -> float_type, {1, 1, 7, 9}, {63, 63, 9, 1}",
        _conv_line("@4", "x,@0", "0, 0, 0, 0", "1, 1", "{1, 1, 4, 4}, {16, 16, 4, 1}"),
        _conv_line("@5", "y,@1", "0, 0, 0, 0", "2, 2", "{1, 1, 4, 4}, {16, 16, 4, 1}"),
        "@6 = add(@4,@5) -> float_type, {1, 1, 4, 4}, {16, 16, 4, 1}",
        "@7 = @return(@6)",
    ),
    "find_add_convs_leaves_3x1_convolutions_of_different_strides": module(
        "@0 = @literal{1, 2, 3} -> float_type, {1, 1, 3, 1}, {3, 3, 1, 1}",
        "@1 = @literal{4, 5, 6} -> float_type, {1, 1, 3, 1}, {3, 3, 1, 1}",
        "x = @param:x -> float_type, {1, 1, 6, 4}, {24, 24, 4, 1}",
        "y = @param:y -> float_type, {1, 1, 9, 7}, {63, 63, 7, 1}",
        _conv_line("@4", "x,@0", "0, 0, 0, 0", "1, 1", "{1, 1, 4, 4}, {16, 16, 4, 1}"),
        _conv_line("@5", "y,@1", "0, 0, 0, 0", "2, 2", "{1, 1, 4, 4}, {16, 16, 4, 1}"),
        "@6 = add(@4,@5) -> float_type, {1, 1, 4, 4}, {16, 16, 4, 1}",
        "@7 = @return(@6)",
    ),
    "find_add_convs_leaves_one_dimensional_convolutions_of_different_strides": module(
        "@0 = @literal{2} -> float_type, {1, 1, 1}, {1, 1, 1}",
        "@1 = @literal{3} -> float_type, {1, 1, 1}, {1, 1, 1}",
        "x = @param:x -> float_type, {1, 1, 4}, {4, 4, 1}",
        "y = @param:y -> float_type, {1, 1, 7}, {7, 7, 1}",
        _conv_line("@4", "x,@0", "0, 0", "1", "{1, 1, 4}, {4, 4, 1}"),
        _conv_line("@5", "y,@1", "0, 0", "2", "{1, 1, 4}, {4, 4, 1}"),
        "@6 = add(@4,@5) -> float_type, {1, 1, 4}, {4, 4, 1}",
        "@7 = @return(@6)",
    ),
    "find_add_convs_leaves_strides_that_do_not_divide": module(
        "@0 = @literal{2} -> float_type, {1, 1, 1, 1}, {1, 1, 1, 1}",
        "@1 = @literal{3} -> float_type, {1, 1, 1, 1}, {1, 1, 1, 1}",
        "x = @param:x -> float_type, {1, 1, 6, 6}, {36, 36, 6, 1}",
        "y = @param:y -> float_type, {1, 1, 9, 9}, {81, 81, 9, 1}",
        _conv_line("@4", "x,@0", "0, 0, 0, 0", "2, 2", "{1, 1, 3, 3}, {9, 9, 3, 1}"),
        _conv_line("@5", "y,@1", "0, 0, 0, 0", "3, 3", "{1, 1, 3, 3}, {9, 9, 3, 1}"),
        "@6 = add(@4,@5) -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
        "@7 = @return(@6)",
    ),
}


@pytest.mark.parametrize("name", KEPT)
def test_simplify_algebra_keeps(name: str) -> None:
    text = KEPT[name]
    assert simplified(text) == (reprinted(text), {})


REWRITTEN = {
    # a batch axis of length 1 need not have stride 0
    "find_mul_conv_scales_the_weights_by_a_channel_constant": (
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2, 1, 1}, {2, 1, 1, 1}",
            "@1 = @literal{2, 3} -> float_type, {1, 2, 1, 1}, {2, 1, 1, 1}",
            "x = @param:x -> float_type, {1, 2, 3, 3}, {18, 9, 3, 1}",
            "@3 = " + CONV_1X1 + "(x,@0) -> float_type, {1, 2, 3, 3}, {18, 9, 3, 1}",
            "@4 = multibroadcast[out_lens={1, 2, 3, 3},out_dyn_dims={}](@1) -> float_type, {1, 2, 3, 3}, {2, 1, 0, 0}",
            "@5 = mul(@3,@4) -> float_type, {1, 2, 3, 3}, {18, 9, 3, 1}",
            "@6 = @return(@5)",
        ),
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2, 1, 1}, {2, 1, 1, 1}",
            "@1 = @literal{2, 3} -> float_type, {1, 2, 1, 1}, {2, 1, 1, 1}",
            "x = @param:x -> float_type, {1, 2, 3, 3}, {18, 9, 3, 1}",
            "@3 = squeeze[axes={}](@1) -> float_type, {2}, {1}",
            "@4 = broadcast[axis=0,out_lens={2, 2, 1, 1},out_dyn_dims={}](@3)"
            " -> float_type, {2, 2, 1, 1}, {1, 0, 0, 0}",
            "@5 = mul(@4,@0) -> float_type, {2, 2, 1, 1}, {2, 1, 1, 1}",
            "@6 = " + CONV_1X1 + "(x,@5) -> float_type, {1, 2, 3, 3}, {18, 9, 3, 1}",
            "@7 = @return(@6)",
        ),
        {"find_mul_conv": 1},
    ),
    "find_mul_conv_takes_spatial_axes_of_length_1": (
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2, 1, 1}, {2, 1, 1, 1}",
            "@1 = @literal{2, 3} -> float_type, {1, 2, 1, 1}, {2, 1, 1, 1}",
            "x = @param:x -> float_type, {1, 2, 1, 1}, {2, 1, 1, 1}",
            "@3 = " + CONV_1X1 + "(x,@0) -> float_type, {1, 2, 1, 1}, {2, 1, 1, 1}",
            "@4 = multibroadcast[out_lens={1, 2, 1, 1},out_dyn_dims={}](@1) -> float_type, {1, 2, 1, 1}, {2, 1, 1, 1}",
            "@5 = mul(@3,@4) -> float_type, {1, 2, 1, 1}, {2, 1, 1, 1}",
            "@6 = @return(@5)",
        ),
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2, 1, 1}, {2, 1, 1, 1}",
            "@1 = @literal{2, 3} -> float_type, {1, 2, 1, 1}, {2, 1, 1, 1}",
            "x = @param:x -> float_type, {1, 2, 1, 1}, {2, 1, 1, 1}",
            "@3 = squeeze[axes={}](@1) -> float_type, {2}, {1}",
            "@4 = broadcast[axis=0,out_lens={2, 2, 1, 1},out_dyn_dims={}](@3)"
            " -> float_type, {2, 2, 1, 1}, {1, 0, 0, 0}",
            "@5 = mul(@4,@0) -> float_type, {2, 2, 1, 1}, {2, 1, 1, 1}",
            "@6 = " + CONV_1X1 + "(x,@5) -> float_type, {1, 2, 1, 1}, {2, 1, 1, 1}",
            "@7 = @return(@6)",
        ),
        {"find_mul_conv": 1},
    ),
}


@pytest.mark.parametrize("name", REWRITTEN)
def test_simplify_algebra_rewrites(name: str) -> None:
    text, expected, applied = REWRITTEN[name]
    assert simplified(text) == (reprinted(expected), applied)
