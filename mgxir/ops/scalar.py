"""The scalar meaning of elementwise operators, written once against an emitter protocol.

MIGraphX keeps an operator's `point_function()` beside its `apply()`; mgxir keeps an elementwise
operator's `scalar` method beside its reference `compute` (mgxir/ops/elementwise.py). The method
builds the operator's result for one element from the calls of `Emitter`, a small protocol that each
code generator implements: the numpy emitter (`mgxir.ops.scalar_numpy`, vectorised, which the test
suite checks against the reference compute on edge values), C++ for CUDA/HIP
(`mgxir.targets.gpu.kernels`), SPIR-V and MLIR. The reference compute stays what the operator means;
a scalar meaning must compute the same values bit for bit, except that math functions may differ by
the platform's documented ulp bound.

The rules every emitter keeps (a meaning relies on them and guards everything else itself):
- A value has one element type (`dtype_of`). Arithmetic takes two values of one type and gives that
  type. On floats it is IEEE arithmetic correctly rounded to the value's type (half included, as
  numpy computes half). On integers it wraps modulo 2^bits; `div` and `rem` truncate toward zero
  (C's / and %) and are undefined for a zero divisor and for MIN / -1: meanings guard both
  (`guarded_divisor`). Bool values take no arithmetic.
- `compare` is ordered on floats (false with a NaN operand) except `ne`, which is true then.
- `convert` rounds to nearest (ties to even) into a float type (overflow gives inf, NaN stays NaN),
  wraps between integer types, gives 0/1 from bool and `x != 0` into bool (NaN is true). From a
  float into an integer type it truncates toward zero and is undefined for NaN and values out of
  the target's range: a meaning selects those results itself (see `saturating_convert`).
- `math` functions take and give floats of one type as C's functions do (IEEE special values as C
  specifies them); a half value is computed in float and rounded to half, as numpy computes it.
- `reinterpret` gives the value of type `t` with the same bits (a type of the same width).
- `extremum` propagates NaN from either operand and, for equal operands, returns `b`, except
  for half, `a` (numpy's maximum/minimum: max(-0, +0) is +0 in float, -0 in half).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, TypeVar

from mgxir.ir.dtype import DType
from mgxir.ir.operation import OpDef, Operation

V = TypeVar("V")

Arithmetic = Literal["add", "sub", "mul", "div", "rem"]
Predicate = Literal["eq", "ne", "lt", "le", "gt", "ge"]
Logic = Literal["and", "or", "xor"]
# C's pow and IEEE remainder (the quotient rounded to nearest, the result exact)
BinaryFunction = Literal["pow", "remainder"]
MathFunction = Literal[
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "ceil",
    "cos",
    "cosh",
    "erf",
    "exp",
    "expm1",
    "fabs",
    "floor",
    "log",
    "log2",
    "rint",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
]
# math functions whose result is exact (or correctly rounded, as IEEE requires of sqrt) everywhere;
# the others are compared within an ulp bound
EXACT_MATH: frozenset[str] = frozenset({"ceil", "fabs", "floor", "remainder", "rint", "sqrt", "trunc"})


class NoScalarMeaning(Exception):
    """The operator has no scalar meaning for these element types (the host computes it)."""


class Emitter(Protocol[V]):
    """What a code generator provides to build one element's value (rules in the module docstring)."""

    def dtype_of(self, v: V) -> DType: ...

    def constant(self, value: float | int | bool, t: DType) -> V: ...

    def arithmetic(self, op: Arithmetic, a: V, b: V) -> V: ...

    def neg(self, a: V) -> V: ...

    def compare(self, predicate: Predicate, a: V, b: V) -> V: ...

    def select(self, condition: V, a: V, b: V) -> V: ...

    def logic(self, op: Logic, a: V, b: V) -> V: ...

    def logical_not(self, a: V) -> V: ...

    def bitwise_and(self, a: V, b: V) -> V: ...

    def convert(self, v: V, t: DType) -> V: ...

    def math(self, function: MathFunction, x: V) -> V: ...

    def binary_math(self, function: BinaryFunction, a: V, b: V) -> V: ...

    def is_nan(self, x: V) -> V: ...

    def is_inf(self, x: V) -> V: ...

    def extremum(self, a: V, b: V, largest: bool) -> V: ...

    def reinterpret(self, v: V, t: DType) -> V: ...


class ScalarDefined(Protocol):
    """An operator definition with a scalar meaning: `scalar(em, op, args, out)` is the value of one
    element of the result, `args` the operands' values, `out` the shape rule's result type."""

    def scalar(self, em: Emitter[V], op: Operation, args: Sequence[V], out: DType) -> V: ...


def has_scalar_meaning(defn: OpDef) -> bool:
    return callable(getattr(defn, "scalar", None))


def emit(em: Emitter[V], op: Operation, args: Sequence[V], out: DType) -> V:
    """One element of `op`'s result from its operands, in the result type `out` (the meaning's value
    converted as the reference's final `astype` converts it); raises NoScalarMeaning."""
    defn = op.defn
    scalar = getattr(defn, "scalar", None)
    if scalar is None:
        raise NoScalarMeaning(f"'{op.name}' has no scalar meaning")
    return astype(em, scalar(em, op, args, out), out)


# -- the rules meanings share ---------------------------------------------------------------------


def compute_type(t: DType) -> DType:
    """The type the reference computes values of `t` in: bf16 and fp8 in float (rounded once at
    the end), every other type in itself."""
    return DType.float if t is DType.bf16 or t.is_fp8 else t


def require_float(name: str, t: DType) -> None:
    if not t.is_float:
        raise NoScalarMeaning(f"'{name}' of {t.type_name} has no scalar meaning (the host computes it)")


def require_numeric(name: str, t: DType) -> None:
    if t is DType.bool:
        raise NoScalarMeaning(f"'{name}' of bool_type has no scalar meaning (numpy has no such operation)")


def integer_limits(t: DType) -> tuple[int, int]:
    bits = 8 * t.itemsize
    return (0, 2**bits - 1) if t.is_unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def astype(em: Emitter[V], v: V, t: DType) -> V:
    """numpy's `astype` where the reference applies it to a result (see `numpy_float_to_int`)."""
    source = em.dtype_of(v)
    if source is t:
        return v
    if source.is_float and t.is_integral and t is not DType.bool:
        return numpy_float_to_int(em, v, t)
    return em.convert(v, t)


def numpy_float_type(t: DType) -> DType:
    """The float type numpy computes a float function of type `t` in: 8-bit integers and bool in
    half, 16-bit in float, wider in double (bf16 and fp8 in float, as the reference does)."""
    if t.is_float:
        return compute_type(t)
    return {1: DType.half, 2: DType.float}.get(t.itemsize, DType.double)


def numpy_float_to_int(em: Emitter[V], v: V, t: DType) -> V:
    """numpy's cast of a float into integer type `t` on x86: truncation toward zero; NaN and values
    beyond int32's range (int64's for 64-bit types) give its MIN (the "integer indefinite"), and
    narrower types keep the low bits of that int32 value."""
    if t.is_unsigned and t.itemsize >= 4:
        raise NoScalarMeaning(f"numpy's cast into {t.type_name} depends on its SIMD loop")
    via = DType.int64 if t.itemsize == 8 else DType.int32
    source = em.dtype_of(v)
    low, _ = integer_limits(via)
    inside = em.logic(
        "and",
        em.compare("ge", v, em.constant(float(low), source)),
        em.compare("lt", v, em.constant(-float(low), source)),
    )
    value = em.convert(em.select(inside, v, em.constant(0, source)), via)
    value = em.select(inside, value, em.constant(low, via))
    return value if via is t else em.convert(value, t)


def guarded_division(em: Emitter[V], op: Literal["div", "rem"], a: V, b: V) -> V:
    """Integer division or remainder as numpy computes it: 0 for a zero divisor, and MIN / -1 wraps
    to MIN (remainder 0), where C leaves both undefined."""
    t = em.dtype_of(a)
    zero, one = em.constant(0, t), em.constant(1, t)
    divisor_zero = em.compare("eq", b, zero)
    if t.is_unsigned:
        unsafe = divisor_zero
    else:
        minus_one = em.compare("eq", b, em.constant(-1, t))
        unsafe = em.logic("or", divisor_zero, minus_one)
    result = em.arithmetic(op, a, em.select(unsafe, one, b))
    if not t.is_unsigned:
        result = em.select(minus_one, em.neg(a) if op == "div" else zero, result)
    return em.select(divisor_zero, zero, result)


def saturating_convert(em: Emitter[V], x: V, t: DType) -> V:
    """A float into integer type `t`: truncated toward zero, saturated to the type's range, NaN as
    0 (MIGraphX's convert)."""
    source = em.dtype_of(x)
    low, high = integer_limits(t)
    # the limits as floats of the source type; a value at or past one (after rounding) saturates
    too_high = em.compare("ge", x, em.constant(float(high), source))
    too_low = em.compare("le", x, em.constant(float(low), source))
    inside = em.logical_not(em.logic("or", em.logic("or", too_high, too_low), em.is_nan(x)))
    safe = em.select(inside, x, em.constant(0.0, source))
    value = em.convert(safe, t)
    value = em.select(too_high, em.constant(high, t), value)
    value = em.select(too_low, em.constant(low, t), value)
    return em.select(em.is_nan(x), em.constant(0, t), value)


def truthy(em: Emitter[V], v: V) -> V:
    """numpy's astype(bool): nonzero, NaN included."""
    return v if em.dtype_of(v) is DType.bool else em.convert(v, DType.bool)
