"""simplify_algebra's broadcast and constant-add rewrites: find_inner_broadcast,
find_double_add_lit_broadcast, find_add_lit_broadcast and find_mul_add."""

from __future__ import annotations

import math
from collections.abc import Callable

from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import Operation, ShapeError
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.ir.traits import Broadcasting
from mgxir.passes.matchers import is_pointwise, used_once
from mgxir.passes.propagate_constant import ConstantAnalysis
from mgxir.passes.rewrite import MATCHED_UNCHANGED, Rewriter, pattern


def _lit_broadcast(ins: Instruction, constant: ConstantAnalysis) -> bool:
    return constant(ins) or ins.op.defn.name == "broadcast"


def _op_lit_broadcast(
    ins: Instruction, name: str, constant: ConstantAnalysis
) -> tuple[Instruction, Instruction] | None:
    """`name(a, x)` in either order with `a` a constant or broadcast and `x` not: (a, x)."""
    if ins.op.defn.name != name or len(ins.args) != 2:
        return None
    for a, x in ((ins.args[0], ins.args[1]), (ins.args[1], ins.args[0])):
        if _lit_broadcast(a, constant) and not _lit_broadcast(x, constant):
            return a, x
    return None


def _non_broadcast_input(ins: Instruction) -> Instruction:
    while len(ins.args) == 1 and "broadcast" in ins.args[0].op.defn.name:
        ins = ins.args[0]
    return ins.args[0] if len(ins.args) == 1 else ins


def _common_lens(all_lens: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The lens every input multibroadcasts to (numpy's rule)."""
    ndim = max(len(lens) for lens in all_lens)
    common = [1] * ndim
    for lens in all_lens:
        for k, n in enumerate(lens):
            at = ndim - len(lens) + k
            common[at] = max(common[at], n)
    return tuple(common)


def _insert_common_op(rewriter: Rewriter, pos: Instruction, op, inputs: list[Instruction]) -> Instruction:
    """`op(inputs)` with every input multibroadcast to the common lens (numpy's rule)."""
    common = _common_lens([tuple(i.shape.lens) for i in inputs])
    args = [
        i if tuple(i.shape.lens) == common else rewriter.insert(pos, make_op("multibroadcast", out_lens=common), [i])
        for i in inputs
    ]
    return rewriter.insert(pos, op, args)


@pattern(where=is_pointwise)
def find_inner_broadcast(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """A pointwise op whose inputs are all broadcasts computes on the broadcasts' inputs, and its
    result is broadcast."""
    if not ins.op.defn.pointwise:
        return False
    if any(not b.op.defn.has(Broadcasting) or not b.args for b in ins.args) or ins.shape.is_dynamic:
        return False
    broadcasts = ins.args
    if ins.op.defn.name == "layout" or not broadcasts:
        return MATCHED_UNCHANGED
    if any(b.shape.dtype != broadcasts[0].shape.dtype for b in broadcasts):
        return MATCHED_UNCHANGED
    if not all(b.args[0].shape.elements < ins.shape.elements for b in broadcasts):
        return MATCHED_UNCHANGED
    first = next((i for i, b in enumerate(broadcasts) if not b.shape.scalar), len(broadcasts))
    if _same_broadcasts(broadcasts[first:]):
        outer = broadcasts[first] if first < len(broadcasts) else broadcasts[0]
        return True if _apply_same_broadcasts(rewriter, ins, outer) else MATCHED_UNCHANGED
    # MIGraphX leaves inputs that are themselves broadcast to the simple case only
    if any(b.args[0].shape.broadcasted for b in broadcasts):
        return MATCHED_UNCHANGED
    return True if _apply_diff_broadcasts(rewriter, ins) else MATCHED_UNCHANGED


def _same_broadcasts(broadcasts: list[Instruction]) -> bool:
    if not broadcasts:
        return True
    first_lens = _non_broadcast_input(broadcasts[0]).shape.lens
    return all(
        b.op == broadcasts[0].op
        and (_non_broadcast_input(b).shape.elements == 1 or _non_broadcast_input(b).shape.lens == first_lens)
        for b in broadcasts
    )


def _apply_same_broadcasts(rewriter: Rewriter, ins: Instruction, outer: Instruction) -> bool:
    """op(b(x), b(y)) -> b(op(x, y)); single-element inputs of another rank are squeezed. False
    when b cannot take op's result back to ins's lens (MIGraphX would throw there)."""
    broadcasts = list(ins.args)
    max_ndim = max(broadcasts, key=lambda b: _non_broadcast_input(b).shape.ndim).shape.ndim
    squeeze = make_op("squeeze")
    inners = [_non_broadcast_input(b) for b in broadcasts]
    squeezed = [i.shape.elements == 1 and i.shape.ndim > 1 and i.shape.ndim != max_ndim for i in inners]
    inner_shapes = [squeeze.defn.shape(squeeze, [i.shape], []) if sq else i.shape for i, sq in zip(inners, squeezed)]
    common = Shape.make(ins.shape.dtype, _common_lens([tuple(s.lens) for s in inner_shapes]))
    try:
        result = outer.op.defn.shape(outer.op, [common], [])
    except ShapeError:
        return False
    if result is None or result.lens != ins.shape.lens:
        return False
    inputs = [rewriter.insert(b, squeeze, [i]) if sq else i for b, i, sq in zip(broadcasts, inners, squeezed)]
    inner_op = _insert_common_op(rewriter, ins, ins.op, inputs)
    rewriter.replace(ins, outer.op, [inner_op])
    return True


def _apply_diff_broadcasts(rewriter: Rewriter, ins: Instruction) -> bool:
    """Different broadcasts: compute on the axes some input is not broadcast on (the inner axes),
    each input squeezed (or broadcast) to those axes, then broadcast the result back out. False
    when every axis is inner, or when MIGraphX's result would be wrong (it refuses there)."""
    broadcasts = list(ins.args)
    out_lens = ins.shape.lens
    ndim = len(out_lens)
    axes: list[int] = []
    inner_axes: list[int] = []
    for axis in range(ndim):
        if all(b.shape.lens[axis] == 1 or b.shape.strides[axis] == 0 for b in broadcasts):
            axes.append(axis)
        else:
            inner_axes.append(axis)
    if len(inner_axes) == ndim:
        return False
    inner_lens = tuple(out_lens[axis] for axis in inner_axes)
    trailing = inner_axes == list(range(ndim - len(inner_axes), ndim))
    if len(inner_axes) > 1 and not trailing and not _unsqueeze_needed(inner_lens, out_lens):
        # MIGraphX would multibroadcast the result onto the trailing axes, not the inner ones
        return False
    inserted: list[Instruction] = []

    def insert(pos: Instruction, op: Operation, args: list[Instruction]) -> Instruction:
        inserted.append(rewriter.insert(pos, op, args))
        return inserted[-1]

    try:
        inputs = [_inner_input(insert, b, axes, inner_axes, inner_lens) for b in broadcasts]
        common = _common_lens([tuple(i.shape.lens) for i in inputs])
        args = [
            i if i.shape.lens == common else insert(ins, make_op("multibroadcast", out_lens=common), [i])
            for i in inputs
        ]
        inner_op = insert(ins, ins.op, args)
        if len(inner_axes) == 1:
            outer = make_op("broadcast", axis=inner_axes[0], out_lens=out_lens)
        else:
            if _unsqueeze_needed(inner_op.shape.lens, out_lens):
                inner_op = insert(ins, make_op("unsqueeze", axes=tuple(axes)), [inner_op])
            outer = make_op("multibroadcast", out_lens=out_lens)
        rewriter.replace(ins, outer, [inner_op])
    except ShapeError:
        # MIGraphX throws here (a size-1 axis an inner broadcast cannot stretch): leave it as it is
        for new in reversed(inserted):
            rewriter.remove(new)
        return False
    return True


def _inner_input(
    insert: Callable[[Instruction, Operation, list[Instruction]], Instruction],
    b: Instruction,
    axes: list[int],
    inner_axes: list[int],
    inner_lens: tuple[int, ...],
) -> Instruction:
    """The input of broadcast `b` on the inner axes only."""
    result = b.args[0]
    s = result.shape
    if s.elements == 1:
        return insert(b, make_op("squeeze"), [result]) if s.ndim > 1 else result
    shift = b.op["axis"] if b.op.defn.name == "broadcast" else len(b.shape.lens) - s.ndim
    squeeze_axes = tuple(axis - shift for axis in axes if 0 <= axis - shift < s.ndim)
    if squeeze_axes:
        result = insert(b, make_op("squeeze", axes=squeeze_axes), [result])
    if result.shape.ndim < len(inner_axes):
        start_axis = next((i for i, axis in enumerate(inner_axes) if axis >= shift), len(inner_axes))
        result = insert(b, make_op("broadcast", axis=start_axis, out_lens=inner_lens), [result])
    return result


def _unsqueeze_needed(lens: tuple[int, ...], out_lens: tuple[int, ...]) -> bool:
    """MIGraphX's is_unsqueeze_needed_for_multibroadcast, as it is written."""
    if math.prod(lens) == 1:
        return False
    shift = len(out_lens) - len(lens)
    if shift == 0:
        return False
    if tuple(lens) == tuple(out_lens[shift:]):
        return all(n == 1 for n in out_lens[:shift])
    return True


@pattern("add")
def find_double_add_lit_broadcast(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    if ins.op.defn.name != "add" or len(ins.args) != 2:
        return False
    left = _op_lit_broadcast(ins.args[0], "add", constant)
    right = _op_lit_broadcast(ins.args[1], "add", constant)
    if left is None or right is None:
        return False
    (a, x), (b, y) = left, right
    add = make_op("add")
    if a.op.defn.name == "broadcast" and b.op.defn.name == "broadcast":
        if a.args[0].shape != b.args[0].shape:
            return MATCHED_UNCHANGED
        presum = rewriter.insert(ins, add, [a.args[0], b.args[0]])
        sum_ab = rewriter.insert(ins, a.op, [presum])
    else:
        sum_ab = rewriter.insert(ins, add, [a, b])
    sum_xy = rewriter.insert(ins, add, [x, y])
    rewriter.replace(ins, add, [sum_xy, sum_ab])
    return True


@pattern("add")
def find_add_lit_broadcast(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> bool:
    if ins.op.defn.name != "add" or len(ins.args) != 2:
        return False
    for inner, b in ((ins.args[0], ins.args[1]), (ins.args[1], ins.args[0])):
        found = _op_lit_broadcast(inner, "add", constant)
        if found is not None and _lit_broadcast(b, constant):
            a, x = found
            sum_ab = rewriter.insert(ins, make_op("add"), [a, b])
            rewriter.replace(ins, make_op("add"), [x, sum_ab])
            return True
    return False


def _conv_const_weights(ins: Instruction, constant: ConstantAnalysis) -> bool:
    """A convolution used once, of a non-constant input and constant weights."""
    return (
        ins.op.defn.name == "convolution"
        and used_once(ins)
        and len(ins.args) == 2
        and not constant(ins.args[0])
        and constant(ins.args[1])
    )


@pattern("mul")
def find_mul_add(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> bool:
    """a * (x + b) -> a * x + a * b, with a constant and b constant (or a convolution with constant
    weights), the sum used only here and not of two constants."""
    if ins.op.defn.name != "mul" or len(ins.args) != 2:
        return False
    for add, a in ((ins.args[0], ins.args[1]), (ins.args[1], ins.args[0])):
        if add.op.defn.name != "add" or len(add.args) != 2 or not used_once(add) or not constant(a):
            continue
        if constant(add.args[0]) and constant(add.args[1]):
            continue
        for x, b in ((add.args[0], add.args[1]), (add.args[1], add.args[0])):
            if constant(b) or _conv_const_weights(b, constant):
                mul = make_op("mul")
                ax = rewriter.insert(ins, mul, [a, x])
                ab = rewriter.insert(ins, mul, [a, b])
                rewriter.replace(ins, make_op("add"), [ax, ab])
                return True
    return False


REWRITES = (find_inner_broadcast, find_double_add_lit_broadcast, find_add_lit_broadcast, find_mul_add)
