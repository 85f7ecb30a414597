"""Building blocks the lowering rules share: tensors of a shape, views, `linalg.generic` nests,
constants and scalar arithmetic with MIGraphX's signedness. Everything is built through the MLIR
Python bindings at the current insertion point."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, tensor, tosa

from mgxir.ir.dtype import DType
from mgxir.translate.mlir.types import RAW_BITS, UNSIGNED, TypeCache

PARALLEL = linalg.IteratorType.parallel
REDUCTION = linalg.IteratorType.reduction

# the types tosa's elementwise ops accept (its profiles: no f64, no unsigned, no i64 arithmetic)
TOSA_FLOATS = frozenset({DType.half, DType.float, DType.bf16})
TOSA_INTS = frozenset({DType.int8, DType.int16, DType.int32})

# body(scalars of the block) -> yielded scalars
Body = Callable[[list[ir.Value]], list[ir.Value]]


class Emitter:
    """Builds ops at the current insertion point; one per translation (it caches types and maps)."""

    def __init__(self, types: TypeCache) -> None:
        self.types = types
        self._identity_maps: dict[int, ir.AffineMapAttr] = {}

    # -- types and maps -------------------------------------------------------------------------

    def tensor_type(self, t: DType, lens: Sequence[int]) -> ir.RankedTensorType:
        return self.types.tensor(t, lens)

    def identity_map(self, rank: int) -> ir.AffineMapAttr:
        found = self._identity_maps.get(rank)
        if found is None:
            found = self._identity_maps[rank] = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
        return found

    @staticmethod
    def projection(rank: int, dims: Sequence[int]) -> ir.AffineMapAttr:
        """(d0, ..., d{rank-1}) -> (d{dims[0]}, ...)."""
        exprs = [ir.AffineDimExpr.get(d) for d in dims]
        return ir.AffineMapAttr.get(ir.AffineMap.get(rank, 0, exprs))

    # -- tensors --------------------------------------------------------------------------------

    def empty(self, t: DType, lens: Sequence[int | ir.Value]) -> ir.Value:
        """A `tensor.empty`; a size may be an index value (a dynamic dimension)."""
        return tensor.empty(list(lens), self.types.element(t))

    def filled(self, t: DType, lens: Sequence[int | ir.Value], value: float | int | bool) -> ir.Value:
        scalar = self.scalar_constant(value, t)
        return single(linalg.fill(scalar, outs=[self.empty(t, lens)]))

    def generic(
        self,
        inputs: Sequence[tuple[ir.Value, ir.AffineMapAttr]],
        outputs: Sequence[tuple[ir.Value, ir.AffineMapAttr]],
        iterators: Sequence[linalg.IteratorType],
        body: Body,
    ) -> list[ir.Value]:
        """A `linalg.generic`; `outputs` are (init tensor, map); `body` gets the block's scalars."""
        result_types = [v.type for v, _ in outputs]
        op = linalg.GenericOp(
            result_types,
            [v for v, _ in inputs],
            [v for v, _ in outputs],
            ir.ArrayAttr.get([m for _, m in (*inputs, *outputs)]),
            list(iterators),
        )
        element_types = [ir.RankedTensorType(v.type).element_type for v, _ in (*inputs, *outputs)]
        block = op.regions[0].blocks.append(*element_types)
        with ir.InsertionPoint(block):
            linalg.YieldOp(body(list(block.arguments)))
        return list(op.results)

    def elementwise(
        self,
        inputs: Sequence[tuple[ir.Value, Sequence[int]]],
        out_type: DType,
        lens: Sequence[int],
        body: Body,
    ) -> ir.Value:
        """A parallel `linalg.generic` over `lens`; an input of one element (any rank) is read as a
        scalar, others must have `lens`."""
        return self.elementwise_outputs(inputs, [out_type], lens, body)[0]

    def elementwise_outputs(
        self,
        inputs: Sequence[tuple[ir.Value, Sequence[int | None]]],
        out_types: Sequence[DType],
        lens: Sequence[int | None],
        body: Body,
    ) -> list[ir.Value]:
        """`elementwise` with one result per type of `out_types` (the body yields one each). A
        dynamic dimension (None) takes its size from an input of the same dimensions."""
        rank = len(lens)
        ins = []
        for value, in_lens in inputs:
            if tuple(in_lens) == tuple(lens):
                ins.append((value, self.identity_map(rank)))
            else:
                scalar = self.collapse(value, in_lens, [])
                ins.append((scalar, ir.AffineMapAttr.get(ir.AffineMap.get(rank, 0, []))))
        dims: Sequence[int | ir.Value] = lens  # type: ignore[assignment]
        if None in lens:
            source = next(v for v, in_lens in inputs if tuple(in_lens) == tuple(lens))
            dims = self.dims(source)
        outs = [(self.empty(t, dims), self.identity_map(rank)) for t in out_types]
        return self.generic(ins, outs, [PARALLEL] * rank, body)

    def dims(self, value: ir.Value) -> list[int | ir.Value]:
        """The sizes of a tensor: ints where its type has them, `tensor.dim` for `?`."""
        shape = ir.RankedTensorType(value.type).shape
        dynamic = ir.ShapedType.get_dynamic_size()
        return [tensor.dim(value, self.index(d)) if n == dynamic else n for d, n in enumerate(shape)]

    def collapse(self, value: ir.Value, lens: Sequence[int | None], keep: Sequence[int]) -> ir.Value:
        """Drops the size-1 dimensions of `value` that are not in `keep` (`tensor.collapse_shape`;
        a kept dimension may be dynamic, None)."""
        keep = sorted(keep)
        if len(keep) == len(lens):
            return value
        element = ir.RankedTensorType(value.type).element_type
        groups = _unit_groups(len(lens), keep)
        dynamic = ir.ShapedType.get_dynamic_size()
        result = ir.RankedTensorType.get([dynamic if lens[d] is None else lens[d] for d in keep], element)
        return tensor.collapse_shape(result, value, _reassociation(groups))

    def expand_units(self, value: ir.Value, out_sizes: Sequence[int | None], keep: Sequence[int]) -> ir.Value:
        """Inserts the size-1 dimensions of `out_sizes` that are not in `keep` (the inverse of
        `collapse`; dynamic dimensions allowed)."""
        if len(keep) == len(out_sizes):
            return value
        element = ir.RankedTensorType(value.type).element_type
        dynamic = ir.ShapedType.get_dynamic_size()
        result = ir.RankedTensorType.get([dynamic if n is None else n for n in out_sizes], element)
        dims = self.dims(value)
        position = {d: i for i, d in enumerate(sorted(keep))}
        output_shape = [dims[position[d]] for d, n in enumerate(out_sizes) if n is None]
        static = [dynamic if n is None else n for n in out_sizes]
        groups = _unit_groups(len(out_sizes), sorted(keep))
        return tensor.expand_shape(result, value, _reassociation(groups), output_shape, static)

    def split(self, value: ir.Value, axis: int, parts: Sequence[int | ir.Value]) -> ir.Value:
        """Splits dimension `axis` into `parts` (`tensor.expand_shape`; a part may be an index value,
        known at run time, and other dimensions may be dynamic)."""
        source = ir.RankedTensorType(value.type)
        shape = list(source.shape)
        dynamic = ir.ShapedType.get_dynamic_size()
        dims = self.dims(value)
        new_dims = [*dims[:axis], *parts, *dims[axis + 1 :]]
        static = [n if isinstance(n, int) else dynamic for n in new_dims]
        result = ir.RankedTensorType.get(static, source.element_type)
        groups = [[d] for d in range(axis)] + [list(range(axis, axis + len(parts)))]
        groups += [[d + len(parts) - 1] for d in range(axis + 1, len(shape))]
        output_shape = [n for n in new_dims if not isinstance(n, int)]
        return tensor.expand_shape(result, value, _reassociation(groups), output_shape, static)

    def merge(self, value: ir.Value, axis: int, count: int) -> ir.Value:
        """Merges `count` dimensions from `axis` into one (`tensor.collapse_shape`; dynamic if one
        of them is)."""
        source = ir.RankedTensorType(value.type)
        shape = list(source.shape)
        dynamic = ir.ShapedType.get_dynamic_size()
        merging = shape[axis : axis + count]
        merged = dynamic if dynamic in merging else int(np.prod(merging))
        result = ir.RankedTensorType.get([*shape[:axis], merged, *shape[axis + count :]], source.element_type)
        groups = [[d] for d in range(axis)] + [list(range(axis, axis + count))]
        groups += [[d] for d in range(axis + count, len(shape))]
        return tensor.collapse_shape(result, value, _reassociation(groups))

    def reshape(self, value: ir.Value, lens: Sequence[int], new_lens: Sequence[int]) -> ir.Value:
        """Any reshape of a static tensor: collapse to one dimension, expand to the new lens."""
        if tuple(lens) == tuple(new_lens):
            return value
        element = ir.RankedTensorType(value.type).element_type
        if not lens:  # a rank-0 tensor: expand straight to all-ones lens
            return tensor.expand_shape(
                ir.RankedTensorType.get(list(new_lens), element), value, _reassociation([]), [], list(new_lens)
            )
        n = int(np.prod(lens))
        flat = value
        if len(lens) != 1:
            flat = tensor.collapse_shape(
                ir.RankedTensorType.get([n], element), value, _reassociation([list(range(len(lens)))] if lens else [])
            )
        if len(new_lens) == 1:
            return flat
        result = ir.RankedTensorType.get(list(new_lens), element)
        if not new_lens:
            return tensor.collapse_shape(result, flat, _reassociation([]))
        return tensor.expand_shape(result, flat, _reassociation([list(range(len(new_lens)))]), [], list(new_lens))

    def broadcast(
        self, value: ir.Value, t: DType, lens: Sequence[int], out_lens: Sequence[int], placement: Sequence[int]
    ) -> ir.Value:
        """Input dimension i lands on output dimension placement[i]; size-1 dimensions that the
        output widens, and output dimensions no input dimension lands on, are broadcast."""
        kept = [i for i, n in enumerate(lens) if n == out_lens[placement[i]]]
        if len(kept) == len(lens) and len(lens) == len(out_lens):
            return value
        source = self.collapse(value, lens, kept)
        landed = {placement[i] for i in kept}
        added = [d for d in range(len(out_lens)) if d not in landed]
        init = self.empty(t, out_lens)
        return linalg.broadcast(source, outs=[init], dimensions=added).results[0]

    def extract_slice(
        self,
        value: ir.Value,
        result: ir.Type,
        offsets: Sequence[int],
        lens: Sequence[int | ir.Value],
        strides: Sequence[int],
    ) -> ir.Value:
        """`tensor.extract_slice` with static offsets and strides; a size may be an index value."""
        dynamic = ir.ShapedType.get_dynamic_size()
        values = [n for n in lens if not isinstance(n, int)]
        static = [n if isinstance(n, int) else dynamic for n in lens]
        return tensor.extract_slice(result, value, [], values, [], list(offsets), static, list(strides))

    def transpose(self, value: ir.Value, t: DType, lens: Sequence[int], perm: Sequence[int]) -> ir.Value:
        out_lens = [lens[p] for p in perm]
        if t in TOSA_FLOATS or t in TOSA_INTS or t is DType.bool:
            return tosa.transpose(self.tensor_type(t, out_lens), value, list(perm))
        return linalg.transpose(value, outs=[self.empty(t, out_lens)], permutation=list(perm)).results[0]

    # -- constants ------------------------------------------------------------------------------

    def constant(self, data: np.ndarray, t: DType) -> ir.Value:
        """An exact `arith.constant`; bf16 and fp8 hold their bits in an integer constant bitcast
        to the type (numpy cannot hand those buffers to MLIR)."""
        lens = list(data.shape)
        if t in RAW_BITS:
            bits = np.ascontiguousarray(data).view(t.bits_dtype)
            int_type = self.tensor_type(DType.uint16 if t.itemsize == 2 else DType.uint8, lens)
            raw = arith.constant(int_type, ir.DenseElementsAttr.get(bits, type=int_type))
            return arith.bitcast(self.tensor_type(t, lens), raw)
        array = np.ascontiguousarray(data)
        if t in UNSIGNED:
            array = array.view(np.dtype(f"i{t.itemsize}"))
        tt = self.tensor_type(t, lens)
        return arith.constant(tt, ir.DenseElementsAttr.get(array, type=tt))

    def scalar_constant(self, value: float | int | bool, t: DType) -> ir.Value:
        element = self.types.element(t)
        if t.is_float:
            return arith.constant(element, ir.FloatAttr.get(element, float(value)))
        if t is DType.bool:
            return arith.constant(element, ir.IntegerAttr.get(element, 1 if value else 0))
        ivalue = int(value)
        if t in UNSIGNED and ivalue >= 1 << (8 * t.itemsize - 1):
            ivalue -= 1 << (8 * t.itemsize)
        return arith.constant(element, ir.IntegerAttr.get(element, ivalue))

    def index(self, value: int) -> ir.Value:
        return arith.constant(self.types.index, ir.IntegerAttr.get(self.types.index, value))


def single(result: ir.Value | ir.OpResultList) -> ir.Value:
    """The one result of a builder that returns a result list (the opdsl-built linalg ops)."""
    return result[0] if isinstance(result, ir.OpResultList) else result


def _unit_groups(rank: int, keep: Sequence[int]) -> list[list[int]]:
    """The reassociation that folds each dimension not in `keep` into a neighbouring kept one."""
    groups: list[list[int]] = []
    pending: list[int] = []
    for d in range(rank):
        if d in keep:
            groups.append([*pending, d])
            pending = []
        elif groups:
            groups[-1].append(d)
        else:
            pending.append(d)
    if pending and groups:
        groups[-1].extend(pending)
    return groups


def _reassociation(groups: Sequence[Sequence[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g]) for g in groups])
