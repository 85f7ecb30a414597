"""Reading MIGraphX's value trees (.mxr files, the Python API's shapes): each form MIGraphX writes
reads back, and a tree of the wrong structure is one ValueError_ that says where."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from mgxir import DType, Shape
from mgxir.ir.literal import Literal
from mgxir.ir.shape import DynamicDimension
from mgxir.translate.mxr.values import (
    EMPTY_OBJECT,
    ValueError_,
    array_from_memory,
    as_array,
    as_binary,
    as_int,
    as_object,
    as_str,
    dynamic_dimension_from_value,
    literal_from_value,
    literal_to_value,
    shape_from_mxr_value,
    shape_to_value,
)

FLOAT_2x3 = Shape.make(DType.float, (2, 3))

READ_BACK: list[tuple[Callable[..., Any], Any, Any]] = [
    (as_object, EMPTY_OBJECT, {}),
    (as_object, [], {}),
    (as_array, (1, 2), [1, 2]),
    (as_array, EMPTY_OBJECT, []),
    (as_array, {}, []),
    (as_int, 3.0, 3),
    (as_int, np.int64(7), 7),
    (as_binary, [b"ab", b"c"], b"abc"),
    (as_binary, {"bytes": [1, 2]}, b"\x01\x02"),
    (shape_from_mxr_value, {"type": "half", "lens": [4]}, Shape.make(DType.half, (4,))),
    (shape_from_mxr_value, {"lens": [2, 3], "strides": [1, 2]}, Shape.make(DType.float, (2, 3), (1, 2))),
    (
        shape_from_mxr_value,
        {"type": "tuple_type", "sub_shapes": [{"lens": [2, 3]}, {"type": "int32_type", "lens": [1]}]},
        Shape.tuple_of([FLOAT_2x3, Shape.make(DType.int32, (1,))]),
    ),
    (
        shape_from_mxr_value,
        {"type": "float_type", "dynamic_dimensions": [{"min": 1, "max": 4, "optimals": [2]}]},
        Shape.dynamic(DType.float, [DynamicDimension(1, 4, (2,))]),
    ),
    (dynamic_dimension_from_value, (1, 8), DynamicDimension(1, 8, ())),
    (dynamic_dimension_from_value, [1, 8, [4, 2]], DynamicDimension(1, 8, (2, 4))),
    (dynamic_dimension_from_value, {"range": {"min": 2, "max": 3}, "sym": None}, DynamicDimension(2, 3, ())),
]


@pytest.mark.parametrize(("read", "value", "expected"), READ_BACK)
def test_forms_migraphx_writes_read_back(read: Callable[..., Any], value: Any, expected: Any) -> None:
    assert read(value, "x") == expected


REFUSED: list[tuple[Callable[..., Any], Any, str]] = [
    (as_object, 3, "x should be an object, got the integer 3"),
    (as_array, "s", "x should be an array, got the string 's'"),
    (as_int, 1.5, "x should be an integer, got the number 1.5"),
    (as_int, None, "x should be an integer, got null"),
    (as_str, [1], "x should be a string, got an array"),
    (as_str, {"a": 1}, "x should be a string, got an object"),
    (as_str, True, "x should be a string, got a boolean"),
    (as_binary, b"ok" and 5, "x should be binary data, got the integer 5"),
    (as_binary, {"bytes": [256]}, "x: 'bytes' should hold numbers from 0 to 255"),
    (as_int, b"\x00", "x should be an integer, got binary data"),
    (shape_from_mxr_value, {"type": "quux_type"}, "x: unknown type 'quux_type'"),
    (shape_from_mxr_value, {"lens": [2], "dyn_strides": [{}]}, "x: symbolic strides ('dyn_strides')"),
    (shape_from_mxr_value, {"lens": [2, 3], "strides": [1]}, "x has 2 lens but 1 strides"),
    (shape_from_mxr_value, {"lens": [-2], "strides": [1]}, "x has a negative dimension or stride"),
    (shape_from_mxr_value, {"lens": ["2"]}, "x: 'lens' should be an integer, got the string '2'"),
    (dynamic_dimension_from_value, [1], "x should be (min, max[, optimals])"),
    (dynamic_dimension_from_value, {"min": 1, "max": 2, "sym": "n"}, "x: symbolic dimensions are not supported"),
    (dynamic_dimension_from_value, {"min": 1}, "x has no 'max'"),
    (literal_from_value, {"data": b""}, "x has no 'shape'"),
    (literal_from_value, {"shape": {"lens": [4]}, "data": b"\x00" * 8}, "x has 8 bytes of data; its shape needs 16"),
]


@pytest.mark.parametrize(("read", "value", "message"), REFUSED)
def test_wrong_structures_say_where(read: Callable[..., Any], value: Any, message: str) -> None:
    with pytest.raises(ValueError_) as raised:
        read(value, "x")
    assert str(raised.value).startswith(message), str(raised.value)


def test_literals_round_trip_through_memory_bytes() -> None:
    for shape in (FLOAT_2x3, Shape.make(DType.float, (2, 3), (1, 2)), Shape.make(DType.int8, (0, 3))):
        data = np.arange(shape.elements, dtype=shape.dtype.numpy).reshape(shape.lens)
        back = literal_from_value(literal_to_value(Literal(shape, data)))
        assert back.shape == shape and np.array_equal(back.data, data)
    assert shape_from_mxr_value(shape_to_value(FLOAT_2x3)) == FLOAT_2x3


def test_memory_of_a_tuple_or_dynamic_shape_is_refused() -> None:
    dynamic = Shape.dynamic(DType.float, [DynamicDimension(1, 4, ())])
    for shape in (Shape.tuple_of([FLOAT_2x3]), dynamic):
        with pytest.raises(ValueError_, match="a literal must have a static, non-tuple shape"):
            array_from_memory(shape, b"")
