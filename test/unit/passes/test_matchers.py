"""has_value on integral and bool literals: the value is cast as C++'s static_cast casts it (wrapping),
compared exactly; and the op-class matchers."""

from __future__ import annotations

import numpy as np
import pytest

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.program import Program
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.passes.matchers import (
    has_value,
    is_broadcast,
    is_contiguous,
    is_reduce_like,
    is_reduction,
    is_shape_transform,
    scalar_constant,
    skip_output,
    used_once,
)
from mgxir.text.parser import parse_program


def _literal(dtype: DType, values: list[int]) -> Instruction:
    main = Program().create_module("main")
    data = np.array(values, dtype=dtype.numpy)
    return main.add_literal(Literal(Shape.make(dtype, data.shape), data))


@pytest.mark.parametrize(
    ("dtype", "stored", "value", "equal"),
    [
        (DType.bool, 1, 1, True),
        (DType.bool, 1, 2, True),
        (DType.bool, 0, 0, True),
        (DType.bool, 0, 1, False),
        (DType.int8, -1, 255, True),  # static_cast<int8_t>(255)
        (DType.uint8, 255, -1, True),
        (DType.int64, -1, -1, True),
        (DType.int64, 5, 5, True),
        (DType.int64, 2**62, 2**62, True),
        (DType.int64, 2**53 + 1, 2**53, False),  # exact, not through a float
        (DType.uint64, 2**64 - 1, -1, True),
        (DType.int32, 0, 1, False),
    ],
)
def test_has_value_casts_to_the_integral_type(dtype: DType, stored: int, value: int, equal: bool) -> None:
    assert has_value(_literal(dtype, [stored, stored]), float(value)) is equal


def test_op_classes() -> None:
    assert is_broadcast(make_op("multibroadcast", out_lens=[2, 3]).defn)
    assert not is_broadcast(make_op("neg").defn)
    assert is_reduction(make_op("reduce_sum", axes=[0]).defn)
    assert not is_reduction(make_op("neg").defn)


def test_shape_transforms_and_reduce_like_ops() -> None:
    assert is_shape_transform(make_op("transpose", permutation=[1, 0]).defn)
    assert not is_shape_transform(make_op("neg").defn)
    # MIGraphX's contains(name, "reduce"): the reductions (argmax is one) and the fused reductions
    assert is_reduce_like(make_op("argmax", axis=0).defn)
    assert is_reduce_like(make_op("reduce_sum", axes=[0]).defn)
    assert is_reduce_like(make_op("fused_reduce", axes=[0]).defn)
    assert not is_reduce_like(make_op("neg").defn)


USES = (
    'module: "main"\nx = @param:x -> float_type, {2}, {1}\n'
    "@1 = contiguous(x) -> float_type, {2}, {1}\n"
    "@2 = contiguous(@1) -> float_type, {2}, {1}\n"
    "@3 = neg(@2) -> float_type, {2}, {1}\n"
    "@4 = abs(x) -> float_type, {2}, {1}\n"
    "@5 = tanh(@3) -> float_type, {2}, {1}\n"
)


def test_used_once_counts_the_last_instruction_as_used() -> None:
    x, first, second, neg, unused, last = list(parse_program(USES).main)
    assert used_once(first) and used_once(neg)
    assert not used_once(x)  # two users
    assert not used_once(unused)  # dead, and not the module's result
    assert used_once(last)  # no users, but the module's last instruction


def test_skip_output_walks_down_single_users_through_the_test() -> None:
    x, first, second, neg, _, last = list(parse_program(USES).main)
    assert skip_output(first, is_contiguous) is neg
    assert skip_output(neg, is_contiguous) is last
    assert skip_output(x, is_contiguous) is None  # two users
    assert skip_output(last, is_contiguous) is None


def test_scalar_constant_reads_one_element_literals() -> None:
    main = Program().create_module("main")
    one = main.add_literal(Literal(Shape.make(DType.float, (1,)), np.array([2.5], dtype=np.float32)))
    broadcast = main.add_literal(
        Literal(Shape.make(DType.float, (2, 3), (0, 0)), np.full((2, 3), 4.0, dtype=np.float32))
    )
    pair = main.add_literal(Literal(Shape.make(DType.float, (2,)), np.array([1, 1], dtype=np.float32)))
    for ins, value in ((one, 2.5), (broadcast, 4.0)):
        found = scalar_constant(ins)
        assert found is not None and found.shape.scalar and found.data.item() == value
    assert scalar_constant(pair) is None


def _floats(dtype: DType, values: list[float]) -> Instruction:
    main = Program().create_module("main")
    data = np.array(values, dtype=dtype.numpy)
    return main.add_literal(Literal(Shape.make(dtype, data.shape), data))


EPS32 = 2.0**-23


def test_has_value_tolerance_is_ten_epsilons_plus_ten_relative() -> None:
    # epsilon * (10 + 10 * |value|), strictly less
    assert has_value(_floats(DType.float, [9.5 * EPS32]), 0.0)
    assert not has_value(_floats(DType.float, [10 * EPS32]), 0.0)
    assert not has_value(_floats(DType.float, [10.5 * EPS32]), 0.0)
    assert has_value(_floats(DType.float, [2 + 28 * EPS32]), 2.0)
    assert not has_value(_floats(DType.float, [2 + 30 * EPS32]), 2.0)


def test_has_value_of_an_empty_literal_is_false() -> None:
    main = Program().create_module("main")
    empty = main.add_literal(Literal(Shape.make(DType.float, (0,)), np.zeros(0, dtype=np.float32)))
    assert not has_value(empty, 0.0)


def test_has_value_with_zero_tolerance_allows_one_step_in_the_common_type() -> None:
    below, above = 1 - 2.0**-24, 1 + EPS32  # the float neighbours of 1
    assert has_value(_floats(DType.float, [1.0, below, above]), 1.0, 0, 0)
    assert not has_value(_floats(DType.float, [1 + 2 * EPS32]), 1.0, 0, 0)
    # doubles compare in double: two double steps is too far, one is not
    assert has_value(_floats(DType.double, [1 + 2.0**-52]), 1.0, 0, 0)
    assert not has_value(_floats(DType.double, [1 + 2.0**-51]), 1.0, 0, 0)
    # the value is first cast to the literal's type: half's 0.1 is 0.0999755859375
    assert has_value(_floats(DType.half, [0.1]), 0.1, 0, 0)


def test_has_value_takes_the_value_as_a_double_first() -> None:
    # 2**60 + 2**36 + 1 is 2**60 + 2**36 as a double, which rounds (to even) to 2**60 as a float; rounded
    # straight to float it would be 2**60 + 2**37, one step above 2**60
    below = 2.0**60 - 2.0**36  # the float below 2**60
    assert has_value(_floats(DType.float, [below]), 2**60 + 2**36 + 1, 0, 0)
