"""Pointwise operators: a scalar rule each (arith/math, the body of linalg.generic and of pointwise
modules), and tosa's op on whole tensors where tosa has the op for the types at hand."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from iree.compiler import ir
from iree.compiler.dialects import arith, math, tosa

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import Operation
from mgxir.translate.mlir.emitter import TOSA_FLOATS
from mgxir.translate.mlir.registry import POINTWISE_AS_GENERIC, lowers, lowers_scalar
from mgxir.translate.mlir.scalar import CannotLower, Scalars
from mgxir.translate.mlir.types import UNSIGNED

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]
Types = list[DType]

# -- scalar rules ---------------------------------------------------------------------------------

# float functions of `math`; on integers, the rounding ones are the identity
FLOAT_MATH: dict[str, Callable[[ir.Value], ir.Value]] = {
    "acos": math.acos,
    "acosh": math.acosh,
    "asin": math.asin,
    "asinh": math.asinh,
    "atan": math.atan,
    "atanh": math.atanh,
    "cos": math.cos,
    "cosh": math.cosh,
    "erf": math.erf,
    "exp": math.exp,
    "log": math.log,
    "log2": math.log2,
    "sin": math.sin,
    "sinh": math.sinh,
    "sqrt": math.sqrt,
    "tan": math.tan,
    "tanh": math.tanh,
    "rsqrt": math.rsqrt,
}
ROUNDING: dict[str, Callable[[ir.Value], ir.Value]] = {
    "ceil": math.ceil,
    "floor": math.floor,
    "nearbyint": math.roundeven,
}


@lowers_scalar(*FLOAT_MATH, to=lambda name: f"math.{FLOAT_MATH[name].__name__}")
def _float_math(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    s.float_only(op.name, types[0])
    if out.itemsize < 4:  # as numpy computes f16: in f32, rounded once (NVIDIA's f16 sqrt truncates)
        return s.to_float(FLOAT_MATH[op.name](s.to_float(args[0], out, DType.float)), DType.float, out)
    return FLOAT_MATH[op.name](args[0])


@lowers_scalar(*ROUNDING, to=lambda name: f"math.{ROUNDING[name].__name__} (integers: unchanged)")
def _rounding(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return ROUNDING[op.name](args[0]) if types[0].is_float else args[0]


@lowers_scalar("identity", to="nothing (the argument)")
def _identity(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return args[0]


@lowers_scalar("abs", to="math.absf / math.absi")
def _abs(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    t = types[0]
    if t.is_float:
        return math.absf(args[0])
    return args[0] if t in UNSIGNED or t is DType.bool else math.absi(args[0])


@lowers_scalar("neg", to="arith.negf / arith.subi")
def _neg(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return s.neg(args[0], types[0])


@lowers_scalar("not", to="arith.cmpf/cmpi eq 0")
def _not(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    t = types[0]
    return s.from_bool(s.cmp("eq", args[0], s.const(0, t), t), out)


@lowers_scalar("recip", to="arith.divf 1, x")
def _recip(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return s.div(s.const(1, out), args[0], out)


@lowers_scalar("relu", to="arith.maximumf / maxsi x, 0")
def _relu(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return s.max(args[0], s.const(0, out), out)


@lowers_scalar("sigmoid", to="1 / (1 + math.exp(-x))")
def _sigmoid(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    s.float_only(op.name, out)
    one = s.const(1, out)
    return arith.divf(one, arith.addf(one, math.exp(arith.negf(args[0]))))


@lowers_scalar("sign", to="arith.select on comparisons with 0")
def _sign(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    x, zero = args[0], s.const(0, out)
    negative = s.select(s.cmp("lt", x, zero, out), s.const(-1, out), x)  # keeps 0 and NaN
    return s.select(s.cmp("gt", x, zero, out), s.const(1, out), negative)


@lowers_scalar("isinf", "isnan", to="arith.cmpf oeq |x|, inf / arith.cmpf uno x, x")
def _float_test(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    if not types[0].is_float:
        return s.const(False, DType.bool)
    return s.is_inf(args[0], types[0]) if op.name == "isinf" else s.is_nan(args[0])


@lowers_scalar("leaky_relu", to="arith.select(x < 0, x * alpha, x)")
def _leaky_relu(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    s.float_only(op.name, out)
    x = args[0]
    return s.select(s.cmp("lt", x, s.const(0, out), out), arith.mulf(x, s.const(op["alpha"], out)), x)


@lowers_scalar("elu", to="arith.select(x < 0, alpha * math.expm1(x), x)")
def _elu(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    s.float_only(op.name, out)
    x = args[0]
    return s.select(s.cmp("lt", x, s.const(0, out), out), arith.mulf(s.const(op["alpha"], out), math.expm1(x)), x)


@lowers_scalar("convert", to="arith.extf/truncf/fptosi/sitofp/... with MIGraphX's saturation")
def _convert(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return s.convert(args[0], types[0], out)


@lowers_scalar("bit_cast", to="arith.bitcast")
def _bit_cast(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    if types[0] is out or s.e.types.element(types[0]) == s.e.types.element(out):
        return args[0]
    return arith.bitcast(s.e.types.element(out), args[0])


ROUNDED_NOTE = " (f16/bf16/fp8: in f32, arith.truncf after each op)"


@lowers_scalar("add", to="arith.addf / addi" + ROUNDED_NOTE)
def _add(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return s.rounded("add", args[0], args[1], out)


@lowers_scalar("sub", to="arith.subf / subi" + ROUNDED_NOTE)
def _sub(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return s.rounded("sub", args[0], args[1], out)


@lowers_scalar("mul", to="arith.mulf / muli" + ROUNDED_NOTE)
def _mul(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return s.rounded("mul", args[0], args[1], out)


@lowers_scalar("div", to="arith.divf / divsi / divui" + ROUNDED_NOTE)
def _div(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return s.rounded("div", args[0], args[1], out)


@lowers_scalar("max", to="arith.maximumf / maxsi / maxui")
def _max(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return s.max(args[0], args[1], out)


@lowers_scalar("min", to="arith.minimumf / minsi / minui")
def _min(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return s.min(args[0], args[1], out)


@lowers_scalar(
    "pow",
    to="C's pow: math.powf of |x| for finite |x| > 0 and finite y (f16/bf16 in f32), zeros, infinities, "
    "negative bases (odd integer y: negated; other finite y: NaN) and NaNs selected as C specifies them "
    "(integers: by squaring, over the exponent's bits)",
)
def _pow(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    if not out.is_float:
        return _integer_power(s, args[0], args[1], out)
    wide = out if out.itemsize >= 4 else DType.float
    x, y = s.to_float(args[0], out, wide), s.to_float(args[1], out, wide)
    return s.to_float(_float_power(s, x, y, wide), wide, out)


def _float_power(s: Scalars, x: ir.Value, y: ir.Value, t: DType) -> ir.Value:
    """C's pow (what the reference's numpy computes; MIGraphX calls std::pow). math.powf lowers to
    exp(y log x) on IREE's backends and GLSL's Pow is defined only for finite x > 0, so a negative
    base gave NaN (or, on some Vulkan drivers, a number) where C gives (-2)^3 = -8: math.powf gets
    |x| where that is finite and positive, and the rest is selected here."""
    zero, one, inf, nan = s.const(0.0, t), s.const(1.0, t), s.const(float("inf"), t), s.const(float("nan"), t)
    true = s.const(True, DType.bool)
    ax = math.absf(x)
    ax_zero, ax_inf, y_inf = s.cmp("eq", ax, zero, t), s.cmp("eq", ax, inf, t), s.is_inf(y, t)
    magnitude = math.powf(s.select(arith.ori(arith.ori(ax_zero, ax_inf), y_inf), one, ax), y)
    y_positive = s.cmp("gt", y, zero, t)
    # y = +-inf: 0 or inf by |x| < 1; |x| = inf: 0 or inf by the sign of y; |x| = 0: inf or 0
    at_inf_exponent = s.select(arith.xori(s.cmp("lt", ax, one, t), y_positive), inf, zero)
    magnitude = s.select(y_inf, at_inf_exponent, magnitude)
    magnitude = s.select(ax_inf, s.select(y_positive, inf, zero), magnitude)
    magnitude = s.select(ax_zero, s.select(y_positive, zero, inf), magnitude)
    magnitude = s.select(s.cmp("eq", ax, one, t), one, magnitude)
    integral = s.cmp("eq", math.floor(y), y, t)  # +-inf included; NaN not
    odd = arith.andi(
        arith.andi(integral, arith.xori(y_inf, true)), s.cmp("ne", arith.remf(y, s.const(2.0, t)), zero, t)
    )
    bits = DType.int64 if t.itemsize == 8 else DType.int32
    negative_sign = s.cmp("lt", arith.bitcast(s.e.types.element(bits), x), s.const(0, bits), bits)
    result = s.select(arith.andi(negative_sign, odd), arith.negf(magnitude), magnitude)
    finite_negative = arith.andi(s.cmp("lt", x, zero, t), arith.xori(ax_inf, true))
    undefined = arith.andi(finite_negative, arith.xori(integral, true))
    result = s.select(arith.ori(undefined, arith.ori(s.is_nan(x), s.is_nan(y))), nan, result)
    exact_one = arith.ori(s.cmp("eq", y, zero, t), s.cmp("eq", x, one, t))
    return s.select(exact_one, one, result)


def _integer_power(s: Scalars, base: ir.Value, exponent: ir.Value, t: DType) -> ir.Value:
    """base ** exponent, wrapping as integer products do (IREE's CPU backend cannot lower
    math.ipowi). A negative exponent gives what MIGraphX's std::pow truncates to: 1 for a base of 1,
    -1 or 1 for -1 (odd or even exponent), else 0."""
    one, zero = s.const(1, t), s.const(0, t)
    result, square, rest = one, base, exponent
    for _ in range(8 * t.itemsize):
        odd = s.cmp("ne", arith.andi(rest, one), zero, t)
        result = s.select(odd, s.mul(result, square, t), result)
        square = s.mul(square, square, t)
        rest = arith.shrui(rest, one)
    if t in UNSIGNED or t is DType.bool:
        return result
    odd_exponent = s.cmp("ne", arith.andi(exponent, one), zero, t)
    minus_one = s.const(-1, t)
    of_minus_one = s.select(odd_exponent, minus_one, one)
    fraction = s.select(s.cmp("eq", base, one, t), one, s.select(s.cmp("eq", base, minus_one, t), of_minus_one, zero))
    return s.select(s.cmp("lt", exponent, zero, t), fraction, result)


@lowers_scalar("fmod", to="arith.remf / remsi / remui")
def _fmod(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return s.rem(args[0], args[1], out)


@lowers_scalar("mod", to="arith.remf / remsi, plus the divisor where the signs differ")
def _mod(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    a, b = args
    r = s.rem(a, b, out)
    if out in UNSIGNED or out is DType.bool:
        return r
    zero = s.const(0, out)
    signs_differ = arith.xori(s.cmp("lt", r, zero, out), s.cmp("lt", b, zero, out))
    fix = arith.andi(s.cmp("ne", r, zero, out), signs_differ)
    return s.select(fix, s.add(r, b, out), r)


@lowers_scalar("sqdiff", to="(a - b) * (a - b)" + ROUNDED_NOTE)
def _sqdiff(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    d = s.rounded("sub", args[0], args[1], out)
    return s.rounded("mul", d, d, out)


@lowers_scalar("prelu", to="arith.select(x < 0, x * slope, x)" + ROUNDED_NOTE)
def _prelu(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    x, slope = args
    return s.select(s.cmp("lt", x, s.const(0, out), out), s.rounded("mul", x, slope, out), x)


COMPARE = {"equal": "eq", "greater": "gt", "less": "lt"}


@lowers_scalar(*COMPARE, to="arith.cmpf / cmpi, as the input type")
def _compare(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return s.from_bool(s.cmp(COMPARE[op.name], args[0], args[1], types[0]), out)


LOGIC = {"logical_and": arith.andi, "logical_or": arith.ori, "logical_xor": arith.xori}


@lowers_scalar(*LOGIC, to="arith.andi / ori / xori of x != 0")
def _logic(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    t = types[0]
    return s.from_bool(LOGIC[op.name](s.truthy(args[0], t), s.truthy(args[1], t)), out)


@lowers_scalar("bitwise_and", to="arith.andi")
def _bitwise_and(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    if out.is_float:
        raise CannotLower(f"'bitwise_and' on {out.type_name} has no lowering (integer types only)")
    return arith.andi(args[0], args[1])


@lowers_scalar("clip", to="min(max(x, lo), hi)")
def _clip(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    x, lo, hi = args
    return s.min(s.max(x, lo, out), hi, out)


@lowers_scalar("where", to="arith.select")
def _where(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    return s.select(s.truthy(args[0], types[0]), args[1], args[2])


@lowers_scalar("quantizelinear", to="roundeven(x / scale) + zero point, saturated")
def _quantize(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    work = types[1] if types[1].is_float else DType.float
    x = s.to_float(args[0], types[0], work)
    q = arith.divf(x, s.to_float(args[1], types[1], work))
    if not out.is_float:  # a float result (MX types) is not rounded
        q = math.roundeven(q)
    if len(args) == 3:
        q = arith.addf(q, s.to_float(args[2], types[2], work))
    return s.convert(q, work, out)


@lowers_scalar("dequantizelinear", to="(x - zero point) * scale")
def _dequantize(s: Scalars, op: Operation, args: Values, types: Types, out: DType) -> ir.Value:
    if not out.is_float:  # an integer scale (MIGraphX allows it): integer arithmetic
        x = s.convert(args[0], types[0], out)
        if len(args) == 3:
            x = s.sub(x, s.convert(args[2], types[2], out), out)
        return s.mul(x, args[1], out)
    x = s.to_float(args[0], types[0], out)
    if len(args) == 3:
        x = arith.subf(x, s.to_float(args[2], types[2], out))
    return arith.mulf(x, args[1])


# -- tosa on whole tensors ------------------------------------------------------------------------

TosaBuilder = Callable[["Lowering", ir.Type, Values], ir.Value]


def _tosa_mul(lowering: Lowering, result: ir.Type, args: Values) -> ir.Value:
    shift = lowering.function_values.get(_tosa_mul)
    if shift is None:  # one zero shift per function, made where the first mul is
        shift_type = lowering.types.tensor(DType.int8, [1])
        zero = ir.DenseElementsAttr.get_splat(shift_type, ir.IntegerAttr.get(shift_type.element_type, 0))
        shift = lowering.function_values[_tosa_mul] = tosa.const(zero)
    return lowering.create("tosa.mul", result, [args[0], args[1], shift])


def _tosa(name: str) -> TosaBuilder:
    """A tosa op without attributes, made with its instruction's tags in one step."""
    return lambda lowering, result, args: lowering.create(name, result, args)


# tosa's integer profile has add, sub, maximum, minimum and abs on i32 only (i8/i16 fail to legalize)
FLOATS_INTS = TOSA_FLOATS | {DType.int32}
F32_I32 = frozenset({DType.float, DType.int32})
# op name -> (tosa op, builder, the element types tosa takes for it)
TOSA: dict[str, tuple[str, TosaBuilder, frozenset[DType]]] = {
    # f16/bf16 add, sub and mul take the scalar rules, whose rounding a backend cannot fuse away
    "add": ("tosa.add", _tosa("tosa.add"), F32_I32),
    "sub": ("tosa.sub", _tosa("tosa.sub"), F32_I32),
    "mul": ("tosa.mul", _tosa_mul, frozenset({DType.float})),
    "max": ("tosa.maximum", _tosa("tosa.maximum"), FLOATS_INTS),
    "min": ("tosa.minimum", _tosa("tosa.minimum"), FLOATS_INTS),
    "abs": ("tosa.abs", _tosa("tosa.abs"), FLOATS_INTS),
    "exp": ("tosa.exp", _tosa("tosa.exp"), TOSA_FLOATS),
    "log": ("tosa.log", _tosa("tosa.log"), TOSA_FLOATS),
    "tanh": ("tosa.tanh", _tosa("tosa.tanh"), TOSA_FLOATS),
    "sigmoid": ("tosa.sigmoid", _tosa("tosa.sigmoid"), TOSA_FLOATS),
    "floor": ("tosa.floor", _tosa("tosa.floor"), TOSA_FLOATS),
    "ceil": ("tosa.ceil", _tosa("tosa.ceil"), TOSA_FLOATS),
    "recip": ("tosa.reciprocal", _tosa("tosa.reciprocal"), TOSA_FLOATS),
    "rsqrt": ("tosa.rsqrt", _tosa("tosa.rsqrt"), TOSA_FLOATS),
    "sin": ("tosa.sin", _tosa("tosa.sin"), TOSA_FLOATS),
    "cos": ("tosa.cos", _tosa("tosa.cos"), TOSA_FLOATS),
    "erf": ("tosa.erf", _tosa("tosa.erf"), TOSA_FLOATS),
}
_TYPE_NOTE = {
    TOSA_FLOATS: "f16/bf16/f32",
    FLOATS_INTS: "f16/bf16/f32/i32",
    F32_I32: "f32/i32",
    frozenset({DType.float}): "f32",
}


def _describe_tosa(name: str) -> str:
    op, _, takes = TOSA[name]
    return f"{op} ({_TYPE_NOTE[takes]}), else (and with dynamic dimensions) linalg.generic"


@lowers(*TOSA, to=_describe_tosa, dynamic=True)
def _tosa_elementwise(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    _, build, takes = TOSA[ins.op.name]
    if ins.shape.is_dynamic or ins.shape.dtype not in takes or any(a.shape.dtype not in takes for a in ins.args):
        return POINTWISE_AS_GENERIC.lower(lowering, ins, args)
    return build(lowering, lowering.types.of_shape(ins.shape), args)
