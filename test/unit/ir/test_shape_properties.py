"""Shape properties on tuple, dynamic and rank-0 shapes, as MIGraphX's shape answers them
(src/shape.cpp): a tuple's bytes are its elements' bytes, a range-dynamic shape is neither
transposed nor scalar and stays as it is under as_standard, with_type keeps its ranges."""

from __future__ import annotations

import pytest

from mgxir import DType, Shape
from mgxir.ir.shape import DynamicDimension as D

F23 = Shape.make(DType.float, (2, 3))
H4 = Shape.make(DType.half, (4,))
DYN = Shape.dynamic(DType.float, [D(1, 4), D(3, 3)])


def test_tuple_shape() -> None:
    pair = Shape.tuple_of([F23, H4])
    assert pair.bytes == 6 * 4 + 4 * 2
    assert not pair.transposed and not pair.scalar
    assert pair.as_standard() is pair


def test_dynamic_shape() -> None:
    assert not DYN.transposed and not DYN.scalar
    assert DYN.as_standard() is DYN
    assert DYN.with_type(DType.half) == Shape.dynamic(DType.half, [D(1, 4), D(3, 3)])
    assert DYN.type_name == "float_type"


def test_rank_zero_and_strides() -> None:
    scalar = Shape.make(DType.float, ())
    assert scalar.element_space == 0 and scalar.elements == 0  # compute_elements of no dims is 0
    with pytest.raises(ValueError, match=r"^shape has 2 lens but 1 strides$"):
        Shape.make(DType.float, (2, 3), (1,))
    assert F23 != "float_type, {2, 3}"
    assert repr(F23) == "Shape(float_type, {2, 3}, {3, 1})"
