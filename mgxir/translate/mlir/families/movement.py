"""Data movement outside the views of `layout.py`: fill, scalar, step, as_shape, broadcast_for_dot,
scan_slice, fixed_pad, 4-bit packing, the KV-cache update and rotary embedding of group-query
attention; and the ops that have no meaning outside MIGraphX's runtime, which keep a clear error."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, math, tensor

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.mlir.emitter import PARALLEL
from mgxir.translate.mlir.families.indexed import IndexMath, indexed
from mgxir.translate.mlir.families.layout import RunTimeChecks, broadcast_at_run_time
from mgxir.translate.mlir.registry import lowers
from mgxir.translate.mlir.scalar import CannotLower

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]


def _axis(ins: Instruction, rank: int, name: str = "axis") -> int:
    axis = ins.op[name]
    return axis + rank if axis < 0 else axis


def _even_odd_maps(rank: int, axis: int) -> list[ir.AffineMapAttr]:
    """The maps reading elements 2i and 2i + 1 along `axis` (two values packed into one)."""
    d = [ir.AffineDimExpr.get(i) for i in range(rank)]
    maps = []
    for parity in (0, 1):
        exprs = list(d)
        exprs[axis] = d[axis] * 2 + parity
        maps.append(ir.AffineMapAttr.get(ir.AffineMap.get(rank, 0, exprs)))
    return maps


@lowers("fill", "scalar", to="linalg.generic broadcasting the one element")
def _fill(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    return lowering.emitter.elementwise([(args[0], source.lens)], ins.shape.dtype, ins.shape.lens, lambda xs: [xs[0]])


@lowers("step", to="tensor.extract_slice with strides")
def _step(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    rank = source.ndim
    strides = [1] * rank
    for axis, step in zip(ins.op["axes"], ins.op["steps"]):
        strides[axis + rank if axis < 0 else axis] = step
    result = lowering.types.of_shape(ins.shape)
    return tensor.extract_slice(result, args[0], [], [], [], [0] * rank, list(ins.shape.lens), strides)


@lowers(
    "as_shape",
    to="linalg.generic reading the flattened input at each element's strided offset (arith.bitcast "
    "first where the type changes at the same width)",
)
def _as_shape(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source, target = ins.args[0].shape, ins.shape
    e, x = lowering.emitter, IndexMath(lowering)
    flat = e.reshape(args[0], source.lens, [source.elements])
    if source.dtype is not target.dtype:
        if source.dtype.itemsize != target.dtype.itemsize:
            raise CannotLower(f"reinterpreting {source.dtype.type_name} as {target.dtype.type_name} has no lowering")
        flat = arith.bitcast(lowering.types.tensor(target.dtype, [source.elements]), flat)

    def body(coords: Values, scalars: Values) -> Values:
        offset = x.const(0)
        for c, stride in zip(coords, target.strides):
            offset = x.add(offset, x.mul(c, stride))
        return [tensor.extract(flat, [offset])]

    return indexed(lowering, target.dtype, target.lens, body)


@lowers(
    "broadcast_for_dot",
    to="tensor.collapse_shape + linalg.broadcast over the batch dimensions (dynamic: batch sizes broadcast "
    "with the other input's at run time, as multibroadcast)",
    dynamic=True,
)
def _broadcast_for_dot(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source, other = ins.args[0].shape, ins.args[1].shape
    e = lowering.emitter
    rank = ins.shape.ndim
    offset = rank - source.ndim
    placement = [offset + i for i in range(source.ndim)]
    if not (ins.shape.is_dynamic or source.is_dynamic or other.is_dynamic):
        return e.broadcast(args[0], source.dtype, source.lens, ins.shape.lens, placement)
    own, theirs = e.dims(args[0]), e.dims(args[1])
    checks = RunTimeChecks(lowering, ins.op.name)
    batch = checks.broadcast_sizes([own[:-2], theirs[:-2]], rank - 2)
    return broadcast_at_run_time(lowering, ins, args[0], own, [*batch, *own[-2:]], placement, None)


@lowers(
    "fixed_pad",
    to="nothing for a static input (its value); a dynamic one: tensor.pad with zeros at the end of each axis "
    "to its maximum (high = max - tensor.dim)",
    dynamic=True,
)
def _fixed_pad(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    if not source.is_dynamic:
        return args[0]
    e = lowering.emitter
    t = source.dtype
    max_lens = [d.max for d in source.dyn_dims]
    dims = e.dims(args[0])
    dynamic = ir.ShapedType.get_dynamic_size()
    high_values = [arith.subi(e.index(m), n) for m, n in zip(max_lens, dims) if isinstance(n, ir.Value)]
    static_high = [dynamic if isinstance(n, ir.Value) else m - n for m, n in zip(max_lens, dims)]
    op = tensor.PadOp(lowering.types.tensor(t, max_lens), args[0], [], high_values, [0] * len(dims), static_high)
    block = op.regions[0].blocks.append(*[lowering.types.index] * len(dims))
    with ir.InsertionPoint(block):
        tensor.YieldOp(e.scalar_constant(0, t))
    result = lowering.types.of_shape(ins.shape)
    return op.result if op.result.type == result else tensor.cast(result, op.result)


@lowers("scan_slice", to="linalg.generic reading the slice the index input names with tensor.extract")
def _scan_slice(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source, index_shape = ins.args[0].shape, ins.args[1].shape
    e, x = lowering.emitter, IndexMath(lowering)
    axis = _axis(ins, source.ndim)
    n = source.lens[axis]
    index = e.reshape(args[1], index_shape.lens, [index_shape.elements])

    def body(coords: Values, scalars: Values) -> Values:
        i = x.from_element(tensor.extract(index, [x.const(0)]), index_shape.dtype)
        if ins.op["direction"]:
            i = x.sub(x.const(n - 1), i)
        at = list(coords)
        at[axis] = x.clamp(i, 0, n - 1)
        return [tensor.extract(args[0], at)]

    return indexed(lowering, ins.shape.dtype, ins.shape.lens, body)


# -- 4-bit packing --------------------------------------------------------------------------------


@lowers("pack_int4", to="linalg.generic: arith.shli/andi/ori of the even and odd elements (strided maps)")
def _pack_int4(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    e, s = lowering.emitter, lowering.scalars
    rank = ins.shape.ndim
    axis = _axis(ins, rank)
    t = ins.shape.dtype
    maps = _even_odd_maps(rank, axis)
    init = e.empty(t, ins.shape.lens)

    def body(scalars: Values) -> Values:
        low, high, _ = scalars
        nibble = arith.andi(low, s.const(0xF, t))
        return [arith.ori(arith.shli(high, s.const(4, t)), nibble)]

    return e.generic([(args[0], maps[0]), (args[0], maps[1])], [(init, e.identity_map(rank))], [PARALLEL] * rank, body)[
        0
    ]


@lowers("unpack_int4", to="linalg.generic: tensor.extract of the byte, arith.shrui/andi (int8: sign-extended)")
def _unpack_int4(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    s, x = lowering.scalars, IndexMath(lowering)
    rank = ins.shape.ndim
    axis = _axis(ins, rank)
    t = ins.shape.dtype

    def body(coords: Values, scalars: Values) -> Values:
        at = list(coords)
        at[axis] = x.div(coords[axis], 2)
        byte = tensor.extract(args[0], at)
        high = x.eq(x.rem(coords[axis], 2), 1)
        nibble = arith.select(high, arith.shrui(byte, s.const(4, t)), arith.andi(byte, s.const(0xF, t)))
        if t is DType.int8:
            nibble = arith.shrsi(arith.shli(nibble, s.const(4, t)), s.const(4, t))
        return [nibble]

    return indexed(lowering, t, ins.shape.lens, body)


# fp4 e2m1: the midpoints between neighbouring magnitudes (0, 0.5, 1, 1.5, 2, 3, 4, 6); a value exactly
# between two takes the lower, as the reference's argmin does
FP4_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)


@lowers(
    "pack_fp4",
    to="linalg.generic: each value's fp4 code (comparisons with the midpoints, the sign bit), pairs packed "
    "with arith.shli/ori into a byte (fp4x2 is i8)",
)
def _pack_fp4(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    e, s = lowering.emitter, lowering.scalars
    source = ins.args[0].shape
    t = source.dtype
    if not t.is_float:
        raise CannotLower(f"pack_fp4 of {t.type_name} has no lowering (floating-point types only)")
    w = DType.double if t is DType.double else DType.float
    bits_t = DType.int64 if w is DType.double else DType.int32
    rank = ins.shape.ndim
    axis = _axis(ins, rank)
    byte = DType.fp4x2
    maps = _even_odd_maps(rank, axis)

    def code(value: ir.Value) -> ir.Value:
        wide = s.to_float(value, t, w)
        magnitude = math.absf(wide)
        count = s.const(0, byte)
        for midpoint in FP4_MIDPOINTS:
            above = s.cmp("gt", magnitude, s.const(midpoint, w), w)
            count = arith.select(above, arith.addi(count, s.const(1, byte)), count)
        count = arith.select(s.is_inf(wide, w), s.const(0, byte), count)  # the reference's argmin of inf distances
        negative = s.cmp("lt", arith.bitcast(lowering.types.element(bits_t), wide), s.const(0, bits_t), bits_t)
        return arith.ori(count, arith.select(negative, s.const(8, byte), s.const(0, byte)))

    def body(scalars: Values) -> Values:
        low, high, _ = scalars
        return [arith.ori(arith.shli(code(high), s.const(4, byte)), code(low))]

    init = e.empty(byte, ins.shape.lens)
    return e.generic([(args[0], maps[0]), (args[0], maps[1])], [(init, e.identity_map(rank))], [PARALLEL] * rank, body)[
        0
    ]


@lowers(
    "unpack_fp4",
    to="linalg.generic: each nibble indexes a constant table of the 16 fp4 values in fp8e4m3fn (tensor.extract)",
)
def _unpack_fp4(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    s, x = lowering.scalars, IndexMath(lowering)
    rank = ins.shape.ndim
    axis = _axis(ins, rank)
    t = ins.shape.dtype
    magnitudes = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
    table = lowering.emitter.constant(np.concatenate([magnitudes, -magnitudes]).astype(t.numpy), t)
    byte = DType.fp4x2

    def body(coords: Values, scalars: Values) -> Values:
        at = list(coords)
        at[axis] = x.div(coords[axis], 2)
        packed = tensor.extract(args[0], at)
        high = x.eq(x.rem(coords[axis], 2), 1)
        nibble = arith.select(high, arith.shrui(packed, s.const(4, byte)), arith.andi(packed, s.const(0xF, byte)))
        return [tensor.extract(table, [x.from_element(nibble, DType.uint8)])]

    return indexed(lowering, t, ins.shape.lens, body)


# -- group-query attention ------------------------------------------------------------------------


def _position(x: IndexMath, seqlens: ir.Value, seqlens_t: DType, batch: ir.Value, row: ir.Value, sequence: int):
    """The cache row of a new row: itself for a prompt (sequence > 1), else seqlens_k[batch]."""
    if sequence != 1:
        return row
    return x.from_element(tensor.extract(seqlens, [batch]), seqlens_t)


@lowers(
    "concat_past_present",
    to="linalg.generic over the cache: rows at the past length take the new rows (tensor.extract)",
)
def _concat_past_present(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    new_shape, seqlens_shape, cache_shape = (a.shape for a in ins.args)
    e, x = lowering.emitter, IndexMath(lowering)
    sequence = new_shape.lens[2]
    seqlens = e.reshape(args[1], seqlens_shape.lens, [seqlens_shape.elements])
    rank = cache_shape.ndim

    def body(coords: Values, scalars: Values) -> Values:
        old, _ = scalars
        b, h, r, d = coords
        past = x.const(0) if sequence != 1 else x.from_element(tensor.extract(seqlens, [b]), seqlens_shape.dtype)
        row = x.sub(r, past)
        inside = arith.andi(x.le(past, r), x.lt(row, sequence))
        fresh = tensor.extract(args[0], [b, h, x.clamp(row, 0, sequence - 1), d])
        return [arith.select(inside, fresh, old)]

    return indexed(lowering, ins.shape.dtype, ins.shape.lens, body, inputs=[(args[2], e.identity_map(rank))])


@lowers(
    "gqa_rotary_embedding",
    to="linalg.generic: query and key channels rotated by the cos/sin rows of their position (f32)",
)
def _gqa_rotary_embedding(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    if len(args) != 4:
        raise CannotLower(f"needs qkv, seqlens_k, cos and sin caches, got {len(args)} inputs")
    qkv_shape, seqlens_shape, cos_shape, _ = (a.shape for a in ins.args)
    e, s, x = lowering.emitter, lowering.scalars, IndexMath(lowering)
    t = qkv_shape.dtype
    if not t.is_float:
        raise CannotLower(f"rotary embedding of {t.type_name} has no lowering (floating-point types only)")
    sequence, head_size = qkv_shape.lens[2], qkv_shape.lens[3]
    half = cos_shape.lens[1]
    rotary = 2 * half
    if rotary > head_size:
        raise CannotLower(f"rotary width {rotary} exceeds head size {head_size}")
    rotated_heads = ins.op["num_heads"] + ins.op["kv_num_heads"]
    interleaved = ins.op["interleaved"]
    seqlens = e.reshape(args[1], seqlens_shape.lens, [seqlens_shape.elements])
    f32 = DType.float
    cache_t = cos_shape.dtype
    rows = cos_shape.lens[0]

    def body(coords: Values, scalars: Values) -> Values:
        value, _ = scalars
        b, h, r, d = coords
        position = x.clamp(_position(x, seqlens, seqlens_shape.dtype, b, r, sequence), 0, rows - 1)
        if interleaved:
            j = x.div(d, 2)
            odd = x.eq(x.rem(d, 2), 1)
            partner_channel = x.select(odd, x.sub(d, 1), x.add(d, 1))
            sign = odd  # the odd channel adds its partner's sine term
        else:
            upper = x.le(x.const(half), d)
            j = x.select(upper, x.sub(d, half), d)
            partner_channel = x.select(upper, x.sub(d, half), x.add(d, half))
            sign = upper
        rotated = arith.andi(x.lt(h, rotated_heads), x.lt(d, rotary))
        j = x.min(j, half - 1)
        partner_channel = x.min(partner_channel, head_size - 1)
        cos = s.to_float(tensor.extract(args[2], [position, j]), cache_t, f32)
        sin = s.to_float(tensor.extract(args[3], [position, j]), cache_t, f32)
        own = s.to_float(value, t, f32)
        partner = s.to_float(tensor.extract(args[0], [b, h, r, partner_channel]), t, f32)
        term = arith.mulf(partner, sin)
        out = arith.select(sign, arith.addf(arith.mulf(own, cos), term), arith.subf(arith.mulf(own, cos), term))
        return [arith.select(rotated, s.convert(out, f32, t), value)]

    return indexed(lowering, t, ins.shape.lens, body, inputs=[(args[0], e.identity_map(qkv_shape.ndim))])


@lowers(
    "multinomial",
    to="linalg.generic counting, in f64, the classes whose cdf is at most the scaled sample (searchsorted right)",
)
def _multinomial(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    cdf_shape, sample_shape = ins.args[0].shape, ins.args[1].shape
    s, x = lowering.scalars, IndexMath(lowering)
    wide = DType.double
    out_t = ins.shape.dtype
    classes = cdf_shape.lens[1]
    last_row = sample_shape.lens[0] - 1

    def count(coords: Values, scalars: Values) -> Values:
        (acc,) = scalars
        b, j, c = coords
        total = s.to_float(tensor.extract(args[0], [b, x.const(classes - 1)]), cdf_shape.dtype, wide)
        sample = s.to_float(tensor.extract(args[1], [x.min(b, last_row), j]), sample_shape.dtype, wide)
        bound = s.to_float(tensor.extract(args[0], [b, c]), cdf_shape.dtype, wide)
        below = s.cmp("le", bound, arith.mulf(sample, total), wide)
        return [arith.select(below, s.add(acc, s.const(1, out_t), out_t), acc)]

    init = lowering.emitter.filled(out_t, ins.shape.lens, 0)
    return indexed(lowering, out_t, ins.shape.lens, count, init=init, reduced=[classes])


NOT_WRITTEN = {
    "unknown:": "stands for an ONNX operator MIGraphX's parser did not support",
}


@lowers(*NOT_WRITTEN, to=lambda name: f"no: {NOT_WRITTEN[name]}")
def _not_written(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    raise CannotLower(f"no lowering to MLIR: {NOT_WRITTEN[ins.op.name]}")


# -- ops of MIGraphX's runtime --------------------------------------------------------------------

RUNTIME_ONLY = {
    "allocate": "a buffer of MIGraphX's memory planning (tensors are values in MLIR)",
    "load": "a view into MIGraphX's scratch buffer (memory planning has no meaning in MLIR)",
    "capture": "calls MIGraphX's int8 calibration callback at run time",
    "outline": "a placeholder without a value",
    "random_seed": "draws entropy at run time (not deterministic)",
    "split_fused_reduce": "partial reductions combined by MIGraphX's GPU runtime (assign_add, ...)",
}


@lowers(*RUNTIME_ONLY, to=lambda name: f"no: {RUNTIME_ONLY[name]}")
def _runtime_only(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    raise CannotLower(f"no lowering to MLIR: {RUNTIME_ONLY[ins.op.name]}")
