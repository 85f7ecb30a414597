"""Indexing that writes or counts: scatter (elements and nd), gathernd, onehot, nonzero and
prefix sums. A write to data-dependent positions lowers as a gather: each output element folds, in
order, the updates that address it (a `linalg.generic` with a reduction over the updates), so
repeated positions combine as MIGraphX's sequential loop does."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, tensor

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.mlir.families.indexed import IndexMath, indexed
from mgxir.translate.mlir.registry import lowers
from mgxir.translate.mlir.scalar import CannotLower, Scalars

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]

# the reduction after "scatter_"/"scatternd_" -> how an update combines with the value there
COMBINE: dict[str, Callable[[Scalars, ir.Value, ir.Value, DType], ir.Value]] = {
    "none": lambda s, old, new, t: new,
    "add": lambda s, old, new, t: s.add(old, new, t),
    "mul": lambda s, old, new, t: s.mul(old, new, t),
    "min": lambda s, old, new, t: s.min(old, new, t),
    "max": lambda s, old, new, t: s.max(old, new, t),
}
SCATTERS = [f"scatter_{r}" for r in COMBINE]
SCATTER_NDS = [f"scatternd_{r}" for r in COMBINE]


def _combine(name: str) -> Callable[[Scalars, ir.Value, ir.Value, DType], ir.Value]:
    return COMBINE[name.rsplit("_", 1)[1]]


@lowers(
    *SCATTERS,
    to="linalg.generic over the output reducing over the index axis: tensor.extract of index and update, "
    "combined where the index names the element (out-of-range indices write nothing)",
)
def _scatter_elements(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    data_shape, index_shape, update_shape = (a.shape for a in ins.args)
    data, indices, updates = args
    rank = data_shape.ndim
    if index_shape.ndim != rank or update_shape.ndim != rank:
        raise CannotLower("data, indices and updates must have the same rank")
    axis = ins.op["axis"] + rank if ins.op["axis"] < 0 else ins.op["axis"]
    n = data_shape.lens[axis]
    t = data_shape.dtype
    combine = _combine(ins.op.name)
    x, s = IndexMath(lowering), lowering.scalars

    def body(coords: Values, scalars: Values) -> Values:
        (acc,) = scalars
        r = coords[rank]
        inside = []
        at = []
        for d in range(rank):
            if d == axis:
                at.append(r)
                continue
            if data_shape.lens[d] > index_shape.lens[d]:  # the indices may not cover this dimension
                inside.append(x.lt(coords[d], index_shape.lens[d]))
                at.append(x.min(coords[d], index_shape.lens[d] - 1))
            else:
                at.append(coords[d])
        position = x.wrapped(x.from_element(tensor.extract(indices, at), index_shape.dtype), n)
        hit = x.all([*inside, x.eq(position, coords[axis])])
        update = tensor.extract(updates, at)
        return [arith.select(hit, combine(s, acc, update, t), acc)]

    return indexed(lowering, t, data_shape.lens, body, init=data, reduced=[index_shape.lens[axis]])


@lowers(
    *SCATTER_NDS,
    to="linalg.generic over the output reducing over the index tuples: the tuple's offset compared with "
    "the element's, the update read through an affine map",
)
def _scatter_nd(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    data_shape, index_shape, update_shape = (a.shape for a in ins.args)
    data, indices, updates = args
    e, s, x = lowering.emitter, lowering.scalars, IndexMath(lowering)
    k = index_shape.lens[-1]
    count = int(np.prod(index_shape.lens[:-1]))
    rank = data_shape.ndim
    block = list(data_shape.lens[k:])
    tuples = e.reshape(indices, index_shape.lens, [count, k])
    rows = e.reshape(updates, update_shape.lens, [count, *block])
    domain = rank + 1
    update_map = e.projection(domain, [rank, *range(k, rank)])
    strides = [int(np.prod(data_shape.lens[d + 1 : k], dtype=np.int64)) for d in range(k)]
    t = data_shape.dtype
    combine = _combine(ins.op.name)

    def body(coords: Values, scalars: Values) -> Values:
        update, acc = scalars
        wanted = x.linear(coords[:k], data_shape.lens[:k])
        offset = x.const(0)
        for j in range(k):
            index = x.from_element(tensor.extract(tuples, [coords[rank], x.const(j)]), index_shape.dtype)
            offset = x.add(offset, x.mul(index, strides[j]))
        return [arith.select(x.eq(offset, wanted), combine(s, acc, update, t), acc)]

    return indexed(lowering, t, data_shape.lens, body, inputs=[(rows, update_map)], init=data, reduced=[count])


@lowers("gathernd", to="linalg.generic over the output reading the data with tensor.extract")
def _gathernd(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    data_shape, index_shape = ins.args[0].shape, ins.args[1].shape
    data, indices = args
    x = IndexMath(lowering)
    b = ins.op["batch_dims"]
    k = index_shape.lens[-1]
    q = index_shape.ndim
    logical = [*index_shape.lens[: q - 1], *data_shape.lens[b + k :]]
    out_lens = ins.shape.lens

    def body(coords: Values, scalars: Values) -> Values:
        if len(logical) != len(out_lens):  # MIGraphX's {1} for a scalar result
            coords = []
        lead = coords[: q - 1]
        at = []
        for j in range(k):
            index = x.from_element(tensor.extract(indices, [*lead, x.const(j)]), index_shape.dtype)
            at.append(x.wrapped(index, data_shape.lens[b + j]))
        return [tensor.extract(data, [*lead[:b], *at, *coords[q - 1 :]])]

    return indexed(lowering, ins.shape.dtype, out_lens, body)


@lowers("onehot", to="linalg.generic comparing each index with the class coordinate (depth attribute form)")
def _onehot(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    if ins.op["depth"] is None:
        raise CannotLower("the depth-input form has a data-dependent shape")
    index_shape = ins.args[0].shape
    e, x = lowering.emitter, IndexMath(lowering)
    rank = ins.shape.ndim
    axis = ins.op["axis"] + rank if ins.op["axis"] < 0 else ins.op["axis"]
    depth = ins.op["depth"]
    values = e.reshape(args[1], ins.args[1].shape.lens, [ins.args[1].shape.elements])
    index_map = e.projection(rank, [d for d in range(rank) if d != axis])

    def body(coords: Values, scalars: Values) -> Values:
        index = x.wrapped(x.from_element(scalars[0], index_shape.dtype), depth)
        return [tensor.extract(values, [x.select(x.eq(index, coords[axis]), 1, 0)])]

    return indexed(lowering, ins.shape.dtype, ins.shape.lens, body, inputs=[(args[0], index_map)])


@lowers(
    "nonzero",
    to="two linalg.generics: each element's rank among the nonzeros (a triangular count), then each "
    "output column gathers the coordinates of the element of its rank (O(n²))",
)
def _nonzero(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    e, s, x = lowering.emitter, lowering.scalars, IndexMath(lowering)
    n = source.elements
    flat = e.reshape(args[0], source.lens, [n])
    t = source.dtype

    def nonzero_at(position: ir.Value) -> ir.Value:
        return s.truthy(tensor.extract(flat, [position]), t)

    def count_before(coords: Values, scalars: Values) -> Values:
        (acc,) = scalars
        before = arith.andi(x.lt(coords[1], coords[0]), nonzero_at(coords[1]))
        return [x.select(before, x.add(acc, 1), acc)]

    zero = e.filled(DType.int64, [n], 0)
    rank_of = indexed(lowering, DType.int64, [n], _as_i64(x, count_before), init=zero, reduced=[n])

    def gather(coords: Values, scalars: Values) -> Values:
        (acc,) = scalars
        d, j, element = coords
        rank = x.from_element(tensor.extract(rank_of, [element]), DType.int64)
        hit = arith.andi(nonzero_at(element), x.eq(rank, j))
        coordinate = _coordinate(x, element, source.lens, d)
        return [arith.select(hit, x.to_element(coordinate, DType.int64), acc)]

    init = e.filled(DType.int64, ins.shape.lens, 0)
    return indexed(lowering, DType.int64, ins.shape.lens, gather, init=init, reduced=[n])


def _as_i64(x: IndexMath, body: Callable[[Values, Values], Values]) -> Callable[[Values, Values], Values]:
    """A body written in index arithmetic over an i64 accumulator."""

    def wrapped(coords: Values, scalars: Values) -> Values:
        acc = x.from_element(scalars[0], DType.int64)
        return [x.to_element(v, DType.int64) for v in body(coords, [acc])]

    return wrapped


def _coordinate(x: IndexMath, offset: ir.Value, lens: tuple[int, ...], d: ir.Value) -> ir.Value:
    """Coordinate `d` (a runtime index) of a row-major offset."""
    result = x.const(0)
    for axis, coordinate in enumerate(x.delinearize(offset, lens)):
        result = x.select(x.eq(d, axis), coordinate, result)
    return result


@lowers(
    "prefix_scan_sum",
    to="linalg.generic reducing over the scanned axis where the element precedes (a triangular sum)",
)
def _prefix_scan_sum(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    t = source.dtype
    if t is DType.bool:
        raise CannotLower("prefix_scan_sum of bool_type has no lowering")
    e, s, x = lowering.emitter, lowering.scalars, IndexMath(lowering)
    rank = source.ndim
    axis = ins.op["axis"] + rank if ins.op["axis"] < 0 else ins.op["axis"]
    n = source.lens[axis]
    exclusive, reverse = ins.op["exclusive"], ins.op["reverse"]
    source_map = e.projection(rank + 1, [rank if d == axis else d for d in range(rank)])

    def body(coords: Values, scalars: Values) -> Values:
        value, acc = scalars
        i, j = coords[axis], coords[rank]
        first, second = (i, j) if reverse else (j, i)  # `first` precedes `second` in the scan
        counted = x.lt(first, second) if exclusive else x.le(first, second)
        return [arith.select(counted, s.add(acc, value, t), acc)]

    init = e.filled(t, source.lens, 0)
    return indexed(lowering, t, source.lens, body, inputs=[(args[0], source_map)], init=init, reduced=[n])
