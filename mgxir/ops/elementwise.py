"""Elementwise operators: one table row each (name, reference compute, flags)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from mgxir.ir.attributes import FLOAT, TYPE, Attr, OptionalKind
from mgxir.ir.dtype import DType
from mgxir.ir.operation import ComputeError, OpDef, Operation, RunModule
from mgxir.ir.registry import register
from mgxir.ir.shape import Shape
from mgxir.ir.traits import FoldsWithItsInput, NopWhenShapeKept, ValueTransparent, ZeroPointed
from mgxir.ops.common import elementwise_result, fail, require_static, same_dims, same_type, unary_result

if TYPE_CHECKING:
    from mgxir.ir.module import Module

Arrays = list[np.ndarray]
Shapes = Sequence[Shape]
Modules = Sequence["Module"]


# numpy computes these dtypes natively; others (bf16, fp8) are computed in float32 and rounded back
NATIVE_FLOATS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))


def _apply(fn: Callable[..., np.ndarray], out_dtype: np.dtype, *xs: np.ndarray) -> np.ndarray:
    """`fn` on arrays of any MIGraphX type, the result in `out_dtype` (the shape rule's type)."""
    if xs[0].dtype.kind == "V" or xs[0].dtype.name.startswith(("float8", "bfloat")):
        xs = tuple(x.astype(np.float32) for x in xs)
    result = np.asarray(fn(*xs))
    return result if result.dtype == out_dtype else result.astype(out_dtype)


class _TableOp(OpDef):
    """An elementwise op whose compute is one numpy function applied with MIGraphX's result type."""

    fn: ClassVar[Callable[..., np.ndarray]]

    def function(self, op: Operation) -> Callable[..., np.ndarray]:
        """The numpy function for this operation's attribute values."""
        return self.fn

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        out = self.shape(op, [_runtime_shape(x) for x in inputs], modules)
        return _apply(self.function(op), out.dtype.numpy, *inputs)

    def kernel(self, op: Operation, inputs: Shapes, modules: Modules, run_module: RunModule) -> Callable:
        out_dtype = self.shape(op, inputs, modules).dtype.numpy
        fn = self.function(op)
        native = out_dtype in NATIVE_FLOATS and all(s.dtype.numpy == out_dtype for s in inputs)
        if native and _keeps_dtype(fn, out_dtype, len(inputs)):
            return fn
        return lambda *xs: _apply(fn, out_dtype, *xs)


def _keeps_dtype(fn: Callable[..., np.ndarray], dtype: np.dtype, arity: int) -> bool:
    with np.errstate(all="ignore"):
        probe = fn(*[np.ones(2, dtype)] * arity)
    return isinstance(probe, np.ndarray) and probe.dtype == dtype and probe.shape == (2,)


def _runtime_shape(x: np.ndarray) -> Shape:
    try:
        dtype = DType.from_numpy(x.dtype)
    except KeyError:
        raise ComputeError(f"values of type {x.dtype} have no MIGraphX element type") from None
    return Shape.make(dtype, x.shape or (1,))


class Unary(_TableOp):
    arity = (1, 1)
    pointwise = True
    result_type: ClassVar[DType | None] = None

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        s = unary_result(inputs[0])
        return s if self.result_type is None else s.with_type(self.result_type)


class Binary(_TableOp):
    arity = (2, 2)
    pointwise = True

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        same_type(self.name, inputs)
        same_dims(self.name, inputs)
        return elementwise_result(self.name, inputs[0], inputs[1])


def _define(base: type[OpDef], name: str, fn: Callable, **flags: object) -> None:
    register(type(name.title().replace("_", ""), (base,), {"name": name, "fn": staticmethod(fn), **flags}))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(x.dtype) if x.size else x.copy()


def _truncating_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C division: floats divide, integers truncate toward zero."""
    if a.dtype.kind in "iub":
        with np.errstate(all="ignore"):
            q = np.floor_divide(a, b)
            r = np.remainder(a, b)
        return np.where((r != 0) & ((a < 0) != (b < 0)), q + 1, q).astype(a.dtype)
    return np.divide(a, b)


def _c_remainder(x: float, y: float) -> float:
    """C's remainder: NaN where Python's math.remainder raises (y = 0, x infinite)."""
    if y == 0 or math.isinf(x) or math.isnan(x) or math.isnan(y):
        return math.nan
    return math.remainder(x, y)


_ieee_remainder = np.vectorize(_c_remainder, otypes=[np.float64])


def _migraphx_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """MIGraphX's mod: fmod(remainder(a, b) + b, b) with C's remainder (the quotient rounded to
    nearest, not floored); integers go through double as std::remainder takes them."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    out_type = np.result_type(a, b)
    if a.size == 0:
        return np.zeros(a.shape, out_type)
    with np.errstate(all="ignore"):
        if np.issubdtype(out_type, np.integer) or out_type == np.bool_:
            x, y = a.astype(np.float64), b.astype(np.float64)
            r = np.fmod(_ieee_remainder(x, y) + y, y)
            return np.where(y == 0, 0, np.nan_to_num(r)).astype(out_type)
        r = _ieee_remainder(a.astype(np.float64), b.astype(np.float64)).astype(out_type)
        return np.fmod(r + b.astype(out_type), b.astype(out_type)).astype(out_type)


def _sign(x: np.ndarray) -> np.ndarray:
    return np.sign(x)


def _not(x: np.ndarray) -> np.ndarray:
    return x == 0


UNARY: dict[str, Callable] = {
    "abs": np.abs,
    "acos": np.arccos,
    "acosh": np.arccosh,
    "asin": np.arcsin,
    "asinh": np.arcsinh,
    "atan": np.arctan,
    "atanh": np.arctanh,
    "ceil": np.ceil,
    "cos": np.cos,
    "cosh": np.cosh,
    "erf": _erf,
    "exp": np.exp,
    "floor": np.floor,
    "log": np.log,
    "log2": np.log2,
    "nearbyint": np.rint,  # rounds half to even, as std::nearbyint in the default rounding mode
    "neg": np.negative,
    "not": _not,
    "recip": np.reciprocal,
    "relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "sigmoid": _sigmoid,
    "sign": _sign,
    "sin": np.sin,
    "sinh": np.sinh,
    "sqrt": np.sqrt,
    "tan": np.tan,
    "tanh": np.tanh,
}

# elementwise tests whose result is bool_type whatever the input type
UNARY_PREDICATES: dict[str, Callable] = {
    "isinf": np.isinf,
    "isnan": np.isnan,
}

BINARY: dict[str, tuple[Callable, bool]] = {
    # name: (compute, commutative)
    "add": (np.add, True),
    "sub": (np.subtract, False),
    "mul": (np.multiply, True),
    "div": (_truncating_divide, False),
    "pow": (np.power, False),
    "max": (np.maximum, True),
    "min": (np.minimum, True),
    "mod": (_migraphx_mod, False),
    "fmod": (np.fmod, False),
    "sqdiff": (lambda a, b: (a - b) * (a - b), True),
    "prelu": (lambda x, s: np.where(x < 0, x * s, x), False),
    # comparisons and logic return the input type (MIGraphX's binary shape rule)
    "equal": (np.equal, True),
    "greater": (np.greater, False),
    "less": (np.less, False),
    "logical_and": (np.logical_and, True),
    "logical_or": (np.logical_or, True),
    "logical_xor": (np.logical_xor, True),
    "bitwise_and": (np.bitwise_and, True),
}

for _name, _fn in UNARY.items():
    _define(Unary, _name, _fn)
for _name, _fn in UNARY_PREDICATES.items():
    _define(Unary, _name, _fn, result_type=DType.bool)
for _name, (_fn, _comm) in BINARY.items():
    _define(Binary, _name, _fn, commutative=_comm)


@register
class LeakyRelu(Unary):
    name = "leaky_relu"
    attributes = (Attr("alpha", FLOAT, 0.01),)

    def function(self, op: Operation) -> Callable[..., np.ndarray]:
        alpha = op["alpha"]
        return lambda x: np.where(x < 0, x * x.dtype.type(alpha), x)


@register
class Elu(Unary):
    name = "elu"
    attributes = (Attr("alpha", FLOAT, 1.0),)

    def function(self, op: Operation) -> Callable[..., np.ndarray]:
        alpha = op["alpha"]
        return lambda x: np.where(x < 0, x.dtype.type(alpha) * np.expm1(x), x)


def convert_values(x: np.ndarray, target: DType) -> np.ndarray:
    """MIGraphX's convert: NaN stays NaN (0 for integers), finite values saturate to the target's
    range, floats truncate toward zero into integers; bool is `x >= 1 or 0 < x < 1`, i.e. x > 0."""
    want = target.numpy
    if x.dtype == want:
        return x.copy()
    if target is DType.bool:
        return np.asarray(x.astype(np.float64) > 0) if x.dtype.kind != "b" else x.copy()
    if x.dtype.kind in "iub" and want.kind in "iu":
        info = np.iinfo(want)
        wide = x.astype(np.int64) if x.dtype != np.uint64 else x
        return np.clip(wide, max(info.min, np.iinfo(wide.dtype).min), info.max).astype(want)
    dx = x.astype(np.float64)
    if want.kind in "iu":
        info = np.iinfo(want)
        nan = np.isnan(dx)
        with np.errstate(invalid="ignore"):
            out = np.where(dx >= float(info.max), info.max, np.where(dx <= float(info.min), info.min, 0))
            inside = ~nan & (dx < float(info.max)) & (dx > float(info.min))
            out = np.where(inside, np.trunc(np.where(inside, dx, 0)), out)
        return np.where(nan, 0, out).astype(want)
    if want.kind == "b":
        return dx > 0
    finfo = _float_range(target)
    finite = np.isfinite(dx)
    clipped = np.where(finite, np.clip(dx, -finfo, finfo), dx)
    return clipped.astype(want)


def _float_range(t: DType) -> float:
    import ml_dtypes

    return float(ml_dtypes.finfo(t.numpy).max)


@register
class Convert(Unary):
    name = "convert"
    traits = (NopWhenShapeKept, ValueTransparent)
    attributes = (Attr("target_type", TYPE, DType.half),)

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        # MIGraphX keeps the input's lens and strides as they are, broadcast strides included
        return inputs[0].with_type(op["target_type"])

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        return convert_values(inputs[0], op["target_type"])

    def kernel(self, op: Operation, inputs: Shapes, modules: Modules, run_module: RunModule) -> Callable:
        target = op["target_type"]
        return lambda x: convert_values(x, target)


@register
class BitCast(Unary):
    name = "bit_cast"
    attributes = (Attr("target_type", TYPE, DType.half),)

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        s = unary_result(inputs[0])
        if s.dtype.itemsize != op["target_type"].itemsize:
            raise fail(self.name, f"{s.dtype.type_name} and {op['target_type'].type_name} differ in size")
        return s.with_type(op["target_type"])

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        return np.ascontiguousarray(inputs[0]).view(op["target_type"].numpy)

    def kernel(self, op: Operation, inputs: Shapes, modules: Modules, run_module: RunModule) -> Callable:
        want = op["target_type"].numpy
        return lambda x: np.ascontiguousarray(x).view(want)


@register
class Clip(OpDef):
    name = "clip"
    arity = (3, 3)
    pointwise = True

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        same_type(self.name, inputs)
        same_dims(self.name, inputs)
        return inputs[0]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x, lo, hi = inputs
        return _apply(lambda a, b, c: np.minimum(np.maximum(a, b), c), x.dtype, x, lo, hi)


@register
class Where(OpDef):
    name = "where"
    arity = (3, 3)
    pointwise = True

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        cond, s1, s2 = inputs
        if not cond.is_dynamic and cond.elements == 1:
            same_dims(self.name, [s1, s2])
        else:
            same_dims(self.name, inputs)
        if s1.is_dynamic or s2.is_dynamic:
            if s1 == s2:
                return s1
            raise fail(self.name, "dynamic input shapes must be the same")
        require_static(self.name, s1, s2)
        if s1 == s2 and s1.packed:
            return s1
        if s1.packed != s2.packed:
            return s1 if s1.packed else s2
        if s1.broadcasted != s2.broadcasted:
            return s2.with_lens(s1.lens) if s1.broadcasted else s1.with_lens(s1.lens)
        return Shape.make(s1.dtype, s1.lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        cond, a, b = inputs
        if cond.size == 1:
            cond = cond.reshape(())
        return np.where(cond.astype(bool), a, b)


def _in_layout(x: Shape, dtype: DType) -> Shape:
    """MIGraphX's with_lens: the input's lens, packed in the input's axis order."""
    if x.is_dynamic:
        return x.with_type(dtype)
    return x.with_lens(x.lens, dtype)


@register
class Quantizelinear(OpDef):
    name = "quantizelinear"
    traits = (ZeroPointed,)
    attributes = (Attr("out_type", OptionalKind(TYPE), None),)
    arity = (2, 3)
    pointwise = True

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        same_dims(self.name, inputs)
        x = inputs[0]
        if x.dtype != inputs[1].dtype:
            raise fail(self.name, "Scales and input must be the same type")
        return _in_layout(x, self._out_type(op, inputs[2].dtype if len(inputs) == 3 else None))

    @staticmethod
    def _out_type(op: Operation, zero_point: DType | None) -> DType:
        if zero_point is not None:
            return zero_point
        return op["out_type"] if op["out_type"] is not None else DType.uint8

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        # scale and zero point broadcast as numpy's do: inside a pointwise body they are scalars
        out = self._out_type(op, _runtime_shape(inputs[2]).dtype if len(inputs) == 3 else None)
        x, scale = inputs[0], inputs[1]
        if out.is_float:
            # a float result (MX types: rounded later by pack_fp4) is x / scale unrounded, in double
            q = x.astype(np.float64) / scale.astype(np.float64)
        else:
            # x / scale in x's own type, then rounded half to even: a quotient that is a tie only in
            # float rounds as MIGraphX's does
            with np.errstate(divide="ignore", invalid="ignore"):
                q = np.rint(np.true_divide(x, scale.astype(x.dtype))).astype(np.float64)
        if len(inputs) == 3:
            q = q + inputs[2].astype(np.float64)
        if out.is_float:
            return convert_values(q, out)
        info = np.iinfo(out.numpy)
        return np.clip(q, info.min, info.max).astype(out.numpy)


@register
class Dequantizelinear(OpDef):
    name = "dequantizelinear"
    traits = (ZeroPointed, FoldsWithItsInput)
    arity = (2, 3)
    pointwise = True

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        same_dims(self.name, inputs)
        if len(inputs) == 3 and inputs[0].dtype != inputs[2].dtype:
            raise fail(self.name, "Zero point and input should be the same type.")
        return _in_layout(inputs[0], inputs[1].dtype)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x = inputs[0].astype(np.float64)
        if len(inputs) == 3:
            x = x - inputs[2].astype(np.float64)
        return (x * inputs[1].astype(np.float64)).astype(inputs[1].dtype)
