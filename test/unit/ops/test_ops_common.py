"""The helpers under every shape rule (mgxir/ops/common.py): exact messages and MIGraphX's layout
rules for elementwise results, so that a mutant of any branch changes an asserted value."""

from __future__ import annotations

import pytest

from mgxir.ir.dtype import DType
from mgxir.ir.operation import ShapeError
from mgxir.ir.shape import DynamicDimension, Shape
from mgxir.ops.common import (
    SIZE_MAX,
    elementwise_result,
    fail,
    lens_text,
    normalize_axes,
    normalize_axis,
    require_static,
    same_dims,
    same_type,
    unary_result,
    unknown_dims,
)

F = DType.float


def message(call: object, *args: object) -> str:
    with pytest.raises(ShapeError) as info:
        call(*args)  # type: ignore[operator]
    return str(info.value)


def test_fail_prefixes_the_op() -> None:
    assert str(fail("add", "bad")) == "add: bad"


@pytest.mark.parametrize(
    ("axis", "ndim", "expected"),
    [(0, 3, 0), (2, 3, 2), (-1, 3, 2), (-3, 3, 0), (0, 1, 0), (-1, 1, 0)],
)
def test_normalize_axis_in_range(axis: int, ndim: int, expected: int) -> None:
    assert normalize_axis("softmax", axis, ndim) == expected


@pytest.mark.parametrize(("axis", "ndim"), [(3, 3), (-4, 3), (1, 1), (0, 0)])
def test_normalize_axis_out_of_range(axis: int, ndim: int) -> None:
    assert message(normalize_axis, "softmax", axis, ndim) == f"softmax: axis {axis} is out of range for rank {ndim}"


def test_normalize_axis_names_what() -> None:
    assert message(normalize_axis, "gather", 5, 2, "index") == "gather: index 5 is out of range for rank 2"


def test_normalize_axes() -> None:
    assert normalize_axes("reduce_sum", [-1, 0, 1], 3) == [2, 0, 1]
    assert message(normalize_axes, "reduce_sum", [0, 3], 3) == "reduce_sum: axis 3 is out of range for rank 3"


def test_require_static() -> None:
    require_static("relu", Shape.make(F, [2, 3]), Shape.make(F, [1]))
    dynamic = Shape.dynamic(F, [(1, 4), (3, 3)])
    assert (
        message(require_static, "relu", Shape.make(F, [2]), dynamic)
        == "relu: dynamic input shapes are not supported by this operator's shape rule here"
    )
    tup = Shape.tuple_of([Shape.make(F, [2])])
    assert message(require_static, "relu", tup) == "relu: a tuple cannot be an input"


def test_same_type() -> None:
    same_type("add", [Shape.make(F, [2]), Shape.make(F, [3])])
    assert (
        message(same_type, "add", [Shape.make(F, [2]), Shape.make(F, [2]), Shape.make(DType.half, [2])])
        == "add: input 2 has type half_type, input 0 has float_type"
    )


def test_same_dims_static() -> None:
    same_dims("add", [Shape.make(F, [2, 3]), Shape.make(DType.int32, [2, 3], [1, 2])])
    assert (
        message(same_dims, "add", [Shape.make(F, [2, 3]), Shape.make(F, [2, 3, 1])])
        == "add: input 1 has rank 3, input 0 has rank 2"
    )
    assert (
        message(same_dims, "add", [Shape.make(F, [2, 3, 4]), Shape.make(F, [2, 3, 4]), Shape.make(F, [2, 5, 4])])
        == "add: input 2 has lens {2, 5, 4}, input 0 has {2, 3, 4} (dimension 1: 5 vs 3)"
    )


def test_same_dims_dynamic() -> None:
    a = Shape.dynamic(F, [(1, 4), (3, 3)])
    same_dims("add", [a, Shape.dynamic(F, [(1, 4), (3, 3)])])
    assert (
        message(same_dims, "add", [a, Shape.dynamic(F, [(1, 8), (3, 3)])])
        == "add: input 1 has dimensions different from input 0"
    )
    assert message(same_dims, "add", [Shape.make(F, [1, 3]), a]) == "add: input 1 has dimensions different from input 0"


def test_elementwise_result_same_packed() -> None:
    s = Shape.make(F, [2, 3], [1, 2])
    assert elementwise_result("add", s, s) is s


def test_elementwise_result_takes_the_packed_one() -> None:
    packed = Shape.make(F, [2, 3], [1, 2])
    sliced = Shape.make(F, [2, 3], [6, 1])
    assert elementwise_result("add", packed, sliced) == packed
    assert elementwise_result("add", sliced, packed) == packed


def test_elementwise_result_broadcast_takes_the_other_layout() -> None:
    broadcast = Shape.make(F, [2, 3], [0, 1])
    transposed_slice = Shape.make(F, [2, 3], [1, 4])
    assert elementwise_result("add", broadcast, transposed_slice) == Shape.make(F, [2, 3], [1, 2])
    assert elementwise_result("add", transposed_slice, broadcast) == Shape.make(F, [2, 3], [1, 2])


def test_elementwise_result_both_broadcast() -> None:
    a = Shape.make(F, [2, 3], [0, 1])
    b = Shape.make(F, [2, 3], [1, 0])
    assert elementwise_result("add", a, b) == Shape.make(F, [2, 3])


def test_elementwise_result_dynamic() -> None:
    a = Shape.dynamic(F, [(1, 4), (3, 3)])
    assert elementwise_result("add", a, Shape.dynamic(F, [(1, 4), (3, 3)])) == a
    assert (
        message(elementwise_result, "add", a, Shape.dynamic(F, [(1, 2), (3, 3)]))
        == "add: dynamic inputs must have identical shapes"
    )


def test_unary_result() -> None:
    dynamic = Shape.dynamic(F, [(1, 4)])
    assert unary_result(dynamic) is dynamic
    scalar = Shape.make(F, [2, 3], [0, 0])
    assert unary_result(scalar) is scalar
    assert unary_result(Shape.make(F, [2, 3], [0, 1])) == Shape.make(F, [2, 3])
    assert unary_result(Shape.make(F, [2, 3], [1, 2])) == Shape.make(F, [2, 3], [1, 2])
    assert unary_result(Shape.make(F, [2, 3], [6, 1])) == Shape.make(F, [2, 3])


def test_lens_text_and_unknown_dims() -> None:
    assert lens_text([2, 3, 4]) == "{2, 3, 4}"
    assert lens_text([]) == "{}"
    assert unknown_dims("op", F, 2) == Shape.dynamic(F, [DynamicDimension(0, SIZE_MAX)] * 2)
    assert unknown_dims("op", F, 1, 7) == Shape.dynamic(F, [DynamicDimension(0, 7)])
    assert SIZE_MAX == 2**64 - 1


def test_elementwise_result_two_packed_layouts_take_the_common_order() -> None:
    transposed = Shape.make(F, [2, 3], [1, 2])
    standard = Shape.make(F, [2, 3])
    assert elementwise_result("add", transposed, standard) == standard


def test_elementwise_result_broadcast_with_a_standard_slice() -> None:
    broadcast = Shape.make(F, [2, 3], [0, 1])
    sliced = Shape.make(F, [2, 3], [6, 1])
    assert elementwise_result("add", broadcast, sliced) == Shape.make(F, [2, 3])
    assert elementwise_result("add", sliced, broadcast) == Shape.make(F, [2, 3])


def test_elementwise_result_dynamic_with_static_is_refused() -> None:
    dynamic = Shape.dynamic(F, [(1, 4), (3, 3)])
    static = Shape.make(F, [2, 3])
    assert message(elementwise_result, "add", dynamic, static) == "add: dynamic inputs must have identical shapes"
    assert message(elementwise_result, "add", static, dynamic) == "add: dynamic inputs must have identical shapes"


def test_same_type_compares_with_input_0() -> None:
    assert (
        message(same_type, "add", [Shape.make(F, [2]), Shape.make(DType.half, [2])])
        == "add: input 1 has type half_type, input 0 has float_type"
    )


def test_same_dims_dynamic_ignores_the_type_and_checks_every_input() -> None:
    a = Shape.dynamic(F, [(1, 4), (3, 3)])
    same_dims("where", [a, Shape.dynamic(DType.half, [(1, 4), (3, 3)])])
    assert (
        message(same_dims, "add", [a, a, Shape.dynamic(F, [(2, 4), (3, 3)])])
        == "add: input 2 has dimensions different from input 0"
    )
