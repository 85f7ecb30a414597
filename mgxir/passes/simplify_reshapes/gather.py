"""simplify_reshapes rewrites of gather: find_gather_scalar (a gather by a scalar index becomes a
gather by a one-element index, reshaped back) and find_gather (a gather by constant indices that
walk the flattened data in a regular, strided pattern becomes views of the data: reshapes,
transposes, broadcasts and slices)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from mgxir.analysis.shape_transform_descriptor import ShapeTransformDescriptor, invert_permutation
from mgxir.interp.interpreter import Interpreter
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import Operation
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape, find_permutation
from mgxir.ops.common import normalize_axis
from mgxir.passes.propagate_constant import evaluate_constant
from mgxir.passes.rewrite import MATCHED_UNCHANGED, Rewriter, pattern
from mgxir.passes.simplify_reshapes.nested import insert_auto_reshape


def _can_eval(ins: Instruction) -> bool:
    """MIGraphX's `can_eval`: only literals and side-effect free ops of such inputs; stops at the
    first input that cannot be evaluated."""
    seen: set[Instruction] = set()
    pending = [ins]
    while pending:
        top = pending.pop()
        if top in seen or top.is_literal:
            continue
        seen.add(top)
        defn = top.op.defn
        if top.is_param or not top.args or top.module_args or defn.has_side_effects or defn.is_opaque:
            return False
        pending.extend(top.args)
    return True


@pattern("gather")
def find_gather_scalar(rewriter: Rewriter, ins: Instruction) -> bool:
    if ins.op.defn.name != "gather" or len(ins.args) != 2 or ins.shape.is_dynamic:
        return False
    data, indices = ins.args
    shape = indices.shape
    if shape.is_dynamic or not shape.scalar or shape.ndim != 1 or shape.elements != 1 or _can_eval(ins):
        return False
    new_indices = rewriter.insert(ins, make_op("unsqueeze", axes=(0,)), [indices])
    new_gather = rewriter.insert(ins, ins.op, [data, new_indices])
    reshaped = insert_auto_reshape(rewriter, ins, ins.shape.lens, new_gather)
    if ins.shape.scalar and ins.shape.ndim == 1:
        reshaped = rewriter.insert(ins, make_op("squeeze", axes=(0,)), [reshaped])
    rewriter.replace_all_uses(ins, reshaped)
    return True


_Segments = tuple[np.ndarray, np.ndarray, np.ndarray]  # bases, strides, counts


def _group_segments(segments: _Segments) -> _Segments | None:
    """MIGraphX's make_segments: the segments grouped into arithmetic runs (by base) as long as the
    first run, or None when the rest does not split into such runs. A first run that would step
    down is the first segment alone."""
    bases, strides, counts = segments
    steps = np.diff(bases)
    if len(bases) == 1 or steps[0] < 0:
        first = (int(bases[0]), int(strides[0]), int(counts[0]))
        at = 1
    else:
        breaks = np.flatnonzero(steps != steps[0])
        at = int(breaks[0]) + 1 if breaks.size else len(bases)
        first = (int(bases[0]), int(steps[0]), at)
    n = first[2]
    if (len(bases) - at) % n != 0:
        return None
    if n == 1:
        rest = (bases[at:], strides[at:], counts[at:])
    else:
        groups = bases[at:].reshape(-1, n)
        group_steps = np.diff(groups, axis=1)
        if np.any(group_steps[:, 0] < 0) or np.any(group_steps != group_steps[:, :1]):
            return None
        rest = (groups[:, 0], group_steps[:, 0], np.full(len(groups), n, dtype=np.int64))
    return tuple(np.concatenate(([value], others)).astype(np.int64) for value, others in zip(first, rest))


def _strided_view(indices: np.ndarray) -> tuple[list[int], list[int]] | None:
    """MIGraphX's make_strided_view: lens and strides of a view whose elements, in order, are at
    offsets `indices` (the first is 0), or None when the offsets have no such regular structure."""
    segments: _Segments = (indices.astype(np.int64), np.ones_like(indices), np.ones_like(indices))
    lens: list[int] = []
    strides: list[int] = []
    while True:
        grouped = _group_segments(segments)
        if grouped is None or len(grouped[0]) == len(segments[0]) > 1:
            return None
        bases, steps, counts = grouped
        if steps[0] < 0 or np.any(bases < 0) or np.any(steps != steps[0]) or np.any(counts != counts[0]):
            return None
        lens.append(int(counts[0]))
        strides.append(int(steps[0]))
        segments = grouped
        if len(bases) <= 1:
            break
    lens.reverse()
    strides.reverse()
    if 1 not in strides:
        lens.append(1)
        strides.append(1)
    return lens, strides


def _unbroadcast(lens: Sequence[int], strides: Sequence[int]) -> tuple[list[int], list[int]]:
    """Broadcast axes as size 1 with the stride of the axis before them."""
    previous = next((s for s in strides if s != 0), 1)
    new_lens, new_strides = list(lens), list(strides)
    for i, stride in enumerate(strides):
        if stride == 0:
            new_lens[i] = 1
            new_strides[i] = previous
        else:
            previous = stride
    return new_lens, new_strides


def _multi_index(lens: Sequence[int], index: int) -> list[int]:
    """MIGraphX's shape::multi on standard `lens` (the outermost index takes what is left)."""
    result = [0] * len(lens)
    for i in range(len(lens) - 1, 0, -1):
        result[i] = index % lens[i]
        index //= lens[i]
    result[0] = index
    return result


def _reorder(values: Sequence[int], permutation: Sequence[int]) -> list[int]:
    return [values[p] for p in permutation]


def generate_shape_transforms_for(
    lens: Sequence[int], strides: Sequence[int], elements: int, offset: int
) -> list[Operation] | None:
    """Ops that turn a flat input of `elements` values into the view (`lens`, `strides`) starting at
    `offset` (MIGraphX's generate_shape_transforms_for, for a one-dimensional input)."""
    lens, strides = list(lens), list(strides)
    if not lens:
        return None
    if 1 not in strides and any(s != 0 for s in strides):
        lens.append(1)
        strides.append(1)
    last_axis = strides.index(max(strides))
    total = max(1, strides[last_axis] * lens[last_axis])
    extra = elements // total
    if extra > 1:
        lens.insert(0, 1)
        strides.insert(0, total)
    extra = max(1, extra)

    pre_lens, pre_strides = _unbroadcast(lens, strides)
    permutation = list(find_permutation(Shape.make(DType.float, pre_lens, pre_strides)))
    inverse = invert_permutation(permutation)
    sorted_lens = _reorder(pre_lens, permutation)
    sorted_strides = _reorder(pre_strides, permutation)
    start_lens = [sorted_strides[0]]
    for outer, inner in itertools.pairwise(sorted_strides):
        if outer % inner != 0:
            return None
        start_lens.append(outer // inner)
    if 0 in start_lens:
        return None
    start_lens[0] = extra if extra > 1 else sorted_lens[0]
    nelements = math.prod(start_lens)
    if nelements < math.prod(sorted_lens) * extra:
        return None

    start_mask = [0] * len(start_lens)
    if offset != 0:
        index = _multi_index(start_lens, offset)
        # MIGraphX subtracts unsigned sizes here: a negative overhead wraps to a huge one
        if all(i <= n - m or n < m for i, n, m in zip(index, start_lens, sorted_lens)):
            start_mask = _reorder(index, inverse)
            offset = 0
    slice_mask = _reorder([0 if n == m else m for n, m in zip(start_lens, sorted_lens)], inverse)
    broadcast_lens = [n if b == 1 else b for n, b in zip(lens, _reorder(start_lens, inverse))]
    transforms = [
        make_op("reshape", dims=start_lens),
        make_op("transpose", permutation=inverse),
        make_op("multibroadcast", out_lens=broadcast_lens),
    ]
    descriptor = ShapeTransformDescriptor.create([nelements], transforms)
    if descriptor.empty():
        return None

    result: list[Operation] = []
    end = offset + nelements
    if offset != 0 or nelements != elements:
        if end > elements:
            result.append(make_op("broadcast", axis=1, out_lens=(2, elements)))
            result.append(make_op("reshape", dims=(2 * elements,)))
        result.append(make_op("slice", axes=(0,), starts=(offset,), ends=(end,)))
    result.extend(descriptor.generate())
    axes = [i for i, m in enumerate(slice_mask) if m != 0]
    if axes:
        starts = [start_mask[i] for i in axes]
        result.append(
            make_op("slice", axes=axes, starts=starts, ends=[start + lens[i] for start, i in zip(starts, axes)])
        )
    return result


def _transform_indices(rewriter: Rewriter, indices: np.ndarray, start: Instruction) -> Instruction | None:
    """`start` (flat) viewed so that its elements are those at `indices`, by ops inserted right
    after it; None when the indices are not a strided view."""
    offset = int(indices[0])
    view = _strided_view(indices - offset)
    if view is None or math.prod(view[0]) != indices.size:
        return None
    ops = generate_shape_transforms_for(view[0], view[1], start.shape.elements, offset)
    if ops is None:
        return None
    position = start.next
    result = start
    for op in ops:
        result = rewriter.insert(position, op, [result])
    return result


def _constant_value(rewriter: Rewriter, ins: Instruction) -> np.ndarray | None:
    """The value of a constant instruction, or None when some literal it needs was elided or some
    op has no reference compute."""
    seen: set[Instruction] = set()
    pending = [ins]
    while pending:
        top = pending.pop()
        if top in seen:
            continue
        seen.add(top)
        if top.is_literal:
            if top.literal.elided:
                return None
        elif not top.op.defn.has_compute or top.shape.is_dynamic:
            return None
        else:
            pending.extend(top.args)
    if rewriter.module.program is None:
        return None
    return evaluate_constant(ins, {}, Interpreter(rewriter.module.program))


def _flat_gather_indices(dlens: Sequence[int], axis: int, positions: np.ndarray) -> np.ndarray:
    """For each element of the gather's result, in order, its offset in the flattened data."""
    inner = math.prod(dlens[axis + 1 :])
    outer = np.arange(math.prod(dlens[:axis]), dtype=np.int64) * (dlens[axis] * inner)
    offsets = outer[:, None, None] + positions.reshape(1, -1, 1) * inner + np.arange(inner, dtype=np.int64)
    return offsets.reshape(-1)


@pattern("gather")
def find_gather(rewriter: Rewriter, ins: Instruction) -> object:
    if ins.op.defn.name != "gather" or len(ins.args) != 2 or ins.shape.is_dynamic:
        return False
    data, indices = ins.args
    if not _can_eval(indices) or _can_eval(ins):
        return False
    dlens = data.shape.lens
    if data.shape.is_dynamic or not dlens or indices.shape.scalar:
        return MATCHED_UNCHANGED
    axis = normalize_axis("gather", ins.op["axis"], len(dlens))
    axis_len = dlens[axis]
    value = _constant_value(rewriter, indices)
    if axis_len == 0 or value is None or value.size == 0 or value.size != indices.shape.elements:
        return MATCHED_UNCHANGED
    positions = np.asarray(value, dtype=np.int64).reshape(indices.shape.lens)
    positions = np.where(positions < 0, positions + axis_len, positions)
    if np.any(positions < 0) or np.any(positions >= axis_len):
        return MATCHED_UNCHANGED
    if data.shape.ndim == 1 and indices.shape.ndim == 1:
        viewed = _transform_indices(rewriter, positions, data)
    else:
        flat_data = insert_auto_reshape(rewriter, ins, [data.shape.elements], data)
        viewed = _transform_indices(rewriter, _flat_gather_indices(dlens, axis, positions), flat_data)
    if viewed is None:
        return MATCHED_UNCHANGED
    rewriter.replace_all_uses(ins, insert_auto_reshape(rewriter, ins, ins.shape.lens, viewed))
    return True


REWRITES = (find_gather_scalar, find_gather)
