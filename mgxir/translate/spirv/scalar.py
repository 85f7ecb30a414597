"""Scalar ops as SPIR-V: the operators' scalar meanings (mgxir/ops/scalar.py) emitted by
`SpirvEmitter`, which implements the protocol with SPIR-V instructions and GLSL.std.450.

Values are computed in 32-bit float (float, and half rounded back after every operation as numpy
computes half), 64-bit float (double, with the Float64 capability), 32-bit int and bool. Where
SPIR-V or GLSL leave a result undefined that C defines (math functions outside their domain, NaN
operands, fmod by an infinity, pow's special cases, FMax of NaN, OpSRem's sign on some drivers)
the emitter selects C's answer explicitly, so every meaning computes what the reference computes."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.operation import Operation
from mgxir.ops.scalar import NoScalarMeaning, emit
from mgxir.translate.spirv.builder import ModuleBuilder
from mgxir.translate.spirv.types import FP8_FORMATS, ElementType, Kind, Unsupported, element_type

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
HALF_MAX = 65504.0


@dataclass(frozen=True)
class Value:
    id: str
    kind: Kind


class ScalarEmitter:
    """Scalar arithmetic in compute types (32-bit float, 32-bit int, bool)."""

    def __init__(self, builder: ModuleBuilder) -> None:
        self.b = builder
        self.features: set[str] = set()  # device features the values need beyond the buffers'

    def type_of(self, kind: Kind) -> str:
        if kind == "f":
            return self.b.float_type(32)
        if kind == "d":
            self.b.capability("Float64")
            self.features.add("Float64")
            return self.b.float_type(64)
        if kind == "i":
            return self.b.int_type(32, True)
        if kind == "l":
            self.b.capability("Int64")
            self.features.add("Int64")
            return self.b.int_type(64, True)
        return self.b.boolean()

    def const(self, kind: Kind, value: float | int | bool) -> Value:
        if kind == "b":
            return Value(self.b.constant(self.b.boolean(), bool(value)), "b")
        if kind in ("i", "l"):
            return Value(self.b.constant(self.type_of(kind), int(value)), kind)
        return Value(self.b.constant(self.type_of(kind), float(value)), kind)

    def op(self, opname: str, kind: Kind, *args: Value | str) -> Value:
        ids = [a.id if isinstance(a, Value) else a for a in args]
        return Value(self.b.emit(opname, *ids, type=self.type_of(kind), name=kind), kind)

    def glsl(self, name: str, kind: Kind, *args: Value) -> Value:
        return Value(self.b.glsl(name, self.type_of(kind), *(a.id for a in args)), kind)

    # -- conversions --------------------------------------------------------------------------

    def to_float(self, v: Value) -> Value:
        if v.kind == "d":
            return self.op("OpFConvert", "f", v)
        if v.kind == "f":
            return v
        if v.kind == "i":
            return self.op("OpConvertSToF", "f", v)
        return self.select(v, self.const("f", 1.0), self.const("f", 0.0))

    def truthy(self, v: Value) -> Value:
        """numpy's astype(bool): nonzero (NaN included) is true."""
        if v.kind == "b":
            return v
        if v.kind in ("f", "d"):
            return self.op("OpFUnordNotEqual", "b", v, self.const(v.kind, 0.0))
        return self.op("OpINotEqual", "b", v, self.const(v.kind, 0))

    def astype(self, v: Value, kind: Kind) -> Value:
        """numpy's astype between compute kinds: floats truncate into ints, bools become 0/1."""
        if v.kind == kind:
            return v
        if kind == "b":
            return self.truthy(v)
        if v.kind == "b":
            return self.select(v, self.const(kind, 1), self.const(kind, 0))
        integers = ("i", "l")
        if v.kind in integers and kind in integers:  # widened by sign, narrowed to the low bits
            return self.op("OpSConvert", kind, v)
        if v.kind in integers:
            return self.op("OpConvertSToF", kind, v)
        if kind in ("f", "d"):
            return self.op("OpFConvert", kind, v)
        # numpy's cast (x86's cvttss2si): NaN and out-of-range values become the type's minimum,
        # which SPIR-V leaves undefined (NVIDIA gives 0)
        bits = 31 if kind == "i" else 63
        inside = self.op(
            "OpLogicalAnd",
            "b",
            self.compare("GreaterThanEqual", v, self.const(v.kind, -(2.0**bits))),
            self.compare("LessThan", v, self.const(v.kind, 2.0**bits)),
        )
        return self.select(inside, self.op("OpConvertFToS", kind, v), self.const(kind, -(2**bits)))

    def round_to(self, v: Value, t: ElementType) -> Value:
        """A float value rounded to the storage width of `t` (half, bf16, fp8), so later ops see
        what numpy sees."""
        if v.kind != "f" or t.width == 32:
            return v
        if t.dtype is DType.bf16:
            return self.round_to_bf16(v)
        if t.dtype.is_fp8:
            return self.fp8_to_float(self.float_to_fp8(v, t.dtype), t.dtype)
        if t.capability and t.extension:  # a half value where no binding is half
            self.b.capability(t.capability)
            self.b.extension(t.extension)
            self.features.add(t.capability)
        narrow = self.b.emit("OpFConvert", v.id, type=self.b.float_type(t.width), name="h")
        return self.op("OpFConvert", "f", narrow)

    def round_to_bf16(self, v: Value) -> Value:
        """v rounded to bf16 (to nearest, ties to even, in its float bits; NaN kept), held in float:
        SPIR-V has no bf16 type, so bf16 is emulated as the f16 rounding is elsewhere."""
        u32 = self.b.int_type(32, False)
        bits = self.b.emit("OpBitcast", v.id, type=u32, name="bits")
        odd = self.b.emit(
            "OpBitwiseAnd",
            self.b.emit("OpShiftRightLogical", bits, self.b.const_uint(16), type=u32),
            self.b.const_uint(1),
            type=u32,
        )
        bias = self.b.emit("OpIAdd", self.b.const_uint(0x7FFF), odd, type=u32)
        rounded = self.b.emit(
            "OpBitwiseAnd", self.b.emit("OpIAdd", bits, bias, type=u32), self.b.const_uint(0xFFFF0000), type=u32
        )
        return self.select(self.is_nan(v), v, self.op("OpBitcast", "f", rounded))

    def _u32(self, opname: str, *args: str) -> str:
        return self.b.emit(opname, *args, type=self.b.int_type(32, False), name="u")

    def _test(self, opname: str, *args: str) -> str:
        return self.b.emit(opname, *args, type=self.b.boolean(), name="c")

    def fp8_to_float(self, bits: str, t: DType) -> Value:
        """The float value of fp8 bits (a uint32 id holding the byte) of type `t`."""
        e_bits, m_bits, bias, kind = FP8_FORMATS[t]
        u, test, k = self._u32, self._test, self.b.const_uint
        top = (1 << e_bits) - 1
        field = u("OpBitwiseAnd", u("OpShiftRightLogical", bits, k(m_bits)), k(top))
        mantissa = u("OpBitwiseAnd", bits, k((1 << m_bits) - 1))
        normal = test("OpINotEqual", field, k(0))
        significand = u("OpSelect", normal, u("OpBitwiseOr", mantissa, k(1 << m_bits)), mantissa)
        # 2^(max(field, 1) - bias - m_bits) built from its float bits: in float's normal range
        exponent = u("OpSelect", normal, field, k(1))
        scale = u("OpShiftLeftLogical", u("OpIAdd", exponent, k(127 - bias - m_bits)), k(23))
        magnitude = self.op("OpFMul", "f", self.op("OpConvertUToF", "f", significand), self.op("OpBitcast", "f", scale))
        if kind == 0:  # the top field: infinities
            infinite = test("OpIEqual", field, k(top))
            magnitude = self.select(Value(infinite, "b"), self.const("f", math.inf), magnitude)
        negative = Value(test("OpINotEqual", u("OpBitwiseAnd", bits, k(0x80)), k(0)), "b")
        value = self.select(negative, self.op("OpFNegate", "f", magnitude), magnitude)
        if kind == 2:
            nan = test("OpIEqual", bits, k(0x80))
        elif kind == 1:
            nan = test("OpIEqual", u("OpBitwiseAnd", bits, k(0x7F)), k(0x7F))
        else:
            nan = test("OpLogicalAnd", test("OpIEqual", field, k(top)), test("OpINotEqual", mantissa, k(0)))
        quiet = self.op("OpBitcast", "f", u("OpSelect", negative.id, k(0xFFC00000), k(0x7FC00000)))  # signed
        return self.select(Value(nan, "b"), quiet, value)

    def float_to_fp8(self, v: Value, t: DType) -> str:
        """The fp8 bits (a uint32 id) of float `v` rounded to type `t` as ml_dtypes rounds: to
        nearest, ties to even; NaN, infinities and what overflows as the format has them."""
        e_bits, m_bits, bias, kind = FP8_FORMATS[t]
        u, test, k = self._u32, self._test, self.b.const_uint
        top, mantissas, drop = (1 << e_bits) - 1, 1 << m_bits, 23 - m_bits
        bits = u("OpBitcast", v.id)
        sign = u("OpBitwiseAnd", u("OpShiftRightLogical", bits, k(24)), k(0x80))
        magnitude_bits = u("OpBitwiseAnd", bits, k(0x7FFFFFFF))
        magnitude = self.op("OpBitcast", "f", magnitude_bits)
        # below the smallest normal: multiples of the smallest subnormal, rounded to even (may
        # round up to the smallest normal, whose bits follow the subnormals')
        subnormal = self.compare("LessThan", magnitude, self.const("f", 2.0 ** (1 - bias)))
        scaled = self.op("OpFMul", "f", magnitude, self.const("f", 2.0 ** (bias - 1 + m_bits)))
        small = u("OpConvertFToU", self.glsl("RoundEven", "f", scaled).id)
        # normal: round the float's bits at the format's last mantissa bit (a carry moves the field)
        odd = u("OpBitwiseAnd", u("OpShiftRightLogical", magnitude_bits, k(drop)), k(1))
        rounded = u("OpIAdd", magnitude_bits, u("OpIAdd", k((1 << (drop - 1)) - 1), odd))
        field = u("OpISub", u("OpShiftRightLogical", rounded, k(23)), k(127 - bias))
        mantissa = u("OpBitwiseAnd", u("OpShiftRightLogical", rounded, k(drop)), k(mantissas - 1))
        large = u("OpBitwiseOr", u("OpShiftLeftLogical", field, k(m_bits)), mantissa)
        over = test("OpUGreaterThan", field, k(top - 1 if kind == 0 else top))
        if kind == 1:
            at_nan = test("OpIEqual", u("OpBitwiseAnd", large, k(0x7F)), k(0x7F))
            over = test("OpLogicalOr", over, at_nan)
        over = test("OpLogicalAnd", over, test("OpLogicalNot", subnormal.id))
        infinite = test("OpIEqual", magnitude_bits, k(0x7F800000))
        nan_bits = (
            k(0x80)
            if kind == 2
            else u("OpBitwiseOr", sign, k(0x7F if kind == 1 else (top << m_bits) | (mantissas >> 1)))
        )
        overflow_bits = u("OpBitwiseOr", sign, k(top << m_bits)) if kind == 0 else nan_bits
        result = u("OpBitwiseOr", sign, u("OpSelect", subnormal.id, small, large))
        if kind == 2:  # no negative zero
            zero = test("OpIEqual", u("OpBitwiseAnd", result, k(0x7F)), k(0))
            result = u("OpSelect", zero, k(0), result)
        result = u("OpSelect", test("OpLogicalOr", over, infinite), overflow_bits, result)
        return u("OpSelect", self.is_nan(v).id, nan_bits, result)

    # -- helpers ------------------------------------------------------------------------------

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        return self.op("OpSelect", a.kind, cond, a, b)

    def is_nan(self, v: Value) -> Value:
        return self.op("OpIsNan", "b", v)

    def compare(self, name: str, a: Value, b: Value) -> Value:
        """`name` is one of the ordered float comparisons (`LessThan`, ...) or `Equal`/`NotEqual`."""
        if a.kind in ("f", "d"):
            return self.op(f"OpFOrd{name}", "b", a, b)
        if name in ("Equal", "NotEqual"):
            return self.op(f"OpI{name}", "b", a, b)
        return self.op(f"OpS{name}", "b", a, b)

    def extremum(self, a: Value, b: Value, largest: bool) -> Value:
        """numpy's maximum/minimum: a NaN on either side is the result."""
        if a.kind in ("i", "l"):
            return self.glsl("SMax" if largest else "SMin", a.kind, a, b)
        if a.kind == "b":
            return self.op("OpLogicalOr" if largest else "OpLogicalAnd", "b", a, b)
        picked = self.glsl("FMax" if largest else "FMin", a.kind, a, b)
        picked = self.select(self.is_nan(b), b, picked)
        return self.select(self.is_nan(a), a, picked)


# -- the scalar protocol ---------------------------------------------------------------------------

# the compute kind of each element type a kernel computes in
KINDS: dict[DType, Kind] = {
    DType.float: "f",
    DType.half: "f",
    DType.bf16: "f",
    DType.double: "d",
    DType.int32: "i",
    DType.int64: "l",
    DType.uint32: "l",  # in 64-bit int, wrapped to 32 bits after every operation
    DType.int8: "i",
    DType.uint8: "i",
    DType.int16: "i",
    DType.uint16: "i",
    DType.bool: "b",
    **{t: "f" for t in DType if t.is_fp8},
}
_ORDERED = {"eq": "Equal", "lt": "LessThan", "le": "LessThanEqual", "gt": "GreaterThan", "ge": "GreaterThanEqual"}
_FLOAT_ARITHMETIC = {"add": "OpFAdd", "sub": "OpFSub", "mul": "OpFMul", "div": "OpFDiv"}
_INT_ARITHMETIC = {"add": "OpIAdd", "sub": "OpISub", "mul": "OpIMul", "div": "OpSDiv"}
_LOGIC = {"and": "OpLogicalAnd", "or": "OpLogicalOr", "xor": "OpLogicalNotEqual"}
_GLSL = {
    "acos": "Acos",
    "acosh": "Acosh",
    "asin": "Asin",
    "asinh": "Asinh",
    "atan": "Atan",
    "atanh": "Atanh",
    "ceil": "Ceil",
    "cos": "Cos",
    "cosh": "Cosh",
    "exp": "Exp",
    "fabs": "FAbs",
    "floor": "Floor",
    "log": "Log",
    "log2": "Log2",
    "rint": "RoundEven",  # half to even, as std::nearbyint and np.rint
    "sin": "Sin",
    "sinh": "Sinh",
    "sqrt": "Sqrt",
    "tan": "Tan",
    "tanh": "Tanh",
    "trunc": "Trunc",
}
# where C's function is defined (GLSL leaves the result undefined outside): NaN beyond
_DOMAINS: dict[str, tuple[float, float]] = {
    "acos": (-1.0, 1.0),
    "asin": (-1.0, 1.0),
    "acosh": (1.0, math.inf),
    "atanh": (-1.0, 1.0),
    "sqrt": (0.0, math.inf),
    "log": (0.0, math.inf),
    "log2": (0.0, math.inf),
}
# GLSL.std.450's 64-bit float instructions: the others are computed in float
_DOUBLE_GLSL = frozenset({"Ceil", "FAbs", "Floor", "RoundEven", "Sqrt", "Trunc", "FMax", "FMin"})


@dataclass(frozen=True)
class Typed(Value):
    """A value with its element type (the protocol's values)."""

    dtype: DType = DType.float


class SpirvEmitter:
    """The scalar protocol (mgxir/ops/scalar.py) on a ScalarEmitter."""

    def __init__(self, em: ScalarEmitter) -> None:
        self.em = em

    def _typed(self, v: Value, t: DType) -> Typed:
        """`v` as a value of `t`: half rounded, 8- and 16-bit integers wrapped to their width."""
        em = self.em
        if (t in (DType.half, DType.bf16) or t.is_fp8) and v.kind == "f":
            v = em.round_to(v, element_type(t))
        elif v.kind in ("i", "l") and t.itemsize < (4 if v.kind == "i" else 8):
            bits, width = 8 * t.itemsize, (32 if v.kind == "i" else 64)
            if t.is_unsigned:
                v = em.op("OpBitwiseAnd", v.kind, v, em.const(v.kind, (1 << bits) - 1))
            else:
                shift = em.const(v.kind, width - bits)
                v = em.op("OpShiftRightArithmetic", v.kind, em.op("OpShiftLeftLogical", v.kind, v, shift), shift)
        return Typed(v.id, v.kind, t)

    def dtype_of(self, v: Typed) -> DType:
        return v.dtype

    def constant(self, value: float | int | bool, t: DType) -> Typed:
        kind = _kind(t)
        if kind in ("f", "d"):
            with np.errstate(over="ignore"):  # a limit beyond the type's range is its infinity
                value = float(t.numpy.type(value))
        return Typed(self.em.const(kind, value).id, kind, t)

    def arithmetic(self, op: str, a: Typed, b: Typed) -> Typed:
        em = self.em
        if a.kind in ("f", "d"):
            if op == "rem":
                if a.kind == "d":
                    raise NoScalarMeaning("fmod of double values in SPIR-V (OpFRem is inexact on lavapipe)")
                return self._typed(_fmod(em, a, b), a.dtype)
            return self._typed(em.op(_FLOAT_ARITHMETIC[op], a.kind, a, b), a.dtype)
        if a.kind == "b":
            raise NoScalarMeaning("arithmetic on bool values")
        k = a.kind
        if op == "rem":  # C's remainder as a - b * (a / b): NVIDIA's OpSRem takes the divisor's sign
            quotient = em.op("OpSDiv", k, a, b)
            return self._typed(em.op("OpISub", k, a, em.op("OpIMul", k, b, quotient)), a.dtype)
        return self._typed(em.op(_INT_ARITHMETIC[op], k, a, b), a.dtype)

    def neg(self, a: Typed) -> Typed:
        return self._typed(self.em.op("OpSNegate" if a.kind in ("i", "l") else "OpFNegate", a.kind, a), a.dtype)

    def compare(self, predicate: str, a: Typed, b: Typed) -> Typed:
        em = self.em
        if a.kind == "b":
            return Typed(_compare_bools(em, predicate, a, b).id, "b", DType.bool)
        if predicate == "ne":
            name = "OpFUnordNotEqual" if a.kind in ("f", "d") else "OpINotEqual"
            return Typed(em.op(name, "b", a, b).id, "b", DType.bool)
        if a.kind in ("f", "d"):
            return Typed(em.op(f"OpFOrd{_ORDERED[predicate]}", "b", a, b).id, "b", DType.bool)
        prefix = "OpI" if predicate == "eq" else "OpS"
        return Typed(em.op(f"{prefix}{_ORDERED[predicate]}", "b", a, b).id, "b", DType.bool)

    def select(self, condition: Typed, a: Typed, b: Typed) -> Typed:
        return Typed(self.em.select(condition, a, b).id, a.kind, a.dtype)

    def logic(self, op: str, a: Typed, b: Typed) -> Typed:
        return Typed(self.em.op(_LOGIC[op], "b", a, b).id, "b", DType.bool)

    def logical_not(self, a: Typed) -> Typed:
        return Typed(self.em.op("OpLogicalNot", "b", a).id, "b", DType.bool)

    def bitwise_and(self, a: Typed, b: Typed) -> Typed:
        name = "OpLogicalAnd" if a.kind == "b" else "OpBitwiseAnd"
        return Typed(self.em.op(name, a.kind, a, b).id, a.kind, a.dtype)

    def convert(self, v: Typed, t: DType) -> Typed:
        em, kind = self.em, _kind(t)
        if t is DType.bool:
            return Typed(em.truthy(v).id, "b", t)
        if v.kind == "b":
            return Typed(em.select(v, em.const(kind, 1), em.const(kind, 0)).id, kind, t)
        if kind == v.kind:
            return self._typed(v, t)
        integers = ("i", "l")
        if kind in integers and v.kind in integers:  # 32 <-> 64 bits: sign-extended or truncated
            return self._typed(em.op("OpSConvert", kind, v), t)
        if kind in integers:  # from a float in range: callers guard NaN and out-of-range values
            return self._typed(em.op("OpConvertFToS", kind, v), t)
        if v.kind in integers:
            return self._typed(em.op("OpConvertSToF", kind, v), t)
        return self._typed(em.op("OpFConvert", kind, v), t)

    def math(self, function: str, x: Typed) -> Typed:
        em = self.em
        glsl = _GLSL.get(function)
        if x.kind == "d" and glsl not in _DOUBLE_GLSL:
            raise NoScalarMeaning(f"{function} of a double value in SPIR-V (GLSL.std.450 has no 64-bit {function})")
        y_in, kind = x, x.kind
        if function in _OWN_FORMULATIONS:  # float only: 64-bit ones were refused above
            y = _OWN_FORMULATIONS[function](em, y_in)
        else:
            assert glsl is not None, function
            y = em.glsl(glsl, kind, y_in)
        return self._typed(_special_values(em, function, y_in, y), x.dtype)

    def binary_math(self, function: str, a: Typed, b: Typed) -> Typed:
        if a.kind == "d":
            raise NoScalarMeaning(f"{function} of double in SPIR-V")
        if function == "pow":
            return self._typed(_float_power(self.em, a, b), a.dtype)
        return self._typed(_ieee_remainder(self.em, a, b), a.dtype)

    def is_nan(self, x: Typed) -> Typed:
        if x.kind not in ("f", "d"):
            return Typed(self.em.const("b", False).id, "b", DType.bool)
        return Typed(self.em.op("OpIsNan", "b", x).id, "b", DType.bool)

    def is_inf(self, x: Typed) -> Typed:
        if x.kind not in ("f", "d"):
            return Typed(self.em.const("b", False).id, "b", DType.bool)
        return Typed(self.em.op("OpIsInf", "b", x).id, "b", DType.bool)

    def reinterpret(self, v: Typed, t: DType) -> Typed:
        """The bits of `v` as a value of `t` (of its size): 64-bit values directly, narrower ones
        through a uint32 holding their bits. Not between half and integers (16-bit integer types
        need the Int16 capability) nor to or from bool (a bool's bytes are 0 or 1)."""
        kind, source = _kind(t), v.dtype
        unsupported = {DType.half, DType.bool}
        if source.itemsize != t.itemsize or source in unsupported or t in unsupported:
            raise NoScalarMeaning(f"no bit cast from {source.type_name} to {t.type_name} in SPIR-V")
        if t.itemsize == 8:
            return Typed(self.em.op("OpBitcast", kind, v).id, kind, t)
        return self._from_bits(self._bits(v), t)

    def _bits(self, v: Typed) -> str:
        """A uint32 holding the bits of `v` (of a type up to 32 bits but half) in its low bytes."""
        em, t = self.em, v.dtype
        u, k = em._u32, em.b.const_uint
        if t.is_fp8:
            return em.float_to_fp8(v, t)
        if t is DType.bf16:  # held in float, rounded: its upper half
            return u("OpShiftRightLogical", u("OpBitcast", v.id), k(16))
        if v.kind == "l":  # uint32 in 64-bit int: the low word
            return u("OpUConvert", v.id)
        bits = u("OpBitcast", v.id)
        return bits if t.itemsize == 4 else u("OpBitwiseAnd", bits, k((1 << (8 * t.itemsize)) - 1))

    def _from_bits(self, bits: str, t: DType) -> Typed:
        """The value of type `t` whose bits a uint32 holds in its low bytes."""
        em, kind = self.em, _kind(t)
        if t.is_fp8:
            return Typed(em.fp8_to_float(bits, t).id, "f", t)
        if t is DType.bf16:
            return Typed(em.op("OpBitcast", "f", em._u32("OpShiftLeftLogical", bits, em.b.const_uint(16))).id, "f", t)
        if kind == "l":
            wide = em.b.emit("OpUConvert", bits, type=em.b.int_type(64, False), name="w")
            return Typed(em.op("OpBitcast", "l", wide).id, "l", t)
        value = em.op("OpBitcast", kind, bits)
        if kind == "i" and t.itemsize < 4 and not t.is_unsigned:  # sign-extend the low bytes
            shift = em.const("i", 32 - 8 * t.itemsize)
            value = em.op("OpShiftRightArithmetic", "i", em.op("OpShiftLeftLogical", "i", value, shift), shift)
        return Typed(value.id, kind, t)

    def extremum(self, a: Typed, b: Typed, largest: bool) -> Typed:
        em = self.em
        if a.kind in ("i", "l"):
            return Typed(em.glsl("SMax" if largest else "SMin", a.kind, a, b).id, a.kind, a.dtype)
        if a.kind == "b":
            return Typed(em.op("OpLogicalOr" if largest else "OpLogicalAnd", "b", a, b).id, "b", a.dtype)
        # numpy's rule: NaN from either side, `b` for equal operands (`a` for half)
        order = ("GreaterThan" if largest else "LessThan") + ("Equal" if a.dtype is DType.half else "")
        keep = em.op("OpLogicalOr", "b", em.op(f"OpFOrd{order}", "b", a, b), em.is_nan(a))
        return Typed(em.select(keep, a, b).id, a.kind, a.dtype)


def _kind(t: DType) -> Kind:
    kind = KINDS.get(t)
    if kind is None:
        raise NoScalarMeaning(f"SPIR-V kernels compute no {t.type_name} values")
    return kind


def _compare_bools(em: ScalarEmitter, predicate: str, a: Value, b: Value) -> Value:
    """false < true, as numpy orders bools."""
    if predicate in ("eq", "ne"):
        return em.op("OpLogicalEqual" if predicate == "eq" else "OpLogicalNotEqual", "b", a, b)
    low, high = (a, b) if predicate in ("lt", "le") else (b, a)
    strictly = em.op("OpLogicalAnd", "b", em.op("OpLogicalNot", "b", low), high)
    return (
        strictly
        if predicate in ("lt", "gt")
        else em.op("OpLogicalOr", "b", strictly, em.op("OpLogicalEqual", "b", a, b))
    )


def _special_values(em: ScalarEmitter, function: str, x: Value, y: Value) -> Value:
    """C's results where GLSL leaves them undefined or drivers differ: NaN outside the domain,
    NaN for NaN (lavapipe's atan gives 0), log(0) = -inf, log(inf) = inf, atan(+-inf) = +-pi/2,
    atanh(+-1) = +-inf."""
    k = x.kind
    domain = _DOMAINS.get(function)
    if domain is not None:
        low, high = domain
        outside = em.op(
            "OpLogicalOr",
            "b",
            em.op("OpFOrdLessThan", "b", x, em.const(k, low)),
            em.op("OpFOrdGreaterThan", "b", x, em.const(k, high)),
        )
        y = em.select(outside, em.const(k, math.nan), y)
    if function in ("log", "log2"):
        y = em.select(em.op("OpFOrdEqual", "b", x, em.const(k, 0.0)), em.const(k, -math.inf), y)
        y = em.select(em.op("OpFOrdEqual", "b", x, em.const(k, math.inf)), x, y)
    if function == "atan":
        limit = em.op("OpFMul", k, em.glsl("FSign", k, x), em.const(k, math.pi / 2))
        y = em.select(em.op("OpIsInf", "b", x), limit, y)
    if function == "atanh":
        edge = em.op("OpFOrdEqual", "b", em.glsl("FAbs", k, x), em.const(k, 1.0))
        y = em.select(edge, em.op("OpFMul", k, em.glsl("FSign", k, x), em.const(k, math.inf)), y)
    return em.select(em.is_nan(x), x, y)


def _polynomial(em: ScalarEmitter, z: Value, coefficients: Sequence[float]) -> Value:
    """Horner's rule in float, the highest coefficient first."""
    result = em.const("f", coefficients[0])
    for c in coefficients[1:]:
        result = em.op("OpFAdd", "f", em.op("OpFMul", "f", result, z), em.const("f", c))
    return result


def _with_sign_of(em: ScalarEmitter, magnitude: Value, x: Value) -> Value:
    negative = em.op("OpFOrdLessThan", "b", x, em.const("f", 0.0))
    return em.select(negative, em.op("OpFNegate", "f", magnitude), magnitude)


def _atan(em: ScalarEmitter, x: Value) -> Value:
    """atan in float (Cephes' atanf: reduction to |x| <= tan(pi/8), a degree-9 odd polynomial;
    within 2 ulp), where lavapipe's GLSL Atan is ~1e-6 off (atan(1) = 0.78539485)."""
    a = em.glsl("FAbs", "f", x)
    large = em.op("OpFOrdGreaterThan", "b", a, em.const("f", 2.414213562373095))
    middle = em.op("OpFOrdGreaterThan", "b", a, em.const("f", 0.4142135623730950))
    one = em.const("f", 1.0)
    reduced = em.select(
        large,
        em.op("OpFNegate", "f", em.op("OpFDiv", "f", one, a)),
        em.select(middle, em.op("OpFDiv", "f", em.op("OpFSub", "f", a, one), em.op("OpFAdd", "f", a, one)), a),
    )
    base = em.select(
        large, em.const("f", math.pi / 2), em.select(middle, em.const("f", math.pi / 4), em.const("f", 0.0))
    )
    z = em.op("OpFMul", "f", reduced, reduced)
    p = _polynomial(em, z, (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1))
    y = em.op("OpFAdd", "f", em.op("OpFMul", "f", em.op("OpFMul", "f", p, z), reduced), reduced)
    return _with_sign_of(em, em.op("OpFAdd", "f", base, y), x)


def _asin_magnitude(em: ScalarEmitter, a: Value) -> Value:
    """asin of |x| <= 1 in float (Cephes' asinf: a polynomial below 0.5, 2 asin(sqrt((1 - a) / 2))
    folded from pi/2 above; within 2 ulp)."""
    upper = em.op("OpFOrdGreaterThan", "b", a, em.const("f", 0.5))
    half_rest = em.op("OpFMul", "f", em.const("f", 0.5), em.op("OpFSub", "f", em.const("f", 1.0), a))
    t = em.select(upper, em.glsl("Sqrt", "f", half_rest), a)
    z = em.select(upper, half_rest, em.op("OpFMul", "f", a, a))
    coefficients = (4.2163199048e-2, 2.4181311049e-2, 4.5470025998e-2, 7.4953002686e-2, 1.6666752422e-1)
    p = _polynomial(em, z, coefficients)
    y = em.op("OpFAdd", "f", em.op("OpFMul", "f", em.op("OpFMul", "f", p, z), t), t)
    folded = em.op("OpFSub", "f", em.const("f", math.pi / 2), em.op("OpFAdd", "f", y, y))
    return em.select(upper, folded, y)


def _asin(em: ScalarEmitter, x: Value) -> Value:
    """asin in float, where lavapipe's GLSL Asin is ~2e-4 off (asin(0.5) = 0.5233885)."""
    return _with_sign_of(em, _asin_magnitude(em, em.glsl("FAbs", "f", x)), x)


def _acos(em: ScalarEmitter, x: Value) -> Value:
    """acos in float from asin (Cephes' acosf): 2 asin(sqrt((1 - |x|) / 2)) beyond 0.5 (from pi for
    negative x), pi/2 - asin(x) within; lavapipe's GLSL Acos is ~6e-5 off."""
    a = em.glsl("FAbs", "f", x)
    one, half = em.const("f", 1.0), em.const("f", 0.5)
    far = em.op("OpFOrdGreaterThan", "b", a, half)
    root = em.glsl("Sqrt", "f", em.op("OpFMul", "f", half, em.op("OpFSub", "f", one, a)))
    twice = em.op("OpFMul", "f", em.const("f", 2.0), _asin_magnitude(em, root))
    negative = em.op("OpFOrdLessThan", "b", x, em.const("f", 0.0))
    outer = em.select(negative, em.op("OpFSub", "f", em.const("f", math.pi), twice), twice)
    inner = em.op("OpFSub", "f", em.const("f", math.pi / 2), _with_sign_of(em, _asin_magnitude(em, a), x))
    return em.select(far, outer, inner)


def _exp(em: ScalarEmitter, x: Value) -> Value:
    """exp in float (Cephes' expf: x = k log(2) + r with log(2) in two parts, |r| <= log(2) / 2, a
    degree-7 polynomial, then Ldexp by k; within 2 ulp), where lavapipe's Exp is a few ulp off
    (exp(-7.25) 5 ulp). Beyond +-104: inf and 0."""
    k = em.glsl("Floor", "f", em.op("OpFAdd", "f", em.op("OpFMul", "f", _f(em, 1.4426950408889634), x), _f(em, 0.5)))
    r = em.op("OpFSub", "f", x, em.op("OpFMul", "f", k, _f(em, 0.693359375)))
    r = em.op("OpFSub", "f", r, em.op("OpFMul", "f", k, _f(em, -2.12194440e-4)))
    coefficients = (
        1.9875691500e-4,
        1.3981999507e-3,
        8.3334519073e-3,
        4.1665795894e-2,
        1.6666665459e-1,
        5.0000001201e-1,
    )
    p = _polynomial(em, r, coefficients)
    y = em.op("OpFAdd", "f", em.op("OpFAdd", "f", em.op("OpFMul", "f", p, em.op("OpFMul", "f", r, r)), r), _f(em, 1.0))
    y = em.glsl("Ldexp", "f", y, em.op("OpConvertFToS", "i", em.select(_is_inf(em, k), _f(em, 0.0), k)))
    y = em.select(em.op("OpFOrdGreaterThan", "b", x, _f(em, 88.72283935546875)), _f(em, math.inf), y)
    return em.select(em.op("OpFOrdLessThan", "b", x, _f(em, -104.0)), _f(em, 0.0), y)


def _log1p(em: ScalarEmitter, x: Value) -> Value:
    """log(1 + x) in float: near 0 (-0.29 < x < 0.41) the series 2 atanh(s) = 2 (s + s^3/3 + ... +
    s^15/15) with s = x / (2 + x), where lavapipe's Log is only absolutely accurate; beyond, Kahan's
    log(u) * x / (u - 1) with u = 1 + x."""
    one = em.const("f", 1.0)
    s = em.op("OpFDiv", "f", x, em.op("OpFAdd", "f", em.const("f", 2.0), x))
    z = em.op("OpFMul", "f", s, s)
    series = _polynomial(em, z, [1.0 / k for k in range(15, 0, -2)])
    near = em.op("OpFMul", "f", em.op("OpFAdd", "f", s, s), series)
    u = em.op("OpFAdd", "f", one, x)
    scaled = em.op("OpFMul", "f", em.glsl("Log", "f", u), em.op("OpFDiv", "f", x, em.op("OpFSub", "f", u, one)))
    far = em.select(em.op("OpFOrdEqual", "b", u, one), x, scaled)
    inside = em.op(
        "OpLogicalAnd",
        "b",
        em.op("OpFOrdGreaterThan", "b", x, em.const("f", -0.29)),
        em.op("OpFOrdLessThan", "b", x, em.const("f", 0.41)),
    )
    return em.select(inside, near, far)


def _f(em: ScalarEmitter, value: float) -> Value:
    return em.const("f", value)


def _asinh(em: ScalarEmitter, x: Value) -> Value:
    """asinh in float (glibc's way: log1p(a + a^2 / (1 + sqrt(1 + a^2))) below 2, log(2a + 1 /
    (sqrt(a^2 + 1) + a)) below 2^28, log(a) + log(2) above); lavapipe's Asinh(0.1) is 5 ulp off."""
    a = em.glsl("FAbs", "f", x)
    square = em.op("OpFMul", "f", a, a)
    root = em.glsl("Sqrt", "f", em.op("OpFAdd", "f", square, _f(em, 1.0)))
    small = _log1p(em, em.op("OpFAdd", "f", a, em.op("OpFDiv", "f", square, em.op("OpFAdd", "f", _f(em, 1.0), root))))
    medium = em.glsl(
        "Log",
        "f",
        em.op(
            "OpFAdd",
            "f",
            em.op("OpFMul", "f", _f(em, 2.0), a),
            em.op("OpFDiv", "f", _f(em, 1.0), em.op("OpFAdd", "f", root, a)),
        ),
    )
    large = em.op("OpFAdd", "f", em.glsl("Log", "f", a), _f(em, math.log(2.0)))
    y = em.select(em.op("OpFOrdLessThan", "b", a, _f(em, 2.0**28)), medium, large)
    y = em.select(em.op("OpFOrdLessThan", "b", a, _f(em, 2.0)), small, y)
    return _with_sign_of(em, y, x)


def _atanh(em: ScalarEmitter, x: Value) -> Value:
    """atanh in float (glibc's way: log1p(2a + 2a^2 / (1 - a)) / 2 below 0.5, log1p(2a / (1 - a)) / 2
    above); lavapipe's Atanh(0.1) is 5 ulp off."""
    a = em.glsl("FAbs", "f", x)
    rest = em.op("OpFSub", "f", _f(em, 1.0), a)
    twice = em.op("OpFAdd", "f", a, a)
    small = em.op("OpFAdd", "f", twice, em.op("OpFDiv", "f", em.op("OpFMul", "f", twice, a), rest))
    large = em.op("OpFDiv", "f", twice, rest)
    argument = em.select(em.op("OpFOrdLessThan", "b", a, _f(em, 0.5)), small, large)
    return _with_sign_of(em, em.op("OpFMul", "f", _f(em, 0.5), _log1p(em, argument)), x)


def _sinh(em: ScalarEmitter, x: Value) -> Value:
    """sinh in float (glibc's way: from t = expm1(a) below 22, exp(a) / 2 below log(FLT_MAX), then
    (exp(a / 2) / 2) * exp(a / 2)); lavapipe's Sinh(1e-3) is ~1e-5 off."""
    a = em.glsl("FAbs", "f", x)
    t = _expm1(em, a)
    t_over = em.op("OpFDiv", "f", t, em.op("OpFAdd", "f", t, _f(em, 1.0)))
    below_one = em.op(
        "OpFMul", "f", _f(em, 0.5), em.op("OpFSub", "f", em.op("OpFAdd", "f", t, t), em.op("OpFMul", "f", t, t_over))
    )
    below_22 = em.op("OpFMul", "f", _f(em, 0.5), em.op("OpFAdd", "f", t, t_over))
    w = _exp(em, em.op("OpFMul", "f", _f(em, 0.5), a))
    huge = em.op("OpFMul", "f", em.op("OpFMul", "f", _f(em, 0.5), w), w)
    y = em.select(
        em.op("OpFOrdLessThan", "b", a, _f(em, 88.72283935546875)),
        em.op("OpFMul", "f", _f(em, 0.5), _exp(em, a)),
        huge,
    )
    y = em.select(em.op("OpFOrdLessThan", "b", a, _f(em, 22.0)), below_22, y)
    y = em.select(em.op("OpFOrdLessThan", "b", a, _f(em, 1.0)), below_one, y)
    return _with_sign_of(em, y, x)


def _tanh(em: ScalarEmitter, x: Value) -> Value:
    """tanh in float (glibc's way: -t / (t + 2) with t = expm1(-2a) below 1, 1 - 2 / (expm1(2a) + 2)
    below 22, 1 above); lavapipe's Tanh(1e-3) is ~1e-5 off."""
    a = em.glsl("FAbs", "f", x)
    two = _f(em, 2.0)
    t = _expm1(em, em.op("OpFMul", "f", _f(em, -2.0), a))
    below_one = em.op("OpFNegate", "f", em.op("OpFDiv", "f", t, em.op("OpFAdd", "f", t, two)))
    u = _expm1(em, em.op("OpFMul", "f", two, a))
    below_22 = em.op("OpFSub", "f", _f(em, 1.0), em.op("OpFDiv", "f", two, em.op("OpFAdd", "f", u, two)))
    y = em.select(em.op("OpFOrdLessThan", "b", a, _f(em, 22.0)), below_22, _f(em, 1.0))
    y = em.select(em.op("OpFOrdLessThan", "b", a, _f(em, 1.0)), below_one, y)
    return _with_sign_of(em, y, x)


def _acosh(em: ScalarEmitter, x: Value) -> Value:
    """acosh of x >= 1 in float (glibc's way: log1p(t + sqrt(2t + t^2)) with t = x - 1 below 2,
    log(2x - 1 / (x + sqrt(x^2 - 1))) below 2^28, log(x) + log(2) above, where x^2 would overflow:
    lavapipe's Acosh(1e30) is inf)."""
    one = _f(em, 1.0)
    t = em.op("OpFSub", "f", x, one)
    near = _log1p(
        em,
        em.op(
            "OpFAdd",
            "f",
            t,
            em.glsl("Sqrt", "f", em.op("OpFAdd", "f", em.op("OpFAdd", "f", t, t), em.op("OpFMul", "f", t, t))),
        ),
    )
    root = em.glsl("Sqrt", "f", em.op("OpFSub", "f", em.op("OpFMul", "f", x, x), one))
    middle = em.glsl(
        "Log",
        "f",
        em.op("OpFSub", "f", em.op("OpFAdd", "f", x, x), em.op("OpFDiv", "f", one, em.op("OpFAdd", "f", x, root))),
    )
    far = em.op("OpFAdd", "f", em.glsl("Log", "f", x), _f(em, math.log(2.0)))
    y = em.select(em.op("OpFOrdLessThan", "b", x, _f(em, 2.0**28)), middle, far)
    return em.select(em.op("OpFOrdLessThan", "b", x, _f(em, 2.0)), near, y)


def _erf_series(em: ScalarEmitter, x: Value) -> Value:
    """erf in float: below |x| = 0.75 the Taylor series 2/sqrt(pi) (x - x^3/3 + x^5/10 - ...) to
    x^21, where the Abramowitz-Stegun formula's absolute error is many ulp; beyond, that formula."""
    z = em.op("OpFMul", "f", x, x)
    coefficients = [(-1) ** n / (math.factorial(n) * (2 * n + 1)) * 2 / math.sqrt(math.pi) for n in range(10, -1, -1)]
    near = em.op("OpFMul", "f", x, _polynomial(em, z, coefficients))
    inside = em.op("OpFOrdLessThan", "b", em.glsl("FAbs", "f", x), _f(em, 0.75))
    return em.select(inside, near, _erf(em, x))


def _erf(em: ScalarEmitter, x: Value) -> Value:
    """erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7)."""
    ax = em.glsl("FAbs", "f", x)
    t = em.op("OpFDiv", "f", em.const("f", 1.0), em.glsl("Fma", "f", em.const("f", 0.3275911), ax, em.const("f", 1.0)))
    poly = em.const("f", 1.061405429)
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly = em.glsl("Fma", "f", poly, t, em.const("f", coefficient))
    poly = em.op("OpFMul", "f", poly, t)
    gauss = _exp(em, em.op("OpFNegate", "f", em.op("OpFMul", "f", ax, ax)))
    magnitude = em.op("OpFSub", "f", em.const("f", 1.0), em.op("OpFMul", "f", poly, gauss))
    return em.select(em.compare("LessThan", x, em.const("f", 0.0)), em.op("OpFNegate", "f", magnitude), magnitude)


def _expm1(em: ScalarEmitter, x: Value) -> Value:
    """exp(x) - 1 without the cancellation near 0: for |x| < 0.35 (float) the Taylor series to x^10
    (Horner, x (1 + x/2 (1 + x/3 (...)))), where Kahan's formula would inherit Log's error near 1;
    beyond, Kahan's (u - 1) * x / log(u) with u = exp(x) (-1 where u - 1 is, inf where u is)."""
    k = x.kind
    one = em.const(k, 1.0)
    u = em.glsl("Exp", k, x)
    u_minus_one = em.op("OpFSub", k, u, one)
    scaled = em.op("OpFDiv", k, em.op("OpFMul", k, u_minus_one, x), em.glsl("Log", k, u))
    y = em.select(em.op("OpFOrdEqual", "b", u_minus_one, em.const(k, -1.0)), u_minus_one, scaled)
    y = em.select(em.op("OpFOrdEqual", "b", u, one), x, y)
    y = em.select(_is_inf(em, u), u, y)  # exp overflowed: inf
    if k != "f":
        return y
    series = one
    for n in range(10, 1, -1):
        series = em.op("OpFAdd", k, one, em.op("OpFMul", k, em.op("OpFDiv", k, x, em.const(k, float(n))), series))
    near = em.op("OpFMul", k, x, series)
    return em.select(em.op("OpFOrdLessThan", "b", em.glsl("FAbs", k, x), em.const(k, 0.35)), near, y)


def _fmod(em: ScalarEmitter, a: Value, b: Value) -> Value:
    """C's fmod: the dividend's sign, a for an infinite divisor and finite a, NaN for b = 0."""
    k = a.kind
    keeps = em.op("OpLogicalAnd", "b", _is_inf(em, b), em.op("OpLogicalNot", "b", _is_inf(em, a)))
    remainder = _exact_fmod(em, a, b) if k == "f" else em.op("OpFRem", k, a, b)
    remainder = em.select(keeps, a, remainder)
    return em.select(em.op("OpFOrdEqual", "b", b, em.const(k, 0.0)), em.const(k, math.nan), remainder)


def _exact_fmod(em: ScalarEmitter, a: Value, b: Value) -> Value:
    """fmod of 32-bit floats, exactly (lavapipe's OpFRem is a - b * trunc(a / b) in float). In
    double, |a| is reduced by |b| * 2^s for s = 252, 224, ..., 28, 0 (multiples of |b|, so each
    step keeps the remainder): every quotient is below 2^29, so q * |b| * 2^s is exact, a - q * ...
    is exact, and q = trunc(r / m), one off at most, is corrected by one step. The result has a's
    sign."""
    x, y = em.op("OpFConvert", "d", a), em.op("OpFConvert", "d", b)
    zero = em.const("d", 0.0)
    r = em.glsl("FAbs", "d", x)
    ay = em.glsl("FAbs", "d", y)
    for shift in range(252, -1, -28):
        m = em.op("OpFMul", "d", ay, em.const("d", 2.0**shift))
        q = em.glsl("Trunc", "d", em.op("OpFDiv", "d", r, m))
        r = em.op("OpFSub", "d", r, em.op("OpFMul", "d", q, m))
        r = em.select(em.op("OpFOrdLessThan", "b", r, zero), em.op("OpFAdd", "d", r, m), r)
        r = em.select(em.op("OpFOrdGreaterThanEqual", "b", r, m), em.op("OpFSub", "d", r, m), r)
    r = em.select(em.op("OpFOrdLessThan", "b", x, zero), em.op("OpFNegate", "d", r), r)
    return em.op("OpFConvert", "f", r)


def _ieee_remainder(em: ScalarEmitter, x: Value, y: Value) -> Value:
    """C's remainder (the quotient rounded to nearest, ties to even), exactly: r = fmod(|x|, 2|y|),
    less |y| once or twice where it is above |y| / 2 (fdlibm's way), with x's sign; NaN for y = 0
    or an infinite x."""
    k = x.kind
    ay = em.glsl("FAbs", k, y)
    twice = em.op("OpFMul", k, ay, em.const(k, 2.0))
    ax = em.glsl("FAbs", k, x)
    r = em.select(_is_inf(em, twice), ax, _fmod(em, ax, twice))  # 2|y| overflows: |x| < 2|y|
    half = em.op("OpFMul", k, ay, em.const(k, 0.5))
    tiny = em.op("OpFOrdLessThan", "b", ay, em.const(k, 2.0**-100))  # 0.5 * |y| may round
    above = em.select(
        tiny, em.op("OpFOrdGreaterThan", "b", em.op("OpFAdd", k, r, r), ay), em.op("OpFOrdGreaterThan", "b", r, half)
    )
    r = em.select(above, em.op("OpFSub", k, r, ay), r)
    at_least = em.select(
        tiny,
        em.op("OpFOrdGreaterThanEqual", "b", em.op("OpFAdd", k, r, r), ay),
        em.op("OpFOrdGreaterThanEqual", "b", r, half),
    )
    r = em.select(em.op("OpLogicalAnd", "b", above, at_least), em.op("OpFSub", k, r, ay), r)
    signed = em.select(em.op("OpFOrdLessThan", "b", x, em.const(k, 0.0)), em.op("OpFNegate", k, r), r)
    undefined = em.op("OpLogicalOr", "b", _is_inf(em, x), em.op("OpFOrdEqual", "b", y, em.const(k, 0.0)))
    undefined = em.op("OpLogicalOr", "b", undefined, em.op("OpLogicalOr", "b", em.is_nan(x), em.is_nan(y)))
    # y = +-inf and finite x: x itself
    return em.select(undefined, em.const(k, math.nan), em.select(_is_inf(em, y), x, signed))


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


# functions computed here rather than by their GLSL.std.450 instruction (lavapipe's are beyond the
# ulp bound, or there is none)
_OWN_FORMULATIONS: dict[str, Callable[[ScalarEmitter, Value], Value]] = {
    "acos": _acos,
    "acosh": _acosh,
    "erf": _erf_series,
    "exp": _exp,
    "expm1": _expm1,
    "asin": _asin,
    "asinh": _asinh,
    "atan": _atan,
    "atanh": _atanh,
    "sinh": _sinh,
    "tanh": _tanh,
}


# -- the kernels' entry points -----------------------------------------------------------------------


def lower_scalar(
    em: ScalarEmitter, op: Operation, args: list[Value], arg_types: list[ElementType], result_dtype: DType
) -> Value:
    """One pointwise operation on scalar values, the result in the compute kind of its type."""
    typed = [Typed(a.id, a.kind, t.dtype) for a, t in zip(args, arg_types, strict=True)]
    try:
        return emit(SpirvEmitter(em), op, typed, result_dtype)
    except NoScalarMeaning as e:
        raise Unsupported(str(e)) from None


def literal_value(em: ScalarEmitter, data: np.ndarray, t: ElementType) -> Value:
    """A literal in a pointwise body: one value (or one value repeated) as a constant."""
    flat = np.asarray(data).reshape(-1)
    if flat.size == 0 or not np.all((flat == flat[0]) | (flat != flat)):
        raise Unsupported("a literal with more than one value in a pointwise body")
    first = flat[0]
    if t.kind == "b":
        return em.const("b", bool(first))
    if t.kind in ("i", "l"):
        return em.const(t.kind, int(first))
    return em.const(t.kind, float(first))
