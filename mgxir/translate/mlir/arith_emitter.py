"""The scalar protocol (mgxir/ops/scalar.py) in MLIR's `arith` and `math` dialects: every pointwise
operator lowers through its own scalar meaning, so the body of the `linalg.generic` a pointwise op
becomes (and of a `pointwise` module) computes what the reference computes.

MLIR integers are signless; a value carries its MIGraphX type, which picks the signed or unsigned
op (`divsi`/`divui`, `cmpi slt`/`ult`, `extsi`/`extui`). Floats narrower than f32 (half, bf16, fp8)
are computed in f32 and rounded back after every operation, as numpy computes half: the rounding of
half and bf16 is done in integer arithmetic (`Scalars.narrow`), which no backend may fuse away.

Math functions: the exact ones (floor, ceil, trunc, rint, fabs, sqrt) are `math` ops; the others
come from mgxir/translate/mlir/math_functions.py, which computes in f64 where IREE's f32 `math`
polynomials are inaccurate (sin/cos of 3.4e38 gave inf, tan NaN, asinh(-inf) NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith
from iree.compiler.dialects import math as mlir_math

from mgxir.ir.dtype import DType
from mgxir.ir.operation import Operation
from mgxir.ops.scalar import Arithmetic, BinaryFunction, Logic, MathFunction, NoScalarMeaning, Predicate, emit
from mgxir.translate.mlir.math_functions import c_pow, float_function, ieee_remainder
from mgxir.translate.mlir.scalar import COMPARISONS, CannotLower, Scalars
from mgxir.translate.mlir.types import UNSIGNED


@dataclass(frozen=True)
class Typed:
    """An MLIR scalar and the MIGraphX type it holds (signless integers say nothing of sign)."""

    value: ir.Value
    dtype: DType


# float types held as themselves; the others are computed in f32 and rounded back
_WIDE_FLOATS = frozenset({DType.float, DType.double})
# math functions every backend computes exactly (correctly rounded) as `math` ops
_EXACT_FUNCTIONS = {
    "ceil": mlir_math.ceil,
    "floor": mlir_math.floor,
    "trunc": mlir_math.trunc,
    "rint": mlir_math.roundeven,
    "fabs": mlir_math.absf,
    "sqrt": mlir_math.sqrt,
}


def _nan_codes(t: DType) -> list[int]:
    """The bytes that are NaN in an 8-bit float type without infinities (empty for the others)."""
    values = np.arange(256, dtype=np.uint8).view(t.numpy).astype(np.float32)
    return [] if np.isinf(values).any() else [int(b) for b in np.flatnonzero(np.isnan(values))]


_NAN_CODES = {t: _nan_codes(t) for t in DType if t.is_fp8}


def _unsigned(t: DType) -> bool:
    return t in UNSIGNED or t is DType.bool


class ArithEmitter:
    """The protocol's calls as `arith`/`math` ops at the current insertion point."""

    def __init__(self, scalars: Scalars) -> None:
        self.s = scalars
        self.types = scalars.e.types

    # -- values -----------------------------------------------------------------------------------

    def dtype_of(self, v: Typed) -> DType:
        return v.dtype

    def constant(self, value: float | int | bool, t: DType) -> Typed:
        if t.is_float:  # a value beyond the type's range is what numpy makes of it (inf, or NaN for fp8)
            with np.errstate(over="ignore", invalid="ignore"):
                value = float(np.asarray(value).astype(t.numpy).astype(np.float64))
        return Typed(self.s.const(value, t), t)

    def _element(self, t: DType) -> ir.Type:
        return self.types.element(t)

    def _wide(self, v: Typed) -> ir.Value:
        """A float value in the type its arithmetic is done in (f32 for the narrow ones). IREE's
        `extf` from fp8 reads a NaN code of the types without infinities (e4m3fn's 0x7f, 0xff) as
        a number (-480), so those codes are selected as NaN here."""
        if v.dtype in _WIDE_FLOATS:
            return v.value
        wide = arith.extf(self._element(DType.float), v.value)
        codes = _NAN_CODES.get(v.dtype)
        if not codes:
            return wide
        byte = arith.bitcast(self._element(DType.uint8), v.value)
        is_nan = None
        for code in codes:
            equal = arith.cmpi(arith.CmpIPredicate.eq, byte, self.s.const(code, DType.uint8))
            is_nan = equal if is_nan is None else arith.ori(is_nan, equal)
        return arith.select(is_nan, self.s.const(math.nan, DType.float), wide)

    def _narrowed(self, x: ir.Value, t: DType) -> Typed:
        """An f32 (or f64 for double) result rounded to float type `t`."""
        if t in _WIDE_FLOATS:
            return Typed(x, t)
        return Typed(self._round_from_f32(x, t), t)

    def _round_from_f32(self, x: ir.Value, t: DType) -> ir.Value:
        if t in (DType.half, DType.bf16):
            return self.s.narrow(x, t)
        return arith.truncf(self._element(t), x)

    # -- arithmetic -------------------------------------------------------------------------------

    def arithmetic(self, op: Arithmetic, a: Typed, b: Typed) -> Typed:
        t = a.dtype
        if t is DType.bool:
            raise NoScalarMeaning("arithmetic on bool values")
        if t.is_float:
            build = _FLOAT_ARITHMETIC[op]
            return self._narrowed(build(self._wide(a), self._wide(b)), t)
        build = (_UNSIGNED_ARITHMETIC if _unsigned(t) else _SIGNED_ARITHMETIC)[op]
        return Typed(build(a.value, b.value), t)

    def neg(self, a: Typed) -> Typed:
        if a.dtype.is_float:
            return Typed(arith.negf(a.value), a.dtype)
        return Typed(arith.subi(self.s.const(0, a.dtype), a.value), a.dtype)

    def compare(self, predicate: Predicate, a: Typed, b: Typed) -> Typed:
        t = a.dtype
        ordered, signed, unsigned = COMPARISONS[predicate]
        if t.is_float:
            flag = arith.cmpf(ordered, self._wide(a), self._wide(b))
        else:
            flag = arith.cmpi(unsigned if _unsigned(t) else signed, a.value, b.value)
        return Typed(flag, DType.bool)

    def select(self, condition: Typed, a: Typed, b: Typed) -> Typed:
        return Typed(arith.select(condition.value, a.value, b.value), a.dtype)

    def logic(self, op: Logic, a: Typed, b: Typed) -> Typed:
        return Typed(_LOGIC[op](a.value, b.value), DType.bool)

    def logical_not(self, a: Typed) -> Typed:
        return Typed(arith.xori(a.value, self.s.const(True, DType.bool)), DType.bool)

    def bitwise_and(self, a: Typed, b: Typed) -> Typed:
        return Typed(arith.andi(a.value, b.value), a.dtype)

    def is_nan(self, x: Typed) -> Typed:
        if not x.dtype.is_float:
            return self.constant(False, DType.bool)
        wide = self._wide(x)
        return Typed(arith.cmpf(arith.CmpFPredicate.UNO, wide, wide), DType.bool)

    def is_inf(self, x: Typed) -> Typed:
        if not x.dtype.is_float:
            return self.constant(False, DType.bool)
        wide = self._wide(x)
        inf = self.s.const(math.inf, DType.double if x.dtype is DType.double else DType.float)
        return Typed(arith.cmpf(arith.CmpFPredicate.OEQ, mlir_math.absf(wide), inf), DType.bool)

    def extremum(self, a: Typed, b: Typed, largest: bool) -> Typed:
        t = a.dtype
        if t is DType.bool:
            return Typed((arith.ori if largest else arith.andi)(a.value, b.value), t)
        if not t.is_float:
            build = _INTEGER_EXTREMUM[(largest, _unsigned(t))]
            return Typed(build(a.value, b.value), t)
        # numpy's rule: NaN from either operand; `b` for equal operands (`a` for half)
        order = ("gt" if largest else "lt") if t is not DType.half else ("ge" if largest else "le")
        keep = self.logic("or", self.compare(order, a, b), self.is_nan(a))  # type: ignore[arg-type]
        return self.select(keep, a, b)

    def reinterpret(self, v: Typed, t: DType) -> Typed:
        """The same bits as type `t`; a bool (i1 in MLIR) is the byte 0 or 1, and a byte as bool
        is true where it is not 0 (as numpy reads a byte viewed as bool)."""
        byte = self._element(DType.uint8)
        x = v.value
        if v.dtype is DType.bool:
            x = arith.extui(byte, x)
        if t is DType.bool:
            bits = x if x.type == byte else arith.bitcast(byte, x)
            return Typed(arith.cmpi(arith.CmpIPredicate.ne, bits, self.s.const(0, DType.uint8)), t)
        if x.type == self._element(t):
            return Typed(x, t)
        return Typed(arith.bitcast(self._element(t), x), t)

    # -- conversions ------------------------------------------------------------------------------

    def convert(self, v: Typed, t: DType) -> Typed:
        source, x = v.dtype, v.value
        if source is t:
            return v
        element = self._element(t)
        if t is DType.bool:
            zero = self.constant(0, source)
            return self.compare("ne", v, zero)
        if source is DType.bool:
            return Typed(arith.uitofp(element, x) if t.is_float else arith.extui(element, x), t)
        if t.is_float:
            return Typed(self._to_float(v, t), t)
        if source.is_float:  # in range: callers guard NaN and out-of-range values
            wide = self._wide(v)
            return Typed(arith.fptoui(element, wide) if _unsigned(t) else arith.fptosi(element, wide), t)
        if t.itemsize > source.itemsize:
            return Typed(arith.extui(element, x) if _unsigned(source) else arith.extsi(element, x), t)
        if t.itemsize < source.itemsize:
            return Typed(arith.trunci(element, x), t)
        return Typed(x, t)

    def _to_float(self, v: Typed, t: DType) -> ir.Value:
        """Rounded to nearest (ties to even) into float type `t`: a double or an integer goes
        through f64 and is rounded to odd into f32 first, so that rounding twice is exact."""
        source, element = v.dtype, self._element(t)
        if source.is_float:
            if t is DType.double:
                return arith.extf(element, self._wide(v))
            if source is DType.double:
                if t is DType.float:
                    return arith.truncf(element, v.value)
                return self._round_from_f32(self._round_to_odd(v.value), t)
            return self._narrowed(self._wide(v), t).value
        if t is DType.double or (t is DType.float and source.itemsize <= 2):
            return arith.uitofp(element, v.value) if _unsigned(source) else arith.sitofp(element, v.value)
        if t is DType.float:  # f64 holds 2 * 24 + 2 bits: rounding twice is exact
            return arith.truncf(element, self._integer_to_double(v))
        if source.itemsize <= 2:  # exact in f32
            f32 = self._element(DType.float)
            wide = arith.uitofp(f32, v.value) if _unsigned(source) else arith.sitofp(f32, v.value)
            return self._round_from_f32(wide, t)
        return self._round_from_f32(self._round_to_odd(self._integer_to_double(v)), t)

    def _integer_to_double(self, v: Typed) -> ir.Value:
        """An integer as f64; a 64-bit one rounded to odd (its low bits kept as a sticky bit), so a
        further rounding into a narrower type is exact."""
        f64 = self._element(DType.double)
        unsigned = _unsigned(v.dtype)
        if v.dtype.itemsize < 8:
            return arith.uitofp(f64, v.value) if unsigned else arith.sitofp(f64, v.value)
        i64 = v.value
        # keep the top 53 significant bits exact: shift right by 11 with the shifted-out bits as a sticky bit
        eleven, one = self.s.const(11, DType.int64), self.s.const(1, DType.int64)
        shifted = arith.shrui(i64, eleven) if unsigned else arith.shrsi(i64, eleven)
        zero = self.s.const(0, DType.int64)
        low_bits = arith.andi(i64, self.s.const(2047, DType.int64))
        sticky = arith.select(arith.cmpi(arith.CmpIPredicate.ne, low_bits, zero), one, zero)
        coarse = arith.ori(shifted, sticky)
        wide = arith.uitofp(f64, coarse) if unsigned else arith.sitofp(f64, coarse)
        return arith.mulf(wide, self.s.const(2048.0, DType.double))

    def _round_to_odd(self, x: ir.Value) -> ir.Value:
        """An f64 as the f32 nearest to it toward zero, with the last bit set where that is inexact
        (rounding to odd: a further rounding to a narrower type then equals rounding x directly)."""
        f32, i32 = self._element(DType.float), self._element(DType.int32)
        nearest = arith.truncf(f32, x)
        back = arith.extf(self._element(DType.double), nearest)
        inexact = arith.cmpf(arith.CmpFPredicate.ONE, back, x)
        too_far = arith.cmpf(arith.CmpFPredicate.OGT, mlir_math.absf(back), mlir_math.absf(x))
        bits = arith.bitcast(i32, nearest)
        toward_zero = arith.select(too_far, arith.subi(bits, self.s.const(1, DType.int32)), bits)
        odd = arith.ori(toward_zero, self.s.const(1, DType.int32))
        finite = arith.cmpf(arith.CmpFPredicate.OLT, mlir_math.absf(x), self.s.const(math.inf, DType.double))
        return arith.select(arith.andi(inexact, finite), arith.bitcast(f32, odd), nearest)

    # -- math functions ---------------------------------------------------------------------------

    def math(self, function: MathFunction, x: Typed) -> Typed:
        t = x.dtype
        if not t.is_float:
            raise NoScalarMeaning(f"{function} of {t.type_name}")
        exact = _EXACT_FUNCTIONS.get(function)
        if exact is not None:
            return self._narrowed(exact(self._wide(x)), t)
        return self._narrowed(float_function(self, function, self._wide(x), t is DType.double), t)

    def binary_math(self, function: BinaryFunction, a: Typed, b: Typed) -> Typed:
        t = a.dtype
        build = c_pow if function == "pow" else ieee_remainder
        return self._narrowed(build(self, self._wide(a), self._wide(b), t is DType.double), t)


_FLOAT_ARITHMETIC = {"add": arith.addf, "sub": arith.subf, "mul": arith.mulf, "div": arith.divf, "rem": arith.remf}
_SIGNED_ARITHMETIC = {"add": arith.addi, "sub": arith.subi, "mul": arith.muli, "div": arith.divsi, "rem": arith.remsi}
_UNSIGNED_ARITHMETIC = {**_SIGNED_ARITHMETIC, "div": arith.divui, "rem": arith.remui}
_INTEGER_EXTREMUM = {
    (True, False): arith.maxsi,
    (True, True): arith.maxui,
    (False, False): arith.minsi,
    (False, True): arith.minui,
}
_LOGIC = {"and": arith.andi, "or": arith.ori, "xor": arith.xori}


def lower_meaning(s: Scalars, op: Operation, args: list[ir.Value], types: list[DType], out: DType) -> ir.Value:
    """One element of a pointwise op's result: its scalar meaning on this emitter."""
    try:
        return emit(ArithEmitter(s), op, [Typed(v, t) for v, t in zip(args, types)], out).value
    except NoScalarMeaning as e:
        raise CannotLower(str(e)) from None
