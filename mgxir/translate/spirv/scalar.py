"""Scalar ops as SPIR-V: one lowering function per pointwise operator, in a table keyed by the
operator's definition (`LOWERINGS[lookup("add")]`).

A lowering gets the emitter and the call (operation, argument values, their element types, the
result's element type) and returns a value of any compute kind; the kernel then converts it to the
result type as numpy's `astype` would and rounds half results, which is what the reference
interpreter's compute does (see mgxir/ops/elementwise.py). Where numpy defines a result that
SPIR-V leaves undefined (integer division by zero, NaN in max/min, pow of negative bases) the
lowering selects numpy's answer explicitly."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.operation import OpDef, Operation
from mgxir.ir.registry import lookup
from mgxir.ops import register_all_ops
from mgxir.translate.spirv.builder import ModuleBuilder
from mgxir.translate.spirv.types import ElementType, Kind, Unsupported, element_type

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
HALF_MAX = 65504.0


@dataclass(frozen=True)
class Value:
    id: str
    kind: Kind


@dataclass(frozen=True)
class Call:
    op: Operation
    args: list[Value]
    arg_types: list[ElementType]
    result: ElementType

    @property
    def halves(self) -> bool:
        """numpy computes half inputs in half: intermediate results round to half too."""
        return self.arg_types[0].dtype is DType.half


class ScalarEmitter:
    """Scalar arithmetic in compute types (32-bit float, 32-bit int, bool)."""

    def __init__(self, builder: ModuleBuilder) -> None:
        self.b = builder

    def type_of(self, kind: Kind) -> str:
        if kind == "f":
            return self.b.float_type(32)
        if kind == "i":
            return self.b.int_type(32, True)
        return self.b.boolean()

    def const(self, kind: Kind, value: float | int | bool) -> Value:
        if kind == "b":
            return Value(self.b.constant(self.b.boolean(), bool(value)), "b")
        if kind == "i":
            return Value(self.b.constant(self.type_of("i"), int(value)), "i")
        return Value(self.b.constant(self.type_of("f"), float(value)), "f")

    def op(self, opname: str, kind: Kind, *args: Value | str) -> Value:
        ids = [a.id if isinstance(a, Value) else a for a in args]
        return Value(self.b.emit(opname, *ids, type=self.type_of(kind), name=kind), kind)

    def glsl(self, name: str, kind: Kind, *args: Value) -> Value:
        return Value(self.b.glsl(name, self.type_of(kind), *(a.id for a in args)), kind)

    # -- conversions --------------------------------------------------------------------------

    def to_float(self, v: Value) -> Value:
        if v.kind == "f":
            return v
        if v.kind == "i":
            return self.op("OpConvertSToF", "f", v)
        return self.select(v, self.const("f", 1.0), self.const("f", 0.0))

    def truthy(self, v: Value) -> Value:
        """numpy's astype(bool): nonzero (NaN included) is true."""
        if v.kind == "b":
            return v
        if v.kind == "f":
            return self.op("OpFUnordNotEqual", "b", v, self.const("f", 0.0))
        return self.op("OpINotEqual", "b", v, self.const("i", 0))

    def astype(self, v: Value, kind: Kind) -> Value:
        """numpy's astype between compute kinds: floats truncate into ints, bools become 0/1."""
        if v.kind == kind:
            return v
        if kind == "b":
            return self.truthy(v)
        if v.kind == "b":
            return self.select(v, self.const(kind, 1), self.const(kind, 0))
        if kind == "f":
            return self.to_float(v)
        # numpy's cast (x86's cvttss2si): NaN and out-of-range values become INT32_MIN, which
        # SPIR-V leaves undefined (NVIDIA gives 0)
        inside = self.op(
            "OpLogicalAnd",
            "b",
            self.compare("GreaterThanEqual", v, self.const("f", -(2.0**31))),
            self.compare("LessThan", v, self.const("f", 2.0**31)),
        )
        return self.select(inside, self.op("OpConvertFToS", "i", v), self.const("i", INT32_MIN))

    def round_to(self, v: Value, t: ElementType) -> Value:
        """A float value rounded to the storage width of `t` (half), so later ops see what numpy sees."""
        if v.kind != "f" or t.width == 32:
            return v
        narrow = self.b.emit("OpFConvert", v.id, type=self.b.float_type(t.width), name="h")
        return self.op("OpFConvert", "f", narrow)

    def rounded(self, v: Value, call: Call) -> Value:
        return self.round_to(v, call.arg_types[0]) if call.halves else v

    # -- helpers ------------------------------------------------------------------------------

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        return self.op("OpSelect", a.kind, cond, a, b)

    def is_nan(self, v: Value) -> Value:
        return self.op("OpIsNan", "b", v)

    def compare(self, name: str, a: Value, b: Value) -> Value:
        """`name` is one of the ordered float comparisons (`LessThan`, ...) or `Equal`/`NotEqual`."""
        if a.kind == "f":
            return self.op(f"OpFOrd{name}", "b", a, b)
        if name in ("Equal", "NotEqual"):
            return self.op(f"OpI{name}", "b", a, b)
        return self.op(f"OpS{name}", "b", a, b)

    def extremum(self, a: Value, b: Value, largest: bool) -> Value:
        """numpy's maximum/minimum: a NaN on either side is the result."""
        if a.kind == "i":
            return self.glsl("SMax" if largest else "SMin", "i", a, b)
        if a.kind == "b":
            return self.op("OpLogicalOr" if largest else "OpLogicalAnd", "b", a, b)
        picked = self.glsl("FMax" if largest else "FMin", "f", a, b)
        picked = self.select(self.is_nan(b), b, picked)
        return self.select(self.is_nan(a), a, picked)


Lowering = Callable[[ScalarEmitter, Call], Value]
LOWERINGS: dict[OpDef, Lowering] = {}
register_all_ops()  # the table below is keyed by the catalogue's definitions


def lowers(*names: str) -> Callable[[Lowering], Lowering]:
    """Files a lowering under the definitions of these pointwise operators."""

    def register(fn: Lowering) -> Lowering:
        for name in names:
            defn = lookup(name)
            if defn is None or not defn.pointwise:
                raise ValueError(f"'{name}' is not a pointwise operator of the catalogue")
            LOWERINGS[defn] = fn
        return fn

    return register


def _by_kind(call: Call, **by_kind: Callable[[], Value]) -> Value:
    kind = call.args[0].kind
    if kind not in by_kind:
        raise Unsupported(f"{call.op.name} of {call.arg_types[0].name} (numpy has no such operation)")
    return by_kind[kind]()


# -- unary ---------------------------------------------------------------------------------------

# operators computed in float whatever the input type, as numpy does (int inputs give float64
# results that the result type truncates): GLSL.std.450 instruction, and the domain outside of
# which numpy gives NaN (GLSL leaves the result undefined there)
FLOAT_FUNCTIONS: dict[str, tuple[str, tuple[float, float] | None]] = {
    "acos": ("Acos", (-1.0, 1.0)),
    "acosh": ("Acosh", (1.0, math.inf)),
    "asin": ("Asin", (-1.0, 1.0)),
    "asinh": ("Asinh", None),
    "cos": ("Cos", None),
    "cosh": ("Cosh", None),
    "exp": ("Exp", None),
    "sin": ("Sin", None),
    "sinh": ("Sinh", None),
    "sqrt": ("Sqrt", (0.0, math.inf)),
    "tan": ("Tan", None),
    "tanh": ("Tanh", None),
}


def _float_function(glsl_name: str, domain: tuple[float, float] | None) -> Lowering:
    def lower(em: ScalarEmitter, call: Call) -> Value:
        x = em.to_float(call.args[0])
        y = em.glsl(glsl_name, "f", x)
        if domain is not None:
            low, high = domain
            outside = em.op(
                "OpLogicalOr",
                "b",
                em.compare("LessThan", x, em.const("f", low)),
                em.compare("GreaterThan", x, em.const("f", high)),
            )
            y = em.select(outside, em.const("f", math.nan), y)
        return em.select(em.is_nan(x), x, y)  # some drivers lose NaNs (lavapipe's atan gives 0)

    return lower


for _name, (_glsl, _domain) in FLOAT_FUNCTIONS.items():
    lowers(_name)(_float_function(_glsl, _domain))


@lowers("log", "log2")
def _logarithm(em: ScalarEmitter, call: Call) -> Value:
    x = em.to_float(call.args[0])
    y = em.glsl("Log" if call.op.name == "log" else "Log2", "f", x)
    y = em.select(em.compare("LessThan", x, em.const("f", 0.0)), em.const("f", math.nan), y)
    y = em.select(em.compare("Equal", x, em.const("f", 0.0)), em.const("f", -math.inf), y)
    return em.select(em.compare("Equal", x, em.const("f", math.inf)), x, y)


@lowers("atan")
def _atan(em: ScalarEmitter, call: Call) -> Value:
    x = em.to_float(call.args[0])
    y = em.glsl("Atan", "f", x)
    limit = em.op("OpFMul", "f", em.glsl("FSign", "f", x), em.const("f", math.pi / 2))
    return em.select(em.is_nan(x), x, em.select(em.op("OpIsInf", "b", x), limit, y))


@lowers("atanh")
def _atanh(em: ScalarEmitter, call: Call) -> Value:
    x = em.to_float(call.args[0])
    y = _float_function("Atanh", (-1.0, 1.0))(em, call)
    one = em.const("f", 1.0)
    edge = em.compare("Equal", em.glsl("FAbs", "f", x), one)
    return em.select(edge, em.op("OpFMul", "f", em.glsl("FSign", "f", x), em.const("f", math.inf)), y)


@lowers("rsqrt")
def _rsqrt(em: ScalarEmitter, call: Call) -> Value:
    # numpy: 1 / sqrt(x), the square root rounded to the input type first
    root = em.rounded(_float_function("Sqrt", (0.0, math.inf))(em, call), call)
    return em.op("OpFDiv", "f", em.const("f", 1.0), root)


@lowers("erf")
def _erf(em: ScalarEmitter, call: Call) -> Value:
    # Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7, under float32's resolution of 1)
    x = em.to_float(call.args[0])
    ax = em.glsl("FAbs", "f", x)
    t = em.op("OpFDiv", "f", em.const("f", 1.0), em.glsl("Fma", "f", em.const("f", 0.3275911), ax, em.const("f", 1.0)))
    poly = em.const("f", 1.061405429)
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly = em.glsl("Fma", "f", poly, t, em.const("f", coefficient))
    poly = em.op("OpFMul", "f", poly, t)
    gauss = em.glsl("Exp", "f", em.op("OpFNegate", "f", em.op("OpFMul", "f", ax, ax)))
    magnitude = em.op("OpFSub", "f", em.const("f", 1.0), em.op("OpFMul", "f", poly, gauss))
    signed = em.select(em.compare("LessThan", x, em.const("f", 0.0)), em.op("OpFNegate", "f", magnitude), magnitude)
    return em.select(em.is_nan(x), x, signed)


@lowers("abs")
def _abs(em: ScalarEmitter, call: Call) -> Value:
    x = call.args[0]
    return _by_kind(call, f=lambda: em.glsl("FAbs", "f", x), i=lambda: em.glsl("SAbs", "i", x))


@lowers("neg")
def _neg(em: ScalarEmitter, call: Call) -> Value:
    x = call.args[0]
    return _by_kind(call, f=lambda: em.op("OpFNegate", "f", x), i=lambda: em.op("OpSNegate", "i", x))


def _rounding(glsl_name: str) -> Lowering:
    def lower(em: ScalarEmitter, call: Call) -> Value:
        x = call.args[0]
        return _by_kind(call, f=lambda: em.glsl(glsl_name, "f", x), i=lambda: x)

    return lower


lowers("ceil")(_rounding("Ceil"))
lowers("floor")(_rounding("Floor"))
lowers("nearbyint")(_rounding("RoundEven"))  # half to even, as std::nearbyint and np.rint


@lowers("not")
def _not(em: ScalarEmitter, call: Call) -> Value:
    return em.op("OpLogicalNot", "b", em.truthy(call.args[0]))


@lowers("recip")
def _recip(em: ScalarEmitter, call: Call) -> Value:
    x = call.args[0]

    def integer() -> Value:
        # numpy's integer reciprocal: C division 1 / x, and INT32_MIN for x == 0
        quotient = em.op("OpSDiv", "i", em.const("i", 1), _nonzero_divisor(em, x))
        return em.select(em.compare("Equal", x, em.const("i", 0)), em.const("i", INT32_MIN), quotient)

    return _by_kind(call, f=lambda: em.op("OpFDiv", "f", em.const("f", 1.0), x), i=integer)


@lowers("relu")
def _relu(em: ScalarEmitter, call: Call) -> Value:
    x = call.args[0]
    return _by_kind(
        call, f=lambda: em.extremum(x, em.const("f", 0.0), True), i=lambda: em.extremum(x, em.const("i", 0), True)
    )


@lowers("sigmoid")
def _sigmoid(em: ScalarEmitter, call: Call) -> Value:
    # numpy: 1 / (1 + exp(-x)), each step in the input's type
    x = em.to_float(call.args[0])
    e = em.rounded(em.glsl("Exp", "f", em.op("OpFNegate", "f", x)), call)
    denominator = em.rounded(em.op("OpFAdd", "f", em.const("f", 1.0), e), call)
    return em.op("OpFDiv", "f", em.const("f", 1.0), denominator)


@lowers("sign")
def _sign(em: ScalarEmitter, call: Call) -> Value:
    x = call.args[0]

    def floating() -> Value:
        negative = em.select(em.compare("LessThan", x, em.const("f", 0.0)), em.const("f", -1.0), x)
        return em.select(em.compare("GreaterThan", x, em.const("f", 0.0)), em.const("f", 1.0), negative)

    return _by_kind(call, f=floating, i=lambda: em.glsl("SSign", "i", x))


def _predicate(opname: str) -> Lowering:
    def lower(em: ScalarEmitter, call: Call) -> Value:
        x = call.args[0]
        if x.kind != "f":
            return em.const("b", False)  # integers are never inf or NaN
        return em.op(opname, "b", x)

    return lower


lowers("isinf")(_predicate("OpIsInf"))
lowers("isnan")(_predicate("OpIsNan"))


@lowers("leaky_relu")
def _leaky_relu(em: ScalarEmitter, call: Call) -> Value:
    # numpy: where(x < 0, x * x.dtype.type(alpha), x): alpha is first made the input's type
    x = call.args[0]
    alpha = _in_type(call.op["alpha"], call.arg_types[0])
    zero = em.const(x.kind, 0)
    scaled = _arithmetic(em, "Mul", x, em.const(x.kind, alpha))
    return em.select(em.compare("LessThan", x, zero), scaled, x)


@lowers("elu")
def _elu(em: ScalarEmitter, call: Call) -> Value:
    # numpy: where(x < 0, x.dtype.type(alpha) * expm1(x), x)
    x = em.to_float(call.args[0])
    alpha = float(_in_type(call.op["alpha"], call.arg_types[0]))
    expm1 = em.rounded(em.op("OpFSub", "f", em.glsl("Exp", "f", x), em.const("f", 1.0)), call)
    scaled = em.op("OpFMul", "f", em.const("f", alpha), expm1)
    return em.select(em.compare("LessThan", x, em.const("f", 0.0)), scaled, x)


def _in_type(value: float, t: ElementType) -> float | int:
    """A float attribute as numpy's `dtype.type(value)` makes it: rounded to half, truncated to int."""
    converted = t.dtype.numpy.type(value)
    return int(converted) if t.kind == "i" else float(converted)


# -- binary --------------------------------------------------------------------------------------


def _arithmetic(em: ScalarEmitter, name: str, a: Value, b: Value) -> Value:
    """`Add`, `Sub`, `Mul` on floats (F...) or ints (I...)."""
    if a.kind == "b":
        raise Unsupported(f"{name.lower()} of bool_type values")
    return em.op(f"Op{'F' if a.kind == 'f' else 'I'}{name}", a.kind, a, b)


def _elementwise(name: str, on_bool: str | None = None) -> Lowering:
    def lower(em: ScalarEmitter, call: Call) -> Value:
        a, b = call.args
        by_kind: dict[str, Callable[[], Value]] = {
            "f": lambda: _arithmetic(em, name, a, b),
            "i": lambda: _arithmetic(em, name, a, b),
        }
        if on_bool is not None:
            by_kind["b"] = lambda: em.op(on_bool, "b", a, b)
        return _by_kind(call, **by_kind)

    return lower


lowers("add")(_elementwise("Add", on_bool="OpLogicalOr"))  # numpy's bool add is or
lowers("sub")(_elementwise("Sub"))
lowers("mul")(_elementwise("Mul", on_bool="OpLogicalAnd"))


def _nonzero_divisor(em: ScalarEmitter, b: Value) -> Value:
    """The divisor with 0 replaced by 1, so the division itself is defined; callers select the
    result numpy gives for a zero divisor."""
    return em.select(em.compare("Equal", b, em.const("i", 0)), em.const("i", 1), b)


def _integer_division(opname: str) -> Callable[[ScalarEmitter, Value, Value], Value]:
    def divide(em: ScalarEmitter, a: Value, b: Value) -> Value:
        result = em.op(opname, "i", a, _nonzero_divisor(em, b))
        return em.select(em.compare("Equal", b, em.const("i", 0)), em.const("i", 0), result)

    return divide


@lowers("div")
def _div(em: ScalarEmitter, call: Call) -> Value:
    a, b = call.args
    return _by_kind(call, f=lambda: em.op("OpFDiv", "f", a, b), i=lambda: _integer_division("OpSDiv")(em, a, b))


def _float_remainder(em: ScalarEmitter, a: Value, b: Value, python_sign: bool) -> Value:
    """C's fmod (sign of the dividend), or with python_sign numpy's mod (sign of the divisor)."""
    # fmod(x, +-inf) is x for finite x (GLSL's remainder may give NaN there)
    keeps = em.op("OpLogicalAnd", "b", _is_inf(em, b), em.op("OpLogicalNot", "b", _is_inf(em, a)))
    remainder = em.select(keeps, a, em.op("OpFRem", "f", a, b))
    if python_sign:
        zero = em.const("f", 0.0)
        differs = em.op(
            "OpLogicalNotEqual", "b", em.compare("LessThan", remainder, zero), em.compare("LessThan", b, zero)
        )
        fix = em.op("OpLogicalAnd", "b", em.op("OpFUnordNotEqual", "b", remainder, zero), differs)
        remainder = em.select(fix, em.op("OpFAdd", "f", remainder, b), remainder)
    return em.select(em.compare("Equal", b, em.const("f", 0.0)), em.const("f", math.nan), remainder)


@lowers("mod")
def _mod(em: ScalarEmitter, call: Call) -> Value:
    a, b = call.args
    return _by_kind(call, f=lambda: _float_mod(em, a, b), i=lambda: _integer_mod(em, a, b))


def _float_mod(em: ScalarEmitter, a: Value, b: Value) -> Value:
    """MIGraphX's fmod(remainder(a, b) + b, b): the floored remainder for finite divisors, and NaN for
    an infinite one (the sum is infinite)."""
    floored = _float_remainder(em, a, b, True)
    return em.select(em.op("OpIsInf", "b", b), em.const("f", math.nan), floored)


def _integer_mod(em: ScalarEmitter, a: Value, b: Value) -> Value:
    """Python's mod (the sign of the divisor) from C's remainder (OpSMod differs between drivers)."""
    remainder = _integer_remainder(em, a, b)
    zero = em.const("i", 0)
    differs = em.op("OpLogicalNotEqual", "b", em.compare("LessThan", remainder, zero), em.compare("LessThan", b, zero))
    fix = em.op("OpLogicalAnd", "b", em.compare("NotEqual", remainder, zero), differs)
    return em.select(fix, em.op("OpIAdd", "i", remainder, b), remainder)


@lowers("fmod")
def _fmod(em: ScalarEmitter, call: Call) -> Value:
    a, b = call.args
    return _by_kind(call, f=lambda: _float_remainder(em, a, b, False), i=lambda: _integer_remainder(em, a, b))


def _integer_remainder(em: ScalarEmitter, a: Value, b: Value) -> Value:
    """C's remainder (the sign of the dividend) as a - b * (a / b): NVIDIA's OpSRem takes the
    divisor's sign; 0 for a zero divisor, as numpy gives."""
    quotient = _integer_division("OpSDiv")(em, a, b)
    remainder = em.op("OpISub", "i", a, em.op("OpIMul", "i", b, quotient))
    return em.select(em.compare("Equal", b, em.const("i", 0)), em.const("i", 0), remainder)


@lowers("pow")
def _pow(em: ScalarEmitter, call: Call) -> Value:
    a, b = call.args
    return _by_kind(call, f=lambda: _float_power(em, a, b), i=lambda: _integer_power(em, a, b))


def _float_power(em: ScalarEmitter, x: Value, y: Value) -> Value:
    """C's pow (what numpy computes). GLSL's Pow is defined only for finite x > 0, so zeros,
    infinities, negative bases and NaNs are selected here as C specifies them."""
    zero, one, inf, nan = em.const("f", 0.0), em.const("f", 1.0), em.const("f", math.inf), em.const("f", math.nan)
    ax = em.glsl("FAbs", "f", x)
    magnitude = em.glsl(
        "Pow", "f", em.select(em.op("OpLogicalOr", "b", _is_zero_or_inf(em, ax), _is_inf(em, y)), one, ax), y
    )
    y_positive = em.compare("GreaterThan", y, zero)
    # |x| = 0 or inf: 0 or inf by the sign of y; y = +-inf: 0 or inf by |x| < 1
    at_zero = em.select(y_positive, zero, inf)
    at_inf = em.select(y_positive, inf, zero)
    small = em.compare("LessThan", ax, one)
    at_inf_exponent = em.select(em.op("OpLogicalEqual", "b", small, y_positive), zero, inf)
    magnitude = em.select(_is_inf(em, y), at_inf_exponent, magnitude)
    magnitude = em.select(em.op("OpIsInf", "b", ax), at_inf, magnitude)
    magnitude = em.select(em.compare("Equal", ax, zero), at_zero, magnitude)
    magnitude = em.select(em.compare("Equal", ax, one), one, magnitude)
    integral = em.compare("Equal", em.glsl("Trunc", "f", y), y)
    odd = em.op("OpFOrdNotEqual", "b", em.op("OpFRem", "f", y, em.const("f", 2.0)), zero)
    odd = em.op(
        "OpLogicalAnd", "b", em.op("OpLogicalAnd", "b", integral, odd), em.op("OpLogicalNot", "b", _is_inf(em, y))
    )
    sign_bit = em.op("OpSLessThan", "b", em.op("OpBitcast", "i", x), em.const("i", 0))
    result = em.select(em.op("OpLogicalAnd", "b", sign_bit, odd), em.op("OpFNegate", "f", magnitude), magnitude)
    finite_negative = em.op(
        "OpLogicalAnd", "b", em.compare("LessThan", x, zero), em.op("OpLogicalNot", "b", em.op("OpIsInf", "b", x))
    )
    fractional = em.op(
        "OpLogicalAnd", "b", em.op("OpLogicalNot", "b", integral), em.op("OpLogicalNot", "b", _is_inf(em, y))
    )
    undefined = em.op(
        "OpLogicalOr",
        "b",
        em.op("OpLogicalAnd", "b", finite_negative, fractional),
        em.op("OpLogicalOr", "b", em.is_nan(x), em.is_nan(y)),
    )
    result = em.select(undefined, nan, result)
    exact_one = em.op("OpLogicalOr", "b", em.compare("Equal", y, zero), em.compare("Equal", x, one))
    return em.select(exact_one, one, result)


def _is_inf(em: ScalarEmitter, v: Value) -> Value:
    return em.op("OpIsInf", "b", v)


def _is_zero_or_inf(em: ScalarEmitter, v: Value) -> Value:
    return em.op("OpLogicalOr", "b", em.compare("Equal", v, em.const("f", 0.0)), _is_inf(em, v))


def _integer_power(em: ScalarEmitter, base: Value, exponent: Value) -> Value:
    """Square-and-multiply over the exponent's 31 value bits, wrapping like numpy's int32 power; a
    negative exponent gives what C's pow truncated to int gives (1, -1 or 0)."""
    result = em.const("i", 1)
    square = base
    zero, one = em.const("i", 0), em.const("i", 1)
    for bit in range(31):
        set_bit = em.op("OpINotEqual", "b", em.op("OpBitwiseAnd", "i", exponent, em.const("i", 1 << bit)), zero)
        result = em.select(set_bit, em.op("OpIMul", "i", result, square), result)
        if bit < 30:
            square = em.op("OpIMul", "i", square, square)
    odd = em.op("OpINotEqual", "b", em.op("OpBitwiseAnd", "i", exponent, one), zero)
    minus_one = em.const("i", -1)
    negative = em.select(
        em.compare("Equal", base, one),
        one,
        em.select(em.compare("Equal", base, minus_one), em.select(odd, minus_one, one), zero),
    )
    return em.select(em.compare("LessThan", exponent, zero), negative, result)


@lowers("max", "min")
def _extremum(em: ScalarEmitter, call: Call) -> Value:
    a, b = call.args
    return em.extremum(a, b, call.op.name == "max")


@lowers("sqdiff")
def _sqdiff(em: ScalarEmitter, call: Call) -> Value:
    a, b = call.args
    if a.kind == "b":
        raise Unsupported("sqdiff of bool_type (numpy has no bool subtraction)")
    difference = em.rounded(_arithmetic(em, "Sub", a, b), call)
    return _arithmetic(em, "Mul", difference, difference)


@lowers("prelu")
def _prelu(em: ScalarEmitter, call: Call) -> Value:
    x, slope = call.args
    if x.kind == "b":
        raise Unsupported("prelu of bool_type")
    return em.select(em.compare("LessThan", x, em.const(x.kind, 0)), _arithmetic(em, "Mul", x, slope), x)


def _comparison(name: str, on_bool: Callable[[ScalarEmitter, Value, Value], Value]) -> Lowering:
    def lower(em: ScalarEmitter, call: Call) -> Value:
        a, b = call.args
        if a.kind == "b":
            return on_bool(em, a, b)
        return em.compare(name, a, b)

    return lower


lowers("equal")(_comparison("Equal", lambda em, a, b: em.op("OpLogicalEqual", "b", a, b)))
lowers("greater")(
    _comparison("GreaterThan", lambda em, a, b: em.op("OpLogicalAnd", "b", a, em.op("OpLogicalNot", "b", b)))
)
lowers("less")(_comparison("LessThan", lambda em, a, b: em.op("OpLogicalAnd", "b", em.op("OpLogicalNot", "b", a), b)))


def _logical(opname: str) -> Lowering:
    def lower(em: ScalarEmitter, call: Call) -> Value:
        a, b = call.args
        return em.op(opname, "b", em.truthy(a), em.truthy(b))

    return lower


lowers("logical_and")(_logical("OpLogicalAnd"))
lowers("logical_or")(_logical("OpLogicalOr"))
lowers("logical_xor")(_logical("OpLogicalNotEqual"))


@lowers("bitwise_and")
def _bitwise_and(em: ScalarEmitter, call: Call) -> Value:
    a, b = call.args
    return _by_kind(call, i=lambda: em.op("OpBitwiseAnd", "i", a, b), b=lambda: em.op("OpLogicalAnd", "b", a, b))


# -- three operands, conversions, identity ----------------------------------------------------------


@lowers("clip")
def _clip(em: ScalarEmitter, call: Call) -> Value:
    x, low, high = call.args
    if x.kind == "b":
        raise Unsupported("clip of bool_type")
    return em.extremum(em.extremum(x, low, True), high, False)


@lowers("where")
def _where(em: ScalarEmitter, call: Call) -> Value:
    condition, a, b = call.args
    return em.select(em.truthy(condition), a, b)


@lowers("identity", "layout")
def _identity(em: ScalarEmitter, call: Call) -> Value:
    return call.args[0]


@lowers("convert")
def _convert(em: ScalarEmitter, call: Call) -> Value:
    return convert_value(em, call.args[0], call.result)


def convert_value(em: ScalarEmitter, x: Value, target: ElementType) -> Value:
    """MIGraphX's convert (mgxir.ops.elementwise.convert_values): bool is `x > 0`, floats saturate
    into int32 with NaN as 0, finite floats saturate to half's range."""
    if target.kind == "b":
        return x if x.kind == "b" else em.compare("GreaterThan", x, em.const(x.kind, 0))
    if x.kind == "b":
        return em.astype(x, target.kind)
    if target.kind == "i":
        if x.kind == "i":
            return x
        truncated = em.op("OpConvertFToS", "i", x)
        saturated = em.select(
            em.compare("GreaterThanEqual", x, em.const("f", 2.0**31)), em.const("i", INT32_MAX), truncated
        )
        saturated = em.select(
            em.compare("LessThanEqual", x, em.const("f", -(2.0**31))), em.const("i", INT32_MIN), saturated
        )
        return em.select(em.is_nan(x), em.const("i", 0), saturated)
    value = em.to_float(x)
    if target.width == 16:
        limit = em.const("f", HALF_MAX)
        clamped = em.glsl("FClamp", "f", value, em.op("OpFNegate", "f", limit), limit)
        finite = em.op("OpLogicalNot", "b", em.op("OpLogicalOr", "b", em.is_nan(value), em.op("OpIsInf", "b", value)))
        value = em.select(finite, clamped, value)
    return value


@lowers("bit_cast")
def _bit_cast(em: ScalarEmitter, call: Call) -> Value:
    x = call.args[0]
    source, target = call.arg_types[0], call.result
    if source == target:
        return x
    if {source.kind, target.kind} == {"f", "i"} and source.width == target.width == 32:
        return em.op("OpBitcast", target.kind, x)
    raise Unsupported(f"bit_cast from {source.name} to {target.name}")


@lowers("quantizelinear")
def _quantizelinear(em: ScalarEmitter, call: Call) -> Value:
    # rint(x / scale) + zero point, then saturated into the output type; a float result (MX types)
    # is not rounded
    x, scale = em.to_float(call.args[0]), em.to_float(call.args[1])
    q = em.op("OpFDiv", "f", x, scale)
    if call.result.kind == "i":
        q = em.glsl("RoundEven", "f", q)
    if len(call.args) == 3:
        q = em.op("OpFAdd", "f", q, em.to_float(call.args[2]))
    converted = convert_value(em, q, call.result)
    if call.result.kind != "i":
        return converted
    # numpy clips to the type's range and casts: NaN (0 / 0) becomes INT32_MIN there
    return em.select(em.is_nan(q), em.const("i", INT32_MIN), converted)


@lowers("dequantizelinear")
def _dequantizelinear(em: ScalarEmitter, call: Call) -> Value:
    x = em.to_float(call.args[0])
    if len(call.args) == 3:
        x = em.op("OpFSub", "f", x, em.to_float(call.args[2]))
    return em.op("OpFMul", "f", x, em.to_float(call.args[1]))


# -- the table's user ------------------------------------------------------------------------------


def lower_scalar(
    em: ScalarEmitter, op: Operation, args: list[Value], arg_types: list[ElementType], result_dtype: DType
) -> Value:
    """One pointwise operation on scalar values, the result in the compute kind of its type."""
    lowering = LOWERINGS.get(op.defn)
    if lowering is None:
        raise Unsupported(f"operator '{op.name}' has no SPIR-V lowering")
    result = element_type(result_dtype)
    value = lowering(em, Call(op, args, arg_types, result))
    return em.round_to(em.astype(value, result.kind), result)


def literal_value(em: ScalarEmitter, data: np.ndarray, t: ElementType) -> Value:
    """A literal in a pointwise body: one value (or one value repeated) as a constant."""
    flat = np.asarray(data).reshape(-1)
    if flat.size == 0 or not np.all((flat == flat[0]) | (flat != flat)):
        raise Unsupported("a literal with more than one value in a pointwise body")
    first = flat[0]
    if t.kind == "b":
        return em.const("b", bool(first))
    if t.kind == "i":
        return em.const("i", int(first))
    return em.const("f", float(first))
