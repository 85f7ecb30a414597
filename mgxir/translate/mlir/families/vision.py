"""Image operators: resize, lrn, im2col and transposed convolution (as a convolution of the
stride-spread input with flipped weights)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, math, scf, tensor

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ops import nn
from mgxir.translate.mlir.emitter import PARALLEL, single
from mgxir.translate.mlir.families.indexed import IndexMath, indexed
from mgxir.translate.mlir.families.layout import pad_constant
from mgxir.translate.mlir.families.nn import CONVOLUTIONS, accumulator_type
from mgxir.translate.mlir.registry import lowers
from mgxir.translate.mlir.scalar import CannotLower

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]


# -- resize ---------------------------------------------------------------------------------------


def resize_taps(op_values: dict, n_in: int, n_out: int, scale: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The reference's taps of one axis (mgxir.ops.nn.resize_taps); CannotLower for an unknown mode."""
    try:
        return nn.resize_taps(op_values, n_in, n_out, scale)
    except ValueError as e:
        raise CannotLower(str(e)) from None


@lowers(
    "resize",
    to="nearest: one linalg.generic gathering with constant index tables; linear/cubic: one linalg.generic "
    "per resampled axis summing constant-weighted taps",
)
def _resize(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    if len(args) != 1:
        raise CannotLower("the sizes/scales input form has a data-dependent shape")
    source = ins.args[0].shape
    op = ins.op
    mode = op["mode"]
    in_lens, out_lens = list(source.lens), list(ins.shape.lens)
    if op["sizes"]:
        scales = [n / m if m else 1.0 for n, m in zip(out_lens, in_lens)]
    else:
        scales = list(op["scales"])
    values = {k: op[k] for k in ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a")}
    tables = [resize_taps(values, n, m, f) for n, m, f in zip(in_lens, out_lens, scales)]
    e, s, x = lowering.emitter, lowering.scalars, IndexMath(lowering)
    t = source.dtype
    rank = source.ndim
    if mode == "nearest":
        index_tables = [None if table is None else e.constant(table[0][:, 0], DType.int64) for table in tables]

        def gather(coords: Values, scalars: Values) -> Values:
            at = [
                c if table is None else x.from_element(tensor.extract(table, [c]), DType.int64)
                for c, table in zip(coords, index_tables)
            ]
            return [tensor.extract(args[0], at)]

        return indexed(lowering, t, out_lens, gather)
    w = DType.double if t is DType.double else DType.float
    value, value_t, lens = args[0], t, list(in_lens)
    for axis, table in enumerate(tables):
        if table is None:
            continue
        taps, weights = table
        lens[axis] = out_lens[axis]
        tap_map = e.projection(rank + 1, [axis, rank])
        inputs = [(e.constant(taps, DType.int64), tap_map), (e.constant(weights.astype(w.numpy), w), tap_map)]
        read, read_t = value, value_t

        def accumulate(coords: Values, scalars: Values, read=read, read_t=read_t, axis=axis) -> Values:
            tap, weight, acc = scalars
            at = list(coords[:rank])
            at[axis] = x.from_element(tap, DType.int64)
            sample = s.to_float(tensor.extract(read, at), read_t, w)
            return [arith.addf(acc, arith.mulf(sample, weight))]

        init = e.filled(w, lens, 0)
        value = indexed(lowering, w, lens, accumulate, inputs=inputs, init=init, reduced=[taps.shape[1]])
        value_t = w
    if value_t is t:
        return value
    return e.elementwise([(value, out_lens)], t, out_lens, lambda xs: [s.convert(xs[0], value_t, t)])


# -- lrn ------------------------------------------------------------------------------------------


@lowers(
    "lrn",
    to="tensor.pad of the squares over channels, linalg.generic window sum, then x / (bias + alpha/size * sum)^beta",
)
def _lrn(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    t = source.dtype
    if not t.is_float:
        raise CannotLower(f"lrn of {t.type_name} has no lowering (floating-point types only)")
    e, s = lowering.emitter, lowering.scalars
    w = accumulator_type(t)
    lens = list(source.lens)
    rank = len(lens)
    size = ins.op["size"]
    before = (size - 1) // 2
    squares = e.elementwise([(args[0], lens)], w, lens, lambda xs: [arith.mulf(*[s.to_float(xs[0], t, w)] * 2)])
    padded = pad_constant(
        lowering, squares, w, [0, before] + [0] * (rank - 2), [0, size - 1 - before] + [0] * (rank - 2), 0
    )
    d = [ir.AffineDimExpr.get(i) for i in range(rank + 1)]
    window_map = ir.AffineMapAttr.get(ir.AffineMap.get(rank + 1, 0, [d[0], d[1] + d[rank], *d[2:rank]]))
    init = e.filled(w, lens, 0)

    def total(coords: Values, scalars: Values) -> Values:
        square, acc = scalars
        return [arith.addf(acc, square)]

    window = indexed(lowering, w, lens, total, inputs=[(padded, window_map)], init=init, reduced=[size])
    bias, alpha, beta = ins.op["bias"], ins.op["alpha"] / size, ins.op["beta"]

    def normalize(xs: Values) -> Values:
        scale = arith.addf(s.const(bias, w), arith.mulf(s.const(alpha, w), xs[1]))
        return [s.convert(arith.divf(s.to_float(xs[0], t, w), math.powf(scale, s.const(beta, w))), w, t)]

    return e.elementwise([(args[0], lens), (window, lens)], t, lens, normalize)


# -- im2col ---------------------------------------------------------------------------------------


def _begin_end(padding: Sequence[int], k: int) -> tuple[list[int], list[int]]:
    if len(padding) == 2 * k:
        return list(padding[:k]), list(padding[k:])
    return list(padding), list(padding)


@lowers("im2col", to="tensor.pad + linalg.generic with an affine window map (first image), reshaped to rows")
def _im2col(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    x_shape, w_shape = ins.args[0].shape, ins.args[1].shape
    e = lowering.emitter
    t = x_shape.dtype
    if ins.op["padding_mode"] != 0:
        raise CannotLower("padding_mode other than default has no lowering")
    low, high = _begin_end(ins.op["padding"], 2)
    x = pad_constant(lowering, args[0], t, [0, 0, *low], [0, 0, *high], 0)
    channels, (kh, kw) = x_shape.lens[1], w_shape.lens[2:]
    (sh, sw), (dh, dw) = ins.op["stride"], ins.op["dilation"]
    padded = [x_shape.lens[2] + low[0] + high[0], x_shape.lens[3] + low[1] + high[1]]
    oh = (padded[0] - dh * (kh - 1) - 1) // sh + 1
    ow = (padded[1] - dw * (kw - 1) - 1) // sw + 1
    grid = [oh, ow, channels, kh, kw]
    i, j, c, p, q = (ir.AffineDimExpr.get(n) for n in range(5))
    zero = ir.AffineConstantExpr.get(0)
    x_map = ir.AffineMapAttr.get(ir.AffineMap.get(5, 0, [zero, c, i * sh + p * dh, j * sw + q * dw]))
    init = e.empty(t, grid)
    patches = e.generic([(x, x_map)], [(init, e.identity_map(5))], [PARALLEL] * 5, lambda xs: [xs[0]])[0]
    return e.reshape(patches, grid, ins.shape.lens)


# -- transposed convolution -----------------------------------------------------------------------


@lowers(
    "convolution_backwards",
    to="tensor.insert_slice spreading the input by the stride, tensor.pad, linalg.generic flipping the weights, "
    "linalg.conv_* (grouped 2-d: linalg.conv_2d_ngchw_gfchw), tensor.extract_slice cropping the padding",
)
def _convolution_backwards(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    x_shape, w_shape = ins.args[0].shape, ins.args[1].shape
    t = x_shape.dtype
    k = x_shape.ndim - 2
    group = ins.op["group"]
    if ins.op["padding_mode"] != 0:
        raise CannotLower("padding_mode other than default has no lowering")
    if k not in CONVOLUTIONS or (group != 1 and k != 2):
        raise CannotLower(f"{k}-d transposed convolution with group {group} has no lowering")
    e = lowering.emitter
    stride, dilation = list(ins.op["stride"]), list(ins.op["dilation"])
    n, c_in = x_shape.lens[:2]
    spatial, kernel = list(x_shape.lens[2:]), list(w_shape.lens[2:])
    c_out_per_group = w_shape.lens[1]
    # the input spread by the stride (zeros between), padded by the kernel's reach on both sides
    spread = [s * (m - 1) + 1 for s, m in zip(stride, spatial)]
    x = args[0]
    if any(s != 1 for s in stride):
        zeros = e.filled(t, [n, c_in, *spread], 0)
        x = tensor.insert_slice(x, zeros, [], [], [], [0] * (k + 2), [n, c_in, *spatial], [1, 1, *stride])
    reach = [d * (m - 1) for d, m in zip(dilation, kernel)]
    x = pad_constant(lowering, x, t, [0, 0, *reach], [0, 0, *reach], 0)
    padded = [a + 2 * r for a, r in zip(spread, reach)]
    full = [a + r for a, r in zip(spread, reach)]
    # weights {C_in, C_out/g, k...} -> {g, C_out/g, C_in/g, k...} with the kernel flipped
    per_group = c_in // group
    w_lens = [group, c_out_per_group, per_group, *kernel]
    ix = IndexMath(lowering)

    def flip(coords: Values, scalars: Values) -> Values:
        g, f, c, *taps = coords
        at = [ix.add(ix.mul(g, per_group), c), f, *[ix.sub(ix.const(m - 1), p) for m, p in zip(kernel, taps)]]
        return [tensor.extract(args[1], at)]

    weights = indexed(lowering, t, w_lens, flip)
    c_out = c_out_per_group * group
    if group == 1:
        weights = e.reshape(weights, w_lens, w_lens[1:])
        init = e.filled(t, [n, c_out, *full], 0)
        out = single(CONVOLUTIONS[k](x, weights, outs=[init], strides=[1] * k, dilations=dilation))
    else:
        grouped_x = e.reshape(x, [n, c_in, *padded], [n, group, per_group, *padded])
        grouped_out = [n, group, c_out_per_group, *full]
        init = e.filled(t, grouped_out, 0)
        out = single(linalg.conv_2d_ngchw_gfchw(grouped_x, weights, outs=[init], strides=[1] * k, dilations=dilation))
        out = e.reshape(out, grouped_out, [n, c_out, *full])
    low, _ = _begin_end(ins.op["padding"], k)
    result = lowering.types.of_shape(ins.shape)
    if list(ins.shape.lens) == [n, c_out, *full]:
        return out
    return tensor.extract_slice(result, out, [], [], [], [0, 0, *low], list(ins.shape.lens), [1] * (k + 2))


# -- roialign -------------------------------------------------------------------------------------


@lowers(
    "roialign",
    to="linalg.generic over the output whose body loops (scf.for) over the bin's samples, each a bilinear "
    "read of four pixels with tensor.extract (f64)",
)
def _roialign(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    x_shape, roi_shape, index_shape = (a.shape for a in ins.args)
    t = x_shape.dtype
    if not t.is_float:
        raise CannotLower(f"roialign of {t.type_name} has no lowering (floating-point types only)")
    s, ix = lowering.scalars, IndexMath(lowering)
    op = ins.op
    f64 = DType.double
    height, width = x_shape.lens[2:]
    oh, ow = op["output_height"], op["output_width"]
    half_pixel = op["coordinate_transformation_mode"] == "half_pixel"
    use_max = op["mode"] == 1
    ratio = op["sampling_ratio"]
    f64_type = lowering.types.element(f64)

    def real(v: float) -> ir.Value:
        return s.const(v, f64)

    def to_real(i: ir.Value) -> ir.Value:
        return arith.sitofp(f64_type, arith.index_cast(lowering.types.element(DType.int64), i))

    def to_index(v: ir.Value) -> ir.Value:
        return arith.index_cast(ix.index_type, arith.fptosi(lowering.types.element(DType.int64), v))

    def body(coords: Values, scalars: Values) -> Values:
        r, c, ph, pw = coords
        image = ix.from_element(tensor.extract(args[2], [r]), index_shape.dtype)
        corner = [
            arith.subf(
                arith.mulf(
                    s.to_float(tensor.extract(args[1], [r, ix.const(k)]), roi_shape.dtype, f64),
                    real(op["spatial_scale"]),
                ),
                real(0.5 if half_pixel else 0.0),
            )
            for k in range(4)
        ]
        x1, y1, x2, y2 = corner
        roi_w, roi_h = arith.subf(x2, x1), arith.subf(y2, y1)
        if not half_pixel:
            roi_w, roi_h = s.max(roi_w, real(1.0), f64), s.max(roi_h, real(1.0), f64)
        bin_h, bin_w = arith.divf(roi_h, real(oh)), arith.divf(roi_w, real(ow))
        if ratio:
            grid_h = grid_w = ix.const(ratio)
        else:
            grid_h, grid_w = (
                to_index(math.ceil(arith.divf(roi_h, real(oh)))),
                to_index(math.ceil(arith.divf(roi_w, real(ow)))),
            )
        start_y = arith.addf(y1, arith.mulf(to_real(ph), bin_h))
        start_x = arith.addf(x1, arith.mulf(to_real(pw), bin_w))
        step_y, step_x = arith.divf(bin_h, to_real(grid_h)), arith.divf(bin_w, to_real(grid_w))
        initial = real(-np.inf if use_max else 0.0)
        rows = scf.ForOp(ix.const(0), ix.max(grid_h, 0), ix.const(1), [initial])
        with ir.InsertionPoint(rows.body):
            iy = rows.induction_variable
            yy = arith.addf(start_y, arith.mulf(arith.addf(to_real(iy), real(0.5)), step_y))
            cols = scf.ForOp(ix.const(0), ix.max(grid_w, 0), ix.const(1), [rows.inner_iter_args[0]])
            with ir.InsertionPoint(cols.body):
                xx = arith.addf(start_x, arith.mulf(arith.addf(to_real(cols.induction_variable), real(0.5)), step_x))
                terms = _bilinear(lowering, args[0], t, image, c, yy, xx, height, width)
                acc = cols.inner_iter_args[0]
                if use_max:
                    for term in terms:
                        acc = s.max(acc, term, f64)
                else:
                    acc = arith.addf(acc, arith.addf(arith.addf(terms[0], terms[1]), arith.addf(terms[2], terms[3])))
                scf.YieldOp([acc])
            scf.YieldOp([cols.results[0]])
        total = rows.results[0]
        if not use_max:
            count = ix.max(ix.mul(ix.max(grid_h, 0), ix.max(grid_w, 0)), 1)
            total = arith.divf(total, to_real(count))
        return [s.convert(total, f64, t)]

    return indexed(lowering, t, ins.shape.lens, body)


def _bilinear(
    lowering: Lowering,
    image: ir.Value,
    t: DType,
    n: ir.Value,
    c: ir.Value,
    y: ir.Value,
    x: ir.Value,
    height: int,
    width: int,
) -> Values:
    """The four weighted corner values (f64) of one sample of image n, channel c: zeros outside."""
    s, ix = lowering.scalars, IndexMath(lowering)
    f64 = DType.double
    zero, one = s.const(0.0, f64), s.const(1.0, f64)
    outside = arith.ori(
        arith.ori(s.cmp("lt", y, s.const(-1.0, f64), f64), s.cmp("gt", y, s.const(float(height), f64), f64)),
        arith.ori(s.cmp("lt", x, s.const(-1.0, f64), f64), s.cmp("gt", x, s.const(float(width), f64), f64)),
    )
    i64 = lowering.types.element(DType.int64)
    f64_type = lowering.types.element(f64)

    def axis(v: ir.Value, n_pixels: int) -> tuple[ir.Value, ir.Value, ir.Value]:
        v = s.max(v, zero, f64)
        low = ix.min(arith.index_cast(ix.index_type, arith.fptosi(i64, v)), n_pixels - 1)
        at_edge = ix.le(ix.const(n_pixels - 1), arith.index_cast(ix.index_type, arith.fptosi(i64, v)))
        high = ix.select(at_edge, low, ix.add(low, 1))
        v = arith.select(at_edge, arith.sitofp(f64_type, arith.index_cast(i64, low)), v)
        return low, high, arith.subf(v, arith.sitofp(f64_type, arith.index_cast(i64, low)))

    y_low, y_high, ly = axis(y, height)
    x_low, x_high, lx = axis(x, width)
    hy, hx = arith.subf(one, ly), arith.subf(one, lx)
    terms = []
    for yy, wy in ((y_low, hy), (y_high, ly)):
        for xx, wx in ((x_low, hx), (x_high, lx)):
            pixel = s.to_float(tensor.extract(image, [n, c, yy, xx]), t, f64)
            terms.append(arith.select(outside, zero, arith.mulf(arith.mulf(wy, wx), pixel)))
    return terms
