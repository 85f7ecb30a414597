"""Views and data movement: the values of MIGraphX's views (broadcast, transpose, slice, reshape)
are tensors, so a view lowers to the op that produces its value; a layout-only op lowers to nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tensor, tosa

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.mlir.emitter import PARALLEL, TOSA_FLOATS, TOSA_INTS
from mgxir.translate.mlir.registry import lowers, sizes
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
    to="tensor.collapse_shape + tensor.expand_shape; dynamic: squeeze/unsqueeze move unit dimensions "
    "(collapse/expand_shape), reshape's two-input form is tensor.reshape to the second input's sizes",
    dynamic=True,
)
def _reshape(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    e = lowering.emitter
    source = ins.args[0].shape
    dynamic = source.is_dynamic or ins.shape.is_dynamic
    if len(args) == 2 and ins.op.name == "reshape":  # shaped like the second input
        if not dynamic:
            return e.reshape(args[0], source.lens, ins.shape.lens)
        dims = [n if isinstance(n, ir.Value) else e.index(n) for n in e.dims(args[1])]
        shape = tensor.from_elements(ir.RankedTensorType.get([len(dims)], lowering.types.index), dims)
        return tensor.reshape(lowering.types.of_shape(ins.shape), args[0], shape)
    if len(args) != 1:
        raise CannotLower("the variable-input form has no lowering")
    if not dynamic:
        return e.reshape(args[0], source.lens, ins.shape.lens)
    if ins.op.name not in ("squeeze", "unsqueeze"):
        raise CannotLower("a dynamic input has no lowering in the one-input form (MIGraphX takes the two-input form)")
    in_sizes, out_sizes = sizes(source), sizes(ins.shape)
    if ins.op.name == "squeeze":
        axes = _normalized(ins.op["axes"], len(in_sizes)) or [i for i, n in enumerate(in_sizes) if n == 1]
        return e.collapse(args[0], in_sizes, [i for i in range(len(in_sizes)) if i not in axes])
    axes = _normalized(ins.op["axes"], len(out_sizes))
    return e.expand_units(args[0], out_sizes, [i for i in range(len(out_sizes)) if i not in axes])


def _normalized(axes: list[int], rank: int) -> list[int]:
    return [a + rank if a < 0 else a for a in axes]


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


@lowers(
    "multibroadcast",
    to="tensor.collapse_shape + linalg.broadcast (dynamic: the output's sizes from the inputs' tensor.dim)",
    dynamic=True,
)
def _multibroadcast(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    offset = ins.shape.ndim - source.ndim
    placement = [offset + i for i in range(source.ndim)]
    if not ins.shape.is_dynamic:
        return lowering.emitter.broadcast(args[0], source.dtype, source.lens, ins.shape.lens, placement)
    # each dynamic output dimension has the size of an input's dynamic dimension that lands on it
    out_sizes = sizes(ins.shape)
    found: dict[int, ir.Value] = {}
    for value, arg in zip(args, ins.args):
        arg_sizes = sizes(arg.shape)
        shift = len(out_sizes) - len(arg_sizes)
        for d, n in enumerate(arg_sizes):
            if n is None and out_sizes[shift + d] is None and shift + d not in found:
                found[shift + d] = tensor.dim(value, lowering.emitter.index(d))
    return _broadcast_dynamic(lowering, ins, args[0], placement, out_sizes, found)


def _broadcast_dynamic(
    lowering: Lowering,
    ins: Instruction,
    value: ir.Value,
    placement: list[int],
    out_sizes: list[int | None],
    found: dict[int, ir.Value],
) -> ir.Value:
    missing = [d for d, n in enumerate(out_sizes) if n is None and d not in found]
    if missing:
        raise CannotLower(f"no input gives the size of dynamic output dimension {missing[0]}")
    out_dims = [found[d] if n is None else n for d, n in enumerate(out_sizes)]
    source = ins.args[0].shape
    return lowering.emitter.broadcast_dims(value, source.dtype, sizes(source), out_dims, placement)


@lowers(
    "broadcast",
    to="tensor.collapse_shape + linalg.broadcast (dynamic: the second input's sizes, tensor.dim)",
    dynamic=True,
)
def _broadcast(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    axis = ins.op["axis"]
    placement = [axis + i for i in range(source.ndim)]
    if not ins.shape.is_dynamic and not source.is_dynamic:
        return lowering.emitter.broadcast(args[0], source.dtype, source.lens, ins.shape.lens, placement)
    out_sizes = sizes(ins.shape)
    found = {}
    if len(args) == 2:
        found = {d: n for d, n in enumerate(lowering.emitter.dims(args[1])) if isinstance(n, ir.Value)}
    return _broadcast_dynamic(lowering, ins, args[0], placement, out_sizes, found)


@lowers(
    "broadcast_with_dims",
    to="linalg.broadcast into tensor.empty of numpy's broadcast of the input's sizes with the dims input's "
    "values (tensor.extract), tensor.cast to the result's `?` type",
    dynamic=True,
)
def _broadcast_with_dims(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    e = lowering.emitter
    source, dims_shape = ins.args[0].shape, ins.args[1].shape
    if not dims_shape.dtype.is_integral:
        raise CannotLower("the dims input must hold integers")
    in_sizes = sizes(source)
    rank = ins.shape.ndim
    offset = rank - len(in_sizes)
    count = dims_shape.elements
    given = rank - count  # output dimension d reads dims[d - given]
    flat = e.reshape(args[1], dims_shape.lens, [count])
    out_dims: list[int | ir.Value] = []
    for d in range(rank):
        n = in_sizes[d - offset] if d >= offset else 1
        if n is None or n != 1 or d < given:  # the input's size (a dynamic one is taken as it is)
            out_dims.append(e.dims(args[0])[d - offset] if n is None else n)
            continue
        wanted = tensor.extract(flat, [e.index(d - given)])
        out_dims.append(arith.index_cast(lowering.types.index, wanted))
    placement = [offset + i for i in range(len(in_sizes))]
    value = e.broadcast_dims(args[0], source.dtype, in_sizes, out_dims, placement)
    result = lowering.types.of_shape(ins.shape)
    return value if value.type == result else tensor.cast(result, value)


@lowers("slice", to="tensor.extract_slice (dynamic dimensions: of their tensor.dim size)", dynamic=True)
def _slice(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    if len(args) != 1:
        raise CannotLower("the variable-input form has no lowering")
    source_sizes = sizes(ins.args[0].shape)
    out_sizes = sizes(ins.shape)
    rank = len(source_sizes)
    offsets = [0] * rank
    for axis, start in zip(ins.op["axes"], ins.op["starts"]):
        axis = axis + rank if axis < 0 else axis
        n = source_sizes[axis]
        assert n is not None  # MIGraphX slices only fixed dimensions of a dynamic shape
        offsets[axis] = max(0, min(n, start + n if start < 0 else start))
    if out_sizes == source_sizes:
        return args[0]
    offsets = [o if n else 0 for o, n in zip(offsets, out_sizes)]  # an empty slice may start at the end
    e = lowering.emitter
    dims = e.dims(args[0])
    lens = [dims[d] if n is None else n for d, n in enumerate(out_sizes)]
    return e.extract_slice(args[0], lowering.types.of_shape(ins.shape), offsets, lens, [1] * rank)


@lowers("concat", to="tensor.concat", dynamic=True)
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
    dynamic = ir.ShapedType.get_dynamic_size()
    lens = [dynamic if n == dynamic else n + a + b for n, a, b in zip(source.shape, low, high)]
    op = tensor.PadOp(lowering.types.tensor(t, lens), value, [], [], list(low), list(high))
    block = op.regions[0].blocks.append(*[lowering.types.index] * len(lens))
    with ir.InsertionPoint(block):
        tensor.YieldOp(lowering.emitter.scalar_constant(fill, t))
    return op.result


@lowers("gather", to="linalg.generic reading the data with tensor.extract", dynamic=True)
def _gather(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    data_shape, index_shape = ins.args[0].shape, ins.args[1].shape
    data, indices = args
    axis = ins.op["axis"]
    axis = axis + data_shape.ndim if axis < 0 else axis
    scalar_index = not index_shape.is_dynamic and index_shape.scalar and index_shape.lens == (1,)
    index_rank = 0 if scalar_index else index_shape.ndim
    rank = ins.shape.ndim
    logical = data_shape.ndim - 1 + index_rank  # rank of the result before MIGraphX's {1} for a scalar
    e = lowering.emitter
    data_dims, index_dims = e.dims(data), e.dims(indices)
    if scalar_index:
        index_input = (e.collapse(indices, index_shape.lens, []), ir.AffineMapAttr.get(ir.AffineMap.get(rank, 0, [])))
        out_dims = [*data_dims[:axis], *data_dims[axis + 1 :]] or [1]
    else:
        index_input = (indices, e.projection(rank, range(axis, axis + index_rank)))
        out_dims = [*data_dims[:axis], *index_dims, *data_dims[axis + 1 :]]
    init = e.empty(ins.shape.dtype, out_dims)
    n = data_dims[axis]
    index_t = lowering.types.index
    index_dtype = index_shape.dtype

    def body(scalars: Values) -> Values:
        position = scalars[0]
        if not index_dtype.is_integral:
            raise CannotLower("gather indices must be integers")
        position = arith.index_cast(index_t, position)
        bound = e.index(n) if isinstance(n, int) else n
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
