"""The agreement cases, generated from the registry: every elementwise operator with a scalar
meaning x every element type it takes x edge values (NaN, +-inf, +-0, denormals, huge and tiny
magnitudes, integer min/max, zero divisors, out-of-range conversions). A case holds the operands
(one array each, every combination of the edge values for two and three operands) and the
reference result; each back end computes the same arrays and `disagreement` compares."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

import ml_dtypes
import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.operation import Operation, ShapeError
from mgxir.ir.registry import all_ops, lookup
from mgxir.ir.shape import Shape
from mgxir.ops.nn import REDUCTIONS, Reducer
from mgxir.ops.scalar import EXACT_MATH, NoScalarMeaning, emit, has_scalar_meaning
from mgxir.ops.scalar_numpy import NumpyEmitter

# the types the agreement covers: every MIGraphX type a kernel may compute
TYPES = (
    DType.float,
    DType.half,
    DType.double,
    DType.bf16,
    DType.fp8e4m3fn,
    DType.bool,
    DType.int8,
    DType.uint8,
    DType.int16,
    DType.int32,
    DType.int64,
    DType.uint32,
)

_FLOAT_EDGES = (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 0.1, 1e-3, -7.25, 100.0, 1e5, 3.0e9, 1e30)


def edge_values(t: DType) -> np.ndarray:
    """The edge values of type `t`, each once."""
    if t is DType.bool:
        return np.array([False, True])
    if t.is_integral:
        info = np.iinfo(t.numpy)
        values = {0, 1, 2, 3, 7, 100, info.max, info.max - 1, info.min, info.min + 1}
        if not t.is_unsigned:
            values |= {-1, -2, -3, -7, -100}
        return np.array(sorted(values), dtype=t.numpy)
    finfo = ml_dtypes.finfo(t.numpy)
    special = [
        float(finfo.max),
        -float(finfo.max),
        float(finfo.tiny),
        float(finfo.smallest_subnormal),
        -float(finfo.tiny),
    ]
    special += [math.inf, -math.inf, math.nan]
    with np.errstate(all="ignore"):
        values = np.array([*_FLOAT_EDGES, *special], dtype=np.float64).astype(t.numpy)
    # each value once (bit patterns: +0 and -0 differ, NaN is kept once)
    _, first = np.unique(values.view(t.bits_dtype), return_index=True)
    return values[np.sort(first)]


@dataclasses.dataclass
class Case:
    op: Operation
    types: tuple[DType, ...]
    out: DType
    operands: list[np.ndarray]

    @property
    def name(self) -> str:
        return f"{self.op.text}:{','.join(t.name for t in self.types)}"


def _operations(name: str) -> list[tuple[Operation, int]]:
    """The operations of a definition the agreement tries (attributes that change the meaning),
    each with its operand count."""
    defn = lookup(name)
    assert defn is not None
    if name == "convert":
        return [(defn.make(target_type=t), 1) for t in TYPES]
    if name == "leaky_relu":
        return [(defn.make(), 1), (defn.make(alpha=-2.5), 1)]
    if name == "elu":
        return [(defn.make(alpha=0.5), 1)]
    if name == "quantizelinear":
        return [(defn.make(), 2), (defn.make(), 3), (defn.make(out_type=DType.float), 2)]
    if name == "dequantizelinear":
        return [(defn.make(), 2), (defn.make(), 3)]
    if name == "bit_cast":
        return [(defn.make(target_type=t), 1) for t in TYPES]
    if name == "layout":
        return [(defn.make(permutation=(0,)), 1)]
    low, _ = defn.arity
    return [(defn.make(), low)]


def _operand_types(op: Operation, t: DType, count: int) -> list[tuple[DType, ...]]:
    name = op.name
    if name == "where":
        return [(DType.bool, t, t)]
    if name == "quantizelinear":
        if count == 3:
            return [(t, t, z) for z in (DType.int8, DType.uint8, DType.int32)] if t is not DType.bool else []
        return [(t, t)] if t is not DType.bool else []
    if name == "dequantizelinear":
        scales = (DType.float, DType.half, DType.bf16)
        return [(t, scale, t)[:count] for scale in scales] if t.is_integral and t is not DType.bool else []
    return [(t,) * count]


def _operands(types: tuple[DType, ...]) -> list[np.ndarray]:
    """Every combination of the operands' edge values (three operands: a sample of each)."""
    values = [edge_values(t) for t in types]
    if len(values) == 3:
        values = [v[:: max(1, len(v) // 8)] for v in values]
    grids = [np.ascontiguousarray(g.reshape(-1)) for g in np.meshgrid(*values, indexing="ij")]
    return grids


def cases() -> Iterator[Case]:
    for name in sorted(all_ops()):
        defn = lookup(name)
        if defn is None or not defn.pointwise or not has_scalar_meaning(defn):
            continue
        for op, count in _operations(name):
            for t in TYPES:
                for types in _operand_types(op, t, count):
                    shapes = [Shape.make(u, (1,)) for u in types]
                    try:
                        out = defn.shape(op, shapes, []).dtype
                    except ShapeError:
                        continue  # bit_cast between types of different widths
                    yield Case(op, types, out, _operands(types))


def reference(case: Case) -> np.ndarray | None:
    """The reference compute's result, or None where it refuses the types (numpy has no bool
    subtraction, no negative integer powers)."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(case.op.defn.compute(case.op, list(case.operands), [], lambda m, a: []))
    except (TypeError, ValueError, OverflowError):
        return None


def numpy_meaning(case: Case) -> tuple[np.ndarray, set[str]] | None:
    """The scalar meaning on the numpy emitter (None where the operator has none for the types)
    and the math functions it used."""
    em = NumpyEmitter()
    try:
        value = np.asarray(emit(em, case.op, list(case.operands), case.out))
        return np.broadcast_to(value, case.operands[0].shape), em.functions
    except NoScalarMeaning:
        return None


ULP_BOUND = 4  # math functions: within 4 ulp of the reference (CUDA documents 4 for powf)


def disagreement(
    case: Case, got: np.ndarray, want: np.ndarray, inexact: bool, exact_zeros_and_denormals: bool = True
) -> str | None:
    """None where `got` is `want` (bit for bit; NaNs equal; within ULP_BOUND ulp of the result
    type for an `inexact` meaning, or within one where it is an integer), else a line naming the
    first operands that differ. A target without `exact_zeros_and_denormals` (Vulkan without float
    controls) may flush denormal operands and results to zero and give either sign of zero: those
    elements are not compared."""
    got, want = np.asarray(got).reshape(-1), np.asarray(want).reshape(-1)
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"{case.name}: {got.dtype}{got.shape} for {want.dtype}{want.shape}"
    if case.out.is_float:
        g, w = got.astype(np.float64), want.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(w)
        same = (got.view(case.out.bits_dtype) == want.view(case.out.bits_dtype)) | both_nan
        if inexact:
            with np.errstate(invalid="ignore"):
                same |= np.isfinite(g) & np.isfinite(w) & (np.abs(g - w) <= ULP_BOUND * _ulp(want))
        if not exact_zeros_and_denormals:
            same |= _near_zero(want) | np.logical_or.reduce([_near_zero(x) for x in case.operands])
    else:
        same = got == want
        if inexact:  # a function's ulp of error may cross an integer before the truncation
            same |= np.abs(got.astype(np.float64) - want.astype(np.float64)) <= 1
    if same.all():
        return None
    k = int(np.argmin(same))
    operands = ", ".join(repr(x[k].item() if hasattr(x[k], "item") else x[k]) for x in case.operands)
    return f"{case.name}({operands}) = {got[k]!r}, reference {want[k]!r}"


def _near_zero(x: np.ndarray) -> np.ndarray:
    """Zeros and denormals of a float array (all false for other types)."""
    x = np.asarray(x).reshape(-1)
    if x.dtype.kind in "biu":
        return np.zeros(x.shape, bool)
    magnitude = np.abs(x.astype(np.float64))
    return magnitude < float(ml_dtypes.finfo(x.dtype).tiny)


def _ulp(x: np.ndarray) -> np.ndarray:
    """The spacing of the result type at each value (its smallest subnormal at 0)."""
    finfo = ml_dtypes.finfo(x.dtype)
    magnitude = np.abs(x.astype(np.float64))
    exponent = np.floor(np.log2(np.maximum(magnitude, float(finfo.tiny))))
    return np.exp2(exponent - finfo.nmant)


def is_inexact(functions: set[str]) -> bool:
    return bool(functions - EXACT_MATH)


# -- reductions ------------------------------------------------------------------------------------

# row lengths: a size-1 axis, short rows (one row per 32 lanes on the GPU: within 16 lanes, then
# over all 32), a long ragged row (one block per row, the threads meeting at barriers)
ROW_LENGTHS = (1, 8, 100, 3000)


@dataclasses.dataclass
class ReduceCase:
    """A reduce op over axis 1 of `rows` (each row one reduction), of type `dtype`."""

    op: Operation
    dtype: DType
    rows: np.ndarray

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.dtype.name}:{self.rows.shape[1]}"

    @property
    def reducer(self) -> Reducer:
        return REDUCTIONS[self.op.name]


def _reduce_rows(t: DType, n: int) -> np.ndarray:
    """Rows of edge values: for short rows every rotation of the type's edge values (each value at
    each position: NaN anywhere in a row, +-inf and the largest values together, +-0), rows of the
    largest value alone (overflowing sums and products) and of zeros of both signs; for long rows
    the finite edge values tiled, then with NaN (or the type's largest value) last and -inf (or its
    smallest) in the middle."""
    edges = edge_values(t)
    if n == 1:
        return edges.reshape(-1, 1)
    finite = edges[np.isfinite(edges.astype(np.float64))] if t.is_float else edges
    if n > len(edges):
        tiled = np.resize(finite, n)
        last, middle = tiled.copy(), tiled.copy()
        last[-1] = edges[-1] if t.is_float else edges.max()  # NaN is the last float edge value
        middle[n // 2] = -np.inf if t.is_float else edges.min()
        return np.stack([tiled, last, middle]).astype(t.numpy)
    rotations = [np.roll(edges, -k)[:n] for k in range(len(edges))]
    largest = np.full(n, edges.max() if not t.is_float else finite.max(), t.numpy)
    zeros = np.resize(np.array([0, -0.0] if t.is_float else [0]), n).astype(t.numpy)
    negative_zeros = np.full(n, -0.0 if t.is_float else 0, t.numpy)
    return np.stack([*rotations, largest, zeros, negative_zeros]).astype(t.numpy)


def reduce_cases() -> Iterator[ReduceCase]:
    """Every reduce op x every type x every row length."""
    for name in sorted(REDUCTIONS):
        for t in TYPES:
            for n in ROW_LENGTHS:
                yield ReduceCase(lookup(name).make(axes=(1,)), t, _reduce_rows(t, n))


def reduce_reference(case: ReduceCase) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(case.op.defn.compute(case.op, [case.rows], [], lambda m, a: []))


def reduce_disagreement(case: ReduceCase, got: np.ndarray, want: np.ndarray, accumulator: DType) -> str | None:
    """None where `got` is the reference's `want`, else a line naming the first row that differs.
    Integers and the order-free folds (max, min, any, all) are exact (either sign of zero for max
    and min); float sums, means and products, which a kernel folds in `accumulator` in its own
    order where the reference folds in double in row order, are NaN where the reference is and
    else within the rounding error of summation, n eps of the accumulator times the sum of magnitudes
    (the product of magnitudes for products) plus one ulp of the result type; where the partial
    results may leave the accumulator's range in some order, any value that is inf or NaN or within
    that bound is taken."""
    got, want = np.asarray(got).reshape(-1), np.asarray(want).reshape(-1)
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"{case.name}: {got.dtype}{got.shape} for {want.dtype}{want.shape}"
    if not case.dtype.is_float or case.reducer.truthy:
        same = got == want
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        with np.errstate(all="ignore"):
            same = (g == w) | (np.isnan(g) & np.isnan(w))
            if case.reducer.combine in ("sum", "product"):
                x = np.abs(case.rows.astype(np.float64))
                n = case.rows.shape[1]
                if case.reducer.combine == "sum":
                    scale = x.sum(axis=1) / (n if case.reducer.mean else 1)
                    leaves = x.sum(axis=1) > float(ml_dtypes.finfo(accumulator.numpy).max)
                else:
                    scale = np.abs(w)
                    big = np.where(x > 1, x, 1).prod(axis=1)
                    small = np.where((x < 1) & (x > 0), x, 1).prod(axis=1)
                    limits = ml_dtypes.finfo(accumulator.numpy)
                    leaves = (big > float(limits.max)) | (small < float(limits.smallest_subnormal))
                eps = float(ml_dtypes.finfo(accumulator.numpy).eps)
                bound = (n + 1) * eps * scale + _ulp(want)
                close = np.abs(g - w) <= bound
                same |= (np.isfinite(w) & close) | (leaves & ~np.isfinite(g))
    if same.all():
        return None
    k = int(np.argmin(same))
    row = case.rows[k][:12].tolist()
    more = "..." if case.rows.shape[1] > 12 else ""
    return f"{case.name} row {row}{more} = {got[k]!r}, reference {want[k]!r}"
