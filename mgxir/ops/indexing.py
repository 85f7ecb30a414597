"""Indexing operators that write or count: scatter (elements and nd), onehot, unique."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from mgxir.ir.attributes import BOOL, INT, Attr, OptionalKind
from mgxir.ir.dtype import DType
from mgxir.ir.operation import ComputeError, OpDef, Operation, RunModule, RuntimeValue
from mgxir.ir.registry import register
from mgxir.ir.shape import DynamicDimension, Shape
from mgxir.ops.common import fail, lens_text, normalize_axis, require_static

if TYPE_CHECKING:
    from mgxir.ir.module import Module

Shapes = Sequence[Shape]
Modules = Sequence["Module"]
Arrays = list[np.ndarray]

# how a scattered update combines with the value already there
Combine = Callable[[np.ndarray, np.ndarray], np.ndarray] | None
REDUCTIONS: dict[str, Combine] = {
    "none": None,
    "add": np.add,
    "mul": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
}


def _scatter_into(out: np.ndarray, positions: tuple[np.ndarray, ...], updates: np.ndarray, combine: Combine) -> None:
    """Writes updates element by element in order, so repeated positions combine as MIGraphX's loop."""
    for k in range(updates.size):
        where = tuple(int(p[k]) for p in positions)
        out[where] = updates.flat[k] if combine is None else combine(out[where], updates.flat[k])


class _ScatterElements(OpDef):
    """ONNX ScatterElements: out = data; out[..., indices[i], ...] (combine)= updates[i] along axis."""

    reduction: ClassVar[str] = "none"
    attributes = (Attr("axis", INT, 0), Attr("skip_out_of_bounds", BOOL, False))
    arity = (3, 3)
    axis_attributes = {"axis": "input"}

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        # MIGraphX checks nothing more (and takes no dynamic shape): each index reads the update at
        # its own position
        require_static(self.name, *inputs)
        data = inputs[0]
        normalize_axis(self.name, op["axis"], data.ndim)
        return data.with_lens(data.lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        data, indices, updates = inputs
        axis = normalize_axis(self.name, op["axis"], data.ndim)
        n = data.shape[axis]
        index = indices.astype(np.int64)
        index = np.where(index < 0, index + n, index)
        valid = (index >= 0) & (index < n)
        if not valid.all() and not op["skip_out_of_bounds"]:
            bad = indices.flat[int(np.argmin(valid.reshape(-1)))]
            raise ComputeError(f"{self.name}: index {bad} is out of range for dimension {axis} of size {n}")
        grid = list(np.indices(indices.shape))
        if indices.ndim != data.ndim or updates.ndim != indices.ndim:
            raise ComputeError(f"{self.name}: data, indices and updates must have the same rank")
        if any(u < n for u, n in zip(updates.shape, indices.shape)):
            raise ComputeError(
                f"{self.name}: updates {lens_text(updates.shape)} are smaller than indices {lens_text(indices.shape)}"
            )
        updates = updates[tuple(grid)]
        grid[axis] = index
        positions = tuple(g[valid] for g in grid)
        out = np.array(data, copy=True)
        _scatter_into(out, positions, updates[valid], REDUCTIONS[self.reduction])
        return out


class _ScatterNd(OpDef):
    """ONNX ScatterND: indices {..., k} address the first k dimensions of data."""

    reduction: ClassVar[str] = "none"
    arity = (3, 3)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        data, indices, updates = inputs
        require_static(self.name, data, indices, updates)
        k = indices.lens[-1] if indices.ndim else 0
        if not 1 <= k <= data.ndim:
            raise fail(self.name, f"the last dimension of indices ({k}) must be in 1..{data.ndim}")
        want = (*indices.lens[:-1], *data.lens[k:])
        if updates.lens != want:
            raise fail(self.name, f"updates are {lens_text(updates.lens)}, expected {lens_text(want)}")
        if updates.dtype != data.dtype:
            raise fail(self.name, f"updates have type {updates.dtype.type_name}, data has {data.dtype.type_name}")
        if data.broadcasted:
            return Shape.make(data.dtype, data.lens)
        return data.with_lens(data.lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        # MIGraphX takes each index tuple as unsigned coordinates and writes at their offset in the
        # output: a negative index is not counted from the end, it moves the offset back (with
        # wrap-around arithmetic), and an offset outside the buffer is undefined behaviour there.
        data, indices, updates = inputs
        k = indices.shape[-1]
        out = np.array(data, copy=True, order="C")
        flat = out.reshape(-1)
        strides = np.array([int(np.prod(data.shape[d + 1 :], dtype=np.int64)) for d in range(data.ndim)], np.int64)
        combine = REDUCTIONS[self.reduction]
        tuples = indices.reshape(-1, k).astype(np.int64)
        block = int(np.prod(data.shape[k:], dtype=np.int64))
        slices = updates.reshape(len(tuples), block)
        for address, update in zip(tuples, slices):
            offset = int(np.dot(address, strides[:k]))
            if offset < 0 or offset + block > flat.size:
                raise ComputeError(
                    f"{self.name}: index {lens_text(address.tolist())} addresses offset {offset}, outside the "
                    f"{flat.size} elements of the output (MIGraphX writes outside its buffer)"
                )
            target = flat[offset : offset + block]
            flat[offset : offset + block] = update if combine is None else combine(target, update)
        return out


for _reduction in REDUCTIONS:
    register(
        type(f"Scatter_{_reduction}", (_ScatterElements,), {"name": f"scatter_{_reduction}", "reduction": _reduction})
    )
    register(
        type(f"ScatterNd_{_reduction}", (_ScatterNd,), {"name": f"scatternd_{_reduction}", "reduction": _reduction})
    )


@register
class Onehot(OpDef):
    """Inputs (indices, values={off, on}) with a `depth` attribute, or (indices, depth, values)."""

    name = "onehot"
    attributes = (Attr("axis", INT, -1), Attr("depth", OptionalKind(INT), None))
    arity = (2, 3)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        indices = inputs[0]
        axis = normalize_axis(self.name, op["axis"], indices.ndim + 1)
        depth = op["depth"]
        if depth is None:
            if len(inputs) != 3:
                raise fail(self.name, "without a depth attribute it takes (indices, depth, values)")
            dims = list(indices.dyn_dims if indices.is_dynamic else [DynamicDimension(n, n) for n in indices.lens])
            dims.insert(axis, DynamicDimension(0, 2**64 - 1))
            return Shape.dynamic(inputs[2].dtype, dims)
        if len(inputs) != 2:
            raise fail(self.name, "with a depth attribute it takes (indices, values)")
        if depth < 0:
            raise fail(self.name, f"depth {depth} is negative")
        if indices.is_dynamic:
            dims = list(indices.dyn_dims)
            dims.insert(axis, DynamicDimension(depth, depth))
            return Shape.dynamic(inputs[1].dtype, dims)
        lens = list(indices.lens)
        lens.insert(axis, depth)
        return Shape.make(inputs[1].dtype, lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        indices = inputs[0].astype(np.int64)
        depth = op["depth"] if op["depth"] is not None else int(inputs[1].reshape(-1)[0])
        if depth < 0:
            raise ComputeError(f"{self.name}: depth {depth} is negative")
        values = inputs[-1].reshape(-1)
        axis = normalize_axis(self.name, op["axis"], indices.ndim + 1)
        index = np.where(indices < 0, indices + depth, indices)
        classes = np.arange(depth).reshape((depth,) + (1,) * indices.ndim)
        hot = np.moveaxis(classes == index[None], 0, axis)
        return np.where(hot, values[1], values[0]).astype(values.dtype)


@register
class Unique(OpDef):
    """ONNX Unique: a tuple (values, first index of each, index of each input in values, counts)."""

    name = "unique"
    attributes = (Attr("axis", OptionalKind(INT), None), Attr("sorted", BOOL, True))
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        require_static(self.name, x)
        if op["axis"] is None:
            dims = [DynamicDimension(1, x.elements)]
        else:
            if normalize_axis(self.name, op["axis"], x.ndim) != 0:
                raise fail(self.name, f"only axis 0 or none is supported, got {op['axis']}")
            dims = [DynamicDimension(1, x.lens[0])] + [DynamicDimension(n, n) for n in x.lens[1:]]
        index = Shape.dynamic(DType.int64, dims[:1])
        return Shape.tuple_of([Shape.dynamic(x.dtype, dims), index, index, index])

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x = inputs[0]
        rows = x.reshape(-1) if op["axis"] is None else x.reshape(x.shape[0], -1)
        values, first, inverse, counts = np.unique(
            rows, return_index=True, return_inverse=True, return_counts=True, axis=0
        )
        inverse = inverse.reshape(-1)
        if not op["sorted"]:
            order = np.argsort(first, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            values, first, counts, inverse = values[order], first[order], counts[order], rank[inverse]
        if op["axis"] is not None:
            values = values.reshape(-1, *x.shape[1:])
        as_int64 = [a.astype(np.int64) for a in (first, inverse, counts)]
        return (values.astype(x.dtype), *as_int64)
