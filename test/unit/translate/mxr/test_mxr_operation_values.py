"""Operators in MIGraphX's value form (what .mxr files hold): known operators read their attributes
by kind and refuse wrong values with the attribute's name; operators mgxir does not know keep the
text MIGraphX prints and read it back as values."""

from __future__ import annotations

from typing import Any

import pytest

from mgxir.ir.dtype import DType
from mgxir.ir.shape import Shape
from mgxir.ops import register_all_ops
from mgxir.translate.mxr.values import EMPTY_OBJECT, ValueError_, operation_from_value, operation_to_value

register_all_ops()

READ: list[tuple[str, dict, str, Any]] = [
    # name, fields, printed operator, value written back
    ("pooling", {"mode": "max"}, "pooling[mode=max,", None),
    ("pooling", {"mode": 2}, "pooling[mode=lpnorm,", None),
    ("reshape", {"dims": b"\x02\x03"}, "reshape[dims={2, 3}]", {"dims": [2, 3]}),
    ("transpose", {"dims": [1, 0]}, "transpose[permutation={1, 0}]", {"permutation": [1, 0]}),
    ("dot", {"alpha": 1.0, "beta": 0.0}, "dot", EMPTY_OBJECT),
    ("leaky_relu", {"alpha": 0.5}, "leaky_relu[alpha=0.5]", {"alpha": 0.5}),
    ("quantizelinear", {"out_type": None}, "quantizelinear[out_type=nullopt]", {"out_type": None}),
    ("unknown:Foo", {}, "unknown:Foo", {"op": "Foo"}),
    ("relu", {"nope": 1}, "relu[nope=1]", {"nope": 1}),
]


@pytest.mark.parametrize(("name", "fields", "printed", "value"), READ)
def test_operators_read_from_values(name: str, fields: dict, printed: str, value: Any) -> None:
    op = operation_from_value(name, fields)
    assert repr(op).startswith(f"Operation({printed}")
    if value is not None:
        assert operation_to_value(op) == value


REFUSED: list[tuple[str, dict, str]] = [
    ("pooling", {"mode": "nope"}, "attribute 'mode' of pooling should be one of average, max, lpnorm, got 'nope'"),
    ("pooling", {"mode": 7}, "attribute 'mode' of pooling should be one of average, max, lpnorm, got 7"),
    ("leaky_relu", {"alpha": "x"}, "attribute 'alpha' of leaky_relu should be a number, got the string 'x'"),
    ("softmax", {"axis": [1]}, "attribute 'axis' of softmax should be an integer, got an array"),
    ("pooling", {"lengths": "x"}, "attribute 'lengths' of pooling should be an array, got the string 'x'"),
    ("convert", {"target_type": "nope"}, "attribute 'target_type' of convert: "),
]


@pytest.mark.parametrize(("name", "fields", "message"), REFUSED)
def test_wrong_attribute_values_name_the_attribute(name: str, fields: dict, message: str) -> None:
    with pytest.raises(ValueError_) as raised:
        operation_from_value(name, fields)
    assert str(raised.value).startswith(message), str(raised.value)


def test_an_unknown_operator_prints_as_migraphx_and_reads_back() -> None:
    fields = {
        "a": None,
        "b": True,
        "c": 3,
        "d": 1.5,
        "e": "s",
        "f": b"abc",
        "g": {"type": "float_type", "lens": [2]},
        "h": {"x": 1},
        "i": [1, 2],
        "j": EMPTY_OBJECT,
        "k": {"type": "bogus", "lens": [2]},
        "l": [[1, 2], [3]],
    }
    op = operation_from_value("my_custom_op", fields)
    # MIGraphX prints vectors in braces, objects as {k=v}, shapes as shapes, binary data as its size
    assert op.values == (
        "[a=nullopt,b=1,c=3,d=1.5,e=s,f=3,g=float_type, {2}, {1},h={x=1},i={1, 2},j={},"
        "k={type=bogus,lens={2}},l={{1, 2}, {3}}]",
    )
    value = operation_to_value(op)
    assert value["a"] is None and value["b"] == 1 and value["c"] == 3 and value["d"] == 1.5
    assert value["e"] == "s" and value["f"] == 3 and value["h"] == {"x": 1}
    assert value["i"] == [1, 2] and value["j"] == [] and value["l"] == [[1, 2], [3]]
    assert value["g"]["lens"] == [2] and value["g"]["strides"] == [1]
    assert value["k"] == {"type": "bogus", "lens": [2]}
    assert operation_to_value(operation_from_value("my_op", {})) is EMPTY_OBJECT


def test_a_load_read_from_values_takes_its_instructions_shape() -> None:
    """MIGraphX's load value holds the offset; the .mxr reader completes it with the instruction's shape."""
    op = operation_from_value("load", {"offset": 8})
    shape = Shape.make(DType.float, (2, 3), (1, 2))
    done = op.defn.complete(op, shape)
    assert done.values == (shape, 8)
    assert done.defn.format(done) == "load[offset=8,end=32]"
