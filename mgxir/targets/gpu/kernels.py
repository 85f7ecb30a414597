"""Kernel sources, generated per instruction as MIGraphX's GPU target generates them: one C++ source
per kernel, specialised on its arguments' shapes, that compiles as CUDA (NVRTC) and as HIP (hiprtc).

The source needs no headers: half and bf16 are stored as 16-bit words and computed in float
(`mgx_load`/`mgx_store` convert), warp shuffles and the warp size come from one `#if` on the
compiler. Every kernel takes its inputs' pointers, then the output's, and is launched with
`global` threads in blocks of `local` (MIGraphX's code_object fields).

A pointwise module's body becomes one expression per instruction from `POINT_OPS`, a table keyed by
the operator definition; an operator the table lacks leaves its instruction to the host.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.shape import Shape


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
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x)); p->bits = h;
#endif
}
__device__ inline void mgx_store(mgx_bf16* p, float x) {
  unsigned int u = __float_as_uint(x);
  p->bits = (x != x) ? (unsigned short)0x7fc0 : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
template <class T, class U> __device__ inline void mgx_store(T* p, U x) { *p = (T)x; }
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


# -- pointwise expressions -----------------------------------------------------------------------

Expr = Callable[[Operation, list[str], str], str]  # (op, argument expressions, result compute type)


def _f(template: str) -> Expr:
    return lambda op, a, t: template.format(*a, T=t)


def _float_or_int(float_template: str, int_template: str) -> Expr:
    return lambda op, a, t: (float_template if t in ("float", "double") else int_template).format(*a, T=t)


def _convert(op: Operation, a: list[str], t: str) -> str:
    if t == "bool":
        return f"({a[0]} > 0)"
    return f"(({t})({a[0]}))"


def _quantize(op: Operation, a: list[str], t: str) -> str:
    q = f"(float)({a[0]}) / (float)({a[1]})"
    if t not in ("float", "double"):  # integer results are rounded; a float one (MX types) is not
        q = f"rint({q})"
    q += f" + (float)({a[2]})" if len(a) == 3 else ""
    return f"(({t})({q}))"


POINT_OPS: dict[str, Expr] = {
    "abs": _float_or_int("fabs({0})", "({0} < 0 ? -{0} : {0})"),
    "acos": _f("acos({0})"),
    "acosh": _f("acosh({0})"),
    "asin": _f("asin({0})"),
    "asinh": _f("asinh({0})"),
    "atan": _f("atan({0})"),
    "atanh": _f("atanh({0})"),
    "ceil": _f("ceil({0})"),
    "cos": _f("cos({0})"),
    "cosh": _f("cosh({0})"),
    "erf": _f("erf({0})"),
    "exp": _f("exp({0})"),
    "floor": _f("floor({0})"),
    "log": _f("log({0})"),
    "log2": _f("log2({0})"),
    "nearbyint": _f("rint({0})"),
    "neg": _f("(-{0})"),
    "not": _f("(({T})({0} == 0))"),
    "recip": _f("(({T})1 / {0})"),
    "relu": _f("({0} > ({T})0 ? {0} : ({T})0)"),
    "rsqrt": _f("rsqrt({0})"),
    "sigmoid": _f("(({T})1 / (({T})1 + exp(-{0})))"),
    "sign": _f("(({T})(({0} > 0) - ({0} < 0)))"),
    "sin": _f("sin({0})"),
    "sinh": _f("sinh({0})"),
    "sqrt": _f("sqrt({0})"),
    "tan": _f("tan({0})"),
    "tanh": _f("tanh({0})"),
    "isinf": _f("isinf({0})"),
    "isnan": _f("isnan({0})"),
    "identity": _f("{0}"),
    "layout": _f("{0}"),
    "add": _f("({0} + {1})"),
    "sub": _f("({0} - {1})"),
    "mul": _f("({0} * {1})"),
    "div": _f("({0} / {1})"),
    "pow": _f("(({T})pow({0}, {1}))"),
    "max": _float_or_int("fmax({0}, {1})", "({0} > {1} ? {0} : {1})"),
    "min": _float_or_int("fmin({0}, {1})", "({0} < {1} ? {0} : {1})"),
    "mod": _float_or_int("fmod(fmod({0}, {1}) + {1}, {1})", "((({0} % {1}) + {1}) % {1})"),
    "fmod": _float_or_int("fmod({0}, {1})", "({0} % {1})"),
    "sqdiff": _f("(({0} - {1}) * ({0} - {1}))"),
    "prelu": _f("({0} < 0 ? {0} * {1} : {0})"),
    "equal": _f("(({T})({0} == {1}))"),
    "greater": _f("(({T})({0} > {1}))"),
    "less": _f("(({T})({0} < {1}))"),
    "logical_and": _f("(({T})(({0} != 0) && ({1} != 0)))"),
    "logical_or": _f("(({T})(({0} != 0) || ({1} != 0)))"),
    "logical_xor": _f("(({T})(({0} != 0) != ({1} != 0)))"),
    "bitwise_and": _f("({0} & {1})"),
    "clip": _float_or_int("fmin(fmax({0}, {1}), {2})", "({0} < {1} ? {1} : ({0} > {2} ? {2} : {0}))"),
    "where": _f("({0} ? {1} : {2})"),
    "leaky_relu": lambda op, a, t: f"({a[0]} < 0 ? {a[0]} * ({t}){float(op['alpha'])!r} : {a[0]})",
    "elu": lambda op, a, t: f"({a[0]} < 0 ? ({t}){float(op['alpha'])!r} * expm1({a[0]}) : {a[0]})",
    "convert": _convert,
    "dequantizelinear": lambda op, a, t: (
        f"(({t})(((float)({a[0]}){' - (float)(' + a[2] + ')' if len(a) == 3 else ''}) * (float)({a[1]})))"
    ),
    "quantizelinear": _quantize,
}

# integer results of quantizelinear saturate to their type's range
_SATURATED = ("quantizelinear",)


def literal_expr(value: np.generic, t: DType) -> str:
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
    return f"(({c}){int(value)}{'ULL' if t.is_unsigned else 'LL'})"


def pointwise_body(module: Module, args: Sequence[str], prefix: str) -> tuple[list[str], str]:
    """Statements computing a pointwise module's result from its parameters' expressions (bound by
    parameter name order, as MIGraphX binds them); returns (statements, result expression)."""
    params = sorted((i for i in module if i.is_param), key=lambda p: p.param_name)
    if len(params) != len(args):
        raise Unsupported(f"module '{module.name}' has {len(params)} parameters for {len(args)} inputs")
    names: dict[Instruction, str] = dict(zip(params, args))
    lines: list[str] = []
    result = ""
    for index, ins in enumerate(module):
        if ins.is_param:
            continue
        if ins.is_return:
            if len(ins.args) != 1:
                raise Unsupported(f"module '{module.name}' returns {len(ins.args)} values")
            result = names[ins.args[0]]
            break
        t = ins.shape.dtype
        c = compute_type(t)
        if ins.is_literal:
            data = ins.literal.data
            if data is None or data.size != 1:
                raise Unsupported("pointwise literals must be scalars")
            names[ins] = literal_expr(data.reshape(-1)[0], t)
            continue
        expr = POINT_OPS.get(ins.op.defn.name)
        if expr is None or ins.module_args:
            raise Unsupported(f"no GPU expression for '{ins.op.defn.name}'")
        text = expr(ins.op, [names[a] for a in ins.args], c)
        if ins.op.defn.name in _SATURATED and t.is_integral:
            info = np.iinfo(t.numpy)
            text = f"(({c})fmin(fmax((double){text}, {float(info.min)!r}), {float(info.max)!r}))"
        var = f"{prefix}{index}"
        lines.append(f"const {c} {var} = {text};")
        names[ins] = var
    return lines, result


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


# -- reductions ----------------------------------------------------------------------------------

# reduce op -> (combiner, initial value as a function of the accumulator type, divide by count)
REDUCERS: dict[str, tuple[str, Callable[[str], str], bool]] = {
    "reduce_sum": ("mgx_op_sum", lambda t: f"(({t})0)", False),
    "reduce_mean": ("mgx_op_sum", lambda t: f"(({t})0)", True),
    "reduce_prod": ("mgx_op_prod", lambda t: f"(({t})1)", False),
    "reduce_max": (
        "mgx_op_max",
        lambda t: f"(-({t})(1.0 / 0.0))" if t in ("float", "double") else f"(({t})0x8000000000000000ULL)",
        False,
    ),
    "reduce_min": (
        "mgx_op_min",
        lambda t: f"(({t})(1.0 / 0.0))" if t in ("float", "double") else f"(({t})0x7fffffffffffffffLL)",
        False,
    ),
}
_VIEWS_OF_ROW_VALUES = ("multibroadcast", "broadcast")


ROW_LANES = 32  # lanes per row in warp-row reductions: a CUDA warp, half an AMD wavefront
WARP_ROW_LOCAL = 256
WARP_ROW_CACHE = 128  # cached row elements per lane, over all parameters (registers)


def reduce_kernel(module: Module, axes: Sequence[int], inputs: Sequence[Tensor], output: Tensor) -> Kernel:
    """A fused_reduce module. Rows up to 32 elements per lane run one row per 32 lanes, the row's
    inputs loaded once (vectors where the row is contiguous) into registers and every reduction
    combined with shuffles alone; longer rows run one block per row (see `block_reduce_kernel`)."""
    plan = _classify_reduce(module, axes, inputs, output)
    return _warp_row_kernel(plan) or _block_reduce_kernel(plan)


@dataclasses.dataclass
class _ReducePlan:
    module: Module
    inputs: Sequence[Tensor]
    output: Tensor
    params: list[Instruction]
    lens: tuple[int, ...]
    axes: list[int]
    kept: list[int]
    rows: int
    row_len: int
    per_element: set[Instruction]
    order: list[Instruction]
    result: Instruction
    index_of: dict[Instruction, int]


def _classify_reduce(module: Module, axes: Sequence[int], inputs: Sequence[Tensor], output: Tensor) -> _ReducePlan:
    params = sorted((i for i in module if i.is_param), key=lambda p: p.param_name)
    if len(params) != len(inputs):
        raise Unsupported("fused_reduce parameters and inputs differ")
    lens = inputs[0].lens
    rank = len(lens)
    axes = sorted(a % rank for a in axes)
    kept = [d for d in range(rank) if d not in axes]
    rows = math.prod(lens[d] for d in kept)
    row_len = math.prod(lens[d] for d in axes)
    if any(t.lens != lens for t in inputs) or output.lens not in (tuple(lens), _reduced(lens, axes)):
        raise Unsupported("fused_reduce inputs and output must share their axes")
    # classify the body: row values (one per row) and element values (one per row element)
    per_element: set[Instruction] = set(params)
    order = [i for i in module if not (i.is_param or i.is_return)]
    ret = module.return_instruction
    if ret is None or len(ret.args) != 1:
        raise Unsupported("fused_reduce must return one value")
    for ins in order:
        name = ins.op.defn.name
        if ins.is_literal:
            if ins.literal.data is None or ins.literal.data.size != 1:
                raise Unsupported("fused_reduce literals must be scalars")
        elif name in REDUCERS:
            if sorted(a % rank for a in ins.op["axes"]) != axes:
                raise Unsupported("a reduction over other axes than the fused_reduce's")
        elif name in _VIEWS_OF_ROW_VALUES:
            if ins.args[0] in per_element:
                raise Unsupported("a broadcast of an element value")
        elif name == "pointwise":
            if any(a in per_element for a in ins.args):
                per_element.add(ins)
        else:
            raise Unsupported(f"'{name}' inside fused_reduce")
    index_of = {ins: k for k, ins in enumerate(module)}
    return _ReducePlan(
        module,
        inputs,
        output,
        params,
        tuple(lens),
        axes,
        kept,
        rows,
        row_len,
        per_element,
        order,
        ret.args[0],
        index_of,
    )


def _block_reduce_kernel(plan: _ReducePlan) -> Kernel:
    """One block per output row (the kept axes); each reduction loops over the row with the block's
    threads and combines across the block; values that depend on the position in the row are
    recomputed where each loop needs them, as MIGraphX's lazy `inner`."""
    inputs, output, params = plan.inputs, plan.output, plan.params
    lens, axes, rows, row_len = plan.lens, plan.axes, plan.rows, plan.row_len
    per_element, order, index_of = plan.per_element, plan.order, plan.index_of
    tensors = [*inputs, output]
    local = 64
    while local < 1024 and local < row_len:
        local *= 2
    local = min(local, 256) if row_len <= 4096 else 1024
    body: list[str] = []
    row_names: dict[Instruction, str] = {}
    for ins in order:
        if ins.is_literal:
            row_names[ins] = literal_expr(ins.literal.data.reshape(-1)[0], ins.shape.dtype)

    def element_code(target: Instruction, indent: str, tag: str) -> tuple[list[str], str]:
        """Statements computing `target` at row element `r` (loads at offsets `o<k>`)."""
        names = dict(row_names)
        out: list[str] = []
        needed = _closure(target, per_element)
        for k, p in enumerate(params):
            if p in needed:
                names[p] = f"{tag}p{k}"
                out.append(f"{indent}const {compute_type(p.shape.dtype)} {tag}p{k} = mgx_load(x{k} + o{k});")
        for ins in order:
            if ins not in needed or ins.is_param:
                continue
            statements, result = pointwise_body(
                ins.module_args[0], [names[a] for a in ins.args], f"{tag}v{index_of[ins]}_"
            )
            out.extend(indent + s for s in statements)
            names[ins] = result
        return out, names[target]

    def offsets(indent: str) -> list[str]:
        return [
            f"{indent}const long long o{k} = base{k} + {_axes_offset('r', t, axes, lens)};"
            for k, t in enumerate(tensors)
        ]

    def accumulate(source: Instruction, k: int, acc: str, combiner: str) -> list[str]:
        lines = [f"  for (long long r = threadIdx.x; r < {row_len}LL; r += {local}) {{", *offsets("    ")]
        if source in per_element:
            statements, value = element_code(source, "    ", f"e{k}_")
            lines.extend(statements)
        else:
            value = row_names[source]
        return [*lines, f"    acc{k} = {combiner}()(acc{k}, ({acc})({value}));", "  }"]

    def combine(k: int, combiner: str) -> str:
        return f"  acc{k} = mgx_block_reduce(acc{k}, {combiner}());"

    body.extend(_row_values(plan, row_names, accumulate, combine))
    result = plan.result
    if result in per_element:
        body.append(f"  for (long long r = threadIdx.x; r < {row_len}LL; r += {local}) {{")
        body.extend(offsets("    "))
        statements, value = element_code(result, "    ", "f_")
        body.extend(statements)
        body.append(f"    mgx_store(out + o{len(inputs)}, {value});")
        body.append("  }")
    else:
        body.append(f"  if (threadIdx.x == 0) mgx_store(out + base{len(inputs)}, {row_names[result]});")
    symbol, source = _reduce_source(plan, local, ["  const long long row = blockIdx.x;"], body)
    return Kernel(symbol, source, rows * local, local)


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


def _warp_row_kernel(plan: _ReducePlan) -> Kernel | None:
    """One row per 32 lanes, or None where a lane would hold too much of its row. Each lane caches
    its elements of every input (`c<k>[q]`, element `r = (j * 32 + lane) * W + e` at `q = j * W +
    e`); reductions combine their lane's elements, then the 32 lanes by shuffles (every lane gets
    the result, so no shared memory and no block barrier)."""
    inputs, output, params, lens, axes = plan.inputs, plan.output, plan.params, plan.lens, plan.axes
    row_len, per_element, order, index_of = plan.row_len, plan.per_element, plan.order, plan.index_of
    tensors = [*inputs, output]
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
    if per_lane > 32 or per_lane * len(params) > WARP_ROW_CACHE:
        return None
    ragged = row_len % (ROW_LANES * width) != 0
    row_names: dict[Instruction, str] = {
        ins: literal_expr(ins.literal.data.reshape(-1)[0], ins.shape.dtype) for ins in order if ins.is_literal
    }
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
        names = dict(row_names)
        out: list[str] = []
        needed = _closure(target, per_element)
        for k, p in enumerate(params):
            names[p] = f"c{k}[q]"
        for ins in order:
            if ins not in needed or ins.is_param:
                continue
            statements, result = pointwise_body(
                ins.module_args[0], [names[a] for a in ins.args], f"{tag}v{index_of[ins]}_"
            )
            out.extend("      " + s for s in statements)
            names[ins] = result
        return out, names[target]

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

    def accumulate(source: Instruction, k: int, acc: str, combiner: str) -> list[str]:
        def lane_elements() -> list[str]:
            if source in per_element:
                statements, value = element_code(source, f"e{k}_")
            else:
                statements, value = [], row_names[source]
            return [*statements, f"      acc{k} = {combiner}()(acc{k}, ({acc})({value}));"]

        return element_loop(lane_elements)

    def combine(k: int, combiner: str) -> str:
        return (
            f"  for (int o = {ROW_LANES // 2}; o > 0; o /= 2) acc{k} = {combiner}()(acc{k}, MGX_SHFL_XOR(acc{k}, o));"
        )

    body.extend(_row_values(plan, row_names, accumulate, combine))
    result = plan.result
    ost = storage_type(output.dtype)
    out_index = len(inputs)
    if result in per_element:
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
    symbol, source = _reduce_source(plan, WARP_ROW_LOCAL, row, body)
    blocks = -(-plan.rows // rows_per_block)
    return Kernel(symbol, source, blocks * WARP_ROW_LOCAL, WARP_ROW_LOCAL)


def _row_values(
    plan: _ReducePlan,
    row_names: dict[Instruction, str],
    accumulate: Callable[[Instruction, int, str, str], list[str]],
    combine: Callable[[int, str], str],
) -> list[str]:
    """The statements computing the body's row values (one per row), in order, naming each in
    `row_names`: broadcasts alias their input, pointwise modules of row values run once per row,
    and each reduction starts its accumulator `acc<k>`, adds the row's elements with the lines of
    `accumulate(source, k, accumulator type, combiner)`, combines across the row's threads with
    the line `combine(k, combiner)` and becomes `red<k>` (divided by the row length for a mean).
    The two reduction kernels differ only in those two callbacks."""
    body: list[str] = []
    for ins in plan.order:
        name = ins.op.defn.name
        if name in _VIEWS_OF_ROW_VALUES:
            row_names[ins] = row_names[ins.args[0]]
        elif name == "pointwise" and ins not in plan.per_element:
            statements, result = pointwise_body(
                ins.module_args[0], [row_names[a] for a in ins.args], f"w{plan.index_of[ins]}_"
            )
            body.extend("  " + s for s in statements)
            row_names[ins] = result
        elif name in REDUCERS:
            combiner, initial, mean = REDUCERS[name]
            acc = accumulator_type(ins.shape.dtype)
            k = plan.index_of[ins]
            body.append(f"  {acc} acc{k} = {initial(acc)};")
            body.extend(accumulate(ins.args[0], k, acc, combiner))
            body.append(combine(k, combiner))
            c = compute_type(ins.shape.dtype)
            result = f"(({c})acc{k} / ({c}){plan.row_len})" if mean else f"(({c})acc{k})"
            body.append(f"  const {c} red{k} = {result};")
            row_names[ins] = f"red{k}"
    return body


def _reduce_source(plan: _ReducePlan, local: int, row: list[str], body: list[str]) -> tuple[str, str]:
    """(symbol, source) of a reduction kernel: its signature (inputs `x<k>`, `out`), the lines
    `row` that find the thread's row, each tensor's row start `base<k>`, then `body`."""
    symbol = kernel_name(plan.module)
    args = [f"const {storage_type(t.dtype)}* __restrict__ x{k}" for k, t in enumerate(plan.inputs)]
    args.append(f"{storage_type(plan.output.dtype)}* __restrict__ out")
    lines = [PRELUDE, f'extern "C" __global__ void __launch_bounds__({local}) {symbol}({", ".join(args)}) {{', *row]
    for k, t in enumerate([*plan.inputs, plan.output]):
        lines.append(f"  const long long base{k} = {_axes_offset('row', t, plan.kept, plan.lens)};")
    lines.extend(body)
    lines.append("}")
    return symbol, "\n".join(lines) + "\n"


def _reduced(lens: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(1 if d in axes else n for d, n in enumerate(lens))


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


def _closure(target: Instruction, per_element: set[Instruction]) -> set[Instruction]:
    seen: set[Instruction] = set()
    stack = [target]
    while stack:
        ins = stack.pop()
        if ins in seen or ins not in per_element:
            continue
        seen.add(ins)
        stack.extend(ins.args)
    return seen


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
