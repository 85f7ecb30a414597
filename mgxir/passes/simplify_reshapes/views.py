"""simplify_reshapes rewrites that move views through their neighbours: find_reshape_cont (a pointwise op
of a reshaped non-standard input runs in the input's lens), find_slice_shape_transforms (the view chain
after a slice moves before it), find_nested_slice (two slices become one), find_transpose_slice (slices of
a transpose become slices of one unsqueeze+transpose), find_slice_transpose (transposed slices share one
transpose), find_unary_shape_transforms (a unary pointwise op moves up or down its view chain),
find_reshape_dot (a dot of reshaped inputs runs before the reshape), find_mul_add_shape_op_dot (a
transpose or convert between a constant mul/add and a dot moves above the mul/add) and
find_op_shape_transform_op (a pointwise op or reduction, the views after it and the pointwise op or
reduction using them run in the common dimensions of the views' shape-transform descriptor).

MIGraphX runs find_op_shape_transform_op only with enable_op_shape_transform_op (off by default, on in
its tests); here it always runs."""

from __future__ import annotations

import math
from collections.abc import Sequence

from mgxir.analysis.shape_transform_descriptor import ShapeTransformDescriptor, compute_dims, invert_permutation
from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import OpDef, Operation
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.ir.traits import Broadcasting, Reduction, ShapeTransform
from mgxir.passes.matchers import (
    first_user,
    is_broadcast_or_contiguous,
    is_contiguous,
    is_pointwise,
    is_reduce_like,
    is_reduction_or_pointwise,
    is_shape_transform_or_contiguous,
    skip,
    skip_output,
    used_once,
)
from mgxir.passes.propagate_constant import ConstantAnalysis
from mgxir.passes.rewrite import MATCHED_UNCHANGED, Rewriter, pattern


def _insert_ops(rewriter: Rewriter, pos: Instruction, ops: Sequence[Operation], source: Instruction) -> Instruction:
    for op in ops:
        source = rewriter.insert(pos, op, [source])
    return source


@pattern(where=is_pointwise)
def find_reshape_cont(rewriter: Rewriter, ins: Instruction) -> object:
    if not ins.op.defn.pointwise or len(ins.args) != 2:
        return False
    found = None
    for rsp in ins.args:
        if rsp.op.defn.name != "reshape" or len(rsp.args) != 1:
            continue
        source = skip(rsp.args[0], is_contiguous)
        if not source.shape.is_dynamic and not source.shape.standard:
            found = rsp, source
            break
    if found is None:
        return False
    rsp, cont_input = found
    if rsp.shape.lens != ins.shape.lens or ins.shape.ndim > cont_input.shape.ndim:
        return MATCHED_UNCHANGED
    dims = list(cont_input.shape.lens)
    inputs = [
        cont_input if arg is rsp else rewriter.insert(ins, make_op("reshape", dims=dims), [arg]) for arg in ins.args
    ]
    out = rewriter.insert(ins, ins.op, inputs)
    rewriter.replace(ins, make_op("reshape", dims=list(ins.shape.lens)), [out])
    return True


@pattern(where=is_shape_transform_or_contiguous)
def find_slice_shape_transforms(rewriter: Rewriter, ins: Instruction) -> object:
    if not is_shape_transform_or_contiguous(ins.op.defn) or not ins.args or ins.shape.is_dynamic:
        return False
    if any(is_shape_transform_or_contiguous(user.op.defn) for user in ins.users):
        return False
    slice_ins = skip(ins.args[0], is_shape_transform_or_contiguous)
    if slice_ins.op.defn.name != "slice" or not slice_ins.args:
        return False
    if not used_once(slice_ins.args[0]) or ConstantAnalysis(need_values=False)(slice_ins):
        return False
    if ins.shape.scalar:
        return MATCHED_UNCHANGED
    ops = []
    x = ins
    while is_shape_transform_or_contiguous(x.op.defn):
        ops.append(x.op)
        x = x.args[0]
    if x is not slice_ins:
        return MATCHED_UNCHANGED
    ops.reverse()
    source = slice_ins.args[0]
    desc = ShapeTransformDescriptor.create(slice_ins.shape.lens, ops)
    new_desc = desc.rebase(source.shape.lens)
    if new_desc.empty():
        return MATCHED_UNCHANGED
    new_desc.simplify()
    axes = slice_ins.op["axes"]
    if any(len(new_desc.get_dst_axes_from_src(axis)) != 1 for axis in axes):
        rewriter.replace_all_uses(ins, _insert_ops(rewriter, ins, desc.generate(), slice_ins))
        return True
    new_axes = [a for axis in axes for a in new_desc.get_dst_axes_from_src(axis)]
    new_ops = [*new_desc.generate(), slice_ins.op.replace(axes=new_axes)]
    # Not in MIGraphX: where rebasing took a broadcast axis for the sliced one (a reshape that drops a
    # 1 it cannot drop in the source), the result would have other lens; keep the program then.
    lens = list(source.shape.lens)
    for op in new_ops:
        lens = compute_dims(op, lens)
    if lens != list(ins.shape.lens):
        return MATCHED_UNCHANGED
    y = _insert_ops(rewriter, ins, new_ops, source)
    rewriter.replace_all_uses(ins, y)
    return True


@pattern("slice")
def find_nested_slice(rewriter: Rewriter, ins: Instruction) -> object:
    if ins.op.defn.name != "slice" or len(ins.args) != 1 or ins.args[0].op.defn.name != "slice":
        return False
    inner = ins.args[0]
    if len(inner.args) != 1:
        return False
    outer_axes = _slice_axes(ins.op)
    merged = _slice_axes(inner.op)
    for axis, (start, end) in outer_axes.items():
        if axis in merged:
            base = merged[axis][0] + start
            merged[axis] = (base, base + end - start)
        else:
            merged[axis] = (start, end)
    axes = sorted(merged)
    op = make_op("slice", axes=axes, starts=[merged[a][0] for a in axes], ends=[merged[a][1] for a in axes])
    rewriter.replace(ins, op, [inner.args[0]])
    return True


def _slice_axes(op: Operation) -> dict[int, tuple[int, int]]:
    return {axis: (start, end) for axis, start, end in zip(op["axes"], op["starts"], op["ends"])}


@pattern("transpose")
def find_transpose_slice(rewriter: Rewriter, ins: Instruction) -> object:
    if ins.op.defn.name != "transpose" or any(user.op.defn.name != "slice" for user in ins.users):
        return False
    slices = list(ins.users)
    if not slices:
        return MATCHED_UNCHANGED
    first = slices[0].op
    if any(v < 0 for s in slices for v in (*s.op["starts"], *s.op["ends"])):
        # counted from the end: normalize_ops has not run (MIGraphX's pipelines always run it first),
        # and the distances below would be wrong; mgxir leaves such slices as they are
        return MATCHED_UNCHANGED
    distance = [e - s for s, e in zip(first["starts"], first["ends"])]
    for s in slices:
        if s.op["axes"] != first["axes"] or [e - b for b, e in zip(s.op["starts"], s.op["ends"])] != distance:
            return MATCHED_UNCHANGED
    lens = ins.shape.lens

    def mod_by_distance(values: Sequence[int]) -> int:
        return sum(1 if d == 0 else v % d for v, d in zip(values, distance))

    if (
        mod_by_distance([lens[a] for a in first["axes"]]) != 0
        or mod_by_distance(first["starts"]) != 0
        or mod_by_distance(first["ends"]) != 0
    ):
        return MATCHED_UNCHANGED
    if len(distance) != 1:
        return MATCHED_UNCHANGED
    axis = first["axes"][0]
    if all(n == 1 for n in lens[:axis]):
        return MATCHED_UNCHANGED
    permutation = list(ins.op["permutation"])
    preaxis = permutation[axis]
    steps = [lens[a] // d for a, d in zip(first["axes"], distance)]
    unsqueeze = rewriter.insert(ins, make_op("unsqueeze", axes=[preaxis], steps=steps), ins.args)
    permutation = [preaxis] + [p + 1 if p >= preaxis else p for p in permutation]
    transpose = rewriter.insert(ins, make_op("transpose", permutation=permutation), [unsqueeze])
    for s in slices:
        op = s.op.replace(axes=[0], starts=[s.op["starts"][0] // distance[0]], ends=[s.op["ends"][0] // distance[0]])
        sliced = rewriter.insert(ins, op, [transpose])
        squeeze = rewriter.insert(ins, make_op("squeeze", axes=[0]), [sliced])
        rewriter.replace_all_uses(s, squeeze)
    return True


def _split_then_transpose(out: Instruction) -> bool:
    return out.op.defn.name == "slice" and len(out.users) == 1 and first_user(out).op.defn.name == "transpose"


def find_slice_transpose(rewriter: Rewriter, ins: Instruction) -> object:
    splits = [out for out in ins.users if _split_then_transpose(out)]
    if not splits:
        return False
    if len(splits) < 2:
        return MATCHED_UNCHANGED
    transposes = [first_user(s) for s in splits]
    counts: dict[tuple[int, ...], int] = {}
    for t in transposes:
        key = tuple(t.op["permutation"])
        counts[key] = counts.get(key, 0) + 1
    best = max(counts.values())
    permutation = min(p for p, c in counts.items() if c == best)
    inverse = invert_permutation(permutation)
    pre = rewriter.insert(ins.next, make_op("transpose", permutation=list(permutation)), [ins])
    for split, t in zip(splits, transposes):
        op = split.op.replace(axes=[inverse[a] for a in split.op["axes"]])
        new_ins = rewriter.insert(t, op, [pre])
        if t.op != pre.op:
            current = t.op["permutation"]
            new_ins = rewriter.insert(t, make_op("transpose", permutation=[inverse[c] for c in current]), [new_ins])
        rewriter.replace_all_uses(t, new_ins)
    return True


def _is_shape_transform(ins: Instruction) -> bool:
    return len(ins.args) == 1 and is_shape_transform_or_contiguous(ins.op.defn)


def _can_fuse_unary(ins: Instruction) -> bool:
    return ins.is_literal or ins.op.defn.pointwise or is_reduce_like(ins.op.defn)


@pattern(where=is_pointwise)
def find_unary_shape_transforms(rewriter: Rewriter, ins: Instruction) -> object:
    if not ins.op.defn.pointwise or ins.op.defn.name == "layout" or not used_once(ins):
        return False
    if len(ins.args) != 1 or not skip(ins.args[0], is_contiguous).op.defn.has(ShapeTransform):
        return False
    after = skip_output(ins, is_contiguous)
    if after is not None and after.op.defn.pointwise:
        return False
    if not ins.users:
        return MATCHED_UNCHANGED
    source = ins.args[0]
    xops = []
    x = source
    while _is_shape_transform(x):
        xops.append(x.op)
        x = x.args[0]
    xops.reverse()
    yops = []
    y = first_user(ins)
    last_transform = None
    while _is_shape_transform(y) and len(y.users) == 1:
        yops.append(y.op)
        last_transform = y
        y = first_user(y)

    move_up = _can_fuse_unary(x)
    move_down = _can_fuse_unary(y)
    if move_up and move_down:
        if x.is_literal or yops:
            move_down = False
        else:
            move_up = False
    elif not move_up and not move_down and yops:
        move_up = True

    if move_up:
        z = rewriter.insert(ins, ins.op, [x])
        rewriter.replace_all_uses(ins, _insert_ops(rewriter, ins, xops, z))
        return True
    if move_down and last_transform is not None:
        z = _insert_ops(rewriter, ins, yops, source)
        rewriter.replace(last_transform, ins.op, [z])
        return True
    return MATCHED_UNCHANGED


@pattern("dot")
def find_reshape_dot(rewriter: Rewriter, ins: Instruction) -> object:
    if ins.op.defn.name != "dot" or len(ins.args) != 2 or not used_once(ins):
        return False
    if ins.args[0].op.defn.name == "reshape":
        rsp, other = ins.args[0], skip(ins.args[1], is_broadcast_or_contiguous)
    elif ins.args[1].op.defn.name == "reshape":
        rsp, other = ins.args[1], skip(ins.args[0], is_broadcast_or_contiguous)
    else:
        return False
    inp = rsp.args[0]
    inp_lens = inp.shape.lens
    flipped = rsp is ins.args[1]
    dot_axis = 2 if flipped else 1

    def is_valid_reshape(source: Instruction, reshaped: Instruction, axis: int) -> bool:
        """The reshape keeps the dot's axis `-axis` (the rows' length when 2, the columns' when 1).
        When it keeps the rows' length (axis 2), mgxir also wants the batch axes to hold as many
        elements before and after: MIGraphX does not ask it, and so rewrites dot(w{5, 4},
        reshape(x{2, 4, 3} -> {4, 6})), whose columns mix x's batch, into a batched dot with other
        values."""
        source_lens, reshaped_lens = source.shape.lens, reshaped.shape.lens
        if len(source_lens) < axis or len(reshaped_lens) < axis:
            return False
        if axis == 2 and math.prod(source_lens[:-2]) != math.prod(reshaped_lens[:-2]):
            return False
        return reshaped_lens[-axis] == source_lens[-axis]

    if not is_valid_reshape(inp, rsp, dot_axis):
        return MATCHED_UNCHANGED
    if other.op.defn.name == "reshape":
        other_inp = other.args[0]
        other_lens = other_inp.shape.lens
        if not is_valid_reshape(other_inp, other, 1 if flipped else 2):
            return MATCHED_UNCHANGED
        if len(inp_lens) != len(other_lens) or inp_lens[:-2] != other_lens[:-2]:
            return MATCHED_UNCHANGED
        new_other = other_inp
    else:
        if other.shape.ndim > 2:
            return MATCHED_UNCHANGED
        bc_other = ins.args[0] if flipped else ins.args[1]
        bc_lens = bc_other.shape.lens
        new_other_lens = [*inp_lens[:-2], *bc_lens[-2:]]
        if other.shape.ndim == 1:
            strides = bc_other.shape.strides
            orig_axis = next((i for i, s in enumerate(strides) if s != 0), len(strides))
            axis = len(new_other_lens) - (len(bc_lens) - orig_axis)
            bc_op = make_op("broadcast", axis=axis, out_lens=new_other_lens)
        else:
            bc_op = make_op("multibroadcast", out_lens=new_other_lens)
        new_other = rewriter.insert(ins, bc_op, [other])
    args = [new_other, inp] if flipped else [inp, new_other]
    new_dot = rewriter.insert(ins, make_op("dot"), args)
    rewriter.replace(ins, make_op("reshape", dims=list(ins.shape.lens)), [new_dot])
    return True


def _transpose_or_convert(defn: OpDef) -> bool:
    """MIGraphX's `shape_ops` of find_mul_add_shape_op_dot: the two ops it moves above a mul or add."""
    return defn.name == "transpose" or defn.name == "convert"


@pattern(where=_transpose_or_convert)
def find_mul_add_shape_op_dot(rewriter: Rewriter, ins: Instruction) -> object:
    if not _transpose_or_convert(ins.op.defn) or len(ins.args) != 1:
        return False
    pw = ins.args[0]
    if (pw.op.defn.name != "mul" and pw.op.defn.name != "add") or len(pw.args) != 2:
        return False
    after = skip_output(ins, _transpose_or_convert)
    if after is None or after.op.defn.name != "dot":
        return False
    is_constant = ConstantAnalysis(need_values=False)
    if is_constant(pw.args[0]):
        constant, source = pw.args
    elif is_constant(pw.args[1]):
        source, constant = pw.args
    else:
        return False
    new_input = rewriter.insert(ins, ins.op, [source])
    new_constant = rewriter.insert(ins, ins.op, [constant])
    rewriter.replace(ins, pw.op, [new_input, new_constant])
    return True


def _is_reduce(ins: Instruction) -> bool:
    return ins.op.defn.has(Reduction)


def _matches_op(ins: Instruction) -> bool:
    return is_reduction_or_pointwise(ins.op.defn)


def _fusable_split(ins: Instruction) -> bool:
    """Some input of `ins` is a slice all of whose sibling slices feed an op named as `ins`."""
    name = ins.op.defn.name
    for input_slice in ins.args:
        if input_slice.op.defn.name != "slice" or not input_slice.args:
            continue
        if all(
            any(out.op.defn.name == name for out in sibling.users)
            for sibling in input_slice.args[0].users
            if sibling.op.defn.name == "slice"
        ):
            return True
    return False


def _reduce_axis(ins: Instruction) -> int:
    axis = ins.op["axis"]
    return axis + ins.args[0].shape.ndim if axis < 0 else axis


def _insert_mapped_op(
    rewriter: Rewriter, ins: Instruction, inputs: list[Instruction], axes_map: list[list[int]]
) -> Instruction:
    """`ins`'s op on `inputs` (in the common space), its axes mapped through `axes_map`."""
    op = ins.op
    if _is_reduce(ins):
        if "axis" in op.defn.attribute_index:
            op = op.replace(axis=axes_map[_reduce_axis(ins)][0])
        else:
            op = op.replace(axes=sorted(a for axis in op["axes"] for a in axes_map[axis]))
    elif ins.op.defn.name == "layout":
        op = op.replace(permutation=[a for axis in op["permutation"] for a in axes_map[axis]])
    return rewriter.insert(ins, op, inputs, ins.module_args)


def _is_valid_op_descriptor(x_ins: Instruction, desc: ShapeTransformDescriptor) -> bool:
    if not _is_reduce(x_ins):
        return desc.elements() == x_ins.shape.elements
    if "axis" in x_ins.op.defn.attribute_index:
        axis = _reduce_axis(x_ins)
        axes_map = desc.common_axes_map_from_src()
        if axis < len(axes_map) and len(axes_map[axis]) != 1:
            return False
        op_axes = [axis]
    else:
        op_axes = sorted(x_ins.op["axes"])
    return op_axes == sorted(desc.find_broadcasted_axes())


def _generate_for(desc: ShapeTransformDescriptor, input_shape: Shape, no_broadcast: bool) -> list[Operation]:
    if input_shape.scalar and input_shape.elements == 1 and input_shape.ndim == 1:
        out_lens = [1] * len(desc.dimensions) if no_broadcast else desc.lens()
        return [make_op("multibroadcast", out_lens=out_lens)]
    return desc.generate(input_shape.lens, no_broadcast)


def _output_path(ins: Instruction) -> list[Instruction]:
    path = [ins]
    while len(path[-1].users) == 1:
        path.append(first_user(path[-1]))
    return path


def _make_op_descriptor(x_ins: Instruction, ops: list[Operation], input_ins: Instruction) -> ShapeTransformDescriptor:
    xinput = x_ins.args[0]
    xlens, xinput_lens = x_ins.shape.lens, xinput.shape.lens
    desc1 = ShapeTransformDescriptor.create(xlens, ops)
    if not _is_reduce(x_ins):
        return desc1
    desc = desc1.rebase(xinput_lens, True)
    if not desc.empty():
        return desc
    if desc1.elements() != xinput.shape.elements and desc1.elements() != x_ins.shape.elements:
        if desc1.rebase(xinput_lens).elements() != xinput.shape.elements:
            return ShapeTransformDescriptor()
        return desc1
    broadcast = next(
        (i for i in _output_path(input_ins) if i.shape.lens != input_ins.shape.lens or i.op.defn.has(Broadcasting)),
        None,
    )
    if broadcast is None or not broadcast.op.defn.has(Broadcasting):
        return ShapeTransformDescriptor()
    return ShapeTransformDescriptor.create(xlens, [*ops, broadcast.op]).rebase(xinput_lens, True)


def _find_op_shape_transform_input(ins: Instruction) -> tuple[Instruction, Instruction] | None:
    for input_ins in ins.args:
        if not is_shape_transform_or_contiguous(input_ins.op.defn) or not input_ins.args:
            continue
        x_ins = skip(input_ins.args[0], is_shape_transform_or_contiguous)
        if _matches_op(x_ins) and not _fusable_split(x_ins):
            return input_ins, x_ins
    return None


def _remove_inserted(rewriter: Rewriter, anchor: Instruction | None, pos: Instruction) -> None:
    """Removes the instructions inserted between `anchor` and `pos` (newest first)."""
    while pos.prev is not anchor and pos.prev is not None:
        rewriter.remove(pos.prev)


@pattern(where=is_reduction_or_pointwise)
def find_op_shape_transform_op(rewriter: Rewriter, ins: Instruction) -> object:
    if not _matches_op(ins) or ins.shape.is_dynamic:
        return False
    found = _find_op_shape_transform_input(ins)
    if found is None:
        return False
    input_ins, x_ins = found
    if input_ins.shape.scalar or x_ins.shape.scalar or not x_ins.args:
        return MATCHED_UNCHANGED
    ops = []
    walk = input_ins
    only_broadcasts = True
    while walk is not x_ins:
        if not is_broadcast_or_contiguous(walk.op.defn):
            only_broadcasts = False
        ops.append(walk.op)
        walk = walk.args[0]
    if only_broadcasts:
        return MATCHED_UNCHANGED
    ops.reverse()
    try:
        desc = _make_op_descriptor(x_ins, ops, input_ins)
        if desc.empty() or not _is_valid_op_descriptor(x_ins, desc):
            return MATCHED_UNCHANGED
    except (ValueError, IndexError):
        return MATCHED_UNCHANGED
    # Already in the common space: skip when x_ins feeds other such ops, or this would loop.
    if ins.shape.ndim == desc.common_rank() and any(_matches_op(out) for out in x_ins.users):
        return MATCHED_UNCHANGED

    def reshape_input(
        pos: Instruction, gdesc: ShapeTransformDescriptor, source: Instruction, no_broadcast: bool = False
    ) -> Instruction:
        return _insert_ops(rewriter, pos, _generate_for(gdesc, source.shape, no_broadcast), source)

    # Not in MIGraphX (which throws, or builds a program of mismatched shapes): where the descriptor's
    # ops do not fit, everything inserted is removed and the program kept.
    before_x, before_ins = x_ins.prev, ins.prev
    try:
        x_inputs = [reshape_input(x_ins, desc.to_common_from_src(), i) for i in x_ins.args]
        new_input_ins = _insert_mapped_op(rewriter, x_ins, x_inputs, desc.common_axes_map_from_src())
        new_x_ins = reshape_input(x_ins, desc.to_src_from_common(), new_input_ins)
        if new_input_ins.shape.elements != input_ins.shape.elements:
            new_input_ins = rewriter.insert(
                x_ins, make_op("multibroadcast", out_lens=desc.common_dims()), [new_input_ins]
            )
        inputs = [
            new_input_ins if arg is input_ins else reshape_input(ins, desc.to_common_from_dst(), arg, True)
            for arg in ins.args
        ]
        if new_x_ins.shape.lens != x_ins.shape.lens:
            raise ValueError("the common space does not give back x's lens")
    except (ValueError, IndexError):
        _remove_inserted(rewriter, before_ins, ins)
        _remove_inserted(rewriter, before_x, x_ins)
        return MATCHED_UNCHANGED
    rewriter.replace_all_uses(x_ins, new_x_ins)
    before_ins = ins.prev
    try:
        pw = _insert_mapped_op(rewriter, ins, inputs, desc.common_axes_map_from_dst())
        result = reshape_input(ins, desc.to_dst_from_common(), pw)
        if result.shape.lens != ins.shape.lens:
            raise ValueError("the common space does not give back the result's lens")
    except (ValueError, IndexError):
        _remove_inserted(rewriter, before_ins, ins)
        return True
    rewriter.replace_all_uses(ins, result)
    return True


REWRITES = (
    find_reshape_cont,
    find_slice_shape_transforms,
    find_nested_slice,
    find_transpose_slice,
    find_slice_transpose,
    find_unary_shape_transforms,
    find_reshape_dot,
    find_mul_add_shape_op_dot,
    find_op_shape_transform_op,
)
