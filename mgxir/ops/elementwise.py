"""Elementwise operators: one table row each (name, reference compute, flags)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from mgxir.ir.attributes import FLOAT, TYPE, Attr, OptionalKind
from mgxir.ir.dtype import DType
from mgxir.ir.operation import ComputeError, OpDef, Operation, RunModule
from mgxir.ir.registry import register
from mgxir.ir.shape import Shape
from mgxir.ir.traits import FoldsWithItsInput, NopWhenShapeKept, ValueTransparent, ZeroPointed
from mgxir.ops.common import elementwise_result, fail, require_static, same_dims, same_type, unary_result
from mgxir.ops.scalar import (
    Emitter,
    MathFunction,
    NoScalarMeaning,
    compute_type,
    guarded_division,
    integer_limits,
    numpy_float_type,
    require_numeric,
    saturating_convert,
    truthy,
)

if TYPE_CHECKING:
    from mgxir.ir.module import Module

Arrays = list[np.ndarray]
Shapes = Sequence[Shape]
Modules = Sequence["Module"]
# a scalar meaning (mgxir/ops/scalar.py): (emitter, operation, operand values, result type) -> value
Scalar = Callable[[Emitter[Any], Operation, Sequence[Any], DType], Any]


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


def _require_integers(name: str, s: Shape) -> None:
    if not s.dtype.is_integral or s.dtype is DType.bool:
        raise fail(name, f"takes integers, not {s.dtype.type_name}")


class IntegerBinary(Binary):
    """A binary operator of integers (mgxir's additions for ONNX's bit operators)."""

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        _require_integers(self.name, inputs[0])
        return super().shape(op, inputs, modules)


class IntegerUnary(Unary):
    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        _require_integers(self.name, inputs[0])
        return super().shape(op, inputs, modules)


def _define(base: type[OpDef], name: str, fn: Callable, point: Scalar, **flags: object) -> None:
    """Registers a table row: its reference compute `fn` and its scalar meaning `point`."""

    def scalar(self: OpDef, em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        return point(em, op, args, out)

    members = {"name": name, "fn": staticmethod(fn), "scalar": scalar, **flags}
    register(type(name.title().replace("_", ""), (base,), members))


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


# -- scalar meanings (mgxir/ops/scalar.py): what each table row's numpy function computes, per element


def _float_function(function: MathFunction) -> Scalar:
    """A C math function in the float type numpy computes it in (integers too)."""

    def point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        x = args[0]
        if function == "erf" and not em.dtype_of(x).is_float:
            return em.math(function, em.convert(x, DType.double))  # the reference's math.erf
        return em.math(function, _as_float(em, x))

    return point


def _as_float(em: Emitter[Any], x: Any) -> Any:
    """x in the float type numpy computes float functions of its type in."""
    wide = numpy_float_type(em.dtype_of(x))
    return x if em.dtype_of(x) is wide else em.convert(x, wide)


def _in_compute_type(em: Emitter[Any], args: Sequence[Any]) -> list[Any]:
    t = compute_type(em.dtype_of(args[0]))
    return [em.convert(a, t) if em.dtype_of(a) is not t else a for a in args]


def _abs_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    (x,) = _in_compute_type(em, args)
    t = em.dtype_of(x)
    if t.is_float:
        return em.math("fabs", x)
    if t.is_unsigned:
        return x
    return em.select(em.compare("lt", x, em.constant(0, t)), em.neg(x), x)  # abs(MIN) wraps to MIN


def _rounding(function: MathFunction) -> Scalar:
    """ceil, floor, nearbyint: integers are their own value."""

    def point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        (x,) = _in_compute_type(em, args)
        t = em.dtype_of(x)
        if function == "rint" and t.itemsize == 8 and not t.is_float:
            # np.rint goes through float64, which changes integers beyond 2^53
            raise NoScalarMeaning(f"'{op.name}' of {t.type_name} has no scalar meaning (the host computes it)")
        return em.math(function, x) if t.is_float else x

    return point


def _neg_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    (x,) = _in_compute_type(em, args)
    require_numeric(op.name, em.dtype_of(x))
    return em.neg(x)


def _not_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    (x,) = args
    return em.compare("eq", x, em.constant(0, em.dtype_of(x)))


def _recip_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    (x,) = _in_compute_type(em, args)
    t = em.dtype_of(x)
    require_numeric(op.name, t)
    one = em.constant(1, t)
    if t.is_float:
        return em.arithmetic("div", one, x)
    # numpy's integer reciprocal of 0: x86's integer indefinite (MIN) for 32 and 64 bits, else 0
    at_zero = integer_limits(t)[0] if t.itemsize >= 4 and not t.is_unsigned else 0
    quotient = guarded_division(em, "div", one, x)
    return em.select(em.compare("eq", x, em.constant(0, t)), em.constant(at_zero, t), quotient)


def _relu_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    (x,) = _in_compute_type(em, args)
    return em.extremum(x, em.constant(0, em.dtype_of(x)), True)


def _rsqrt_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    x = _as_float(em, args[0])
    return em.arithmetic("div", em.constant(1, em.dtype_of(x)), em.math("sqrt", x))


def _sigmoid_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    (x,) = _in_compute_type(em, args)
    require_numeric(op.name, em.dtype_of(x))
    e = em.math("exp", _as_float(em, em.neg(x)))  # an integer is negated in its type (MIN wraps)
    one = em.constant(1, em.dtype_of(e))
    return em.arithmetic("div", one, em.arithmetic("add", one, e))


def _sign_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    (x,) = _in_compute_type(em, args)
    t = em.dtype_of(x)
    require_numeric(op.name, t)
    zero = em.constant(0, t)
    rest = em.select(em.is_nan(x), x, zero) if t.is_float else zero  # NaN stays NaN, -0 becomes 0
    if not t.is_unsigned:
        rest = em.select(em.compare("lt", x, zero), em.constant(-1, t), rest)
    return em.select(em.compare("gt", x, zero), em.constant(1, t), rest)


def _float_test(test: str) -> Scalar:
    def point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        (x,) = args
        if not em.dtype_of(x).is_float:
            return em.constant(False, DType.bool)  # integers are never inf or NaN
        return em.is_inf(x) if test == "isinf" else em.is_nan(x)

    return point


def _arithmetic(name: str, on_bool: str | None) -> Scalar:
    """add, sub, mul in the compute type; numpy's bool add is or, bool mul is and."""

    def point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        a, b = _in_compute_type(em, args)
        if em.dtype_of(a) is DType.bool:
            if on_bool is None:
                raise NoScalarMeaning(f"'{op.name}' of bool_type has no scalar meaning (numpy has no such operation)")
            return em.logic(on_bool, a, b)  # type: ignore[arg-type]
        return em.arithmetic(name, a, b)  # type: ignore[arg-type]

    return point


def _div_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    a, b = _in_compute_type(em, args)
    t = em.dtype_of(a)
    require_numeric(op.name, t)
    return em.arithmetic("div", a, b) if t.is_float else guarded_division(em, "div", a, b)


def _fmod_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    a, b = _in_compute_type(em, args)
    t = em.dtype_of(a)
    require_numeric(op.name, t)
    return em.arithmetic("rem", a, b) if t.is_float else guarded_division(em, "rem", a, b)


def _mod_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    """fmod(remainder(a, b) + b, b), each step in the compute type (the remainder is exact).
    For integers that is the floored remainder (the divisor's sign), 0 for a zero divisor;
    64-bit integers go through double as the reference's std::remainder takes them."""
    a, b = args
    t = em.dtype_of(a)
    require_numeric(op.name, t)
    if t.is_float:
        x, y = _in_compute_type(em, args)
        return em.arithmetic("rem", em.arithmetic("add", em.binary_math("remainder", x, y), y), y)
    zero = em.constant(0, t)
    if t.itemsize == 8:
        x, y = em.convert(a, DType.double), em.convert(b, DType.double)
        r = em.arithmetic("rem", em.arithmetic("add", em.binary_math("remainder", x, y), y), y)
        return em.select(em.compare("eq", b, zero), zero, em.convert(r, t))
    remainder = guarded_division(em, "rem", a, b)  # C's: the dividend's sign
    if t.is_unsigned:
        return remainder
    differs = em.logic("xor", em.compare("lt", remainder, zero), em.compare("lt", b, zero))
    fix = em.logic("and", em.compare("ne", remainder, zero), differs)
    return em.select(fix, em.arithmetic("add", remainder, b), remainder)


def _pow_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    a, b = _in_compute_type(em, args)
    t = em.dtype_of(a)
    require_numeric(op.name, t)
    return em.binary_math("pow", a, b) if t.is_float else _integer_power(em, a, b)


def _integer_power(em: Emitter[Any], base: Any, exponent: Any) -> Any:
    """Square-and-multiply over the exponent's bits, wrapping as numpy's integer power does; for a
    negative exponent (numpy refuses it) what C's pow truncated to an integer gives: 1 for base 1,
    +-1 for base -1, 0 otherwise."""
    t = em.dtype_of(base)
    zero, one = em.constant(0, t), em.constant(1, t)
    bits = 8 * t.itemsize - (0 if t.is_unsigned else 1)
    result, square = one, base
    for bit in range(bits):
        set_bit = em.compare("ne", em.bitwise_and(exponent, em.constant(1 << bit, t)), zero)
        result = em.select(set_bit, em.arithmetic("mul", result, square), result)
        if bit < bits - 1:
            square = em.arithmetic("mul", square, square)
    if t.is_unsigned:
        return result
    minus_one = em.constant(-1, t)
    odd = em.compare("ne", em.bitwise_and(exponent, one), zero)
    at_minus_one = em.select(odd, minus_one, one)
    negative = em.select(
        em.compare("eq", base, one), one, em.select(em.compare("eq", base, minus_one), at_minus_one, zero)
    )
    return em.select(em.compare("lt", exponent, zero), negative, result)


def _extremum(largest: bool) -> Scalar:
    def point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        a, b = _in_compute_type(em, args)
        return em.extremum(a, b, largest)

    return point


def _sqdiff_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    a, b = _in_compute_type(em, args)
    require_numeric(op.name, em.dtype_of(a))
    d = em.arithmetic("sub", a, b)
    return em.arithmetic("mul", d, d)


def _prelu_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    x, slope = _in_compute_type(em, args)
    t = em.dtype_of(x)
    if t is DType.bool:
        return x  # never below 0
    return em.select(em.compare("lt", x, em.constant(0, t)), em.arithmetic("mul", x, slope), x)


def _comparison(predicate: str) -> Scalar:
    def point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        a, b = args
        return em.compare(predicate, a, b)  # type: ignore[arg-type]

    return point


def _logical(name: str) -> Scalar:
    def point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        a, b = args
        return em.logic(name, truthy(em, a), truthy(em, b))  # type: ignore[arg-type]

    return point


def _bitwise_and_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    a, b = args
    if em.dtype_of(a).is_float:
        raise NoScalarMeaning("'bitwise_and' of floats has no scalar meaning (numpy has no such operation)")
    return em.bitwise_and(a, b)


# -- integer bit operations MIGraphX lacks (mgxir's additions, ONNX's BitwiseOr/Xor/Not and
# BitShift): their scalar meanings are built from the emitter's wrapping integer arithmetic, so
# every code generator has them without a new emitter call


def _integers(name: str, em: Emitter[Any], args: Sequence[Any]) -> DType:
    t = em.dtype_of(args[0])
    if not t.is_integral or t is DType.bool:
        raise NoScalarMeaning(f"'{name}' of {t.type_name} has no scalar meaning (integers only)")
    return t


def _bitwise_or_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    _integers(op.name, em, args)
    a, b = args
    return em.arithmetic("sub", em.arithmetic("add", a, b), em.bitwise_and(a, b))  # exact modulo 2^bits


def _bitwise_xor_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    _integers(op.name, em, args)
    a, b = args
    both = em.bitwise_and(a, b)
    return em.arithmetic("sub", em.arithmetic("sub", em.arithmetic("add", a, b), both), both)


def _bitwise_not_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    t = _integers(op.name, em, args)
    all_ones = -1 if not t.is_unsigned else integer_limits(t)[1]
    return em.arithmetic("sub", em.constant(all_ones, t), args[0])  # never borrows


def _shift_bits(t: DType) -> range:
    """The bits of a shift count below the type's width: 0, 1, 2 for 8 bits."""
    return range((8 * t.itemsize).bit_length() - 1)


def _shift_inside(em: Emitter[Any], count: Any, t: DType) -> Any:
    width = em.constant(8 * t.itemsize, t)
    return em.logic("and", em.compare("ge", count, em.constant(0, t)), em.compare("lt", count, width))


def _count_has_bit(em: Emitter[Any], count: Any, t: DType, k: int) -> Any:
    return em.compare("ne", em.bitwise_and(count, em.constant(1 << k, t)), em.constant(0, t))


def _shift_left_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    t = _integers(op.name, em, args)
    x, count = args
    factor = em.constant(1, t)  # 2^count, a product of 2^(2^k) for the bits k of count
    for k in _shift_bits(t):
        scaled = em.arithmetic("mul", factor, em.constant(1 << (1 << k), t))
        factor = em.select(_count_has_bit(em, count, t, k), scaled, factor)
    return em.select(_shift_inside(em, count, t), em.arithmetic("mul", x, factor), em.constant(0, t))


def _shift_right_point(em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
    t = _integers(op.name, em, args)
    x, count = args
    value, zero = x, em.constant(0, t)
    for k in _shift_bits(t):  # floor division by 2^(2^k) for each bit k of count
        divisor = em.constant(1 << (1 << k), t)
        quotient = em.arithmetic("div", value, divisor)
        if not t.is_unsigned:  # C division truncates: one less where a negative value had a remainder
            remainder = em.arithmetic("sub", value, em.arithmetic("mul", quotient, divisor))
            less = em.arithmetic("sub", quotient, em.constant(1, t))
            quotient = em.select(em.compare("lt", remainder, zero), less, quotient)
        value = em.select(_count_has_bit(em, count, t, k), quotient, value)
    outside = zero if t.is_unsigned else em.select(em.compare("lt", x, zero), em.constant(-1, t), zero)
    return em.select(_shift_inside(em, count, t), value, outside)


def _shift_left(x: np.ndarray, count: np.ndarray) -> np.ndarray:
    """ONNX's BitShift LEFT: bits shifted out are lost (signed values as their two's complement);
    a count below 0 or at least the width gives 0."""
    bits = 8 * x.dtype.itemsize
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    inside = (count >= 0) & (count < bits)
    with np.errstate(all="ignore"):
        shifted = np.left_shift(x.astype(unsigned), np.where(inside, count, 0).astype(unsigned))
    return np.where(inside, shifted, 0).astype(unsigned).astype(x.dtype)


def _shift_right(x: np.ndarray, count: np.ndarray) -> np.ndarray:
    """ONNX's BitShift RIGHT: arithmetic for signed types; a count below 0 or at least the width
    gives the sign fill (-1 for a negative value, else 0)."""
    bits = 8 * x.dtype.itemsize
    inside = (count >= 0) & (count < bits)
    shifted = np.right_shift(x, np.where(inside, count, 0).astype(x.dtype))
    fill = np.where(x < 0, -1, 0) if x.dtype.kind == "i" else np.zeros_like(x)
    return np.where(inside, shifted, fill).astype(x.dtype)


UNARY: dict[str, tuple[Callable, Scalar]] = {
    # name: (reference compute, scalar meaning)
    "abs": (np.abs, _abs_point),
    "acos": (np.arccos, _float_function("acos")),
    "acosh": (np.arccosh, _float_function("acosh")),
    "asin": (np.arcsin, _float_function("asin")),
    "asinh": (np.arcsinh, _float_function("asinh")),
    "atan": (np.arctan, _float_function("atan")),
    "atanh": (np.arctanh, _float_function("atanh")),
    "ceil": (np.ceil, _rounding("ceil")),
    "cos": (np.cos, _float_function("cos")),
    "cosh": (np.cosh, _float_function("cosh")),
    "erf": (_erf, _float_function("erf")),
    "exp": (np.exp, _float_function("exp")),
    "floor": (np.floor, _rounding("floor")),
    "log": (np.log, _float_function("log")),
    "log2": (np.log2, _float_function("log2")),
    # rounds half to even, as std::nearbyint in the default rounding mode
    "nearbyint": (np.rint, _rounding("rint")),
    "neg": (np.negative, _neg_point),
    "not": (_not, _not_point),
    "recip": (np.reciprocal, _recip_point),
    "relu": (lambda x: np.maximum(x, np.zeros((), x.dtype)), _relu_point),
    "rsqrt": (lambda x: 1 / np.sqrt(x), _rsqrt_point),
    "sigmoid": (_sigmoid, _sigmoid_point),
    "sign": (_sign, _sign_point),
    "sin": (np.sin, _float_function("sin")),
    "sinh": (np.sinh, _float_function("sinh")),
    "sqrt": (np.sqrt, _float_function("sqrt")),
    "tan": (np.tan, _float_function("tan")),
    "tanh": (np.tanh, _float_function("tanh")),
}

# elementwise tests whose result is bool_type whatever the input type
UNARY_PREDICATES: dict[str, tuple[Callable, Scalar]] = {
    "isinf": (np.isinf, _float_test("isinf")),
    "isnan": (np.isnan, _float_test("isnan")),
}

BINARY: dict[str, tuple[Callable, bool, Scalar]] = {
    # name: (reference compute, commutative, scalar meaning)
    "add": (np.add, True, _arithmetic("add", on_bool="or")),
    "sub": (np.subtract, False, _arithmetic("sub", on_bool=None)),
    "mul": (np.multiply, True, _arithmetic("mul", on_bool="and")),
    "div": (_truncating_divide, False, _div_point),
    "pow": (np.power, False, _pow_point),
    "max": (np.maximum, True, _extremum(largest=True)),
    "min": (np.minimum, True, _extremum(largest=False)),
    "mod": (_migraphx_mod, False, _mod_point),
    "fmod": (np.fmod, False, _fmod_point),
    "sqdiff": (lambda a, b: (a - b) * (a - b), True, _sqdiff_point),
    "prelu": (lambda x, s: np.where(x < 0, x * s, x), False, _prelu_point),
    # comparisons and logic return the input type (MIGraphX's binary shape rule)
    "equal": (np.equal, True, _comparison("eq")),
    "greater": (np.greater, False, _comparison("gt")),
    "greater_or_equal": (np.greater_equal, False, _comparison("ge")),  # MIGraphX after 2.16
    "less": (np.less, False, _comparison("lt")),
    "logical_and": (np.logical_and, True, _logical("and")),
    "logical_or": (np.logical_or, True, _logical("or")),
    "logical_xor": (np.logical_xor, True, _logical("xor")),
    "bitwise_and": (np.bitwise_and, True, _bitwise_and_point),
}

# integer-only binary operators MIGraphX lacks (mgxir's additions, for ONNX's operators)
INTEGER_BINARY: dict[str, tuple[Callable, bool, Scalar]] = {
    "bitwise_or": (np.bitwise_or, True, _bitwise_or_point),
    "bitwise_xor": (np.bitwise_xor, True, _bitwise_xor_point),
    "shift_left": (_shift_left, False, _shift_left_point),
    "shift_right": (_shift_right, False, _shift_right_point),
}

for _name, (_fn, _point) in UNARY.items():
    _define(Unary, _name, _fn, _point)
for _name, (_fn, _point) in UNARY_PREDICATES.items():
    _define(Unary, _name, _fn, _point, result_type=DType.bool)
for _name, (_fn, _comm, _point) in BINARY.items():
    _define(Binary, _name, _fn, _point, commutative=_comm)
for _name, (_fn, _comm, _point) in INTEGER_BINARY.items():
    _define(IntegerBinary, _name, _fn, _point, commutative=_comm)
_define(IntegerUnary, "bitwise_not", np.invert, _bitwise_not_point)


@register
class LeakyRelu(Unary):
    name = "leaky_relu"
    attributes = (Attr("alpha", FLOAT, 0.01),)

    def function(self, op: Operation) -> Callable[..., np.ndarray]:
        alpha = op["alpha"]
        return lambda x: np.where(x < 0, x * x.dtype.type(alpha), x)

    def scalar(self, em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        (x,) = _in_compute_type(em, args)
        t = em.dtype_of(x)
        require_numeric(op.name, t)
        if t.is_unsigned:
            return x  # never below 0
        alpha = em.constant(_in_type(op["alpha"], t), t)
        return em.select(em.compare("lt", x, em.constant(0, t)), em.arithmetic("mul", x, alpha), x)


@register
class Elu(Unary):
    name = "elu"
    attributes = (Attr("alpha", FLOAT, 1.0),)

    def function(self, op: Operation) -> Callable[..., np.ndarray]:
        alpha = op["alpha"]
        return lambda x: np.where(x < 0, x.dtype.type(alpha) * np.expm1(x), x)

    def scalar(self, em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        (x,) = _in_compute_type(em, args)
        t = em.dtype_of(x)
        require_numeric(op.name, t)
        wide = _as_float(em, x)
        f = em.dtype_of(wide)
        alpha = em.constant(_in_type(op["alpha"], t), t)  # the input's type first (an int truncates)
        scaled = em.arithmetic("mul", em.convert(alpha, f) if t is not f else alpha, em.math("expm1", wide))
        return em.select(em.compare("lt", x, em.constant(0, t)), scaled, wide)


def _in_type(value: float, t: DType) -> float | int:
    """An attribute as numpy's `dtype.type(value)` makes it: rounded to half, truncated to int."""
    converted = t.numpy.type(value)
    return float(converted) if t.is_float else int(converted)


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
        # in the target type throughout: int64's limits are not floats (2^63 - 1 rounds up)
        out = np.zeros(dx.shape, want)
        with np.errstate(invalid="ignore"):
            inside = (dx < float(info.max)) & (dx > float(info.min))
            out[inside] = np.trunc(dx[inside])
            out[dx >= float(info.max)] = info.max
            out[dx <= float(info.min)] = info.min
        return out
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

    def scalar(self, em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        return convert_scalar(em, args[0], op["target_type"])


def convert_scalar(em: Emitter[Any], x: Any, target: DType) -> Any:
    """`convert_values` for one element: bool is x > 0, integers and finite floats saturate to the
    target's range, floats truncate into integers with NaN as 0."""
    source = em.dtype_of(x)
    if source is target:
        return x
    if target is DType.bool:
        return em.compare("gt", x, em.constant(0, source))
    if source is DType.bool:
        return em.convert(x, target)
    if target.is_integral:
        if source.is_float:
            return saturating_convert(em, x, target)
        low, high = integer_limits(target)
        source_low, source_high = integer_limits(source)
        value = em.convert(x, target)
        if high < source_high:
            value = em.select(em.compare("gt", x, em.constant(high, source)), em.constant(high, target), value)
        if low > source_low:
            value = em.select(em.compare("lt", x, em.constant(low, source)), em.constant(low, target), value)
        return value
    if source.itemsize == 8 and not source.is_float:
        x = em.convert(x, DType.double)  # rounded there first, as the reference converts
        source = DType.double
    if target is DType.double or (target is DType.float and source is not DType.double):
        return em.convert(x, target)  # nothing to saturate
    # finite values beyond the target's range become its largest value; x > limit is tested as
    # x > (the largest value of x's type not above the limit), exact in x's own type
    limit = _float_range(target)
    below = _at_most(limit, source)
    if below is None:
        return em.convert(x, target)
    too_high = em.compare("gt", x, em.constant(below, source))
    too_low = None if source.is_unsigned else em.compare("lt", x, em.constant(-below, source))
    if source.is_float:  # infinities stay infinite
        finite = em.logical_not(em.is_inf(x))
        too_high = em.logic("and", too_high, finite)
        too_low = em.logic("and", too_low, finite)
    value = em.select(too_high, em.constant(limit, target), em.convert(x, target))
    return value if too_low is None else em.select(too_low, em.constant(-limit, target), value)


def _at_most(limit: float, t: DType) -> float | int | None:
    """The largest value of type `t` not above `limit`, or None where every finite value of `t` is
    within it."""
    if t.is_integral:
        return None if integer_limits(t)[1] <= limit else int(limit)
    import ml_dtypes

    if float(ml_dtypes.finfo(t.numpy).max) <= limit:
        return None
    with np.errstate(over="ignore"):
        value = t.numpy.type(limit)
    if float(value) > limit:
        value = np.nextafter(value, t.numpy.type(0)) if t.numpy.kind == "f" else _next_down(value, t)
    return float(value)


def _next_down(value: np.generic, t: DType) -> np.generic:
    """The next smaller positive value of an ml_dtypes type (one less in its bit pattern)."""
    bits = np.asarray(value, t.numpy).view(t.bits_dtype)
    return (bits - 1).astype(t.bits_dtype).view(t.numpy)[()]


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

    def scalar(self, em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        x, target = args[0], op["target_type"]
        return x if em.dtype_of(x) is target else em.reinterpret(x, target)


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

    def scalar(self, em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        x, low, high = _in_compute_type(em, args)
        return em.extremum(em.extremum(x, low, True), high, False)


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

    def scalar(self, em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        condition, a, b = args
        return em.select(truthy(em, condition), a, b)


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

    def scalar(self, em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        x, scale = args[0], args[1]
        if out.is_float:
            q = em.arithmetic("div", em.convert(x, DType.double), em.convert(scale, DType.double))
            if len(args) == 3:
                q = em.arithmetic("add", q, em.convert(args[2], DType.double))
            return convert_scalar(em, q, out)
        if not em.dtype_of(x).is_float:  # numpy's true_divide of integers is in double
            x, scale = em.convert(x, DType.double), em.convert(scale, DType.double)
        q = em.math("rint", em.arithmetic("div", x, scale))
        if len(args) == 3:
            # an 8-bit zero point: the sum is exact in q's compute type wherever it is in range
            wide = compute_type(em.dtype_of(q)) if em.dtype_of(args[2]).itemsize == 1 else DType.double
            q = em.arithmetic("add", em.convert(q, wide), em.convert(args[2], wide))
        # NaN (0 / 0) through numpy's cast: x86's integer indefinite (MIN) for 32 and 64 bits, else 0
        at_nan = integer_limits(out)[0] if out.itemsize >= 4 and not out.is_unsigned else 0
        return em.select(em.is_nan(q), em.constant(at_nan, out), saturating_convert(em, q, out))


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

    def scalar(self, em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        # 8-bit integers: x - zero point and its product with the scale are exact in the scale's
        # compute type (or rounded once, as the reference rounds the exact double), so no double
        x, scale = args[0], args[1]
        wide = compute_type(em.dtype_of(scale)) if em.dtype_of(x).itemsize == 1 else DType.double
        value = em.convert(x, wide)
        if len(args) == 3:
            value = em.arithmetic("sub", value, em.convert(args[2], wide))
        return em.convert(em.arithmetic("mul", value, em.convert(scale, wide)), out)
