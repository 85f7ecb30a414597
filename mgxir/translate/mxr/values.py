"""MIGraphX's `value` model of shapes, literals and operators (what `to_value`/`from_value` give).

A value is a plain Python tree: dict (object), list (array), int, float, str, bool, None, and three
markers the encodings need to tell apart: `Double` (a C++ double, which msgpack stores as an
integer when it is integral), `Binary` (raw bytes) and `EMPTY_OBJECT` (an object without keys,
which msgpack stores as an empty array). Decoded trees may hold plain floats, bytes, chunk lists
and `[]` for an empty object: the readers here accept every form MIGraphX reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mgxir.diagnostics import MgxError, check_allocation
from mgxir.ir.attributes import (
    AttributeError_,
    BoolKind,
    DynamicDimsKind,
    EnumKind,
    FloatKind,
    FloatListKind,
    IntKind,
    IntListKind,
    Kind,
    OptionalKind,
    ShapeKind,
    StringKind,
    TypeKind,
)
from mgxir.ir.dtype import DType
from mgxir.ir.format import ShapeSyntaxError, format_float, format_shape, shape_from_value
from mgxir.ir.literal import Literal
from mgxir.ir.operation import Operation
from mgxir.ir.registry import OperationListKind, lookup, opaque
from mgxir.ir.shape import DynamicDimension, Shape
from mgxir.ir.values import Braces, Brackets, OpNode, Seq
from mgxir.text.syntax import SyntaxProblem, parse_layer2


class Double(float):
    """A C++ double in a value tree."""

    __slots__ = ()


class Binary(bytes):
    """`value::binary`: raw bytes."""

    __slots__ = ()


class _EmptyObject:
    __slots__ = ()

    def __repr__(self) -> str:
        return "EMPTY_OBJECT"


EMPTY_OBJECT = _EmptyObject()


class ValueError_(ValueError):
    """A value tree that does not have the structure MIGraphX writes; the message says where."""


# -- generic access ------------------------------------------------------------------------------


def as_object(v: Any, what: str) -> Mapping[str, Any]:
    """An object; `[]` and EMPTY_OBJECT are the empty object (msgpack writes it as an array)."""
    if isinstance(v, dict):
        return v
    if v is EMPTY_OBJECT or (isinstance(v, list) and not v):
        return {}
    raise ValueError_(f"{what} should be an object, got {_kind_of(v)}")


def as_array(v: Any, what: str) -> list:
    if isinstance(v, list):
        return v
    if isinstance(v, tuple):
        return list(v)
    if v is EMPTY_OBJECT or (isinstance(v, dict) and not v):
        return []
    raise ValueError_(f"{what} should be an array, got {_kind_of(v)}")


def as_int(v: Any, what: str) -> int:
    if isinstance(v, bool | int | np.integer):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    raise ValueError_(f"{what} should be an integer, got {_kind_of(v)}")


def as_str(v: Any, what: str) -> str:
    if isinstance(v, str):
        return v
    raise ValueError_(f"{what} should be a string, got {_kind_of(v)}")


def as_binary(v: Any, what: str) -> bytes:
    """Binary data: bytes, msgpack's array of BIN chunks, or JSON's `{"bytes": [...]}`."""
    if isinstance(v, bytes | bytearray):
        return bytes(v)
    if isinstance(v, list) and all(isinstance(c, bytes | bytearray) for c in v):
        return b"".join(v)
    if isinstance(v, dict) and set(v) == {"bytes"} and isinstance(v["bytes"], list):
        try:
            return bytes(v["bytes"])
        except (TypeError, ValueError):
            raise ValueError_(f"{what}: 'bytes' should hold numbers from 0 to 255") from None
    raise ValueError_(f"{what} should be binary data, got {_kind_of(v)}")


def _kind_of(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | np.integer):
        return f"the integer {v}"
    if isinstance(v, float):
        return f"the number {v}"
    if isinstance(v, str):
        return f"the string {v!r}"
    if isinstance(v, bytes | bytearray):
        return "binary data"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


# -- shapes --------------------------------------------------------------------------------------

_SHAPE_VALUES: dict[Shape, dict] = {}


def shape_to_value(shape: Shape) -> dict:
    """MIGraphX's `migraphx_to_value(shape)`: keys in its order. Cached: shapes are interned."""
    found = _SHAPE_VALUES.get(shape)
    if found is not None:
        return found
    if shape.sub_shapes is not None:
        value = {
            "type": "tuple_type",
            "sub_shapes": [shape_to_value(s) for s in shape.sub_shapes],
            "lens": [],
            "strides": [],
            "dynamic_dimensions": [],
            "dyn_strides": [],
        }
    elif shape.dyn_dims is not None:
        value = {
            "type": shape.dtype.type_name,
            "sub_shapes": [],
            "lens": [],
            "strides": [],
            "dynamic_dimensions": [dynamic_dimension_to_value(d) for d in shape.dyn_dims],
            "dyn_strides": [],
        }
    else:
        value = {
            "type": shape.dtype.type_name,
            "sub_shapes": [],
            "lens": list(shape.lens),
            "strides": list(shape.strides),
            "dynamic_dimensions": [],
            "dyn_strides": [],
        }
    _SHAPE_VALUES[shape] = value
    return value


def dynamic_dimension_to_value(d: DynamicDimension) -> dict:
    return {"range": {"min": d.min, "max": d.max}, "optimals": sorted(d.optimals), "sym": None}


def shape_from_mxr_value(v: Any, what: str = "shape") -> Shape:
    """MIGraphX's `migraphx_from_value(shape)`; also reads a shape object given to the Python API."""
    if isinstance(v, Shape):
        return v
    obj = as_object(v, what)
    type_name = as_str(obj.get("type", "float_type"), f"{what}: 'type'")
    if type_name == "tuple_type":
        subs = as_array(obj.get("sub_shapes", []), f"{what}: 'sub_shapes'")
        return Shape.tuple_of(shape_from_mxr_value(s, f"{what}: sub-shape") for s in subs)
    try:
        dtype = DType.from_name(type_name if type_name.endswith("_type") else type_name + "_type")
    except KeyError:
        raise ValueError_(f"{what}: unknown type '{type_name}'") from None
    dyn = as_array(obj.get("dynamic_dimensions", []), f"{what}: 'dynamic_dimensions'")
    if obj.get("dyn_strides"):
        raise ValueError_(f"{what}: symbolic strides ('dyn_strides') are not supported by mgxir")
    if dyn:
        return Shape.dynamic(dtype, [dynamic_dimension_from_value(d, what) for d in dyn])
    lens = [as_int(x, f"{what}: 'lens'") for x in as_array(obj.get("lens", [1]), f"{what}: 'lens'")]
    strides_v = obj.get("strides")
    if strides_v is None:
        return Shape.make(dtype, lens)
    strides = [as_int(x, f"{what}: 'strides'") for x in as_array(strides_v, f"{what}: 'strides'")]
    if len(strides) != len(lens):
        raise ValueError_(f"{what} has {len(lens)} lens but {len(strides)} strides")
    if any(n < 0 for n in lens) or any(s < 0 for s in strides):
        raise ValueError_(f"{what} has a negative dimension or stride")
    return Shape.make(dtype, lens, strides)


def dynamic_dimension_from_value(v: Any, what: str = "dynamic dimension") -> DynamicDimension:
    """`{range: {min, max}, optimals, sym}` (2.16), `{min, max, optimals}` (older), or a tuple."""
    if isinstance(v, DynamicDimension):
        return v
    if isinstance(v, list | tuple):
        items = list(v)
        if len(items) in (2, 3):
            optimals = tuple(sorted(as_int(x, what) for x in items[2])) if len(items) == 3 else ()
            return DynamicDimension(as_int(items[0], what), as_int(items[1], what), optimals)
        raise ValueError_(f"{what} should be (min, max[, optimals])")
    obj = as_object(v, what)
    if obj.get("sym") is not None:
        raise ValueError_(f"{what}: symbolic dimensions are not supported by mgxir")
    bounds = as_object(obj["range"], f"{what}: 'range'") if "range" in obj else obj
    try:
        lo, hi = as_int(bounds["min"], what), as_int(bounds["max"], what)
    except KeyError as e:
        raise ValueError_(f"{what} has no {e}") from None
    optimals = tuple(sorted(as_int(x, what) for x in as_array(obj.get("optimals", []), what)))
    return DynamicDimension(lo, hi, optimals)


# -- literals ------------------------------------------------------------------------------------


def _byte_strides(shape: Shape, itemsize: int) -> list[int]:
    """numpy's strides of a laid-out shape; a dimension of 1 is never stepped, so its stride is 0
    (the shape's may be past what numpy takes: OverflowError, found by fuzz/run.py on .json)."""
    return [s * itemsize if n > 1 else 0 for n, s in zip(shape.lens, shape.strides)]


def literal_memory_bytes(literal: Literal) -> bytes:
    """The bytes MIGraphX keeps for a literal: `shape.bytes()` of memory laid out by the strides."""
    shape = literal.shape
    bits = shape.dtype.bits_dtype
    data = literal.data
    values = np.zeros(shape.lens, bits) if data is None else np.ascontiguousarray(data).view(bits)
    if not shape.standard and shape.elements:
        memory = np.zeros(shape.element_space, bits)
        view = as_strided(memory, shape=shape.lens, strides=_byte_strides(shape, bits.itemsize))
        view[...] = values
        values = memory
    return values.astype(bits.newbyteorder("<"), copy=False).tobytes()


def literal_to_value(literal: Literal) -> dict:
    value: dict[str, Any] = {"shape": shape_to_value(literal.shape)}
    if literal.shape.elements:
        value["data"] = Binary(literal_memory_bytes(literal))
    return value


def literal_from_value(v: Any, what: str = "literal") -> Literal:
    obj = as_object(v, what)
    if "shape" not in obj:
        raise ValueError_(f"{what} has no 'shape'")
    shape = shape_from_mxr_value(obj["shape"], f"{what}: shape")
    raw = as_binary(obj["data"], f"{what}: data") if "data" in obj else b""
    return Literal(shape, array_from_memory(shape, raw, what))


def array_from_memory(shape: Shape, raw: bytes, what: str = "literal") -> np.ndarray:
    """The logical values of `shape` from its memory bytes (little-endian, laid out by the strides)."""
    if shape.is_tuple or shape.is_dynamic:
        raise ValueError_(f"{what}: a literal must have a static, non-tuple shape")
    dtype = shape.dtype.numpy
    if shape.elements == 0:
        return np.zeros(shape.lens, dtype)
    bits = shape.dtype.bits_dtype
    need = shape.element_space * bits.itemsize
    if len(raw) < need:
        raise ValueError_(f"{what} has {len(raw)} bytes of data; its shape needs {need}")
    # the values are unfolded from the memory (a stride of 0 repeats one value): sizes in Python
    # integers, checked before numpy sees them
    size = shape.elements * bits.itemsize
    if size >= 1 << 63 or any(n >= 1 << 63 for n in shape.lens):
        raise ValueError_(f"{what}: its shape {format_shape(shape)} holds more values than memory can address")
    try:
        check_allocation(size, f"{what} of shape {format_shape(shape)}")
    except MgxError as e:
        raise ValueError_(e.message) from None
    memory = np.frombuffer(raw, bits.newbyteorder("<"), count=shape.element_space).astype(bits)
    view = as_strided(memory, shape=shape.lens, strides=_byte_strides(shape, bits.itemsize))
    return np.array(view).view(dtype)


# -- operator attributes -------------------------------------------------------------------------


def _operations_to_value(kind: Kind, ops: Any) -> list:
    return [{"name": op_name(o), "operator": operation_to_value(o)} for o in ops]


_ENCODE: dict[type[Kind], Callable[[Any, Any], Any]] = {
    IntKind: lambda k, x: int(x),
    BoolKind: lambda k, x: int(bool(x)),  # a C++ bool is serialised as an unsigned integer
    FloatKind: lambda k, x: Double(x),
    StringKind: lambda k, x: str(x),
    IntListKind: lambda k, x: [int(i) for i in x],
    FloatListKind: lambda k, x: [Double(f) for f in x],
    TypeKind: lambda k, x: int(x),
    EnumKind: lambda k, x: int(x),
    OptionalKind: lambda k, x: None if x is None else attribute_to_value(k.inner, x),
    ShapeKind: lambda k, x: shape_to_value(x),
    DynamicDimsKind: lambda k, x: [dynamic_dimension_to_value(d) for d in x],
    OperationListKind: _operations_to_value,
}


def attribute_to_value(kind: Kind, x: Any) -> Any:
    if x is None:  # an attribute mgxir leaves unset (an optional one, or a shape not given yet)
        return None
    encode = _ENCODE.get(type(kind))
    if encode is None:
        # a kind defined by a target (gpu::code_object's binary) gives its own value form
        to_value = getattr(kind, "to_value", None)
        if to_value is None:
            raise TypeError(f"no value form for attributes of kind {type(kind).__name__}")
        return to_value(x)
    return encode(kind, x)


def _number(v: Any, what: str) -> float:
    if isinstance(v, bool | int | float | np.integer | np.floating):
        return float(v)
    raise ValueError_(f"{what} should be a number, got {_kind_of(v)}")


def _operation_from_item(v: Any, what: str) -> Operation:
    if isinstance(v, Operation):
        return v
    if isinstance(v, str):
        return operation_from_value(v, EMPTY_OBJECT)
    obj = as_object(v, what)
    return operation_from_value(as_str(obj.get("name"), f"{what}: 'name'"), obj.get("operator", EMPTY_OBJECT))


_DECODE: dict[type[Kind], Callable[[Any, Any, str], Any]] = {
    IntKind: lambda k, v, w: as_int(v, w),
    BoolKind: lambda k, v, w: bool(as_int(v, w)),
    FloatKind: lambda k, v, w: k.coerce(_number(v, w)),
    StringKind: lambda k, v, w: as_str(v, w),
    IntListKind: lambda k, v, w: tuple(as_int(i, w) for i in _items(v, w)),
    FloatListKind: lambda k, v, w: k.coerce([_number(i, w) for i in _items(v, w)]),
    TypeKind: lambda k, v, w: k.coerce(v if isinstance(v, str) else as_int(v, w)),
    EnumKind: lambda k, v, w: _enum(k, v, w),
    OptionalKind: lambda k, v, w: None if v is None else attribute_from_value(k.inner, v, w),
    ShapeKind: lambda k, v, w: shape_from_mxr_value(v, w),
    DynamicDimsKind: lambda k, v, w: tuple(dynamic_dimension_from_value(d, w) for d in as_array(v, w)),
    OperationListKind: lambda k, v, w: tuple(_operation_from_item(o, w) for o in as_array(v, w)),
}


def _items(v: Any, what: str) -> list:
    """A vector attribute; binary data reads as a vector of bytes, as MIGraphX's from_value does."""
    if isinstance(v, bytes | bytearray):
        return list(v)
    return as_array(v, what)


def _enum(kind: EnumKind, v: Any, what: str) -> int:
    if isinstance(v, str):
        if v not in kind.words:
            raise ValueError_(f"{what} should be {kind.description}, got '{v}'")
        return kind.words.index(v)
    n = as_int(v, what)
    if not 0 <= n < len(kind.words):
        raise ValueError_(f"{what} should be {kind.description}, got {n}")
    return n


def attribute_from_value(kind: Kind, v: Any, what: str, target_entry: Mapping[str, Any] | None = None) -> Any:
    """`target_entry`: the file's `targets` entry of the operator's target (a kind defined by a
    target reads its metadata there)."""
    decode = _DECODE.get(type(kind))
    if decode is None:
        from_value = getattr(kind, "from_value", None)
        if from_value is None:
            raise TypeError(f"no value form for attributes of kind {type(kind).__name__}")
        decode = lambda k, v, w: from_value(v, w, target_entry)  # noqa: E731
    if v is None and isinstance(kind, ShapeKind):
        return None
    try:
        return decode(kind, v, what)
    except (TypeError, ValueError, KeyError, AttributeError_) as e:
        if isinstance(e, ValueError_):
            raise
        raise ValueError_(f"{what}: {e}") from None


_OPERATOR_VALUES: dict[Operation, Any] = {}
_NAMED_VALUES: dict[Operation, tuple[str, Any]] = {}


def op_name(op: Operation) -> str:
    """The name MIGraphX gives the operator (`unknown:Foo`, `ref::add`, `gpu::code_object`)."""
    text = op.text
    cut = text.find("[")
    return text if cut < 0 else text[:cut]


def named_operation_value(op: Operation) -> tuple[str, Any]:
    """The operator's name and value, as a node of a saved program holds them."""
    found = _NAMED_VALUES.get(op)
    if found is None:
        found = _NAMED_VALUES[op] = (op_name(op), operation_to_value(op))
    return found


def operation_to_value(op: Operation) -> Any:
    """`op.to_value()`: every attribute in declaration order; EMPTY_OBJECT when there are none."""
    found = _OPERATOR_VALUES.get(op)
    if found is not None:
        return found
    defn = op.defn
    if defn.is_opaque:
        value = _opaque_to_value(op)
    elif defn.name == "unknown:":
        value = {"op": op["op"]}
    elif not defn.attributes:
        value = EMPTY_OBJECT
    else:
        value = {a.name: attribute_to_value(a.kind, x) for a, x in zip(defn.attributes, op.values)}
    _OPERATOR_VALUES[op] = value
    return value


def operation_from_value(
    name: str, fields: Any, what: str | None = None, targets: Mapping[str, Mapping[str, Any]] | None = None
) -> Operation:
    """`make_op(name, fields)`. Unknown operators and attributes give an opaque operation that
    prints as MIGraphX would (see `opaque_attribute_text`); raises ValueError_ on a bad value.
    `targets`: the file's target entries by name, for a target's operator (`gpu::...`) whose
    attributes read their metadata there."""
    what = what or f"operator '{name}'"
    values = as_object(fields, what)
    defn = lookup(name)
    if defn is None or defn.is_builtin or defn.is_opaque:
        return opaque(name).make_raw(opaque_attribute_text(values))
    if defn.name == "unknown:":
        return defn.make(op=name.removeprefix("unknown:"))
    out = list(defn.defaults)
    target_entry = (targets or {}).get(name.partition("::")[0]) if "::" in name else None
    for key, v in values.items():
        if key in defn.legacy_attributes:
            renamed = defn.legacy_attributes[key]
            if renamed is None:
                continue
            key = renamed
        i = defn.attribute_index.get(key)
        if i is None:
            return opaque(name).make_raw(opaque_attribute_text(values))
        attr = defn.attributes[i]
        out[i] = attribute_from_value(attr.kind, v, f"attribute '{key}' of {name}", target_entry)
    return Operation(defn, tuple(out))


# -- operators mgxir does not know: printed text <-> value ---------------------------------------


def opaque_attribute_text(values: Mapping[str, Any]) -> str:
    """`[k=v,...]` as MIGraphX prints an operator's value: vectors in braces, objects as
    `{k=v,...}`, shapes as shapes, binary data as its size."""
    if not values:
        return ""
    return "[" + ",".join(f"{k}={_value_text(v)}" for k, v in values.items()) + "]"


def _value_text(v: Any) -> str:
    if v is None:
        return "nullopt"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, str):
        return v
    if isinstance(v, bytes | bytearray) or (isinstance(v, list) and v and isinstance(v[0], bytes)):
        return str(len(as_binary(v, "binary data")))
    if isinstance(v, dict) and "type" in v and ("lens" in v or "sub_shapes" in v):
        try:
            return format_shape(shape_from_mxr_value(v))
        except ValueError_:
            pass
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}={_value_text(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list | tuple):
        return "{" + ", ".join(_value_text(x) for x in v) + "}"
    if v is EMPTY_OBJECT:
        return "{}"
    return str(v)


def _opaque_to_value(op: Operation) -> Any:
    """The value of an operator mgxir kept as printed text: its attributes read back as numbers,
    strings, vectors, objects and shapes (the printed text does not say more)."""
    raw = op.values[0] if op.values else ""
    if not raw:
        return EMPTY_OBJECT
    try:
        node = parse_layer2(op.defn.name + raw, "op_text", "the operator")
    except SyntaxProblem:
        return EMPTY_OBJECT
    if not isinstance(node, OpNode) or not node.attributes:
        return EMPTY_OBJECT
    return {key: _text_value(v) for key, v in node.attributes}


def _text_value(v: Any) -> Any:
    if isinstance(v, str):
        if v == "nullopt":
            return None
        for convert in (int, Double):
            try:
                return convert(v)
            except ValueError:
                pass
        return v
    if isinstance(v, Seq | Brackets):
        try:
            return shape_to_value(shape_from_value(v))
        except ShapeSyntaxError:
            return [_text_value(x) for x in v.items]
    if isinstance(v, Braces):
        return [_text_value(x) for x in v.items]
    if isinstance(v, dict):
        return {k: _text_value(x) for k, x in v.items()}
    if isinstance(v, OpNode):
        return {"name": v.name, "operator": {k: _text_value(x) for k, x in v.attributes} or EMPTY_OBJECT}
    return str(v)
