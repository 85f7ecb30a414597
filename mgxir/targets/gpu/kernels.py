"""Kernel sources, generated per instruction as MIGraphX's GPU target generates them: one C++ source
per kernel, specialised on its arguments' shapes, that compiles as CUDA (NVRTC) and as HIP (hiprtc).

The source needs no headers: half and bf16 are stored as 16-bit words and computed in float
(`mgx_load`/`mgx_store` convert), warp shuffles and the warp size come from one `#if` on the
compiler. Every kernel takes its inputs' pointers, then the output's, and is launched with
`global` threads in blocks of `local` (MIGraphX's code_object fields).

A pointwise module's body becomes one statement per step of each instruction's scalar meaning
(mgxir/ops/scalar.py), emitted by `CppEmitter`; an operator without a meaning for its types leaves
its instruction to the host.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from mgxir.analysis.kernel_plan import ReducePlan, Reduction, Step, StepKind, Unplannable, plan_body, plan_reduce
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.shape import Shape
from mgxir.ops.scalar import NoScalarMeaning, emit


class Unsupported(Exception):
    """The generator has no kernel for this instruction; it stays for the host to run."""


@dataclasses.dataclass(frozen=True)
class Tensor:
    """How a kernel sees one argument: element type, logical lens and strides (in elements), and
    whether its pointer is aligned to 16 bytes (vector loads need it)."""

    dtype: DType
    lens: tuple[int, ...]
    strides: tuple[int, ...]
    aligned: bool = True

    @classmethod
    def of(cls, shape: Shape, aligned: bool = True) -> Tensor:
        return cls(shape.dtype, tuple(shape.lens), tuple(shape.strides), aligned)

    @property
    def elements(self) -> int:
        return math.prod(self.lens)

    @property
    def is_scalar(self) -> bool:
        return all(s == 0 or n == 1 for n, s in zip(self.lens, self.strides))

    @property
    def is_standard(self) -> bool:
        expected = 1
        for n, s in zip(reversed(self.lens), reversed(self.strides)):
            if n != 1 and s != expected:
                return False
            expected *= n
        return True


@dataclasses.dataclass(frozen=True)
class Kernel:
    symbol: str
    source: str
    global_size: int
    local_size: int


# -- types ---------------------------------------------------------------------------------------

# element type -> (storage type, compute type)
C_TYPES: dict[DType, tuple[str, str]] = {
    DType.float: ("float", "float"),
    DType.half: ("mgx_half", "float"),
    DType.bf16: ("mgx_bf16", "float"),
    DType.double: ("double", "double"),
    **{t: (f"mgx_{t.name}", "float") for t in DType if t.is_fp8},
    DType.bool: ("bool", "bool"),
    DType.int8: ("signed char", "int"),
    DType.uint8: ("unsigned char", "unsigned int"),
    DType.int16: ("short", "int"),
    DType.uint16: ("unsigned short", "unsigned int"),
    DType.int32: ("int", "int"),
    DType.uint32: ("unsigned int", "unsigned int"),
    DType.int64: ("long long", "long long"),
    DType.uint64: ("unsigned long long", "unsigned long long"),
}


def storage_type(t: DType) -> str:
    if t not in C_TYPES:
        raise Unsupported(f"no GPU kernel type for {t.type_name}")
    return C_TYPES[t][0]


def compute_type(t: DType) -> str:
    if t not in C_TYPES:
        raise Unsupported(f"no GPU kernel type for {t.type_name}")
    return C_TYPES[t][1]


def accumulator_type(t: DType) -> str:
    if t.is_float:
        return compute_type(t)
    return "unsigned long long" if t.is_unsigned and t is not DType.bool else "long long"


PRELUDE = r"""
#if defined(__HIPCC_RTC__) || defined(__HIP__)
#define MGX_WARP 64
#define MGX_SHFL_XOR(v, o) __shfl_xor((v), (o))
#else
#define MGX_WARP 32
#define MGX_SHFL_XOR(v, o) __shfl_xor_sync(0xffffffffu, (v), (o))
#endif
struct mgx_half { unsigned short bits; };
struct mgx_bf16 { unsigned short bits; };
template <class T, int N> struct alignas(sizeof(T) * N) mgx_vec { T v[N]; };
__device__ inline float mgx_load(const mgx_half* p) {
#if defined(__HIPCC_RTC__) || defined(__HIP__)
  _Float16 f; __builtin_memcpy(&f, &p->bits, 2); return (float)f;
#else
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p->bits)); return f;
#endif
}
__device__ inline float mgx_load(const mgx_bf16* p) { return __uint_as_float(((unsigned int)p->bits) << 16); }
template <class T> __device__ inline T mgx_load(const T* p) { return *p; }
__device__ inline void mgx_store(mgx_half* p, float x) {
#if defined(__HIPCC_RTC__) || defined(__HIP__)
  _Float16 f = (_Float16)x; __builtin_memcpy(&p->bits, &f, 2);
#else
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  // NaN as numpy stores it (PTX gives 0x7fff): the same bits for a bit_cast to see
  p->bits = (x != x) ? (unsigned short)(((__float_as_uint(x) >> 16) & 0x8000u) | 0x7e00u) : h;
#endif
}
__device__ inline void mgx_store(mgx_bf16* p, float x) {
  unsigned int u = __float_as_uint(x);
  p->bits = (x != x) ? (unsigned short)0x7fc0 : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
template <class T, class U> __device__ inline void mgx_store(T* p, U x) { *p = (T)x; }
__device__ inline float mgx_round_half(float x) { mgx_half h; mgx_store(&h, x); return mgx_load(&h); }
__device__ inline float mgx_round_bf16(float x) { mgx_bf16 h; mgx_store(&h, x); return mgx_load(&h); }
// a double rounded to float toward odd, then to nearest: one correct rounding to half or bf16
__device__ inline float mgx_round_to_odd(double x) {
  float f = (float)x;
  if ((double)f == x || x != x) return f;
  unsigned int u = __float_as_uint(f);
  if (fabs((double)f) > fabs(x)) u -= 1u;
  return __uint_as_float(u | 1u);
}
__device__ inline float mgx_round_half(double x) { return mgx_round_half(mgx_round_to_odd(x)); }
__device__ inline float mgx_round_bf16(double x) { return mgx_round_bf16(mgx_round_to_odd(x)); }
// fp8 with E exponent bits, M mantissa bits, bias B, and kind K (as ml_dtypes, rounding to nearest
// even): 0 IEEE-like (infinities; e5m2), 1 "fn" (no infinities, S.1111.111 is NaN, overflow is
// NaN), 2 "fnuz" (no infinities, no -0, 0x80 is NaN and what overflows)
template <int E, int M, int B, int K> struct mgx_fp8 { unsigned char bits; };
typedef mgx_fp8<4, 3, 7, 1> mgx_fp8e4m3fn;
typedef mgx_fp8<4, 3, 8, 2> mgx_fp8e4m3fnuz;
typedef mgx_fp8<5, 2, 15, 0> mgx_fp8e5m2;
typedef mgx_fp8<5, 2, 16, 2> mgx_fp8e5m2fnuz;
template <int E, int M, int B, int K> __device__ inline float mgx_load(const mgx_fp8<E, M, B, K>* p) {
  const unsigned int b = p->bits, top = (1u << E) - 1u, e = (b >> M) & top, m = b & ((1u << M) - 1u);
  const float nan = __uint_as_float(0x7fc00000u), inf = __uint_as_float(0x7f800000u);
  if ((K == 2 && b == 0x80u) || (K == 1 && e == top && m == (1u << M) - 1u) || (K == 0 && e == top && m != 0))
    return (b & 0x80u) ? -nan : nan;
  const float magnitude = K == 0 && e == top ? inf
                        : e == 0 ? ldexpf((float)m, 1 - B - M) : ldexpf((float)(m | (1u << M)), (int)e - B - M);
  return (b & 0x80u) ? -magnitude : magnitude;
}
template <int E, int M, int B, int K> __device__ inline void mgx_store(mgx_fp8<E, M, B, K>* p, float x) {
  const unsigned int top = (1u << E) - 1u, mantissas = 1u << M, sign = (__float_as_uint(x) >> 24) & 0x80u;
  const unsigned int nan = K == 2 ? 0x80u : K == 1 ? (sign | 0x7fu) : (sign | (top << M) | (mantissas >> 1));
  const unsigned int overflow = K == 0 ? (sign | (top << M)) : nan;
  const float a = fabsf(x);
  if (x != x || a == __uint_as_float(0x7f800000u)) { p->bits = (unsigned char)(x != x ? nan : overflow); return; }
  unsigned int field = 0, m;
  if (a < ldexpf(1.0f, 1 - B)) {  // subnormal: m may round up to the smallest normal (field 1, m 0)
    m = (unsigned int)rintf(ldexpf(a, B - 1 + M));
  } else {
    int ex;
    frexpf(a, &ex);
    field = (unsigned int)(ex - 1 + B);
    m = (unsigned int)rintf(ldexpf(a, M - (ex - 1))) - mantissas;
    if (m == mantissas) { m = 0; ++field; }
  }
  const bool over = field > (K == 0 ? top - 1u : top) || (K == 1 && field == top && m == mantissas - 1u);
  unsigned int bits = over ? overflow : (sign | (field << M) | m);
  if (K == 2 && !over && (bits & 0x7fu) == 0u) bits = 0u;
  p->bits = (unsigned char)bits;
}
template <class T> __device__ inline float mgx_round(float x) { T h; mgx_store(&h, x); return mgx_load(&h); }
// a value of storage type From seen as storage type To (of its size), byte by byte
template <class To, class From, class C> __device__ inline auto mgx_bit_cast(C x) -> decltype(mgx_load((const To*)0)) {
  From from;
  mgx_store(&from, x);
  To to;
  for (int i = 0; i < (int)sizeof(To); ++i) ((unsigned char*)&to)[i] = ((const unsigned char*)&from)[i];
  return mgx_load(&to);
}
template <class T> __device__ inline float mgx_round(double x) { return mgx_round<T>(mgx_round_to_odd(x)); }
struct mgx_op_sum { template <class T> __device__ T operator()(T a, T b) const { return a + b; } };
struct mgx_op_prod { template <class T> __device__ T operator()(T a, T b) const { return a * b; } };
struct mgx_op_max { template <class T> __device__ T operator()(T a, T b) const { return (b > a || b != b) ? b : a; } };
struct mgx_op_min { template <class T> __device__ T operator()(T a, T b) const { return (b < a || b != b) ? b : a; } };
template <class T, class Op> __device__ T mgx_block_reduce(T v, Op op) {
  __shared__ T partial[1024 / MGX_WARP];
  for (int o = MGX_WARP / 2; o > 0; o /= 2) v = op(v, MGX_SHFL_XOR(v, o));
  __syncthreads();
  if (threadIdx.x % MGX_WARP == 0) partial[threadIdx.x / MGX_WARP] = v;
  __syncthreads();
  T r = partial[0];
  for (int w = 1; w < (int)((blockDim.x + MGX_WARP - 1) / MGX_WARP); ++w) r = op(r, partial[w]);
  return r;
}
"""


# -- pointwise: the scalar meanings (mgxir/ops/scalar.py) as C++ ---------------------------------

# integer arithmetic wraps: it is done in the unsigned type of the value's width (no signed overflow)
_UNSIGNED_ARITHMETIC = {1: "unsigned int", 2: "unsigned int", 4: "unsigned int", 8: "unsigned long long"}
_C_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_C_ARITHMETIC = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rem": "%"}
_C_LOGIC = {"and": "&&", "or": "||", "xor": "!="}
# types whose values a kernel holds in float, rounded after every operation: the helper that rounds
_ROUNDED_IN_FLOAT = {
    DType.half: "mgx_round_half",
    DType.bf16: "mgx_round_bf16",
    **{t: f"mgx_round<mgx_{t.name}>" for t in DType if t.is_fp8},
}


@dataclasses.dataclass(frozen=True)
class CValue:
    """A C++ expression (a name or a literal) of one element type, held in its compute type."""

    expr: str
    dtype: DType


class CppEmitter:
    """The scalar protocol as CUDA/HIP C++: each operation becomes one `const` statement in
    `lines`. Floats are computed in their compute type (half and bf16 in float, rounded after each
    operation so that values are what the reference computes); math functions are CUDA's and
    HIP's (`sinf`, `sin`), which the host's C library also has."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.lines: list[str] = []

    def _bind(self, expr: str, t: DType) -> CValue:
        name = f"{self.prefix}{len(self.lines)}"
        self.lines.append(f"const {compute_type(t)} {name} = {expr};")
        return CValue(name, t)

    def _float(self, expr: str, t: DType) -> CValue:
        """A float result of type `t`, rounded to it where it is held in float."""
        rounding = _ROUNDED_IN_FLOAT.get(t)
        return self._bind(f"{rounding}({expr})" if rounding else expr, t)

    def _wrapped(self, expr: str, t: DType) -> CValue:
        """An integer result (computed in an unsigned type) wrapped into `t`."""
        c = compute_type(t)
        narrow = storage_type(t)
        return self._bind(f"(({c})({narrow})({expr}))" if narrow != c else f"(({c})({expr}))", t)

    def dtype_of(self, v: CValue) -> DType:
        return v.dtype

    def constant(self, value: float | int | bool, t: DType) -> CValue:
        with np.errstate(over="ignore"):  # a limit beyond the type's range is its infinity
            return CValue(literal_expr(t.numpy.type(value) if t.is_float else value, t), t)

    def arithmetic(self, op: str, a: CValue, b: CValue) -> CValue:
        t = a.dtype
        symbol = _C_ARITHMETIC[op]
        if t.is_float:
            if op == "rem":
                return self._float(f"{_math_name('fmod', t)}({a.expr}, {b.expr})", t)
            return self._float(f"({a.expr} {symbol} {b.expr})", t)
        if op in ("div", "rem"):  # callers guard the divisor: no overflow
            return self._wrapped(f"{a.expr} {symbol} {b.expr}", t)
        u = _UNSIGNED_ARITHMETIC[t.itemsize]
        return self._wrapped(f"({u}){a.expr} {symbol} ({u}){b.expr}", t)

    def neg(self, a: CValue) -> CValue:
        if a.dtype.is_float:
            return self._bind(f"(-{a.expr})", a.dtype)
        u = _UNSIGNED_ARITHMETIC[a.dtype.itemsize]
        return self._wrapped(f"({u})0 - ({u}){a.expr}", a.dtype)

    def compare(self, predicate: str, a: CValue, b: CValue) -> CValue:
        return self._bind(f"({a.expr} {_C_COMPARE[predicate]} {b.expr})", DType.bool)

    def select(self, condition: CValue, a: CValue, b: CValue) -> CValue:
        return self._bind(f"({condition.expr} ? {a.expr} : {b.expr})", a.dtype)

    def logic(self, op: str, a: CValue, b: CValue) -> CValue:
        return self._bind(f"({a.expr} {_C_LOGIC[op]} {b.expr})", DType.bool)

    def logical_not(self, a: CValue) -> CValue:
        return self._bind(f"(!{a.expr})", DType.bool)

    def bitwise_and(self, a: CValue, b: CValue) -> CValue:
        return self._bind(f"(({compute_type(a.dtype)})({a.expr} & {b.expr}))", a.dtype)

    def convert(self, v: CValue, t: DType) -> CValue:
        source, c = v.dtype, compute_type(t)
        if t is DType.bool:
            return self._bind(f"({v.expr} != 0)", t)
        if source is DType.bool:
            return self._bind(f"(({c})({v.expr} ? 1 : 0))", t)
        if t.is_float:
            rounding = _ROUNDED_IN_FLOAT.get(t)
            if rounding:  # from double or an integer through double: round to odd, then to nearest
                wide = v.expr if source is DType.double or source.is_float else f"(double){v.expr}"
                return self._bind(f"{rounding}({wide})", t)
            return self._bind(f"(({c}){v.expr})", t)
        if source.is_float:  # in range: callers guard NaN and out-of-range values
            return self._wrapped(f"({_truncation_type(t)}){v.expr}", t)
        return self._wrapped(v.expr, t)

    def math(self, function: str, x: CValue) -> CValue:
        return self._float(f"{_math_name(function, x.dtype)}({x.expr})", x.dtype)

    def binary_math(self, function: str, a: CValue, b: CValue) -> CValue:
        return self._float(f"{_math_name(function, a.dtype)}({a.expr}, {b.expr})", a.dtype)

    def is_nan(self, x: CValue) -> CValue:
        return self._bind(f"({x.expr} != {x.expr})", DType.bool)

    def is_inf(self, x: CValue) -> CValue:
        inf = literal_expr(np.float64(math.inf), x.dtype)
        return self._bind(f"({x.expr} == {inf} || {x.expr} == -{inf})", DType.bool)

    def reinterpret(self, v: CValue, t: DType) -> CValue:
        intrinsic = _REINTERPRET.get((v.dtype, t))
        if intrinsic is not None:
            return self._bind(f"{intrinsic}({v.expr})", t)
        if DType.bool in (v.dtype, t) or v.dtype.itemsize != t.itemsize:  # a bool's bytes are 0 or 1
            raise NoScalarMeaning(f"no bit cast from {v.dtype.type_name} to {t.type_name} in GPU kernels")
        return self._bind(f"mgx_bit_cast<{storage_type(t)}, {storage_type(v.dtype)}>({v.expr})", t)

    def extremum(self, a: CValue, b: CValue, largest: bool) -> CValue:
        order = (">" if largest else "<") + ("=" if a.dtype is DType.half else "")
        nan = f" || {a.expr} != {a.expr}" if a.dtype.is_float else ""
        return self._bind(f"(({a.expr} {order} {b.expr}{nan}) ? {a.expr} : {b.expr})", a.dtype)


# CUDA's and HIP's bit casts between 32- and 64-bit types: (from, to) -> intrinsic
_REINTERPRET = {
    (DType.float, DType.int32): "__float_as_int",
    (DType.int32, DType.float): "__int_as_float",
    (DType.float, DType.uint32): "__float_as_uint",
    (DType.uint32, DType.float): "__uint_as_float",
    (DType.double, DType.int64): "__double_as_longlong",
    (DType.int64, DType.double): "__longlong_as_double",
}


def _math_name(function: str, t: DType) -> str:
    """C's name of a math function for values of `t`: `sinf` for float (half, bf16), `sin` for double."""
    return function if t is DType.double else f"{function}f"


def _truncation_type(t: DType) -> str:
    """The C type a float converts into (truncating) on its way to integer type `t`."""
    return storage_type(t)


def literal_expr(value: np.generic | float | int | bool, t: DType) -> str:
    c = compute_type(t)
    if t is DType.bool:
        return "true" if bool(value) else "false"
    if t.is_float:
        x = float(value)
        if math.isnan(x):
            return f"(({c})(0.0 / 0.0))"
        if math.isinf(x):
            return f"(({c})({'-' if x < 0 else ''}1.0 / 0.0))"
        return f"(({c}){x!r})"
    n = int(value)
    if t.is_unsigned:
        return f"(({c}){n}ULL)"
    return f"(({c}){n}LL)" if n != -(2**63) else f"(({c})(-9223372036854775807LL - 1))"


def pointwise_body(module: Module, args: Sequence[str], prefix: str) -> tuple[list[str], str]:
    """Statements computing a pointwise module's result from its parameters' expressions (bound as
    the module's plan orders them, by name as MIGraphX binds them); returns (statements, result
    expression)."""
    try:
        plan = plan_body(module)
    except Unplannable as e:
        raise Unsupported(str(e)) from None
    if len(plan.parameters) != len(args):
        raise Unsupported(f"module '{module.name}' has {len(plan.parameters)} parameters for {len(args)} inputs")
    if len(plan.results) != 1:
        raise Unsupported(f"module '{module.name}' returns {len(plan.results)} values")
    for p in plan.parameters:
        compute_type(p.shape.dtype)
    values: dict[Instruction, CValue] = {p: CValue(a, p.shape.dtype) for p, a in zip(plan.parameters, args)}
    em = CppEmitter(prefix)
    for step in plan.steps:
        ins = step.instruction
        t = ins.shape.dtype
        compute_type(t)
        if step.kind is StepKind.LITERAL:
            values[ins] = em.constant(ins.literal.data.reshape(-1)[0].item(), t)
            continue
        try:
            values[ins] = emit(em, ins.op, [values[a] for a in ins.args], t)
        except NoScalarMeaning as e:
            raise Unsupported(str(e)) from None
    return em.lines, values[plan.results[0]].expr


def kernel_name(module: Module, suffix: str = "kernel") -> str:
    """MIGraphX's names: the module's operators in order, fused pointwise bodies spelled out."""
    stem = "_".join(dict.fromkeys(_op_names(module))) or "copy"
    return f"{stem[:48].rstrip('_')}_{suffix}"


def _op_names(module: Module) -> list[str]:
    names: list[str] = []
    for ins in module:
        if ins.is_param or ins.is_literal or ins.is_return or ins.op.defn.is_view:
            continue
        if ins.op.defn.name == "pointwise" and ins.module_args:
            names.extend(_op_names(ins.module_args[0]))
        else:
            names.append(ins.op.defn.name.replace("::", "_"))
    return names


# -- index arithmetic ----------------------------------------------------------------------------


def _offset(index: str, tensor: Tensor, unit: int = 1) -> str:
    """The element offset in `tensor`'s memory of the `index`-th element (or vector of `unit`
    elements along the last axis) in standard order over its lens."""
    if tensor.is_scalar:
        return "0"
    lens = list(tensor.lens)
    lens[-1] //= unit
    outermost = next(d for d, n in enumerate(lens) if n != 1) if any(n != 1 for n in lens) else 0
    terms = []
    divisor = 1
    for d in reversed(range(len(lens))):
        n, s = lens[d], tensor.strides[d]
        if n != 1 and s != 0:
            part = index if divisor == 1 else f"({index} / {divisor}LL)"
            if d != outermost:
                part = f"({part} % {n}LL)"
            stride = s * unit if d == len(lens) - 1 else s
            terms.append(f"{part} * {stride}LL")
        divisor *= n
    return " + ".join(terms) or "0"


def _same_dense_layout(tensors: Sequence[Tensor]) -> bool:
    first = tensors[0]
    if first.elements != math.prod(max(n, 1) for n in first.lens):
        return False
    return all(t.lens == first.lens and t.strides == first.strides and _dense(t) for t in tensors)


def _dense(t: Tensor) -> bool:
    """Every element at its own offset and no gaps: linear offsets 0..n-1 in some order."""
    pairs = sorted((s, n) for n, s in zip(t.lens, t.strides) if n != 1)
    expected = 1
    for s, n in pairs:
        if s != expected:
            return False
        expected *= n
    return True


def _vector_width(tensors: Sequence[Tensor], inner: int) -> int:
    widest = max(t.dtype.itemsize for t in tensors)
    width = max(1, 16 // widest)
    while width > 1 and inner % width:
        width //= 2
    return width


# -- pointwise and copies ------------------------------------------------------------------------

LOCAL = 256


def elementwise_kernel(
    symbol: str,
    inputs: Sequence[Tensor],
    output: Tensor,
    body: Callable[[list[str]], tuple[list[str], str]],
    local: int = LOCAL,
    per_thread: int = 1,
) -> Kernel:
    """out[i] = body(in_0[i], ...) over the output's elements. Each tensor is indexed by the linear
    index in its own lens (so a reshaping copy is the identity body); tensors of one dense layout
    share the index, and where the last axis allows, each thread moves a vector of elements."""
    tensors = [*inputs, output]
    total = output.elements
    same_lens = all(t.lens == output.lens for t in inputs)
    dense = same_lens and _same_dense_layout([t for t in tensors if not t.is_scalar] or [output])
    strided_ok = same_lens and all(t.is_scalar or t.strides[-1] == 1 for t in tensors)
    width = 1
    if all(t.aligned for t in tensors) and (dense or strided_ok):
        inner = total if dense else output.lens[-1]
        width = _vector_width(tensors, inner)
        if not dense:
            while width > 1 and any(
                not t.is_scalar and any(s % width for n, s in zip(t.lens[:-1], t.strides[:-1]) if n != 1)
                for t in tensors
            ):
                width //= 2
    vectors = total // width
    params = [f"const {storage_type(t.dtype)}* __restrict__ x{k}" for k, t in enumerate(inputs)]
    params.append(f"{storage_type(output.dtype)}* __restrict__ out")
    lines = [PRELUDE, f'extern "C" __global__ void __launch_bounds__({local}) {symbol}({", ".join(params)}) {{']
    lines.append(f"  const long long first = ((long long)blockIdx.x * {local} + threadIdx.x) * {per_thread};")
    lines.append(f"  for (int u = 0; u < {per_thread}; ++u) {{")
    lines.append("  const long long i = first + u;")
    lines.append(f"  if (i >= {vectors}LL) return;")
    for k, t in enumerate(inputs):
        st, ct = storage_type(t.dtype), compute_type(t.dtype)
        if t.is_scalar:
            lines.append(f"  const {ct} s{k} = mgx_load(x{k});")
            continue
        offset = "i" if dense else _offset("i", t, width)
        if width > 1:
            vector = f"mgx_vec<{st}, {width}>"
            lines.append(f"  const {vector} v{k} = *(const {vector}*)(x{k} + ({offset}) * {width if dense else 1});")
        else:
            lines.append(f"  const {ct} s{k} = mgx_load(x{k} + {offset});")
    out_offset = "i" if dense else _offset("i", output, width)
    ost = storage_type(output.dtype)
    if width > 1:
        lines.append(f"  mgx_vec<{ost}, {width}> r;")
        lines.append("#pragma unroll")
        lines.append(f"  for (int e = 0; e < {width}; ++e) {{")
        args = []
        for k, t in enumerate(inputs):
            if t.is_scalar:
                args.append(f"s{k}")
            else:
                lines.append(f"    const {compute_type(t.dtype)} a{k} = mgx_load(&v{k}.v[e]);")
                args.append(f"a{k}")
        statements, result = body(args)
        lines.extend("    " + s for s in statements)
        lines.append(f"    mgx_store(&r.v[e], {result});")
        lines.append("  }")
        lines.append(f"  *(mgx_vec<{ost}, {width}>*)(out + ({out_offset}) * {width if dense else 1}) = r;")
    else:
        statements, result = body([f"s{k}" for k in range(len(inputs))])
        lines.extend("  " + s for s in statements)
        lines.append(f"  mgx_store(out + {out_offset}, {result});")
    lines.append("  }")
    lines.append("}")
    blocks = max(1, -(-vectors // (local * per_thread)))
    return Kernel(symbol, "\n".join(lines) + "\n", blocks * local, local)


def pointwise_kernel(module: Module, inputs: Sequence[Tensor], output: Tensor, **launch: int) -> Kernel:
    name = kernel_name(module)
    return elementwise_kernel(name, inputs, output, lambda args: pointwise_body(module, args, "t"), **launch)


def copy_kernel(source: Tensor, output: Tensor, symbol: str = "contiguous_kernel") -> Kernel:
    """A copy; between tensors of the same lens, both are walked in the output's memory order (the
    axes permuted alike), so that writes are coalesced and vectors where both inner axes allow."""
    if source.elements != output.elements:
        raise Unsupported("a copy needs as many elements in as out")
    if source.lens == output.lens:
        order = sorted(range(len(output.lens)), key=lambda d: -output.strides[d])
        source, output = (
            Tensor(t.dtype, tuple(t.lens[d] for d in order), tuple(t.strides[d] for d in order), t.aligned)
            for t in (source, output)
        )
    return elementwise_kernel(symbol, [source], output, lambda args: ([], args[0]))


# -- reductions: fused_reduce modules, as their kernel plan (mgxir/analysis/kernel_plan.py) describes

# how a reducer folds two partials (its `combine`): the prelude's functor
COMBINERS = {"sum": "mgx_op_sum", "product": "mgx_op_prod", "max": "mgx_op_max", "min": "mgx_op_min"}


ROW_LANES = 32  # lanes per row in warp-row reductions: a CUDA warp, half an AMD wavefront
WARP_ROW_LOCAL = 256
WARP_ROW_CACHE = 128  # cached row elements per lane, over all parameters (registers)


def reduce_kernel(module: Module, axes: Sequence[int], inputs: Sequence[Tensor], output: Tensor) -> Kernel:
    """A fused_reduce module. Rows up to 32 elements per lane run one row per 32 lanes, the row's
    inputs loaded once (vectors where the row is contiguous) into registers and every reduction
    combined with shuffles alone; longer rows run one block per row (see `block_reduce_kernel`)."""
    try:
        plan = plan_reduce(module, axes, inputs, output)
    except Unplannable as e:
        raise Unsupported(str(e)) from None
    for t in plan.tensors:
        compute_type(t.dtype)
    for r in plan.reductions:
        compute_type(r.result)
    kernel = _Reduction(plan, tuple(inputs), output)
    return _warp_row_kernel(kernel) or _block_reduce_kernel(kernel)


@dataclasses.dataclass(frozen=True)
class _Reduction:
    """A reduction kernel's plan with the generator's own view of its tensors (alignment)."""

    plan: ReducePlan
    inputs: tuple[Tensor, ...]
    output: Tensor

    @property
    def tensors(self) -> list[Tensor]:
        return [*self.inputs, self.output]


def _step_code(step: Step, names: dict[Instruction, str], prefix: str) -> tuple[list[str], str]:
    """Statements computing one step of a fused_reduce body from its arguments' expressions."""
    ins = step.instruction
    if step.kind is StepKind.VIEW:
        return [], names[ins.args[0]]
    if step.kind is StepKind.LITERAL:
        return [], literal_expr(ins.literal.data.reshape(-1)[0], ins.shape.dtype)
    if step.kind is StepKind.POINTWISE:
        return pointwise_body(ins.module_args[0], [names[a] for a in ins.args], prefix)
    em = CppEmitter(prefix)
    try:
        value = emit(em, ins.op, [CValue(names[a], a.shape.dtype) for a in ins.args], ins.shape.dtype)
    except NoScalarMeaning as e:
        raise Unsupported(str(e)) from None
    return em.lines, value.expr


def _element_code(
    plan: ReducePlan, target: Instruction, names: dict[Instruction, str], indent: str, tag: str
) -> tuple[list[str], str]:
    """Statements computing element value `target` from `names` (the parameters' loads and the row
    values known so far), recomputed where each loop needs it, as MIGraphX's lazy `inner`."""
    names = dict(names)
    out: list[str] = []
    for step in plan.needed_for(target):
        statements, names[step.instruction] = _step_code(step, names, f"{tag}v{step.position}_")
        out.extend(indent + s for s in statements)
    return out, names[target]


def _block_reduce_kernel(kernel: _Reduction) -> Kernel:
    """One block per output row (the kept axes); each reduction loops over the row with the block's
    threads and combines across the block; element values are recomputed where each loop needs
    them, as MIGraphX's lazy `inner`."""
    plan, inputs = kernel.plan, kernel.inputs
    lens, axes, row_len = plan.lens, plan.axes, plan.row_length
    local = 64
    while local < 1024 and local < row_len:
        local *= 2
    local = min(local, 256) if row_len <= 4096 else 1024
    row_names: dict[Instruction, str] = {}

    def element_code(target: Instruction, indent: str, tag: str) -> tuple[list[str], str]:
        """Statements computing `target` at row element `r` (loads at offsets `o<k>`)."""
        needed = {target, *(a for s in plan.needed_for(target) for a in s.instruction.args)}
        loads: list[str] = []
        names = dict(row_names)
        for k, p in enumerate(plan.parameters):
            if p in needed:
                names[p] = f"{tag}p{k}"
                loads.append(f"{indent}const {compute_type(p.shape.dtype)} {tag}p{k} = mgx_load(x{k} + o{k});")
        statements, value = _element_code(plan, target, names, indent, tag)
        return loads + statements, value

    def offsets(indent: str) -> list[str]:
        return [
            f"{indent}const long long o{k} = base{k} + {_axes_offset('r', t, axes, lens)};"
            for k, t in enumerate(kernel.tensors)
        ]

    def accumulate(r: Reduction, k: int, fold: Callable[[str], str]) -> list[str]:
        lines = [f"  for (long long r = threadIdx.x; r < {row_len}LL; r += {local}) {{", *offsets("    ")]
        if plan.is_element_value(r.source):
            statements, value = element_code(r.source, "    ", f"e{k}_")
            lines.extend(statements)
        else:
            value = row_names[r.source]
        return [*lines, f"    {fold(value)}", "  }"]

    def combine(k: int, combiner: str) -> str:
        return f"  acc{k} = mgx_block_reduce(acc{k}, {combiner}());"

    body = _row_values(kernel, row_names, accumulate, combine)
    if plan.is_element_value(plan.result):
        body.append(f"  for (long long r = threadIdx.x; r < {row_len}LL; r += {local}) {{")
        body.extend(offsets("    "))
        statements, value = element_code(plan.result, "    ", "f_")
        body.extend(statements)
        body.append(f"    mgx_store(out + o{len(inputs)}, {value});")
        body.append("  }")
    else:
        body.append(f"  if (threadIdx.x == 0) mgx_store(out + base{len(inputs)}, {row_names[plan.result]});")
    symbol, source = _reduce_source(kernel, local, ["  const long long row = blockIdx.x;"], body)
    return Kernel(symbol, source, plan.rows * local, local)


def _row_contiguous(t: Tensor, axes: Sequence[int], lens: Sequence[int]) -> bool:
    """Whether the row (the reduced axes, in order) is packed in `t`: element r at offset r."""
    if t.lens != tuple(lens):
        return False
    expected = 1
    for d in reversed(axes):
        if lens[d] != 1:
            if t.strides[d] != expected:
                return False
            expected *= lens[d]
    return True


def _warp_row_kernel(kernel: _Reduction) -> Kernel | None:
    """One row per 32 lanes, or None where a lane would hold too much of its row. Each lane caches
    its elements of every input (`c<k>[q]`, element `r = (j * 32 + lane) * W + e` at `q = j * W +
    e`); reductions combine their lane's elements, then the 32 lanes by shuffles (every lane gets
    the result, so no shared memory and no block barrier)."""
    plan, inputs, output = kernel.plan, kernel.inputs, kernel.output
    lens, axes, row_len = plan.lens, plan.axes, plan.row_length
    tensors = kernel.tensors
    contiguous = [_row_contiguous(t, axes, lens) for t in tensors]
    packed = [t for t, c in zip(tensors, contiguous) if c]
    width = max(1, 16 // max(t.dtype.itemsize for t in packed)) if packed else 1
    while width > 1 and (
        row_len % width
        or ROW_LANES * width > row_len
        or any(not t.aligned or any(t.strides[d] % width for d in plan.kept if lens[d] != 1) for t in packed)
    ):
        width //= 2
    items = -(-row_len // (ROW_LANES * width))
    per_lane = items * width
    if per_lane > 32 or per_lane * len(plan.parameters) > WARP_ROW_CACHE:
        return None
    ragged = row_len % (ROW_LANES * width) != 0
    row_names: dict[Instruction, str] = {}
    cached = {p: f"c{k}[q]" for k, p in enumerate(plan.parameters)}
    body: list[str] = []

    def element_loop(inner: Callable[[], list[str]]) -> list[str]:
        lines = ["#pragma unroll", f"  for (int j = 0; j < {items}; ++j) {{"]
        lines.append(f"    const long long v = (long long)j * {ROW_LANES} + lane;")
        if ragged:
            lines.append(f"    if (v * {width} >= {row_len}LL) break;")
        lines.extend(["#pragma unroll", f"    for (int e = 0; e < {width}; ++e) {{"])
        lines.append(f"      const int q = j * {width} + e;")
        lines.append(f"      const long long r = v * {width} + e;")
        lines.append("      (void)r;")
        lines.extend(inner())
        lines.extend(["    }", "  }"])
        return lines

    def element_code(target: Instruction, tag: str) -> tuple[list[str], str]:
        return _element_code(plan, target, {**row_names, **cached}, "      ", tag)

    # the row's inputs, once
    for k, t in enumerate(inputs):
        ct, st = compute_type(t.dtype), storage_type(t.dtype)
        body.append(f"  {ct} c{k}[{per_lane}];")
        body.extend(["#pragma unroll", f"  for (int q = 0; q < {per_lane}; ++q) c{k}[q] = ({ct})0;"])
        if contiguous[k] and width > 1:
            body.extend(["#pragma unroll", f"  for (int j = 0; j < {items}; ++j) {{"])
            body.append(f"    const long long v = (long long)j * {ROW_LANES} + lane;")
            if ragged:
                body.append(f"    if (v * {width} >= {row_len}LL) break;")
            body.append(
                f"    const mgx_vec<{st}, {width}> w = *(const mgx_vec<{st}, {width}>*)(x{k} + base{k} + v * {width});"
            )
            body.extend(
                ["#pragma unroll", f"    for (int e = 0; e < {width}; ++e) c{k}[j * {width} + e] = mgx_load(&w.v[e]);"]
            )
            body.append("  }")
        else:
            offset = "r" if contiguous[k] else _axes_offset("r", t, axes, lens)
            body.extend(
                element_loop(lambda k=k, offset=offset: [f"      c{k}[q] = mgx_load(x{k} + base{k} + {offset});"])
            )

    def accumulate(r: Reduction, k: int, fold: Callable[[str], str]) -> list[str]:
        def lane_elements() -> list[str]:
            if plan.is_element_value(r.source):
                statements, value = element_code(r.source, f"e{k}_")
            else:
                statements, value = [], row_names[r.source]
            return [*statements, f"      {fold(value)}"]

        return element_loop(lane_elements)

    def combine(k: int, combiner: str) -> str:
        return (
            f"  for (int o = {ROW_LANES // 2}; o > 0; o /= 2) acc{k} = {combiner}()(acc{k}, MGX_SHFL_XOR(acc{k}, o));"
        )

    body.extend(_row_values(kernel, row_names, accumulate, combine))
    result = plan.result
    ost = storage_type(output.dtype)
    out_index = len(inputs)
    if plan.is_element_value(result):
        if contiguous[out_index] and width > 1:
            body.extend(["#pragma unroll", f"  for (int j = 0; j < {items}; ++j) {{"])
            body.append(f"    const long long v = (long long)j * {ROW_LANES} + lane;")
            if ragged:
                body.append(f"    if (v * {width} >= {row_len}LL) break;")
            body.append(f"    mgx_vec<{ost}, {width}> w;")
            body.extend(
                ["#pragma unroll", f"    for (int e = 0; e < {width}; ++e) {{", f"      const int q = j * {width} + e;"]
            )
            statements, value = element_code(result, "f_")
            body.extend(statements)
            body.extend([f"      mgx_store(&w.v[e], {value});", "    }"])
            body.append(f"    *(mgx_vec<{ost}, {width}>*)(out + base{out_index} + v * {width}) = w;")
            body.append("  }")
        else:
            offset = "r" if contiguous[out_index] else _axes_offset("r", output, axes, lens)

            def store() -> list[str]:
                statements, value = element_code(result, "f_")
                return [*statements, f"      mgx_store(out + base{out_index} + {offset}, {value});"]

            body.extend(element_loop(store))
    else:
        body.append(f"  if (lane == 0) mgx_store(out + base{out_index}, {row_names[result]});")
    rows_per_block = WARP_ROW_LOCAL // ROW_LANES
    row = [
        f"  const long long row = (long long)blockIdx.x * {rows_per_block} + threadIdx.x / {ROW_LANES};",
        f"  if (row >= {plan.rows}LL) return;",
        f"  const int lane = threadIdx.x % {ROW_LANES};",
    ]
    symbol, source = _reduce_source(kernel, WARP_ROW_LOCAL, row, body)
    blocks = -(-plan.rows // rows_per_block)
    return Kernel(symbol, source, blocks * WARP_ROW_LOCAL, WARP_ROW_LOCAL)


def _row_values(
    kernel: _Reduction,
    row_names: dict[Instruction, str],
    accumulate: Callable[[Reduction, int, Callable[[str], str]], list[str]],
    combine: Callable[[int, str], str],
) -> list[str]:
    """The statements computing the body's row values (one per row), in order, naming each in
    `row_names`: views alias their input, other steps run once per row, and each reduction starts
    its accumulator `acc<k>` at its identity, folds the row's elements with the lines of
    `accumulate(reduction, k, fold)` (`fold(value)` is the statement folding one element),
    combines across the row's threads with the line `combine(k, combiner)` and becomes `red<k>`
    (divided by the row length for a mean). The two reduction kernels differ only in those two
    callbacks."""
    plan = kernel.plan
    reductions = {r.instruction: r for r in plan.reductions}
    body: list[str] = []
    for step in plan.steps:
        ins = step.instruction
        if step.per_element:
            continue
        k = step.position
        r = reductions.get(ins)
        if r is None:
            statements, row_names[ins] = _step_code(step, row_names, f"w{k}_")
            body.extend("  " + s for s in statements)
            continue
        combiner = COMBINERS[r.reducer.combine]
        acc = compute_type(r.accumulator)

        def fold(
            value: str, k: int = k, combiner: str = combiner, acc: str = acc, truthy: bool = r.reducer.truthy
        ) -> str:
            element = f"(({value}) != 0)" if truthy else f"({value})"
            return f"acc{k} = {combiner}()(acc{k}, ({acc}){element});"

        body.append(f"  {acc} acc{k} = {literal_expr(r.identity, r.accumulator)};")
        body.extend(accumulate(r, k, fold))
        body.append(combine(k, combiner))
        c = compute_type(r.result)
        total = f"(acc{k} / ({acc}){plan.row_length})" if r.reducer.mean else f"acc{k}"
        body.append(f"  const {c} red{k} = (({c}){total});")
        row_names[ins] = f"red{k}"
    return body


def _reduce_source(kernel: _Reduction, local: int, row: list[str], body: list[str]) -> tuple[str, str]:
    """(symbol, source) of a reduction kernel: its signature (inputs `x<k>`, `out`), the lines
    `row` that find the thread's row, each tensor's row start `base<k>`, then `body`."""
    plan = kernel.plan
    symbol = kernel_name(plan.module)
    args = [f"const {storage_type(t.dtype)}* __restrict__ x{k}" for k, t in enumerate(kernel.inputs)]
    args.append(f"{storage_type(kernel.output.dtype)}* __restrict__ out")
    lines = [PRELUDE, f'extern "C" __global__ void __launch_bounds__({local}) {symbol}({", ".join(args)}) {{', *row]
    for k, t in enumerate(kernel.tensors):
        lines.append(f"  const long long base{k} = {_axes_offset('row', t, plan.kept, plan.lens)};")
    lines.extend(body)
    lines.append("}")
    return symbol, "\n".join(lines) + "\n"


def _axes_offset(index: str, tensor: Tensor, axes: Sequence[int], lens: Sequence[int]) -> str:
    """Offset in `tensor` of linear index `index` over the given axes of `lens` (standard order
    among them); axes where `tensor` has length 1 (a reduced output) contribute nothing."""
    terms = []
    divisor = 1
    for d in reversed(axes):
        if tensor.lens[d] != 1 and tensor.strides[d] != 0:
            part = f"({index} / {divisor}LL)" if divisor != 1 else index
            if d != axes[0]:
                part = f"({part} % {lens[d]}LL)"
            terms.append(f"{part} * {tensor.strides[d]}LL")
        divisor *= lens[d]
    return " + ".join(terms) or "0"


# -- data movement and windows: one thread per output element, by its coordinates ----------------


def _coordinates(lens: Sequence[int], strides: Sequence[int]) -> list[str]:
    """Statements splitting linear index `i` into coordinates `c0..c{r-1}` over `lens`, walking the
    axes in the memory order of `strides` (outermost first), so that consecutive threads write
    consecutive elements of a channels-last output too. Below 2^32 elements the divisions are
    32-bit (a multiply-high each, where 64-bit ones take a dozen instructions)."""
    order = sorted(range(len(lens)), key=lambda d: (-strides[d], -lens[d]))
    narrow = math.prod(lens) < 2**32
    lines = ["  unsigned rest = (unsigned)i;" if narrow else "  long long rest = i;"]
    suffix = "u" if narrow else "LL"
    for position, d in reversed(list(enumerate(order))):
        if position == 0:
            lines.append(f"  const long long c{d} = rest;")
        else:
            lines.append(f"  const long long c{d} = rest % {lens[d]}{suffix}; rest /= {lens[d]}{suffix};")
    return lines


def _at(tensor: Tensor, coords: Sequence[str]) -> str:
    terms = [f"({c}) * {s}LL" for c, n, s in zip(coords, tensor.lens, tensor.strides) if n != 1 and s != 0]
    return " + ".join(terms) or "0"


def indexed_kernel(
    symbol: str, inputs: Sequence[Tensor], output: Tensor, body: list[str], value: str, vector: str = ""
) -> Kernel:
    """One thread per output element with coordinates `c<d>`; `body` computes `value`. With a
    `vector` type, each element of `output`'s lens is one such vector of its storage (stored as it
    is, no conversion)."""
    params = [f"const {storage_type(t.dtype)}* __restrict__ x{k}" for k, t in enumerate(inputs)]
    params.append(f"{storage_type(output.dtype)}* __restrict__ out")
    total = output.elements
    lines = [PRELUDE, f'extern "C" __global__ void __launch_bounds__({LOCAL}) {symbol}({", ".join(params)}) {{']
    lines.append(f"  const long long i = (long long)blockIdx.x * {LOCAL} + threadIdx.x;")
    lines.append(f"  if (i >= {total}LL) return;")
    lines.extend(_coordinates(output.lens, output.strides))
    lines.extend(body)
    at = _at(output, [f"c{d}" for d in range(len(output.lens))])
    if vector:
        lines.append(f"  *({vector}*)(out + {at}) = {value};")
    else:
        lines.append(f"  mgx_store(out + {at}, {value});")
    lines.append("}")
    blocks = max(1, -(-total // LOCAL))
    return Kernel(symbol, "\n".join(lines) + "\n", blocks * LOCAL, LOCAL)


def _concat_vector_width(inputs: Sequence[Tensor], axis: int, output: Tensor) -> int:
    """Elements each thread of a concat moves as one 16-byte (or narrower) vector: where the concat
    axis is contiguous in every tensor (channels of channels-last tensors) and every length along it
    and every other stride is a multiple of the width, from aligned pointers; else 1."""
    tensors = [*inputs, output]
    if any(t.strides[axis] != 1 or not t.aligned or t.dtype != output.dtype for t in tensors):
        return 1
    width = max(1, 16 // output.dtype.itemsize)

    def fits(t: Tensor) -> bool:
        others = (s for d, (n, s) in enumerate(zip(t.lens, t.strides)) if d != axis and n != 1)
        return t.lens[axis] % width == 0 and all(s % width == 0 for s in others)

    while width > 1 and not all(fits(t) for t in tensors):
        width //= 2
    return width


def concat_kernel(inputs: Sequence[Tensor], axis: int, output: Tensor) -> Kernel:
    coords = [f"c{d}" for d in range(len(output.lens))]
    width = _concat_vector_width(inputs, axis, output)
    if width > 1:  # the concat axis counted in vectors: lengths divided, its element stride the width

        def in_vectors(t: Tensor) -> Tensor:
            lens, strides = list(t.lens), list(t.strides)
            lens[axis], strides[axis] = lens[axis] // width, width
            return Tensor(t.dtype, tuple(lens), tuple(strides), t.aligned)

        inputs, output = [in_vectors(t) for t in inputs], in_vectors(output)
        vector = f"mgx_vec<{storage_type(output.dtype)}, {width}>"
        body = [f"  {vector} v = {{}};", f"  long long k = c{axis};"]
        load = "*(const " + vector + "*)(x{k} + {at})"
    else:
        ct = compute_type(output.dtype)
        vector = ""
        body = [f"  {ct} v = ({ct})0;", f"  long long k = c{axis};"]
        load = "mgx_load(x{k} + {at})"
    for k, t in enumerate(inputs):
        local = list(coords)
        local[axis] = "k"
        body.append(f"  if (k >= 0 && k < {t.lens[axis]}LL) v = {load.format(k=k, at=_at(t, local))};")
        body.append(f"  k -= {t.lens[axis]}LL;")
    return indexed_kernel("concat_kernel", inputs, output, body, "v", vector)


def gather_kernel(data: Tensor, indices: Tensor, axis: int, output: Tensor) -> Kernel:
    rank = len(data.lens)
    index_rank = len(output.lens) - (rank - 1)
    coords = [f"c{d}" for d in range(len(output.lens))]
    index_coords = coords[axis : axis + index_rank]
    index_at = _at(indices, index_coords) if index_rank else "0"
    data_coords = [*coords[:axis], "k", *coords[axis + index_rank :]]
    body = [
        f"  long long k = (long long)mgx_load(x1 + {index_at});",
        f"  if (k < 0) k += {data.lens[axis]}LL;",
    ]
    return indexed_kernel("gather_kernel", [data, indices], output, body, f"mgx_load(x0 + {_at(data, data_coords)})")


def pad_kernel(source: Tensor, pads: Sequence[int], value: float, output: Tensor) -> Kernel:
    rank = len(source.lens)
    ct = compute_type(output.dtype)
    body = []
    inside = []
    coords = []
    for d in range(rank):
        body.append(f"  const long long p{d} = c{d} - {pads[d]}LL;")
        inside.append(f"p{d} >= 0 && p{d} < {source.lens[d]}LL")
        coords.append(f"p{d}")
    fill = literal_expr(np.float64(value), output.dtype)
    body.append(f"  const {ct} v = ({' && '.join(inside) or 'true'}) ? mgx_load(x0 + {_at(source, coords)}) : {fill};")
    return indexed_kernel("pad_kernel", [source], output, body, "v")


def pooling_kernel(op: Operation, source: Tensor, output: Tensor) -> Kernel:
    """max, average (with or without the padding in the count) and lp-norm pooling windows."""
    k = len(source.lens) - 2
    mode = op["mode"]
    if op["dyn_global"]:
        lengths, stride, dilation, begin = list(source.lens[2:]), [1] * k, [1] * k, [0] * k
        end = [0] * k
    else:
        lengths, stride, dilation = op["lengths"], op["stride"], op["dilations"]
        pads = op["padding"]
        begin = list(pads[:k]) if len(pads) == 2 * k else list(pads)
        end = list(pads[k:]) if len(pads) == 2 * k else list(pads)
    acc = "double" if source.dtype is DType.double else "float"
    body = [f"  {acc} acc = {'-(' + acc + ')(1.0 / 0.0)' if mode == 1 else '0'};", "  long long count = 0;"]
    for d in range(k):
        body.append(f"  for (long long w{d} = 0; w{d} < {lengths[d]}LL; ++w{d}) {{")
        body.append(f"  const long long q{d} = c{d + 2} * {stride[d]}LL - {begin[d]}LL + w{d} * {dilation[d]}LL;")
    inside = " && ".join(f"q{d} >= 0 && q{d} < {source.lens[d + 2]}LL" for d in range(k))
    padded = " && ".join(f"q{d} >= -{begin[d]}LL && q{d} < {source.lens[d + 2] + end[d]}LL" for d in range(k))
    value = f"({acc})mgx_load(x0 + {_at(source, ['c0', 'c1', *[f'q{d}' for d in range(k)]])})"
    if mode == 1:
        body.append(f"  if ({inside}) {{ const {acc} x = {value}; if (x > acc || x != x) acc = x; }}")
    elif mode == 2:
        body.append(f"  if ({inside}) acc += pow(fabs({value}), ({acc}){op['lp_order']});")
    else:
        count_test = padded if op["count_include_pad"] else inside
        body.append(f"  if ({inside}) acc += {value};")
        body.append(f"  if ({count_test}) ++count;")
    body.extend("  }" for _ in range(k))
    if mode == 2:
        body.append(f"  acc = pow(acc, ({acc})1 / ({acc}){op['lp_order']});")
    elif mode != 1:
        body.append(f"  acc = acc / ({acc})(count > 0 ? count : 1);")
    return indexed_kernel("pooling_kernel", [source], output, body, "acc")


def convolution_kernel(op: Operation, x: Tensor, w: Tensor, output: Tensor) -> Kernel:
    """A direct convolution, one thread per output element (n, k, spatial...): the fallback where
    the platform has no DNN library (HIP here), any layout, groups, padding, stride and dilation."""
    if op["padding_mode"] != 0:
        raise Unsupported("generated convolutions: explicit padding")
    k = len(x.lens) - 2
    pads = list(op["padding"])
    begin = pads[:k] if len(pads) == 2 * k else pads
    stride, dilation, group = op["stride"], op["dilation"], op["group"]
    in_per_group, out_per_group = x.lens[1] // group, output.lens[1] // group
    acc = accumulator_type(output.dtype)  # integers (quant_convolution) in 64 bits, as the reference
    body = [f"  {acc} acc = 0;", f"  const long long g = c1 / {out_per_group}LL;"]
    body.append(f"  for (long long ci = 0; ci < {in_per_group}LL; ++ci) {{")
    body.append(f"  const long long ch = g * {in_per_group}LL + ci;")
    for d in range(k):
        body.append(f"  for (long long w{d} = 0; w{d} < {w.lens[d + 2]}LL; ++w{d}) {{")
        body.append(f"  const long long q{d} = c{d + 2} * {stride[d]}LL - {begin[d]}LL + w{d} * {dilation[d]}LL;")
    inside = " && ".join(f"q{d} >= 0 && q{d} < {x.lens[d + 2]}LL" for d in range(k)) or "true"
    x_at = _at(x, ["c0", "ch", *[f"q{d}" for d in range(k)]])
    w_at = _at(w, ["c1", "ci", *[f"w{d}" for d in range(k)]])
    body.append(f"  if ({inside}) acc += ({acc})mgx_load(x0 + {x_at}) * ({acc})mgx_load(x1 + {w_at});")
    body.extend("  }" for _ in range(k + 1))
    return indexed_kernel("convolution_kernel", [x, w], output, body, "acc")
