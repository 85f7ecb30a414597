"""Contractions, convolutions, pooling, reductions and softmax: linalg (named convolutions,
`linalg.generic` contractions and reductions)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, math, tensor

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.mlir.emitter import PARALLEL, REDUCTION, single
from mgxir.translate.mlir.families.indexed import IndexMath, Size, SizeMath
from mgxir.translate.mlir.families.layout import pad_constant
from mgxir.translate.mlir.registry import lowers, sizes
from mgxir.translate.mlir.scalar import CannotLower, Scalars

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]
# combine(scalars, accumulator, element, type) -> new accumulator
Combine = Callable[[Scalars, ir.Value, ir.Value, DType], ir.Value]


def accumulator_type(t: DType) -> DType:
    """Narrow floats accumulate in f32."""
    return DType.float if t.is_float and t.itemsize < 4 else t


def _normalized(axes: Sequence[int], rank: int) -> list[int]:
    return sorted(a + rank if a < 0 else a for a in axes)


# -- reductions -----------------------------------------------------------------------------------


def _lowest(t: DType) -> float | int:
    return -np.inf if t.is_float else (0 if t is DType.bool else int(np.iinfo(t.numpy).min))


def _highest(t: DType) -> float | int:
    return np.inf if t.is_float else (1 if t is DType.bool else int(np.iinfo(t.numpy).max))


# reduce op -> (initial value of the accumulator, combine)
REDUCTIONS: dict[str, tuple[Callable[[DType], float | int | bool], Combine]] = {
    "reduce_sum": (lambda t: 0, lambda s, acc, x, t: s.add(acc, x, t)),
    "reduce_mean": (lambda t: 0, lambda s, acc, x, t: s.add(acc, x, t)),
    "reduce_prod": (lambda t: 1, lambda s, acc, x, t: s.mul(acc, x, t)),
    "reduce_max": (_lowest, lambda s, acc, x, t: s.max(acc, x, t)),
    "reduce_min": (_highest, lambda s, acc, x, t: s.min(acc, x, t)),
    "reduce_any": (lambda t: False, lambda s, acc, x, t: arith.ori(acc, s.truthy(x, t))),
    "reduce_all": (lambda t: True, lambda s, acc, x, t: arith.andi(acc, s.truthy(x, t))),
}
LOGICAL = frozenset({"reduce_any", "reduce_all"})


def reduce(
    lowering: Lowering,
    value: ir.Value,
    t: DType,
    lens: Sequence[int | ir.Value],
    axes: Sequence[int],
    acc_t: DType,
    initial: float | int | bool,
    combine: Combine,
) -> ir.Value:
    """A `linalg.generic` reduction of `axes` (dropped from the result) into type `acc_t`; `combine`
    gets each element converted to `acc_t` (except for the logical reductions, which take it as is)."""
    e, s = lowering.emitter, lowering.scalars
    rank = len(lens)
    kept = [d for d in range(rank) if d not in axes]
    init = e.filled(acc_t, [lens[d] for d in kept], initial)
    iterators = [REDUCTION if d in axes else PARALLEL for d in range(rank)]

    def body(scalars: Values) -> Values:
        x, acc = scalars
        if acc_t is not DType.bool and acc_t is not t:
            x = s.convert(x, t, acc_t) if not t.is_float else s.to_float(x, t, acc_t)
        return [combine(s, acc, x, acc_t if acc_t is not DType.bool else t)]

    return e.generic([(value, e.identity_map(rank))], [(init, e.projection(rank, kept))], iterators, body)[0]


@lowers(*REDUCTIONS, to="linalg.generic with reduction iterators (narrow floats accumulate in f32)", dynamic=True)
def _reduce(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    if len(args) != 1:
        raise CannotLower("the variable-axes form has no lowering")
    name = ins.op.name
    source = ins.args[0].shape
    t = source.dtype
    axes = _normalized(ins.op["axes"], source.ndim)
    if not axes:
        return args[0]
    e, s = lowering.emitter, lowering.scalars
    dims = e.dims(args[0])
    initial, combine = REDUCTIONS[name]
    acc_t = DType.bool if name in LOGICAL else accumulator_type(t)
    reduced = reduce(lowering, args[0], t, dims, axes, acc_t, initial(acc_t), combine)
    kept = [d for d in range(source.ndim) if d not in axes]
    source_sizes = sizes(source)
    kept_sizes = [source_sizes[d] for d in kept]
    if name == "reduce_mean" or acc_t is not t:
        count = _element_count(lowering, [dims[a] for a in axes], acc_t) if name == "reduce_mean" else None

        def finish(scalars: Values) -> Values:
            x = scalars[0]
            if count is not None:
                x = s.div(x, count, acc_t)
            return [s.convert(x, acc_t, t) if acc_t is not DType.bool else s.from_bool(x, t)]

        reduced = e.elementwise([(reduced, kept_sizes)], t, kept_sizes, finish)
    if source.is_dynamic:
        return e.expand_units(reduced, sizes(ins.shape), kept)
    return e.reshape(reduced, kept_sizes, ins.shape.lens)


def _element_count(lowering: Lowering, dims: list[int | ir.Value], t: DType) -> ir.Value:
    """The product of sizes (constants, or `tensor.dim` values at run time) as a scalar of type `t`."""
    e, s = lowering.emitter, lowering.scalars
    static = int(np.prod([n for n in dims if isinstance(n, int)]))
    dynamic = [n for n in dims if not isinstance(n, int)]
    if not dynamic:
        return s.const(static, t)
    count = e.index(static)
    for n in dynamic:
        count = arith.muli(count, n)
    wide = arith.index_cast(lowering.types.element(DType.int64), count)
    return s.convert(wide, DType.int64, t)


@lowers(
    "argmax",
    "argmin",
    to="linalg.generic reducing (value, index) pairs (dynamic: tensor.dim sizes, the unit axis back with "
    "tensor.expand_shape)",
    dynamic=True,
)
def _arg_reduce(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    t = source.dtype
    rank = source.ndim
    axis = _normalized([ins.op["axis"]], rank)[0]
    e, s = lowering.emitter, lowering.scalars
    kept = [d for d in range(rank) if d != axis]
    dims = e.dims(args[0])
    kept_lens = [dims[d] for d in kept]
    is_max = ins.op.name == "argmax"
    best = e.filled(t, kept_lens, _lowest(t) if is_max else _highest(t))
    where = e.filled(DType.int64, kept_lens, 0)
    iterators = [REDUCTION if d == axis else PARALLEL for d in range(rank)]
    better = ("ge" if is_max else "le") if ins.op["select_last_index"] else ("gt" if is_max else "lt")
    i64 = lowering.types.element(DType.int64)

    def body(scalars: Values) -> Values:
        x, best_value, best_index = scalars
        index = arith.index_cast(i64, linalg.IndexOp(axis).result)
        take = s.cmp(better, x, best_value, t)
        return [s.select(take, x, best_value), s.select(take, index, best_index)]

    out_map = e.projection(rank, kept)
    results = e.generic([(args[0], e.identity_map(rank))], [(best, out_map), (where, out_map)], iterators, body)
    if source.is_dynamic:
        return e.expand_units(results[1], sizes(ins.shape), kept)
    return e.reshape(results[1], kept_lens, ins.shape.lens)


# -- softmax --------------------------------------------------------------------------------------


@lowers("softmax", "logsoftmax", to="linalg.generic: max, exp of the difference, sum, divide (or log)", dynamic=True)
def _softmax(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    t = source.dtype
    if not t.is_float:
        raise CannotLower(f"{ins.op.name} of {t.type_name} has no lowering (floating-point types only)")
    rank = source.ndim
    axis = _normalized([ins.op["axis"]], rank)[0]
    e, s = lowering.emitter, lowering.scalars
    w = accumulator_type(t)
    lens = e.dims(args[0])
    shape_sizes = sizes(source)
    kept = [d for d in range(rank) if d != axis]
    identity, projected = e.identity_map(rank), e.projection(rank, kept)
    parallel = [PARALLEL] * rank

    def widen(x: ir.Value) -> ir.Value:
        return s.to_float(x, t, w)

    peak = reduce(lowering, args[0], t, lens, [axis], w, -np.inf, lambda sc, acc, x, ty: sc.max(acc, x, ty))
    shifted = e.generic(
        [(args[0], identity), (peak, projected)],
        [(e.empty(w, lens), identity)],
        parallel,
        lambda xs: [arith.subf(widen(xs[0]), xs[1])],
    )[0]
    exps = e.elementwise([(shifted, shape_sizes)], w, shape_sizes, lambda xs: [math.exp(xs[0])])
    total = reduce(lowering, exps, w, lens, [axis], w, 0.0, lambda sc, acc, x, ty: sc.add(acc, x, ty))
    if ins.op.name == "softmax":
        body = lambda xs: [s.convert(arith.divf(xs[0], xs[1]), w, t)]  # noqa: E731
        first = exps
    else:
        body = lambda xs: [s.convert(arith.subf(xs[0], math.log(xs[1])), w, t)]  # noqa: E731
        first = shifted
    return e.generic([(first, identity), (total, projected)], [(e.empty(t, lens), identity)], parallel, body)[0]


# -- contractions ---------------------------------------------------------------------------------


@lowers(
    "dot",
    "quant_dot",
    to="linalg.generic contraction (batch dims parallel; narrow floats accumulate in f32)",
    dynamic=True,
)
def _dot(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    a_shape = ins.args[0].shape
    t_in, t_out = a_shape.dtype, ins.shape.dtype
    if t_in is DType.bool:
        raise CannotLower("dot of bool_type has no lowering")
    e, s = lowering.emitter, lowering.scalars
    rank = a_shape.ndim
    batch = list(range(rank - 2))
    m, n, k = rank - 2, rank - 1, rank
    domain = rank + 1
    a_map = e.projection(domain, [*batch, m, k])
    b_map = e.projection(domain, [*batch, k, n])
    c_map = e.projection(domain, [*batch, m, n])
    a_dims, b_dims = e.dims(args[0]), e.dims(args[1])
    # a batch dimension static in either input is static in the result (the intersection)
    batch_dims = [b if isinstance(b, int) else a for a, b in zip(a_dims[:-2], b_dims[:-2])]
    # narrow floats accumulate in f32 and round once (MIGraphX's reference in double, its GPU gemms in f32)
    acc_t = accumulator_type(t_out)
    init = e.filled(acc_t, [*batch_dims, a_dims[-2], b_dims[-1]], 0)
    iterators = [PARALLEL] * rank + [REDUCTION]

    def body(scalars: Values) -> Values:
        x, y, acc = scalars
        if t_in is not acc_t:
            x, y = s.widen(x, t_in, acc_t), s.widen(y, t_in, acc_t)
        return [s.add(acc, s.mul(x, y, acc_t), acc_t)]

    product = e.generic([(args[0], a_map), (args[1], b_map)], [(init, c_map)], iterators, body)[0]
    return product if acc_t is t_out else _rounded(lowering, product, acc_t, t_out)


# -- convolution ----------------------------------------------------------------------------------


def _begin_end(padding: Sequence[int], k: int) -> tuple[list[int], list[int]]:
    if len(padding) == 2 * k:
        return list(padding[:k]), list(padding[k:])
    return list(padding), list(padding)


CONVOLUTIONS = {1: linalg.conv_1d_ncw_fcw, 2: linalg.conv_2d_nchw_fchw, 3: linalg.conv_3d_ncdhw_fcdhw}


def _window_outputs(
    sizes_: SizeMath,
    spatial: Sequence[Size],
    spans: Sequence[Size],
    padded: Sequence[int],
    stride: Sequence[int],
    ceil: bool = False,
) -> list[Size]:
    """Each spatial output size, (n + padding - span) / stride + 1 (MIGraphX's window rule), at
    translation time where the sizes are known, else at run time."""
    return [
        sizes_.add(sizes_.div(sizes_.sub(sizes_.add(n, p), span), s, ceil), 1)
        for n, span, p, s in zip(spatial, spans, padded, stride)
    ]


@lowers(
    "convolution",
    "quant_convolution",
    to="tensor.pad + linalg.conv_{1d_ncw_fcw,2d_nchw_fchw,3d_ncdhw_fcdhw}, grouped: linalg.conv_2d_ngchw_gfchw; "
    "half/bf16 (group 1, static sizes): im2col (a linalg.generic gathering the windows) and a batched product "
    "(narrow floats accumulate in f32; dynamic: output sizes computed from tensor.dim)",
    dynamic=True,
)
def _convolution(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    x_shape = ins.args[0].shape
    k = x_shape.ndim - 2
    group = ins.op["group"]
    t, out_t = x_shape.dtype, ins.shape.dtype
    if ins.op["padding_mode"] != 0:
        raise CannotLower("padding_mode other than default has no lowering")
    if k not in CONVOLUTIONS or (group != 1 and k != 2):
        raise CannotLower(f"{k}-d convolution with group {group} has no lowering")
    e, n = lowering.emitter, SizeMath(lowering)
    low, high = _begin_end(ins.op["padding"], k)
    x = pad_constant(lowering, args[0], t, [0, 0, *low], [0, 0, *high], 0)
    strides, dilations = list(ins.op["stride"]), list(ins.op["dilation"])
    x_dims, w_dims = e.dims(args[0]), e.dims(args[1])
    spans = [n.add(n.mul(n.sub(kn, 1), d), 1) for kn, d in zip(w_dims[2:], dilations)]
    padded = [a + b for a, b in zip(low, high)]
    spatial = _window_outputs(n, x_dims[2:], spans, padded, strides)
    out_lens = [x_dims[0], w_dims[0], *spatial]
    # narrow floats accumulate in f32 and round once, as MIGraphX's reference and MIOpen do
    acc_t = accumulator_type(out_t)
    static = all(isinstance(d, int) for d in [x_dims[1], *w_dims, *spatial])
    if group == 1 and acc_t is not out_t and static:
        # IREE 3.13's CUDA code for linalg's named half convolutions (1x1 and strided ones) computed
        # ResNet-50 wrongly (rms 2.7e-1 on an H100); as im2col and a batched product it is right
        # (8.4e-3, torch's own f16 error): docs/mlir.md "Half convolutions on IREE cuda"
        result = _im2col_convolution(lowering, x, args[1], t, acc_t, out_lens, strides, dilations)
    elif group == 1:
        init = e.filled(acc_t, out_lens, 0)
        result = single(CONVOLUTIONS[k](x, args[1], outs=[init], strides=strides, dilations=dilations))
    else:
        per_group = n.div(x_dims[1], group)
        filters = n.div(w_dims[0], group)
        grouped_x = e.split(x, 1, [group, per_group])
        grouped_w = e.split(args[1], 0, [group, filters])
        init = e.filled(acc_t, [out_lens[0], group, filters, *out_lens[2:]], 0)
        grouped = linalg.conv_2d_ngchw_gfchw(grouped_x, grouped_w, outs=[init], strides=strides, dilations=dilations)
        result = e.merge(single(grouped), 1, 2)
    return _as_result(lowering, ins, result if acc_t is out_t else _rounded(lowering, result, acc_t, out_t))


def _is_matrix_product(x: ir.Value, w: ir.Value, strides: list[int], out_lens: list) -> bool:
    """A 1x1 convolution of stride 1 over unpadded `x`: a matrix product over the channels."""
    kernel = ir.RankedTensorType(w.type).shape[2:]
    spatial = ir.RankedTensorType(x.type).shape[2:]
    return all(n == 1 for n in kernel) and all(s == 1 for s in strides) and list(spatial) == list(out_lens[2:])


def _im2col_convolution(
    lowering: Lowering,
    x: ir.Value,
    w: ir.Value,
    t: DType,
    acc_t: DType,
    out_lens: list,
    strides: list[int],
    dilations: list[int],
) -> ir.Value:
    """The convolution of padded `x` [N, C, *S] by `w` [F, C, *K] as im2col: the windows gathered
    into [N, C*prod(K), prod(O)], then a batched product with `w` as [F, C*prod(K)] in `acc_t`."""
    e, s = lowering.emitter, lowering.scalars
    x_lens, w_lens = ir.RankedTensorType(x.type).shape, ir.RankedTensorType(w.type).shape
    k = len(w_lens) - 2
    kernel, outs = list(w_lens[2:]), [int(n) for n in out_lens[2:]]
    n, c = e.dims(x)[0], x_lens[1]
    if _is_matrix_product(x, w, strides, out_lens):
        cols = e.merge(x, 2, k) if k > 1 else x
    else:
        # only the extent the windows reach (linalg takes an index of a size-1 loop for the loop itself)
        reach = [(o - 1) * st + (kk - 1) * dl + 1 for o, st, kk, dl in zip(outs, strides, kernel, dilations)]
        if reach != list(x_lens[2:]):
            dims = [n, c, *reach]
            dynamic = ir.ShapedType.get_dynamic_size()
            trimmed = lowering.types.tensor(t, [d if isinstance(d, int) else dynamic for d in dims])
            x = e.extract_slice(x, trimmed, [0] * (2 + k), dims, [1] * (2 + k))
        domain = 2 + 2 * k  # (n, c, *kernel, *out)
        d = [ir.AffineDimExpr.get(i) for i in range(domain)]
        exprs = [d[0], d[1], *[d[2 + k + i] * strides[i] + d[2 + i] * dilations[i] for i in range(k)]]
        x_map = ir.AffineMapAttr.get(ir.AffineMap.get(domain, 0, exprs))
        gathered = e.generic(
            [(x, x_map)],
            [(e.empty(t, [n, c, *kernel, *outs]), e.identity_map(domain))],
            [PARALLEL] * domain,
            lambda xs: [xs[0]],
        )[0]
        cols = e.merge(gathered, 1, 1 + k)
        cols = e.merge(cols, 2, k) if k > 1 else cols
    flat_w = e.merge(w, 1, 1 + k)
    # (n, f, p, q): w[f, q] * cols[n, q, p]
    init = e.filled(acc_t, [n, w_lens[0], int(np.prod(outs))], 0)

    def body(scalars: Values) -> Values:
        a, b, acc = scalars
        return [s.add(acc, s.mul(s.widen(a, t, acc_t), s.widen(b, t, acc_t), acc_t), acc_t)]

    product = e.generic(
        [(flat_w, e.projection(4, [1, 3])), (cols, e.projection(4, [0, 3, 2]))],
        [(init, e.projection(4, [0, 1, 2]))],
        [PARALLEL, PARALLEL, PARALLEL, REDUCTION],
        body,
    )[0]
    return e.split(product, 2, outs) if k > 1 else product


def _rounded(lowering: Lowering, wide: ir.Value, wide_t: DType, t: DType) -> ir.Value:
    """`wide` (an accumulator of type `wide_t`) rounded elementwise to `t` (past its range: inf)."""
    e, s = lowering.emitter, lowering.scalars
    lens = [n if isinstance(n, int) else None for n in e.dims(wide)]
    return e.elementwise_outputs([(wide, lens)], [t], lens, lambda xs: [s.to_float(xs[0], wide_t, t)])[0]


def _as_result(lowering: Lowering, ins: Instruction, value: ir.Value) -> ir.Value:
    """`value`, cast to the instruction's tensor type where that type knows a size the value's does
    not (a spatial size that is fixed although the input's is dynamic)."""
    result = lowering.types.of_shape(ins.shape)
    return value if value.type == result else tensor.cast(result, value)


# -- pooling --------------------------------------------------------------------------------------


@lowers(
    "pooling",
    to="tensor.pad + linalg.generic over output and window dims (average divides by a constant count; "
    "dynamic spatial dimensions: output sizes, ceil_mode padding and the average's counts at run time)",
    dynamic=True,
)
def _pooling(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    x_shape = ins.args[0].shape
    t = x_shape.dtype
    op = ins.op
    k = x_shape.ndim - 2
    mode = op["mode"]
    if mode == 2:
        raise CannotLower("lpnorm pooling has no lowering")
    if not t.is_float:
        raise CannotLower(f"pooling of {t.type_name} has no lowering (floating-point types only)")
    e, s, n = lowering.emitter, lowering.scalars, SizeMath(lowering)
    dims = e.dims(args[0])
    spatial = dims[2:]
    if op["padding_mode"] != 0 and not op["dyn_global"] and not all(isinstance(v, int) for v in spatial):
        # MIGraphX's shape is then ceil(size / stride), with padding chosen at run time
        raise CannotLower("padding_mode other than default has no lowering with dynamic spatial dimensions")
    if op["dyn_global"]:
        return _global_pooling(lowering, ins, args[0], dims)
    lengths: list[Size] = list(op["lengths"])
    stride, dilation = list(op["stride"]), list(op["dilations"])
    low, high = _begin_end(op["padding"], k)
    spans = [n.add(n.mul(n.sub(length, 1), d), 1) for length, d in zip(lengths, dilation)]
    padded = [a + b for a, b in zip(low, high)]
    outs = _window_outputs(n, spatial, spans, padded, stride, op["ceil_mode"])
    # ceil_mode: windows that start inside may run past the end padding
    extra = [
        n.max(0, n.sub(n.add(n.mul(n.sub(o, 1), st), span), n.add(x_, p)))
        for o, st, span, x_, p in zip(outs, stride, spans, spatial, padded)
    ]
    out_lens = [dims[0], dims[1], *outs]
    fill = -np.inf if mode == 1 else 0.0
    x = pad_constant(lowering, args[0], t, [0, 0, *low], [0, 0, *(n.add(h, x_) for h, x_ in zip(high, extra))], fill)
    w = accumulator_type(t)
    domain = 2 + 2 * k
    d = [ir.AffineDimExpr.get(i) for i in range(domain)]
    x_exprs = [d[0], d[1], *[d[2 + i] * stride[i] + d[2 + k + i] * dilation[i] for i in range(k)]]
    x_map = ir.AffineMapAttr.get(ir.AffineMap.get(domain, 0, x_exprs))
    window = e.empty(t, lengths)
    window_map = e.projection(domain, range(2 + k, domain))
    out_map = e.projection(domain, range(2 + k))
    init = e.filled(w, out_lens, fill)
    iterators = [PARALLEL] * (2 + k) + [REDUCTION] * k
    out_sizes = sizes(ins.shape)
    rank = len(out_sizes)
    static = all(isinstance(v, int) for v in (*spatial, *lengths))
    if mode == 0 and not static:
        # the count of each window (what the average divides by) is known only at run time: the
        # generic counts the taps that fall on the input (or its padding, with count_include_pad)
        ends = [n.add(x_, a + b) if op["count_include_pad"] else n.add(x_, a) for x_, a, b in zip(spatial, low, high)]
        starts = [0 if op["count_include_pad"] else a for a in low]
        x_index = IndexMath(lowering)
        end_values = [n.value(v) for v in ends]

        def counting(scalars: Values) -> Values:
            value, _, acc, count = scalars
            taps = []
            for i in range(k):
                out_at, tap = linalg.IndexOp(2 + i).result, linalg.IndexOp(2 + k + i).result
                at = x_index.add(
                    x_index.mul(out_at, stride[i]) if stride[i] != 1 else out_at,
                    x_index.mul(tap, dilation[i]) if dilation[i] != 1 else tap,
                )
                if starts[i]:
                    taps.append(x_index.le(x_index.const(starts[i]), at))
                taps.append(x_index.lt(at, end_values[i]))
            inside = x_index.all(taps)
            assert inside is not None
            one = s.select(inside, s.const(1.0, w), s.const(0.0, w))
            return [s.add(acc, s.to_float(value, t, w), w), s.add(count, one, w)]

        counts_init = e.filled(w, out_lens, 0.0)
        pooled, counts = e.generic(
            [(x, x_map), (window, window_map)], [(init, out_map), (counts_init, out_map)], iterators, counting
        )
        identity = e.identity_map(rank)
        divided = e.generic(
            [(pooled, identity), (counts, identity)],
            [(e.empty(t, out_lens), identity)],
            [PARALLEL] * rank,
            lambda xs: [s.convert(arith.divf(xs[0], s.max(xs[1], s.const(1.0, w), w)), w, t)],
        )[0]
        return _as_result(lowering, ins, divided)

    def body(scalars: Values) -> Values:
        value, _, acc = scalars
        value = s.to_float(value, t, w)
        return [s.max(acc, value, w) if mode == 1 else s.add(acc, value, w)]

    pooled = e.generic([(x, x_map), (window, window_map)], [(init, out_map)], iterators, body)[0]
    if mode == 1:
        if w is not t:
            pooled = e.elementwise([(pooled, out_sizes)], t, out_sizes, lambda xs: [s.convert(xs[0], w, t)])
        return _as_result(lowering, ins, pooled)
    fixed = [v for v in spatial if isinstance(v, int)]
    fixed_extra = [v for v in extra if isinstance(v, int)]
    counted = _window_counts(fixed, lengths, stride, dilation, low, high, fixed_extra, op["count_include_pad"])
    counts = e.constant(counted.astype(w.numpy), w)
    spatial_map = e.projection(rank, range(2, rank))
    divided = e.generic(
        [(pooled, e.identity_map(rank)), (counts, spatial_map)],
        [(e.empty(t, out_lens), e.identity_map(rank))],
        [PARALLEL] * rank,
        lambda xs: [s.convert(arith.divf(xs[0], xs[1]), w, t)],
    )
    return divided[0]


def _global_pooling(lowering: Lowering, ins: Instruction, value: ir.Value, dims: list[Size]) -> ir.Value:
    """dyn_global pooling: a reduction over every spatial dimension (the window is the whole input),
    the mean dividing by their product, the unit dimensions back with tensor.expand_shape."""
    t = ins.shape.dtype
    e, s = lowering.emitter, lowering.scalars
    w = accumulator_type(t)
    is_max = ins.op["mode"] == 1
    axes = list(range(2, len(dims)))
    initial, combine = REDUCTIONS["reduce_max" if is_max else "reduce_sum"]
    reduced = reduce(lowering, value, t, dims, axes, w, initial(w), combine)
    count = None if is_max else _element_count(lowering, [dims[a] for a in axes], w)
    kept_sizes = sizes(ins.shape)[:2]

    def finish(scalars: Values) -> Values:
        x = scalars[0] if count is None else s.div(scalars[0], count, w)
        return [s.convert(x, w, t)]

    if count is not None or w is not t:
        reduced = e.elementwise([(reduced, kept_sizes)], t, kept_sizes, finish)
    return e.expand_units(reduced, sizes(ins.shape), [0, 1])


def _window_counts(
    spatial: list[int],
    lengths: list[int],
    stride: list[int],
    dilation: list[int],
    low: list[int],
    high: list[int],
    extra: list[int],
    include_pad: bool,
) -> np.ndarray:
    """How many elements each average window divides by: the input elements it covers, and with
    `include_pad` the padding too, but never what ceil_mode adds past the padding (MIGraphX's
    pooling)."""
    counted = np.pad(np.ones(spatial), list(zip(low, high)), constant_values=1 if include_pad else 0)
    counted = np.pad(counted, [(0, x) for x in extra])
    spans = [1 + d * (n - 1) for n, d in zip(lengths, dilation)]
    view = np.lib.stride_tricks.sliding_window_view(counted, spans)
    view = view[(Ellipsis, *[slice(None, None, d) for d in dilation])]
    view = view[tuple(slice(None, None, s) for s in stride)]
    k = len(spatial)
    return np.maximum(view.sum(axis=tuple(range(k, 2 * k))), 1).astype(np.float32)
