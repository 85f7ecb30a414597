"""How MIGraphX writes numbers and shapes, and how shapes are read back from value trees."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.shape import DynamicDimension, Shape, format_dynamic_dimension, format_shape
from mgxir.ir.values import Braces, Brackets, Seq, Value, atoms_of


def format_float(x: float) -> str:
    """C++ `os << x` with the default precision: `%g` with 6 significant digits, `-nan` kept."""
    if x != x:
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return "%g" % x  # noqa: UP031 (printf %g is exactly what C++ streams print)


def format_float32_exact(x: float) -> str:
    """A float32 value as `format_float` prints it where that text reads back as the same float32,
    else the shortest text that does (numpy's): for the lossless text form."""
    text = format_float(x)
    value = np.float32(x)
    if np.float32(float(text)).view(np.uint32) == value.view(np.uint32):
        return text
    return str(value)


def format_shape_lossless(shape: Shape) -> str:
    """Like format_shape, but dynamic dimensions keep their optimal sizes."""
    if shape.sub_shapes is not None:
        return "[" + ", ".join(format_shape_lossless(s) for s in shape.sub_shapes) + "]"
    if shape.dyn_dims is not None and any(d.optimals for d in shape.dyn_dims):
        dims = ", ".join(format_dynamic_dimension(d, keep_optimals=True) for d in shape.dyn_dims)
        return f"dynamic, {shape.dtype.type_name}, {{{dims}}}"
    return format_shape(shape)


class ShapeSyntaxError(ValueError):
    pass


def _int(text: object) -> int:
    if not isinstance(text, str):
        raise ShapeSyntaxError(f"expected an integer, got {_describe(text)}")
    try:
        return int(text)
    except ValueError:
        raise ShapeSyntaxError(f"expected an integer, got '{text}'") from None


def _describe(v: object) -> str:
    if isinstance(v, Braces):
        return "'{...}'"
    if isinstance(v, Brackets):
        return "'[...]'"
    return repr(v)


def _dtype(text: object) -> DType:
    if isinstance(text, str):
        try:
            return DType.from_name(text)
        except KeyError:
            pass
    raise ShapeSyntaxError(f"expected a type name such as float_type, got {_describe(text)}")


def read_dynamic_dimension(v: Value) -> DynamicDimension:
    if isinstance(v, str):
        if ".." in v:
            lo, _, hi = v.partition("..")
            return DynamicDimension(_int(lo), _int(hi))
        n = _int(v)
        return DynamicDimension(n, n)
    if isinstance(v, Brackets):
        items = v.items
        if len(items) == 1 and isinstance(items[0], str) and ".." in items[0]:
            return read_dynamic_dimension(items[0])
        if len(items) in (2, 3):
            opt = tuple(_int(x) for x in atoms_of(items[2])) if len(items) == 3 else ()
            return DynamicDimension(_int(items[0]), _int(items[1]), opt)
    raise ShapeSyntaxError(f"expected a dynamic dimension ('[min..max]' or a number), got {_describe(v)}")


def shape_from_items(items: Sequence[Value]) -> Shape:
    """Reads one shape from a value sequence (`float_type, {2}, {1}`, `dynamic, ...`, or `[...]`)."""
    shapes, rest = _take_shape(list(items), 0)
    if rest != len(items):
        raise ShapeSyntaxError(f"unexpected {_describe(items[rest])} after the shape")
    return shapes


def shape_from_value(v: Value) -> Shape:
    return shape_from_items(v.items if isinstance(v, Seq) else (v,))


def _take_shape(items: list[Value], i: int) -> tuple[Shape, int]:
    if i >= len(items):
        raise ShapeSyntaxError("expected a shape")
    head = items[i]
    if isinstance(head, Brackets):
        subs: list[Shape] = []
        inner = list(head.items)
        j = 0
        while j < len(inner):
            s, j = _take_shape(inner, j)
            subs.append(s)
        return Shape.tuple_of(subs), i + 1
    if head == "dynamic":
        dtype = _dtype(items[i + 1] if i + 1 < len(items) else None)
        dims = items[i + 2] if i + 2 < len(items) else None
        if not isinstance(dims, Braces):
            raise ShapeSyntaxError("expected '{' with the dynamic dimensions")
        return Shape.dynamic(dtype, [read_dynamic_dimension(d) for d in dims.items]), i + 3
    dtype = _dtype(head)
    if i + 1 >= len(items):
        # MIGraphX's scalar constructor: a type alone is lens {1}, strides {0}
        return Shape.scalar_of(dtype), i + 1
    lens_v = items[i + 1]
    if not isinstance(lens_v, Braces):
        raise ShapeSyntaxError(f"expected '{{lens}}' after {head}, got {_describe(lens_v)}")
    if any(isinstance(x, Brackets) for x in lens_v.items):
        # an old dynamic shape printed without the `dynamic, ` prefix
        return Shape.dynamic(dtype, [read_dynamic_dimension(d) for d in lens_v.items]), i + 2
    lens = [_int(x) for x in lens_v.items]
    if any(n < 0 for n in lens):
        raise ShapeSyntaxError(f"dimension {min(lens)} is negative: MIGraphX's dimensions are unsigned")
    strides_v = items[i + 2] if i + 2 < len(items) else None
    if isinstance(strides_v, Braces):
        strides = [_int(x) for x in strides_v.items]
        if any(n < 0 for n in strides):
            raise ShapeSyntaxError(f"stride {min(strides)} is negative: MIGraphX's strides are unsigned")
        if len(strides) != len(lens):
            raise ShapeSyntaxError(f"shape has {len(lens)} lens but {len(strides)} strides")
        return Shape.make(dtype, lens, strides), i + 3
    return Shape.make(dtype, lens), i + 2
