"""simplify_algebra's concat and split rewrites: find_concat_same_input, find_concat_op, find_split_concat,
find_splits, find_split_reshape and find_split_transpose.

As in MIGraphX's find_matches, a rewrite whose pattern matched but that then changed nothing returns
MATCHED_UNCHANGED: no later rewrite is tried on that instruction. The `_matches_*` predicates are
MIGraphX's matchers.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from mgxir.ir.fingerprint import module_fingerprint
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import compute_shape
from mgxir.ir.operation import Operation, ShapeError
from mgxir.ir.registry import make_op
from mgxir.ir.traits import ConcatOperand
from mgxir.passes.matchers import used_once
from mgxir.passes.propagate_constant import ConstantAnalysis
from mgxir.passes.rewrite import MATCHED_UNCHANGED, Rewriter, pattern


def _name(ins: Instruction) -> str:
    return ins.op.defn.name


def _pointwise(op: Operation) -> bool:
    return op.defn.pointwise


# -- MIGraphX's matchers ------------------------------------------------------------------------


def _matches_concat_same_input(ins: Instruction) -> bool:
    return _name(ins) == "concat" and bool(ins.args) and all(a is ins.args[0] for a in ins.args)


def _matches_concat_op(ins: Instruction) -> bool:
    return _name(ins) == "concat" and any(
        _pointwise(a.op) or a.op.defn.has(ConcatOperand) or used_once(a) for a in ins.args
    )


def _matches_split_concat(ins: Instruction) -> bool:
    return any(_name(s) == "slice" and all(_name(u) == "concat" for u in s.users) for s in ins.users)


def _splits_user(ins: Instruction) -> bool:
    name = _name(ins)
    return name == "pointwise" or (_pointwise(ins.op) and len(ins.args) in (1, 2)) or "reduce" in name


def _matches_splits(ins: Instruction) -> bool:
    return any(_name(s) == "slice" and any(_splits_user(u) for u in s.users) for s in ins.users)


# -- shared helpers ---------------------------------------------------------------------------


def _get_splits(ins: Instruction) -> list[Instruction]:
    """The slices of `ins` when they cut it into contiguous pieces along the same axes, by start."""
    splits = [u for u in ins.users if _name(u) == "slice" and len(u.args) == 1]
    if len(splits) < 2 or ins.shape.is_dynamic or ins.shape.is_tuple:
        return []
    axes = splits[0].op["axes"]
    if not axes or any(s.op["axes"] != axes for s in splits):
        return []
    splits.sort(key=lambda s: s.op["starts"])
    if any(start != 0 for start in splits[0].op["starts"]):
        return []
    if any(x.op["ends"] != y.op["starts"] for x, y in itertools.pairwise(splits)):
        return []
    lens = ins.shape.lens
    last_ends = splits[-1].op["ends"]
    if any(not 0 <= axis < len(lens) or lens[axis] != end for axis, end in zip(axes, last_ends)):
        return []
    return splits


def _concat_const_foldable(group: Sequence[Instruction], axis: int, constant: ConstantAnalysis) -> bool:
    """No constant concatenated across one of its broadcast axes (that would fold into a large literal)."""
    n = len(group[0].args)
    if any(len(x.args) != n for x in group):
        return False
    for i in range(n):
        column = [x.args[i] for x in group]
        if not all(constant(a) for a in column):
            continue
        if all(a.shape.scalar for a in column):
            continue
        if any(axis >= a.shape.ndim or a.shape.strides[axis] == 0 for a in column):
            return False
    return True


# -- find_concat_same_input ---------------------------------------------------------------------


@pattern("concat")
def find_concat_same_input(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """concat(x, x, ..., x) along an axis where x has length 1 is a multibroadcast of x."""
    if not _matches_concat_same_input(ins):
        return False
    if len(ins.args) < 2:
        return MATCHED_UNCHANGED
    x = ins.args[0]
    if x.shape.is_dynamic or x.shape.is_tuple:
        return MATCHED_UNCHANGED
    axis = ins.op["axis"]
    lens = list(x.shape.lens)
    if not 0 <= axis < len(lens) or lens[axis] != 1:
        return MATCHED_UNCHANGED
    lens[axis] = len(ins.args)
    rewriter.replace(ins, make_op("multibroadcast", out_lens=lens), [x])
    return True


# -- find_concat_op -----------------------------------------------------------------------------


def _rejected_inputs(inputs: Sequence[Instruction], constant: ConstantAnalysis) -> bool:
    if not inputs:
        return True
    if len(inputs) < 3:
        return False
    return sum(1 for i in inputs if not constant(i)) > 2


def _valid_concat(inputs: Sequence[Instruction], axis: int) -> bool:
    first = inputs[0].shape
    if first.is_dynamic or first.is_tuple or axis >= first.ndim:
        return False
    outer = first.lens[:axis] + first.lens[axis + 1 :]
    for i in inputs:
        s = i.shape
        if s.is_dynamic or s.is_tuple or axis >= s.ndim or s.dtype != first.dtype:
            return False
        if s.lens[:axis] + s.lens[axis + 1 :] != outer:
            return False
    return True


def _concat_group(
    rewriter: Rewriter, ins: Instruction, group: Sequence[Instruction], axis: int, constant: ConstantAnalysis
) -> Instruction | None:
    """`op(concat(inputs...))` for a run of concat inputs that are the same op, or None."""
    if len(group) < 2:
        return None
    if any(len(x.users) > 1 or _rejected_inputs(x.args, constant) for x in group):
        return None
    first = group[0]
    op = first.op
    if not (first.op.defn.has(ConcatOperand) or (_pointwise(op) and _name(first) != "quantizelinear")):
        return None
    if any(x.shape.is_dynamic or x.shape.is_tuple or axis >= x.shape.ndim for x in group):
        return None
    out_lens = list(first.shape.lens)
    out_lens[axis] = sum(x.shape.lens[axis] for x in group)
    inner_axis = axis
    if _name(first) == "broadcast":
        if op["axis"] != axis:
            return None
        op = op.replace(out_lens=out_lens)
        inner_axis = 0
    elif _name(first) == "multibroadcast":
        # MIGraphX looks at the first input only, and then throws where another one is broadcast
        # along the axis (its input too short to concatenate)
        if any(x.shape.strides[axis] == 0 for x in group):
            return None
        op = op.replace(out_lens=out_lens)
        inner_axis -= first.shape.ndim - first.args[0].shape.ndim
        if inner_axis < 0:
            return None
    if not _concat_const_foldable(group, inner_axis, constant):
        return None
    columns = [[x.args[i] for x in group] for i in range(len(first.args))]
    if not all(_valid_concat(column, inner_axis) for column in columns):
        return None
    concat = make_op("concat", axis=inner_axis)
    concats = [rewriter.insert(ins, concat, column) for column in columns]
    return rewriter.insert(ins, op, concats)


@pattern("concat")
def find_concat_op(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """concat(op(a0, b0), op(a1, b1)) = op(concat(a0, a1), concat(b0, b1)) for runs of the same pointwise
    op or broadcast among a concat's inputs, when the constants stay foldable."""
    if not _matches_concat_op(ins):
        return False
    axis = ins.op["axis"]
    if axis < 0:
        return MATCHED_UNCHANGED
    inputs = list(ins.args)
    args: list[Instruction] = []
    changed = False
    start = 0
    while start < len(inputs):
        head = inputs[start]
        end = start + 1
        while end < len(inputs):
            x = inputs[end]
            if x.op != head.op or len(x.args) != len(head.args) or len(x.users) != len(head.users):
                break
            end += 1
        merged = _concat_group(rewriter, ins, inputs[start:end], axis, constant)
        if merged is None:
            args.extend(inputs[start:end])
        else:
            args.append(merged)
            changed = True
        start = end
    if len(args) == 1:
        rewriter.replace_all_uses(ins, args[0])
        return True
    if not changed:
        return MATCHED_UNCHANGED
    rewriter.replace(ins, ins.op, args)
    return True


# -- find_split_concat --------------------------------------------------------------------------


def find_split_concat(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """concat(..., slice(x)[0:a], slice(x)[a:b], ..., ...) covering all of x in order is concat(..., x, ...)."""
    if not _matches_split_concat(ins):
        return False
    splits = _get_splits(ins)
    if not splits or any(len(s.users) != 1 for s in splits):
        return MATCHED_UNCHANGED
    concat = next(iter(splits[0].users))
    if _name(concat) != "concat" or any(next(iter(s.users)) is not concat for s in splits):
        return MATCHED_UNCHANGED
    axes = splits[0].op["axes"]
    if len(axes) != 1 or axes[0] != concat.op["axis"]:
        return MATCHED_UNCHANGED
    args = list(concat.args)
    at = args.index(splits[0])
    # MIGraphX only checks that the run holds slices in order; requiring these very slices keeps a
    # slice of another tensor in the run from being dropped
    if args[at : at + len(splits)] != splits:
        return MATCHED_UNCHANGED
    args[at : at + len(splits)] = [ins]
    if len(args) == 1:
        rewriter.replace_all_uses(concat, args[0])
    else:
        rewriter.replace(concat, concat.op, args)
    return True


# -- find_splits --------------------------------------------------------------------------------


def _same_module_body(x: Instruction, y: Instruction, fingerprints: dict[int, str]) -> bool:
    if not x.module_args or not y.module_args:
        return x.module_args == y.module_args
    keys = []
    for m in (x.module_args[0], y.module_args[0]):
        if id(m) not in fingerprints:
            fingerprints[id(m)] = module_fingerprint(m)
        keys.append(fingerprints[id(m)])
    return keys[0] == keys[1]


def _make_group(
    out: Instruction, splits: Sequence[Instruction], start_split: Instruction, fingerprints: dict[int, str]
) -> list[Instruction] | None:
    """For each split, its first user with `out`'s operator (out itself for `start_split`)."""
    group: list[Instruction] = []
    for split in splits:
        if split is start_split:
            group.append(out)
            continue
        match = next(
            (
                u
                for u in split.users
                if u.op == out.op and (_name(u) != "pointwise" or _same_module_body(u, out, fingerprints))
            ),
            None,
        )
        if match is None or any(match is g for g in group):
            return None
        group.append(match)
    return group


class _Span:
    """The instructions after `root` up to the last of `members`, with which members each depends on
    (as bit masks), so MIGraphX's reachability questions are answered in one walk."""

    def __init__(self, rewriter: Rewriter, root: Instruction, members: list[Instruction]):
        self.bit = {m: 1 << i for i, m in enumerate(members)}
        self.mask: dict[Instruction, int] = {}
        self.position: dict[Instruction, int] = {}
        self.after: set[Instruction] = set()
        pending = len(members)
        ins = root.next
        index = 0
        end = rewriter.module.last.next  # the list's sentinel
        while pending and ins is not end:
            index += 1
            self.after.add(ins)
            mask = 0
            for a in ins.args:
                mask |= self.mask.get(a, 0)
            bit = self.bit.get(ins)
            if bit is not None:
                mask |= bit
                self.position[ins] = index
                pending -= 1
            if mask:
                self.mask[ins] = mask
            ins = ins.next

    def bits(self, group: Sequence[Instruction]) -> int:
        out = 0
        for x in group:
            out |= self.bit[x]
        return out

    def interdependent(self, group: Sequence[Instruction]) -> bool:
        """MIGraphX's is_interdependent: every member but the earliest depends on another member."""
        if len(group) < 2:
            return True
        group_bits = self.bits(group)
        earliest = min(group, key=lambda x: self.position.get(x, 0))
        return all(x is earliest or self.mask.get(x, 0) & ~self.bit[x] & group_bits for x in group)

    def groups_dependent(self, groups: Sequence[Sequence[Instruction]]) -> bool:
        """Whether any member of one group is (or reaches) a member of another."""
        reached = []
        for group in groups:
            mask = 0
            for x in group:
                mask |= self.mask.get(x, 0)
            reached.append(mask)
        own = [self.bits(g) for g in groups]
        return any(own[i] & reached[j] for i in range(len(groups)) for j in range(len(groups)) if i != j)


def _replace_with_slice(rewriter: Rewriter, ins: Instruction, slice_op: Operation, x: Instruction) -> None:
    """`ins` becomes `slice_op(x)` in place, dropping any module argument it had (a fused pointwise)."""
    old_shape = ins.shape
    rewriter.replace(ins, slice_op, [x], ())
    if ins.shape != old_shape:
        rewriter.recompute_shapes(list(ins.users))


def _fusable(start: Instruction, split: Instruction) -> bool:
    name = _name(start)
    if "reduce" in name:
        reduce_axes = start.op.get("axes", ()) or ()
        return any(axis not in reduce_axes for axis in split.op["axes"])
    return name == "pointwise" or _pointwise(start.op)


def _split_index(group: Sequence[Instruction], splits: Sequence[Instruction]) -> int:
    """The argument index holding a split in every member, or -1."""
    in_splits = set(splits)
    index = next(i for i, a in enumerate(group[0].args) if a in in_splits)
    if all(x.args[index] in in_splits for x in group[1:]):
        return index
    return -1


def _plan_moves_back(
    rewriter: Rewriter, pos: Instruction, data_args: Sequence[Instruction], after: set[Instruction]
) -> list[Instruction] | None:
    """MIGraphX's move_instructions_back as a list of moves to just before `pos`, or None where
    carrying them out would leave an instruction after one of its users."""
    moves: list[Instruction] = []
    now_after = set(after)

    def visit(inss: Sequence[Instruction]) -> None:
        erased: set[Instruction] = set()
        remaining = []
        for x in inss:
            # each instruction before pos erases its first occurrence only
            if x not in now_after and x not in erased:
                erased.add(x)
                continue
            remaining.append(x)
        for x in remaining:
            if x.parent is not rewriter.module:
                continue
            visit(x.args)
            moves.append(x)
            now_after.discard(x)

    visit(data_args)
    final = {x: i for i, x in enumerate(moves)}
    from_before = [x for x in final if x not in after]
    for x, i in final.items():
        for a in x.args:
            if a in final and final[a] > i:
                return None
        for u in x.users:
            if u in final and final[u] < i:
                return None
    if from_before:
        # an instruction already before pos moves down to it: none of its users may lie in between
        pending = set(from_before)
        passed: set[Instruction] = set()
        ins = pos.prev
        end = rewriter.module.last.next  # the list's sentinel
        while pending and ins is not end:
            if ins in pending:
                if any(u in passed and u not in final for u in ins.users):
                    return None
                pending.discard(ins)
            passed.add(ins)
            ins = ins.prev
    return moves


def find_splits(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """Slices of `ins` that each feed the same pointwise op or reduction become one op on `ins`, sliced
    after (binary ops take the concatenated constants as their other argument)."""
    if not _matches_splits(ins):
        return False
    splits = _get_splits(ins)
    if not splits:
        return MATCHED_UNCHANGED
    fingerprints: dict[int, str] = {}
    least_used = min(splits, key=lambda s: len(s.users))
    candidates = []
    for out in least_used.users:
        if _name(out) == "slice":
            continue
        group = _make_group(out, splits, least_used, fingerprints)
        if group is not None:
            candidates.append(group)
    if not candidates:
        return MATCHED_UNCHANGED
    members = list(dict.fromkeys(x for group in candidates for x in group))
    span = _Span(rewriter, ins, members)
    groups = [g for g in candidates if not span.interdependent(g)]
    if span.groups_dependent(groups):
        return MATCHED_UNCHANGED

    changed = False
    for group in groups:
        start = group[0]
        op = start.op
        if not _fusable(start, splits[0]):
            continue
        split_index = 0
        if len(start.args) == 1:
            fused = rewriter.insert(ins.next, op, [ins], start.module_args)
        elif len(start.args) == 2:
            axes = splits[0].op["axes"]
            if len(axes) > 1:
                break
            concat_axis = axes[0]
            if not _concat_const_foldable(group, concat_axis, constant):
                break
            split_index = _split_index(group, splits)
            if split_index < 0 and not op.defn.commutative:
                break
            if split_index < 0:
                split_index = 0
                in_splits = set(splits)
                for x in group:
                    if x.args[0] not in in_splits:
                        rewriter.replace(x, x.op, [x.args[1], x.args[0]])
                        changed = True
            data_index = 1 - split_index
            data_args = [x.args[data_index] for x in group]
            if not all(constant(a) for a in data_args) or any(a is ins for a in data_args):
                break
            concat_op = make_op("concat", axis=concat_axis)
            try:
                concat_shape = compute_shape(concat_op, data_args, ())
                shapes = [ins.shape, concat_shape] if split_index == 0 else [concat_shape, ins.shape]
                op.defn.shape(op, shapes, start.module_args)
            except ShapeError:
                break
            moves = _plan_moves_back(rewriter, ins, data_args, span.after)
            if moves is None:
                break
            for x in moves:
                rewriter.move_before(x, ins)
                span.after.discard(x)
            concat = rewriter.insert(ins, concat_op, data_args)
            fused_args = [ins, concat] if split_index == 0 else [concat, ins]
            fused = rewriter.insert(ins.next, op, fused_args, start.module_args)
        else:
            continue
        for x in group:
            _replace_with_slice(rewriter, x, x.args[split_index].op, fused)
        changed = True
    return True if changed else MATCHED_UNCHANGED


# -- find_split_reshape -------------------------------------------------------------------------


@pattern("reshape")
def find_split_reshape(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """reshape(contiguous(slice(x))) for several slices of x: one reshape of x, sliced."""
    if _name(ins) != "reshape" or not ins.args or _name(ins.args[0]) != "contiguous":
        return False
    slc = ins.args[0].args[0]
    if _name(slc) != "slice":
        return False
    x = slc.args[0]
    axes = slc.op["axes"]
    if len(axes) != 1:
        return MATCHED_UNCHANGED
    splits = _get_splits(x)
    if not splits:
        return MATCHED_UNCHANGED
    contiguous = [c for s in splits for c in s.users if _name(c) == "contiguous"]
    reshapes = [r for c in contiguous for r in c.users if r.op == ins.op]
    if len(reshapes) <= 1:
        return MATCHED_UNCHANGED
    axis = axes[0]
    slice_lens = slc.shape.lens
    slice_inner = math.prod(slice_lens[axis:])
    input_lens = x.shape.lens
    input_size = x.shape.elements
    slice_axis_len = input_lens[axis]
    reshape_lens = list(ins.shape.lens)
    strides = [ins.shape.strides[0] * reshape_lens[0], *ins.shape.strides]
    if slice_inner not in strides:
        return MATCHED_UNCHANGED
    found = strides.index(slice_inner)
    reshape_axis = found - 1 if found == len(strides) - 1 else found
    # MIGraphX's len-1 case can pair the slice axis with a reshape axis that has other dims before it
    if math.prod(reshape_lens[:reshape_axis]) != math.prod(input_lens[:axis]):
        return MATCHED_UNCHANGED
    out_lens = list(reshape_lens)
    out_lens[reshape_axis] = 1
    fixed = math.prod(out_lens)
    if fixed == 0 or input_size % fixed != 0:
        return MATCHED_UNCHANGED
    reshape_axis_len = input_size // fixed
    out_lens[reshape_axis] = reshape_axis_len
    bounds = []
    for r in reshapes:
        piece = r.args[0].args[0].op
        start, end = piece["starts"][0] * reshape_axis_len, piece["ends"][0] * reshape_axis_len
        # a boundary that falls inside a row of the new axis would slice other elements
        if start % slice_axis_len or end % slice_axis_len:
            return MATCHED_UNCHANGED
        bounds.append((start // slice_axis_len, end // slice_axis_len))
    try:
        reshaped = rewriter.insert(x.next, make_op("reshape", dims=out_lens), [x])
    except ShapeError:
        return MATCHED_UNCHANGED
    for r, (start, end) in zip(reshapes, bounds):
        rewriter.replace(r, make_op("slice", axes=[reshape_axis], starts=[start], ends=[end]), [reshaped])
    return True


# -- find_split_transpose -----------------------------------------------------------------------


@pattern("transpose")
def find_split_transpose(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """The same transpose on every slice of x: one transpose of x, sliced on the moved axis."""
    if _name(ins) != "transpose" or not ins.args or _name(ins.args[0]) != "slice":
        return False
    slc = ins.args[0]
    x = slc.args[0]
    splits = _get_splits(x)
    if not splits or any(len(s.users) != 1 for s in splits):
        return MATCHED_UNCHANGED
    transposes = [next(iter(s.users)) for s in splits]
    if any(t.op != transposes[0].op for t in transposes):
        return MATCHED_UNCHANGED
    axes = slc.op["axes"]
    perm = list(ins.op["permutation"])
    # MIGraphX takes the first axis only, which would make an invalid slice for several
    if len(axes) != 1 or axes[0] not in perm:
        return MATCHED_UNCHANGED
    axis = perm.index(axes[0])
    transposed = rewriter.insert(x.next, make_op("transpose", permutation=perm), [x])
    for s, t in zip(splits, transposes):
        piece = make_op("slice", axes=[axis], starts=s.op["starts"], ends=s.op["ends"])
        rewriter.replace(t, piece, [transposed])
    return True


REWRITES = (
    find_concat_same_input,
    find_concat_op,
    find_split_concat,
    find_splits,
    find_split_reshape,
    find_split_transpose,
)
