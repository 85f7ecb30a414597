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
from mgxir.passes.matchers import has_value, is_broadcast, is_reduction


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
