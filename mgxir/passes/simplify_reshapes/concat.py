"""simplify_reshapes rewrites of concat: find_concat_slice (a slice that takes back exactly one concat
input is that input), find_concat_transpose (a concat of equally transposed inputs becomes a concat of
the untransposed layout, transposed once), find_concat_reshape (a concat of reshapes of equal shapes
becomes one reshape of a concat), find_concat_multibroadcasts (a concat of like broadcasts becomes one
broadcast of a concat of their inputs) and find_nested_concat (concats on the same axis used only by
an outer concat are flattened into it).

As in MIGraphX's find_matches, a rewrite whose pattern matched but whose checks then left the module
unchanged returns MATCHED_UNCHANGED: no later rewrite is tried on that instruction."""

from __future__ import annotations

import math
from collections.abc import Sequence

from mgxir.analysis.shape_transform_descriptor import invert_permutation
from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import OpDef, Operation, ShapeError
from mgxir.ir.registry import make_op
from mgxir.ir.shape import find_permutation
from mgxir.ir.traits import Broadcasting, Reshaper
from mgxir.ops.common import normalize_axis
from mgxir.passes.rewrite import MATCHED_UNCHANGED, Rewriter, pattern


def _concat_reshaper(defn: OpDef) -> bool:
    """The reshapers of MIGraphX's find_concat_reshape, which leaves flatten out."""
    return defn.has(Reshaper) and defn.name != "flatten"


def _is_static_concat(ins: Instruction) -> bool:
    return ins.op.defn.name == "concat" and not ins.shape.is_dynamic and not ins.shape.is_tuple


@pattern("concat")
def find_concat_slice(rewriter: Rewriter, ins: Instruction) -> object:
    if not _is_static_concat(ins):
        return False
    slices = [user for user in ins.users if user.op.defn.name == "slice"]
    if not slices:
        return False
    axis = ins.op["axis"]
    candidates = [s for s in slices if len(s.op["axes"]) == 1 and s.op["axes"][0] == axis]
    if not candidates or axis < 0:
        return MATCHED_UNCHANGED
    inputs = list(ins.args)
    offsets = [0]
    for source in inputs:
        offsets.append(offsets[-1] + source.shape.lens[axis])
    first_offset = {}
    for i, offset in enumerate(offsets):
        first_offset.setdefault(offset, i)
    changed = False
    for slice_ins in candidates:
        start = slice_ins.op["starts"][0]
        length = slice_ins.op["ends"][0] - start
        i = first_offset.get(start)
        if i is None or i == len(inputs):
            continue
        if inputs[i].shape.lens[axis] == length:
            rewriter.replace_all_uses(slice_ins, inputs[i])
            changed = True
    return True if changed else MATCHED_UNCHANGED


@pattern("concat")
def find_concat_transpose(rewriter: Rewriter, ins: Instruction) -> object:
    if not _is_static_concat(ins) or not all(a.op.defn.name == "transpose" for a in ins.args):
        return False
    permutation = list(find_permutation(ins.args[0].shape))
    if any(list(find_permutation(a.shape)) != permutation for a in ins.args):
        return MATCHED_UNCHANGED
    inverse = invert_permutation(permutation)
    axis = inverse[normalize_axis("concat", ins.op["axis"], ins.args[0].shape.ndim)]
    transposed = [rewriter.insert(ins, make_op("transpose", permutation=permutation), [a]) for a in ins.args]
    concat = rewriter.insert(ins, ins.op.replace(axis=axis), transposed)
    restored = rewriter.insert(ins, make_op("transpose", permutation=inverse), [concat])
    rewriter.replace_all_uses(ins, restored)
    return True


@pattern("concat")
def find_concat_reshape(rewriter: Rewriter, ins: Instruction) -> object:
    if not _is_static_concat(ins) or not all(_concat_reshaper(a.op.defn) for a in ins.args):
        return False
    sources = [a.args[0] for a in ins.args]
    input_lens = sources[0].shape.lens
    if any(s.shape.lens != input_lens for s in sources[1:]):
        return MATCHED_UNCHANGED
    lens = ins.shape.lens
    axis = normalize_axis("concat", ins.op["axis"], ins.args[0].shape.ndim)
    predims = math.prod(lens[:axis])
    postdims = math.prod(lens[axis + 1 :])
    running = 1
    new_axis = None
    for i, n in enumerate(input_lens):
        running *= n
        if running > predims:
            new_axis = i
            break
    if new_axis is None:
        return MATCHED_UNCHANGED
    if math.prod(input_lens[:new_axis]) != predims or math.prod(input_lens[new_axis + 1 :]) != postdims:
        return MATCHED_UNCHANGED
    concat = rewriter.insert(ins, ins.op.replace(axis=new_axis), sources)
    rewriter.replace(ins, make_op("reshape", dims=lens), [concat])
    return True


def _fits(concat_op: Operation, broadcast: Operation, inputs: Sequence[Instruction]) -> bool:
    """Whether the broadcast of the new concat is well formed (MIGraphX would fail here otherwise)."""
    try:
        concat_shape = concat_op.defn.shape(concat_op, [i.shape for i in inputs], [])
        broadcast.defn.shape(broadcast, [concat_shape], [])
    except ShapeError:
        return False
    return True


@pattern("concat")
def find_concat_multibroadcasts(rewriter: Rewriter, ins: Instruction) -> object:
    if not _is_static_concat(ins) or not all(a.op.defn.has(Broadcasting) for a in ins.args):
        return False
    broadcasts = ins.args
    axis = ins.op["axis"]
    if axis < 0 or any(b.shape.strides[axis] == 0 for b in broadcasts):
        return MATCHED_UNCHANGED
    front = broadcasts[0]
    name = front.op.defn.name
    for b in broadcasts[1:]:
        if b.op.defn.name != name or (name == "broadcast" and b.op["axis"] != front.op["axis"]):
            return MATCHED_UNCHANGED
    inputs = [b.args[0] for b in broadcasts]
    rank = inputs[0].shape.ndim
    if any(i.shape.ndim != rank for i in inputs[1:]):
        return MATCHED_UNCHANGED
    if rank < ins.shape.ndim:
        axis -= sum(1 for stride in front.shape.strides[:axis] if stride == 0)
    front_lens = inputs[0].shape.lens
    for i in inputs[1:]:
        lens = i.shape.lens
        if lens[:axis] != front_lens[:axis] or lens[axis + 1 :] != front_lens[axis + 1 :]:
            return MATCHED_UNCHANGED
    concat_op = ins.op.replace(axis=axis)
    broadcast = front.op.replace(out_lens=ins.shape.lens)
    if not _fits(concat_op, broadcast, inputs):
        return MATCHED_UNCHANGED
    concat = rewriter.insert(ins, concat_op, inputs)
    rewriter.replace(ins, broadcast, [concat])
    return True


@pattern("concat")
def find_nested_concat(rewriter: Rewriter, ins: Instruction) -> object:
    if not _is_static_concat(ins) or not any(a.op.defn.name == "concat" for a in ins.args):
        return False
    axis = ins.op["axis"]
    flat: list[Instruction] = []
    pending = list(reversed(ins.args))
    while pending:
        arg = pending.pop()
        if arg.op.defn.name == "concat" and arg.op["axis"] == axis and len(arg.users) == 1:
            pending.extend(reversed(arg.args))
        else:
            flat.append(arg)
    if flat == ins.args:
        return MATCHED_UNCHANGED
    rewriter.replace(ins, ins.op, flat)
    return True


REWRITES = (
    find_concat_slice,
    find_concat_transpose,
    find_concat_reshape,
    find_concat_multibroadcasts,
    find_nested_concat,
)
