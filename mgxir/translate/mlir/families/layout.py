"""Views and data movement: the values of MIGraphX's views (broadcast, transpose, slice, reshape)
are tensors, so a view lowers to the op that produces its value; a layout-only op lowers to nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tensor, tosa

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.mlir.emitter import PARALLEL, TOSA_FLOATS, TOSA_INTS
from mgxir.translate.mlir.registry import lowers
from mgxir.translate.mlir.scalar import CannotLower

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]


@lowers("contiguous", "identity", "layout", to="nothing: a tensor has no layout (the argument's value)", dynamic=True)
def _same_value(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    return args[0]


@lowers(
    "reshape",
    "reshape_lazy",
    "squeeze",
    "unsqueeze",
    "flatten",
    to="tensor.collapse_shape + tensor.expand_shape",
)
def _reshape(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    if len(args) != 1:
        raise CannotLower("the variable-input form has no lowering")
    return lowering.emitter.reshape(args[0], ins.args[0].shape.lens, ins.shape.lens)


@lowers("transpose", to="tosa.transpose (linalg.transpose for types tosa lacks and dynamic dimensions)", dynamic=True)
def _transpose(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    perm = ins.op["permutation"]
    if list(perm) == list(range(len(perm))):
        return args[0]
    if ins.shape.is_dynamic:
        e = lowering.emitter
        dims = e.dims(args[0])
        init = e.empty(ins.shape.dtype, [dims[p] for p in perm])
        return linalg.transpose(args[0], outs=[init], permutation=list(perm)).results[0]
    return lowering.emitter.transpose(args[0], ins.shape.dtype, ins.args[0].shape.lens, perm)


@lowers("multibroadcast", to="tensor.collapse_shape + linalg.broadcast")
def _multibroadcast(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    out = ins.shape.lens
    offset = len(out) - source.ndim
    placement = [offset + i for i in range(source.ndim)]
    return lowering.emitter.broadcast(args[0], source.dtype, source.lens, out, placement)


@lowers("broadcast", to="tensor.collapse_shape + linalg.broadcast")
def _broadcast(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    axis = ins.op["axis"]
    placement = [axis + i for i in range(source.ndim)]
    return lowering.emitter.broadcast(args[0], source.dtype, source.lens, ins.shape.lens, placement)


@lowers("slice", to="tensor.extract_slice")
def _slice(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    if len(args) != 1:
        raise CannotLower("the variable-input form has no lowering")
    lens = ins.args[0].shape.lens
    offsets = [0] * len(lens)
    rank = len(lens)
    for axis, start in zip(ins.op["axes"], ins.op["starts"]):
        axis = axis + rank if axis < 0 else axis
        n = lens[axis]
        offsets[axis] = max(0, min(n, start + n if start < 0 else start))
    if list(ins.shape.lens) == list(lens):
        return args[0]
    offsets = [o if n else 0 for o, n in zip(offsets, ins.shape.lens)]  # an empty slice may start at the end
    result = lowering.types.of_shape(ins.shape)
    return tensor.extract_slice(result, args[0], [], [], [], offsets, list(ins.shape.lens), [1] * rank)


@lowers("concat", to="tensor.concat")
def _concat(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    if len(args) == 1:
        return args[0]
    axis = ins.op["axis"]
    axis = axis + ins.shape.ndim if axis < 0 else axis
    return tensor.concat(lowering.types.of_shape(ins.shape), axis, args)


@lowers("reverse", to="tosa.reverse, one per axis")
def _reverse(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    t = ins.shape.dtype
    if t not in TOSA_FLOATS | TOSA_INTS | {DType.bool}:
        raise CannotLower(f"reverse of {t.type_name} has no lowering (tosa.reverse types only)")
    result = lowering.types.of_shape(ins.shape)
    value = args[0]
    rank = ins.shape.ndim
    for axis in ins.op["axes"]:
        value = tosa.reverse(result, value, axis + rank if axis < 0 else axis)
    return value


@lowers("pad", to="tensor.pad with a constant (constant mode)")
def _pad(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    if ins.op["mode"] != 0:
        raise CannotLower("reflect and edge padding have no lowering")
    pads = ins.op["pads"]
    rank = ins.shape.ndim
    if any(p < 0 for p in pads):
        raise CannotLower("negative padding has no lowering")
    return pad_constant(lowering, args[0], ins.shape.dtype, pads[:rank], pads[rank:], ins.op["value"])


def pad_constant(
    lowering: Lowering, value: ir.Value, t: DType, low: list[int], high: list[int], fill: float
) -> ir.Value:
    """`tensor.pad` of `value` with `fill`."""
    if not any(low) and not any(high):
        return value
    source = ir.RankedTensorType(value.type)
    lens = [n + a + b for n, a, b in zip(source.shape, low, high)]
    op = tensor.PadOp(lowering.types.tensor(t, lens), value, [], [], list(low), list(high))
    block = op.regions[0].blocks.append(*[lowering.types.index] * len(lens))
    with ir.InsertionPoint(block):
        tensor.YieldOp(lowering.emitter.scalar_constant(fill, t))
    return op.result


@lowers("gather", to="linalg.generic reading the data with tensor.extract")
def _gather(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    data_shape, index_shape = ins.args[0].shape, ins.args[1].shape
    data, indices = args
    axis = ins.op["axis"]
    axis = axis + data_shape.ndim if axis < 0 else axis
    scalar_index = index_shape.scalar and index_shape.lens == (1,)
    index_rank = 0 if scalar_index else index_shape.ndim
    out_lens = ins.shape.lens
    rank = len(out_lens)
    logical = data_shape.ndim - 1 + index_rank  # rank of the result before MIGraphX's {1} for a scalar
    e = lowering.emitter
    if scalar_index:
        index_input = (e.collapse(indices, index_shape.lens, []), ir.AffineMapAttr.get(ir.AffineMap.get(rank, 0, [])))
    else:
        index_input = (indices, e.projection(rank, range(axis, axis + index_rank)))
    init = e.empty(ins.shape.dtype, out_lens)
    n = data_shape.lens[axis]
    index_t = lowering.types.index
    index_dtype = index_shape.dtype

    def body(scalars: Values) -> Values:
        position = scalars[0]
        if not index_dtype.is_integral:
            raise CannotLower("gather indices must be integers")
        position = arith.index_cast(index_t, position)
        bound = e.index(n)
        negative = arith.cmpi(arith.CmpIPredicate.slt, position, e.index(0))
        position = arith.select(negative, arith.addi(position, bound), position)
        coords: Values = []
        for d in range(data_shape.ndim):
            if d < axis:
                coords.append(linalg.IndexOp(d).result if logical else e.index(0))
            elif d == axis:
                coords.append(position)
            else:
                coords.append(linalg.IndexOp(d - 1 + index_rank).result if logical else e.index(0))
        return [tensor.extract(data, coords)]

    return e.generic([index_input], [(init, e.identity_map(rank))], [PARALLEL] * rank, body)[0]
