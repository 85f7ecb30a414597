"""C's math functions in `arith`/`math` for the MLIR emitter (mgxir/translate/mlir/arith_emitter.py):
a `math` op where IREE's backends compute it within the ulp bound, and where they do not, the
function built from operations they lower exactly (f64 arithmetic and sqrt) around the f32 `math`
ops that are accurate (exp, expm1, log, log1p). C's `pow` and IEEE `remainder` likewise.

IREE replaces f32 `math` ops with polynomials (MLIR's polynomial approximation) that are accurate
near zero only, and the CPU backend links no libm for f64 ones. Measured on IREE 3.13 llvm-cpu
against numpy: sin/cos lost all accuracy from |x| ~ 100 (sin(3.4e38) = -inf, tan NaN), asinh and
acosh overflowed (asinh(-inf) NaN, acosh(-3.4e38) inf), asinh, sinh and atanh of 1e-3 were off by
tens of ulp. The functions here stay within 2 ulp of numpy (test/unit/targets/iree/test_scalar_agreement_iree.py)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from iree.compiler import ir
from iree.compiler.dialects import arith
from iree.compiler.dialects import math as mlir_math

from mgxir.ir.dtype import DType

if TYPE_CHECKING:
    from mgxir.translate.mlir.arith_emitter import ArithEmitter

FP = arith.CmpFPredicate

_MATH: dict[str, Callable[[ir.Value], ir.Value]] = {
    "acos": mlir_math.acos,
    "acosh": mlir_math.acosh,
    "asin": mlir_math.asin,
    "asinh": mlir_math.asinh,
    "atan": mlir_math.atan,
    "atanh": mlir_math.atanh,
    "cos": mlir_math.cos,
    "cosh": mlir_math.cosh,
    "erf": mlir_math.erf,
    "exp": mlir_math.exp,
    "expm1": mlir_math.expm1,
    "log": mlir_math.log,
    "log2": mlir_math.log2,
    "sin": mlir_math.sin,
    "sinh": mlir_math.sinh,
    "tan": mlir_math.tan,
    "tanh": mlir_math.tanh,
}


# f64 functions IREE's llvm-cpu cannot compile (measured on IREE 3.13: it links no libm and has no
# f64 polynomial for these; `fmod` is arith.remf): a program using them translates, and IREE's CPU
# compile reports the undefined symbol (other IREE devices compile them)
F64_UNLINKED_ON_CPU = frozenset({"acos", "asin", "atan", "cos", "erf", "fmod", "log2", "sin", "tan", "tanh"})


class _F:
    """Float values of one type (f32 or f64) at the insertion point: constants and comparisons."""

    def __init__(self, em: ArithEmitter, double: bool) -> None:
        self.em = em
        self.t = DType.double if double else DType.float

    def c(self, value: float) -> ir.Value:
        return self.em.s.const(value, self.t)

    def lt(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.cmpf(FP.OLT, a, b)

    def gt(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.cmpf(FP.OGT, a, b)

    def eq(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.cmpf(FP.OEQ, a, b)

    def nan(self, x: ir.Value) -> ir.Value:
        return arith.cmpf(FP.UNO, x, x)

    def inf(self, x: ir.Value) -> ir.Value:
        return self.eq(mlir_math.absf(x), self.c(math.inf))

    def negative_sign(self, x: ir.Value) -> ir.Value:
        """The sign bit (true for -0 and negative NaNs)."""
        bits = DType.int64 if self.t is DType.double else DType.int32
        integer = arith.bitcast(self.em.types.element(bits), x)
        return arith.cmpi(arith.CmpIPredicate.slt, integer, self.em.s.const(0, bits))


def float_function(em: ArithEmitter, function: str, x: ir.Value, double: bool) -> ir.Value:
    """`function` of an f32 (or f64) value as C computes it."""
    own = (_OWN_F64 if double else _OWN).get(function)
    return own(_D(em, double), x) if own is not None else _MATH[function](x)


class _D(_F):
    """f64 arithmetic (exact on every backend with f64) for the functions below, of f32 values or,
    where the formula needs no wider type, of f64 values (then `wide` and `narrow` keep them)."""

    def __init__(self, em: ArithEmitter, double: bool = False) -> None:
        super().__init__(em, double=True)
        self.of_double = double
        self.f64 = em.types.element(DType.double)
        self.f32 = em.types.element(DType.float)

    def wide(self, x: ir.Value) -> ir.Value:
        return x if self.of_double else arith.extf(self.f64, x)

    def narrow(self, x: ir.Value) -> ir.Value:
        return x if self.of_double else arith.truncf(self.f32, x)

    def c32(self, value: float) -> ir.Value:
        """A constant of the argument's type."""
        return self.em.s.const(value, DType.double if self.of_double else DType.float)

    def signed_like(self, magnitude: ir.Value, x: ir.Value) -> ir.Value:
        """`magnitude` (the argument's type, not negative) with the sign of `x`: odd functions."""
        of_x = _F(self.em, double=self.of_double)
        return arith.select(of_x.negative_sign(x), arith.negf(magnitude), magnitude)

    def polynomial(self, z: ir.Value, coefficients: list[float]) -> ir.Value:
        """Horner's rule, the highest coefficient first."""
        total = self.c(coefficients[0])
        for c in coefficients[1:]:
            total = arith.addf(arith.mulf(total, z), self.c(c))
        return total


# 2/pi's first 288 bits, in 24-bit chunks (each chunk times an f32's 24-bit significand is exact in f64)
_TWO_OVER_PI = 0xA2F9836E4E441529FC2757D1F534DDC0DB6295993C439041FE5163ABDEBBC561B7246E3A
_CHUNKS = [(_TWO_OVER_PI >> (24 * (11 - i))) & 0xFFFFFF for i in range(12)]
_HALF_PI_HIGH, _HALF_PI_LOW = 1.5707963267948966, 6.123233995736766e-17
# Taylor series of sin(r)/r - 1 and cos(r) - 1 in r^2, for |r| <= pi/4 (their error is below 1e-21)
_SIN = [(-1) ** k / math.factorial(2 * k + 1) for k in range(9, 0, -1)]
_COS = [(-1) ** k / math.factorial(2 * k) for k in range(10, 0, -1)]


def _reduced(d: _D, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """An f32 `x` as r + k pi/2 with |r| <= pi/4: (r in f64, k mod 4 as i32). Payne and Hanek's
    reduction for every finite f32: x * (2/pi) mod 4 from exact products of x with 24-bit chunks of
    2/pi (each product reduced mod 4 exactly), summed in double-double, so the quadrant and r are
    right even for x = 3.4e38, where x mod pi/2 needs 2/pi to 150 bits."""
    xd = d.wide(x)
    hi, lo = d.c(0.0), d.c(0.0)
    quarter, four = d.c(0.25), d.c(4.0)
    for i, chunk in enumerate(_CHUNKS):
        p = arith.mulf(xd, d.c(math.ldexp(chunk, -24 * (i + 1))))
        q = arith.subf(p, arith.mulf(four, mlir_math.floor(arith.mulf(p, quarter))))
        total = arith.addf(hi, q)  # two-sum: hi + q = total + error exactly
        back = arith.subf(total, hi)
        error = arith.addf(arith.subf(hi, arith.subf(total, back)), arith.subf(q, back))
        hi, lo = total, arith.addf(lo, error)
    k = mlir_math.roundeven(hi)
    f = arith.addf(arith.subf(hi, k), lo)
    r = arith.addf(arith.mulf(f, d.c(_HALF_PI_HIGH)), arith.mulf(f, d.c(_HALF_PI_LOW)))
    i32 = d.em.types.element(DType.int32)
    quadrant = arith.andi(arith.fptosi(i32, k), d.em.s.const(3, DType.int32))
    return r, quadrant


def _sin_cos(d: _D, r: ir.Value) -> tuple[ir.Value, ir.Value]:
    z = arith.mulf(r, r)
    sin = arith.addf(r, arith.mulf(arith.mulf(r, z), d.polynomial(z, _SIN)))
    cos = arith.addf(d.c(1.0), arith.mulf(z, d.polynomial(z, _COS)))
    return sin, cos


def _quadrant_is(d: _D, quadrant: ir.Value, k: int) -> ir.Value:
    return arith.cmpi(arith.CmpIPredicate.eq, quadrant, d.em.s.const(k, DType.int32))


def _trigonometric(function: str) -> Callable[[_D, ir.Value], ir.Value]:
    def build(d: _D, x: ir.Value) -> ir.Value:
        r, quadrant = _reduced(d, x)
        sin, cos = _sin_cos(d, r)
        # sin x by quadrant: sin r, cos r, -sin r, -cos r; cos x: cos r, -sin r, -cos r, sin r
        odd = arith.ori(_quadrant_is(d, quadrant, 1), _quadrant_is(d, quadrant, 3))
        if function == "tan":
            y = arith.select(odd, arith.negf(arith.divf(cos, sin)), arith.divf(sin, cos))
        else:
            first, second = (sin, cos) if function == "sin" else (cos, arith.negf(sin))
            y = arith.select(odd, second, first)
            upper = arith.ori(_quadrant_is(d, quadrant, 2), _quadrant_is(d, quadrant, 3))
            y = arith.select(upper, arith.negf(y), y)
        y = d.narrow(y)
        f32 = _F(d.em, double=False)
        y = arith.select(f32.inf(x), d.c32(math.nan), y)
        return arith.select(f32.eq(x, d.c32(0.0)), x, y) if function != "cos" else y  # sin(-0) = -0

    return build


_LN2 = math.log(2.0)
_HUGE = 2.0**28  # beyond it, sqrt(x^2 + 1) is x in f64 and asinh x = log(2x)


# Taylor series (odd functions: the coefficients of a, a^3, ...) for small arguments, where the
# formulas below would rest on IREE's log1p and expm1 near 0 (good to about 1e-13 in f64, and on
# its GPU backends worse); 14 terms are exact to f64 below the thresholds
_SERIES_TERMS = 14
_ASINH_SERIES = [(-1) ** n * math.comb(2 * n, n) / (4**n * (2 * n + 1)) for n in range(_SERIES_TERMS)]
_ATANH_SERIES = [1 / (2 * n + 1) for n in range(_SERIES_TERMS)]
_SINH_SERIES = [1 / math.factorial(2 * n + 1) for n in range(_SERIES_TERMS)]
_SMALL = 0.125


def _odd_series(d: _D, a: ir.Value, coefficients: list[float]) -> ir.Value:
    """a * (c0 + c1 a^2 + ...) in f64."""
    return arith.mulf(a, d.polynomial(arith.mulf(a, a), coefficients[::-1]))


def _asinh(d: _D, x: ir.Value) -> ir.Value:
    """log1p(a + a^2 / (1 + sqrt(1 + a^2))) for a = |x| (the argument in f64; no cancellation),
    log(a) + ln 2 for huge a, the series for small a; the sign of x."""
    a = mlir_math.absf(x)
    ad = d.wide(a)
    square = arith.mulf(ad, ad)
    t = arith.addf(ad, arith.divf(square, arith.addf(d.c(1.0), mlir_math.sqrt(arith.addf(d.c(1.0), square)))))
    y = mlir_math.log1p(d.narrow(t))
    y = arith.select(arith.cmpf(FP.OLT, a, d.c32(_SMALL)), d.narrow(_odd_series(d, ad, _ASINH_SERIES)), y)
    large = d.narrow(arith.addf(d.wide(mlir_math.log(a)), d.c(_LN2)))
    return d.signed_like(arith.select(arith.cmpf(FP.OGT, a, d.c32(_HUGE)), large, y), x)


def _acosh(d: _D, x: ir.Value) -> ir.Value:
    """log1p((x - 1) + sqrt((x - 1)(x + 1))) in f64, log(x) + ln 2 for huge x; NaN below 1."""
    xd = d.wide(x)
    below = arith.subf(xd, d.c(1.0))
    t = arith.addf(below, mlir_math.sqrt(arith.mulf(below, arith.addf(xd, d.c(1.0)))))
    small = mlir_math.log1p(d.narrow(t))
    large = d.narrow(arith.addf(d.wide(mlir_math.log(x)), d.c(_LN2)))
    y = arith.select(arith.cmpf(FP.OGT, x, d.c32(_HUGE)), large, small)
    return arith.select(arith.cmpf(FP.OLT, x, d.c32(1.0)), d.c32(math.nan), y)


def _atanh(d: _D, x: ir.Value) -> ir.Value:
    """log1p(2a / (1 - a)) / 2 for a = |x| (the quotient in f64), the series for small a; the
    sign of x."""
    a = mlir_math.absf(x)
    ad = d.wide(a)
    t = arith.divf(arith.addf(ad, ad), arith.subf(d.c(1.0), ad))
    y = d.narrow(arith.mulf(d.c(0.5), d.wide(mlir_math.log1p(d.narrow(t)))))
    y = arith.select(arith.cmpf(FP.OLT, a, d.c32(_SMALL)), d.narrow(_odd_series(d, ad, _ATANH_SERIES)), y)
    y = arith.select(arith.cmpf(FP.OGT, a, d.c32(1.0)), d.c32(math.nan), y)
    return d.signed_like(y, x)


def _hyperbolic(function: str) -> Callable[[_D, ir.Value], ir.Value]:
    """sinh and cosh from e = exp(|x| / 2)^2 in f64 (exp(|x|) itself overflows f32 before sinh
    does); sinh of |x| < 1 from its series, without the cancellation of e - 1/e."""

    def build(d: _D, x: ir.Value) -> ir.Value:
        a = mlir_math.absf(x)
        h = d.wide(mlir_math.exp(arith.mulf(a, d.c32(0.5))))
        half_e = arith.mulf(arith.mulf(d.c(0.5), h), h)  # e / 2 without overflowing where sinh does not
        half_inverse = arith.divf(arith.divf(d.c(0.5), h), h)
        if function == "cosh":
            return d.narrow(arith.addf(half_e, half_inverse))
        near_zero = _odd_series(d, d.wide(a), _SINH_SERIES)
        far = arith.subf(half_e, half_inverse)
        y = d.narrow(arith.select(arith.cmpf(FP.OLT, a, d.c32(1.0)), near_zero, far))
        return d.signed_like(y, x)

    return build


# the formulas of asinh, acosh, atanh, sinh and cosh are accurate in the argument's own type too,
# and IREE's f64 asinh, ... have the f32 ones' faults (asinh(-2^31) was NaN, acosh(DBL_MAX) inf)
_OWN_F64: dict[str, Callable[[_D, ir.Value], ir.Value]] = {}
_OWN: dict[str, Callable[[_D, ir.Value], ir.Value]] = {
    "sin": _trigonometric("sin"),
    "cos": _trigonometric("cos"),
    "tan": _trigonometric("tan"),
    "asinh": _asinh,
    "acosh": _acosh,
    "atanh": _atanh,
    "sinh": _hyperbolic("sinh"),
    "cosh": _hyperbolic("cosh"),
}


def c_pow(em: ArithEmitter, x: ir.Value, y: ir.Value, double: bool) -> ir.Value:
    """C's pow (what the reference's numpy computes; MIGraphX calls std::pow). math.powf lowers to
    exp(y log x) on IREE's backends and GLSL's Pow is defined only for finite x > 0, so a negative
    base gave NaN (or, on some Vulkan drivers, a number) where C gives (-2)^3 = -8: |x|^y is
    computed where |x| is finite and positive (`_f32_power`; f64: math.powf), and the rest is
    selected here."""
    f = _F(em, double)
    zero, one, inf, nan = f.c(0.0), f.c(1.0), f.c(math.inf), f.c(math.nan)
    true = em.s.const(True, DType.bool)
    ax = mlir_math.absf(x)
    ax_zero, ax_inf, y_inf = f.eq(ax, zero), f.eq(ax, inf), f.inf(y)
    base = arith.select(arith.ori(arith.ori(ax_zero, ax_inf), y_inf), one, ax)
    magnitude = mlir_math.powf(base, y) if double else _f32_power(_D(em), base, y)
    y_positive = f.gt(y, zero)
    # y = +-inf: 0 or inf by |x| < 1; |x| = inf: 0 or inf by the sign of y; |x| = 0: inf or 0
    at_inf_exponent = arith.select(arith.xori(f.lt(ax, one), y_positive), inf, zero)
    magnitude = arith.select(y_inf, at_inf_exponent, magnitude)
    magnitude = arith.select(ax_inf, arith.select(y_positive, inf, zero), magnitude)
    magnitude = arith.select(ax_zero, arith.select(y_positive, zero, inf), magnitude)
    magnitude = arith.select(f.eq(ax, one), one, magnitude)
    integral = f.eq(mlir_math.floor(y), y)  # +-inf included; NaN not
    odd = arith.andi(arith.andi(integral, arith.xori(y_inf, true)), arith.cmpf(FP.UNE, arith.remf(y, f.c(2.0)), zero))
    result = arith.select(arith.andi(f.negative_sign(x), odd), arith.negf(magnitude), magnitude)
    finite_negative = arith.andi(f.lt(x, zero), arith.xori(ax_inf, true))
    undefined = arith.andi(finite_negative, arith.xori(integral, true))
    result = arith.select(arith.ori(undefined, arith.ori(f.nan(x), f.nan(y))), nan, result)
    exact_one = arith.ori(f.eq(y, zero), f.eq(x, one))
    return arith.select(exact_one, one, result)


def _f32_power(d: _D, base: ir.Value, y: ir.Value) -> ir.Value:
    """|x|^y for finite |x| > 0 as exp(y log |x|) in f64 arithmetic, rounded once: IREE's f32 powf is
    exp(y log x) in f32, whose error grows with y log x (pow(0.5, 100) was 20 ulp off). The f64 log
    and exp are series written here (SPIR-V has no f64 Log or Exp; IREE's CPU f64 ones are good to
    1e-13 only): log m = 2 atanh((m - 1) / (m + 1)) for m in [sqrt(1/2), sqrt(2)], and
    exp(n ln 2 + r) = 2^n exp(r) with |r| <= ln 2 / 2."""
    em = d.em
    i64 = em.types.element(DType.int64)

    def i(value: int) -> ir.Value:
        return em.s.const(value, DType.int64)

    bits = arith.bitcast(i64, d.wide(base))
    exponent = arith.subi(arith.andi(arith.shrui(bits, i(52)), i(0x7FF)), i(1023))
    m = arith.bitcast(d.f64, arith.ori(arith.andi(bits, i((1 << 52) - 1)), i(1023 << 52)))
    high = arith.cmpf(FP.OGT, m, d.c(math.sqrt(2.0)))
    m = arith.select(high, arith.mulf(m, d.c(0.5)), m)
    exponent = arith.select(high, arith.addi(exponent, i(1)), exponent)
    s = arith.divf(arith.subf(m, d.c(1.0)), arith.addf(m, d.c(1.0)))
    z = arith.mulf(s, s)
    log_m = arith.mulf(arith.mulf(d.c(2.0), s), d.polynomial(z, [1 / (2 * k + 1) for k in range(12, -1, -1)]))
    log_x = arith.addf(arith.mulf(arith.sitofp(d.f64, exponent), d.c(_LN2)), log_m)
    # beyond +-200, exp overflows or underflows f32 all the same
    t = arith.minimumf(arith.maximumf(arith.mulf(d.wide(y), log_x), d.c(-200.0)), d.c(200.0))
    n = mlir_math.roundeven(arith.mulf(t, d.c(1 / _LN2)))
    r = arith.subf(arith.subf(t, arith.mulf(n, d.c(_LN2_HIGH))), arith.mulf(n, d.c(_LN2_LOW)))
    exp_r = d.polynomial(r, [1 / math.factorial(k) for k in range(15, -1, -1)])
    scale = arith.bitcast(d.f64, arith.shli(arith.addi(arith.fptosi(i64, n), i(1023)), i(52)))
    return d.narrow(arith.mulf(exp_r, scale))


# ln 2 in two parts, the first with 32 significant bits (n * _LN2_HIGH is exact for |n| < 2^20)
_LN2_HIGH, _LN2_LOW = 6.93147180369123816490e-01, 1.90821492927058770002e-10


def ieee_remainder(em: ArithEmitter, x: ir.Value, y: ir.Value, double: bool) -> ir.Value:
    """IEEE remainder (the quotient rounded to nearest, ties to even; the result exact) from C's
    fmod, which is exact: t = fmod(|x|, 2|y|) tells the quotient's parity, and every subtraction
    below is exact (Sterbenz). NaN for y = 0, an infinite x or a NaN; x for an infinite y."""
    f = _F(em, double)
    ax, ay = mlir_math.absf(x), mlir_math.absf(y)
    twice = arith.addf(ay, ay)
    t = arith.select(f.inf(twice), ax, arith.remf(ax, twice))  # |x| < 2|y| where 2|y| overflows
    past = arith.cmpf(FP.OGE, t, ay)
    a = arith.select(past, arith.subf(t, ay), t)  # in [0, |y|); the quotient so far is odd if `past`
    rest = arith.subf(ay, a)
    up = arith.ori(f.gt(a, rest), arith.andi(f.eq(a, rest), past))
    r = arith.select(up, arith.negf(rest), a)
    r = arith.select(f.negative_sign(x), arith.negf(r), r)
    undefined = arith.ori(arith.ori(f.eq(ay, f.c(0.0)), f.inf(x)), arith.ori(f.nan(x), f.nan(y)))
    return arith.select(undefined, f.c(math.nan), r)


_OWN_F64.update({name: _OWN[name] for name in ("asinh", "acosh", "atanh", "sinh", "cosh")})
