"""simplify_algebra's convolution and dot rewrites: constant scales and biases moved into weights
(find_mul_conv, find_mul_slice_conv, find_mul_dot, find_dot_mul, find_dot_add, find_conv_add),
fusions (find_add_convs, find_conv_dot_horiz_fusion, find_concat_conv), broadcasts and slices moved
to the inputs (find_dot_broadcast, find_dot_slice), convolutions of broadcast inputs made small
(find_conv_broadcast_input).

As in MIGraphX, once a matcher's pattern matches an instruction no later matcher is tried on it, even
where the rewrite then declines: each rewrite returns True when it changed the module, MATCHED_UNCHANGED
when its pattern matched but it changed nothing, and False when its pattern did not match. Where MIGraphX's
rewrite would change meaning (group convolutions, padded strided 1x1 convolutions, dots that do not
take the shared input first) it declines here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import Operation, ShapeError
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.ir.traits import Broadcasting, Contraction, HorizontallyFusable
from mgxir.passes.matchers import used_once
from mgxir.passes.propagate_constant import ConstantAnalysis
from mgxir.passes.rewrite import MATCHED_UNCHANGED, Rewriter, pattern


def _broadcast(ins: Instruction) -> bool:
    return ins.op.defn.has(Broadcasting)


def _name(ins: Instruction) -> str:
    return ins.op.defn.name


def _either(ins: Instruction) -> tuple[tuple[Instruction, Instruction], ...]:
    """MIGraphX's either_arg(0, 1): (arg0, arg1) first, then (arg1, arg0)."""
    if len(ins.args) < 2:
        return ()
    return ((ins.args[0], ins.args[1]), (ins.args[1], ins.args[0]))


def _shape_of(op: Operation, inputs: Sequence[Shape | None]) -> Shape | None:
    """The shape of `op` on these input shapes; None where it has none (or an input has none)."""
    if any(s is None for s in inputs):
        return None
    try:
        return op.defn.shape(op, list(inputs), ())  # type: ignore[arg-type]
    except ShapeError:
        return None


def _fits(op: Operation, args: Sequence[Instruction]) -> bool:
    """Whether `op(args)` has a shape (checked before inserting anything)."""
    return _shape_of(op, [a.shape for a in args]) is not None


def _from_int4(ins: Instruction) -> bool:
    """MIGraphX's from_int4: the value comes from unpack_int4 through views, reshapes,
    dequantizelinear and concats."""
    pending = [ins]
    while pending:
        x = pending.pop()
        while x.op.defn.is_view and x.args:
            x = x.args[0]
        name = _name(x)
        if name == "unpack_int4":
            return True
        if (name == "reshape" or name == "dequantizelinear") and x.args:
            pending.append(x.args[0])
        elif name == "concat" and x.args:
            if all(_from_int4(a) for a in x.args):
                return True
    return False


def _conv_const_weights(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> bool:
    return (
        _name(ins) == "convolution"
        and used_once(ins)
        and len(ins.args) == 2
        and not constant(ins.args[0])
        and constant(ins.args[1])
    )


def _broadcast_to(broadcast: Instruction, lens: Sequence[int]) -> Operation:
    """The op of `broadcast` (broadcast or multibroadcast) with other output lens."""
    return broadcast.op.replace(out_lens=tuple(lens))


@pattern("mul")
def find_mul_conv(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """mul(conv(x, w), broadcast(a)) with `a` along the channels: conv(x, mul(broadcast(a), w))."""
    if _name(ins) != "mul":
        return False
    for conv, a in _either(ins):
        if _conv_const_weights(rewriter, conv, constant) and _broadcast(a):
            break
    else:
        return False
    w = conv.args[1]
    a_input = a.args[0]
    if sum(1 for n in a_input.shape.lens if n != 1) > 1:
        return MATCHED_UNCHANGED
    lens, strides = a.shape.lens, a.shape.strides
    if len(strides) < 2 or strides[1] != 1:
        return MATCHED_UNCHANGED

    def broadcast_axis(n: int, stride: int) -> bool:
        return n == 1 or stride == 0

    if not broadcast_axis(lens[0], strides[0]):
        return MATCHED_UNCHANGED
    if not all(broadcast_axis(n, s) for n, s in zip(lens[2:], strides[2:])):
        return MATCHED_UNCHANGED
    squeeze = make_op("squeeze")
    broadcast = make_op("broadcast", axis=0, out_lens=w.shape.lens)
    if _shape_of(broadcast, [_shape_of(squeeze, [a_input.shape])]) is None:
        return MATCHED_UNCHANGED
    squeezed = rewriter.insert(ins, squeeze, [a_input])
    new_a = rewriter.insert(ins, broadcast, [squeezed])
    new_w = rewriter.insert(ins, make_op("mul"), [new_a, w])
    new_conv = rewriter.insert(ins, conv.op, [conv.args[0], new_w])
    rewriter.replace_all_uses(ins, new_conv)
    return True


@pattern("mul")
def find_mul_slice_conv(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """mul(slice(conv(x, w)), broadcast(a)) over the channels: the slice of the weights is scaled
    instead, conv(x, concat(w[:s], a * w[s:e], w[e:]))."""
    if _name(ins) != "mul":
        return False
    for slice_ins, a in _either(ins):
        if (
            _name(slice_ins) == "slice"
            and used_once(slice_ins)
            and slice_ins.args
            and _name(slice_ins.args[0]) == "convolution"
            and len(slice_ins.args[0].args) == 2
            and constant(slice_ins.args[0].args[1])
            and all(_name(u) == "slice" for u in slice_ins.args[0].users)
            and _name(a) == "broadcast"
            and constant(a)
        ):
            break
    else:
        return False
    conv = slice_ins.args[0]
    w = conv.args[1]
    if a.op["axis"] != 1:
        return MATCHED_UNCHANGED
    axes, starts, ends = slice_ins.op["axes"], slice_ins.op["starts"], slice_ins.op["ends"]
    if tuple(axes) != (1,):
        return MATCHED_UNCHANGED
    for other in conv.users:
        if other is slice_ins:
            continue
        if tuple(other.op["axes"]) != tuple(axes):
            return MATCHED_UNCHANGED
        if max(other.op["starts"][0], starts[0]) < min(other.op["ends"][0], ends[0]):
            return MATCHED_UNCHANGED
    if not _slices_follow(slice_ins, conv):
        return MATCHED_UNCHANGED
    out_channels = w.shape.lens[0]
    start, end = starts[0], ends[0]
    if not 0 <= start < end <= out_channels:
        return MATCHED_UNCHANGED  # MIGraphX uses the attributes as written; only in-range ones keep meaning
    w_slice_op = slice_ins.op.replace(axes=(0,))
    broadcast = make_op("broadcast", axis=0, out_lens=_shape_of(w_slice_op, [w.shape]).lens)  # type: ignore[union-attr]
    if not _fits(broadcast, a.args[:1]):
        return MATCHED_UNCHANGED
    w_slice = rewriter.insert(ins, w_slice_op, [w])
    new_a = rewriter.insert(ins, broadcast, a.args[:1])
    scaled = rewriter.insert(ins, make_op("mul"), [new_a, w_slice])
    pieces = []
    if start != 0:
        pieces.append(rewriter.insert(ins, make_op("slice", axes=(0,), starts=(0,), ends=(start,)), [w]))
    pieces.append(scaled)
    if end != out_channels:
        pieces.append(rewriter.insert(ins, make_op("slice", axes=(0,), starts=(end,), ends=(out_channels,)), [w]))
    new_w = rewriter.insert(ins, make_op("concat", axis=0), pieces)
    new_conv = rewriter.insert(ins, conv.op, [conv.args[0], new_w])
    replacement = rewriter.insert(ins, slice_ins.op, [new_conv])
    rewriter.replace_all_uses(ins, replacement)
    for other in list(conv.users):
        if other is not slice_ins:
            rewriter.replace_arg(other, conv, new_conv)
    return True


def _slices_follow(slice_ins: Instruction, conv: Instruction) -> bool:
    """MIGraphX declines when another slice of the convolution comes before `slice_ins`: the
    other slices are all after it (looked for between the convolution and `slice_ins`)."""
    others = set(conv.users)
    x = conv.next
    while x is not None and x is not slice_ins and x.parent is conv.parent:
        if x in others:
            return False
        x = x.next
    return True


@pattern("mul")
def find_mul_dot(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """mul(dot(a, b), broadcast(c)) with `c` along N (or M, or a scalar): the constant operand of
    the dot is scaled instead."""
    if _name(ins) != "mul":
        return False
    for dot, c in _either(ins):
        if (
            _name(dot) == "dot"
            and any(constant(x) and not _from_int4(x) for x in dot.args)
            and used_once(dot)
            and _broadcast(c)
        ):
            break
    else:
        return False
    a, b = dot.args
    c_strides = c.shape.strides
    if sum(1 for s in c_strides if s != 0) > 1:
        return MATCHED_UNCHANGED

    def scaled(x: Instruction) -> Instruction | None:
        if not constant(x):
            return None
        op = _broadcast_to(c, x.shape.lens)
        if not _fits(op, c.args):
            return None
        scale = rewriter.insert(ins, op, c.args)
        return rewriter.insert(ins, make_op("mul"), [x, scale])

    if c_strides[-1] == 1:
        if not constant(b):
            return MATCHED_UNCHANGED
        new_a, new_b = a, scaled(b)
    elif len(c_strides) > 1 and c_strides[-2] == 1:
        if not constant(a):
            return MATCHED_UNCHANGED
        new_a, new_b = scaled(a), b
    elif c.shape.scalar:
        new_a, new_b = (scaled(a), b) if constant(a) else (a, scaled(b))
    else:
        return MATCHED_UNCHANGED
    if new_a is None or new_b is None:
        return MATCHED_UNCHANGED
    rewriter.replace(ins, make_op("dot"), [new_a, new_b])
    return True


@pattern("slice")
def find_dot_slice(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """slice(dot(a, b)) over M, N or batch axes: dot(slice(a), slice(b))."""
    if _name(ins) != "slice" or len(ins.args) != 1:
        return False
    dot = ins.args[0]
    if not dot.op.defn.has(Contraction) or not used_once(dot):
        return False
    if len(dot.args) != 2:
        return MATCHED_UNCHANGED
    lens = dot.shape.lens
    ndim = len(lens)
    batch = ndim - 2
    a_slice: tuple[list[int], list[int], list[int]] = ([], [], [])
    b_slice: tuple[list[int], list[int], list[int]] = ([], [], [])
    for axis, start, end in zip(ins.op["axes"], ins.op["starts"], ins.op["ends"]):
        axis = axis + ndim if axis < 0 else axis
        n = lens[axis]
        start = max(0, min(n, start + n if start < 0 else start))
        end = max(0, min(n, end + n if end < 0 else end))
        targets = (a_slice, b_slice) if axis < batch else (a_slice,) if axis == batch else (b_slice,)
        for target in targets:
            target[0].append(axis)
            target[1].append(start)
            target[2].append(end)
    new_args = []
    for arg, (axes, starts, ends) in zip(dot.args, (a_slice, b_slice)):
        if axes:
            arg = rewriter.insert(ins, make_op("slice", axes=axes, starts=starts, ends=ends), [arg])
        new_args.append(arg)
    rewriter.replace(ins, dot.op, new_args)
    return True


@pattern("dot")
def find_dot_mul(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """dot(mul(z, broadcast(d)), c) with constant `c` and `d` along K (or a scalar): dot(z, mul(c, d')).

    Deliberately unlike MIGraphX: for a scalar `d`, MIGraphX inserts broadcast + transpose; mgxir
    broadcasts straight to c's lens (the same values, as a scalar's transpose is itself), so that
    find_inner_broadcast can fold the scale into c before its batch broadcast instead of
    propagate_constant making a batch-sized literal (151 MB per BERT layer at batch 32). The test
    dot_mul_scalar_broadcast_weight in test/opt/simplify_algebra_linear.mgx shows the difference."""
    if _name(ins) != "dot":
        return False
    for mul, c in _either(ins):
        if _name(mul) != "mul" or not used_once(mul):
            continue
        if not constant(c) or _from_int4(c):
            continue
        found = next(
            ((d, z) for d, z in _either(mul) if _broadcast(d) and constant(d) and not constant(z)),
            None,
        )
        if found is not None:
            d, z = found
            break
    else:
        return False
    a, b = ins.args
    d_strides = d.shape.strides
    if sum(1 for s in d_strides if s != 0) > 1:
        return MATCHED_UNCHANGED
    if not d.shape.scalar:
        # MIGraphX asks for stride 1; any non-zero stride needs the same check to keep meaning
        if d_strides[-1] != 0 and not constant(b):
            return MATCHED_UNCHANGED
        if d_strides[-2] != 0 and not constant(a):
            return MATCHED_UNCHANGED
    permutation = list(range(len(c.shape.lens)))
    permutation[-1], permutation[-2] = permutation[-2], permutation[-1]
    c_lens = [c.shape.lens[p] for p in permutation]
    op = _broadcast_to(d, c_lens)
    if not _fits(op, d.args):
        return MATCHED_UNCHANGED
    if d.shape.scalar:
        # a scalar's broadcast transposed is the broadcast itself; without the transpose,
        # find_inner_broadcast folds the scale into an unbroadcast weight (no batch-sized literal)
        scale_t = rewriter.insert(ins, _broadcast_to(d, c.shape.lens), d.args)
    else:
        scale = rewriter.insert(ins, op, d.args)
        scale_t = rewriter.insert(ins, make_op("transpose", permutation=permutation), [scale])
    scaled = rewriter.insert(ins, make_op("mul"), [c, scale_t])
    new_args = [z, scaled] if c is b else [scaled, z]
    rewriter.replace(ins, make_op("dot"), new_args)
    return True


def _add_with_constant(
    rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis
) -> tuple[Instruction, Instruction] | None:
    """`add(x, b)` (either order) with `b` constant: (x, b)."""
    if _name(ins) != "add" or len(ins.args) != 2:
        return None
    for x, b in _either(ins):
        if constant(b):
            return x, b
    return None


@pattern("dot")
def find_dot_add(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """dot(add(x, b), a) with `a`, `b` constant: add(dot(x, a), dot(b, a)) (either side)."""
    if _name(ins) != "dot":
        return False
    for add, a in _either(ins):
        found = _add_with_constant(rewriter, add, constant)
        if (
            found is not None
            and not (constant(add.args[0]) and constant(add.args[1]))
            and used_once(add)
            and constant(a)
        ):
            break
    else:
        return False
    x, b = found
    flipped = a is ins.args[-1]

    def insert_dot(p: Instruction, q: Instruction) -> Instruction:
        return rewriter.insert(ins, make_op("dot"), [q, p] if flipped else [p, q])

    ax = insert_dot(a, x)
    ab = insert_dot(a, b)
    rewriter.replace(ins, make_op("add"), [ax, ab])
    return True


@pattern("convolution")
def find_conv_add(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """conv(add(x, a), w) with `a`, `w` constant: add(conv(a, w), conv(x, w))."""
    if _name(ins) != "convolution" or not used_once(ins) or len(ins.args) != 2:
        return False
    add, w = ins.args
    found = _add_with_constant(rewriter, add, constant)
    if found is None or not used_once(add) or not constant(w):
        return False
    x, a = found
    conv_a = rewriter.insert(ins, ins.op, [a, w])
    conv_x = rewriter.insert(ins, ins.op, [x, w])
    rewriter.replace(ins, make_op("add"), [conv_a, conv_x])
    return True


def _stride_factor(x: Operation, y: Operation) -> int:
    """How many times `y`'s (symmetric) stride divides `x`'s; 0 when not a whole number."""
    xs, ys = x["stride"], y["stride"]
    if len(xs) < 2 or len(ys) < 2 or xs[0] != xs[1] or ys[0] != ys[1] or xs[0] % ys[0] != 0:
        return 0
    return xs[0] // ys[0]


@pattern("add")
def find_add_convs(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """add(conv(x, w), conv(y, v)): conv(concat(x, y), concat(w, v)) over the input channels; 1x1
    convolutions of different strides first step the input of the smaller stride."""
    if _name(ins) != "add" or len(ins.args) != 2:
        return False
    a_conv, b_conv = ins.args
    if not (_conv_const_weights(rewriter, a_conv, constant) and _conv_const_weights(rewriter, b_conv, constant)):
        return False
    a_input, a_weights = a_conv.args
    b_input, b_weights = b_conv.args
    aw, bw = a_weights.shape.lens, b_weights.shape.lens
    if len(aw) != len(bw) or len(aw) < 2 or aw[:1] != bw[:1] or aw[2:] != bw[2:]:
        return MATCHED_UNCHANGED
    a_op, b_op = a_conv.op, b_conv.op
    if a_op["group"] != 1 or b_op["group"] != 1:
        return MATCHED_UNCHANGED
    new_op = a_op
    a_step = b_step = None
    if a_op != b_op:
        same = (a_op["padding"], a_op["dilation"], a_op["group"]) == (b_op["padding"], b_op["dilation"], b_op["group"])
        if not same or len(aw) < 4 or aw[2] != 1 or aw[3] != 1 or any(p != 0 for p in a_op["padding"]):
            return MATCHED_UNCHANGED
        if tuple(a_op["stride"]) < tuple(b_op["stride"]):
            n = _stride_factor(b_op, a_op)
            if n == 0:
                return MATCHED_UNCHANGED
            b_step = make_op("step", axes=(2, 3), steps=(n, n))
        elif tuple(b_op["stride"]) < tuple(a_op["stride"]):
            n = _stride_factor(a_op, b_op)
            if n == 0:
                return MATCHED_UNCHANGED
            new_op = b_op
            a_step = make_op("step", axes=(2, 3), steps=(n, n))
        else:
            return MATCHED_UNCHANGED
    concat = make_op("concat", axis=1)
    a_shape = a_input.shape if a_step is None else _shape_of(a_step, [a_input.shape])
    b_shape = b_input.shape if b_step is None else _shape_of(b_step, [b_input.shape])
    input_shape = _shape_of(concat, [a_shape, b_shape])
    weights_shape = _shape_of(concat, [a_weights.shape, b_weights.shape])
    if _shape_of(new_op, [input_shape, weights_shape]) is None:
        return MATCHED_UNCHANGED
    if b_step is not None:
        b_input = rewriter.insert(ins, b_step, [b_input])
    if a_step is not None:
        a_input = rewriter.insert(ins, a_step, [a_input])
    concat_input = rewriter.insert(ins, concat, [a_input, b_input])
    concat_weights = rewriter.insert(ins, concat, [a_weights, b_weights])
    rewriter.replace(ins, new_op, [concat_input, concat_weights])
    return True


def _horizontal_candidate(ins: Instruction, user: Instruction, name: str) -> bool:
    return _name(user) == name and user.args[0] is ins and len(user.args) == 2


def _axis_equal(x: Sequence[int], y: Sequence[int], axis: int) -> bool:
    return len(x) == len(y) and len(x) > axis and x[:axis] == y[:axis] and x[axis + 1 :] == y[axis + 1 :]


def _same_kind(i: Instruction, j: Instruction) -> bool:
    """MIGraphX's grouping test: the same operation, with weights equal but for the fused axis."""
    if i.op != j.op:
        return False
    if not i.op.defn.has(HorizontallyFusable):
        return True
    if len(i.args) < 2 or len(j.args) < 2:
        return False
    x, y = i.args[1].shape.lens, j.args[1].shape.lens
    if len(x) != len(y):
        return False
    axis = 1 if _name(i) == "convolution" else len(x) - 1
    return _axis_equal(x, y, axis)


def _partition(items: list[Instruction], start: int, last: int, keep: Callable[[Instruction], bool]) -> int:
    """std::partition as libstdc++ does it (not stable: swaps from both ends); returns the split."""
    first = start
    while True:
        while True:
            if first == last:
                return first
            if keep(items[first]):
                first += 1
            else:
                break
        last -= 1
        while True:
            if first == last:
                return first
            if not keep(items[last]):
                last -= 1
            else:
                break
        items[first], items[last] = items[last], items[first]
        first += 1


def find_conv_dot_horiz_fusion(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """Dots (or convolutions) of one input with constant weights become one over the weights
    concatenated, each result a slice of it."""
    if len(ins.users) < 2:
        return False
    users = list(ins.users)
    if not any(
        sum(1 for u in users if _horizontal_candidate(ins, u, name) and constant(u.args[1])) >= 2
        for name in {u.op.defn.name for u in users if u.op.defn.has(HorizontallyFusable)}
    ):
        return False
    changed = False
    start = 0
    while start != len(users):
        first = users[start]
        split = _partition(users, start, len(users), lambda x, first=first: _same_kind(x, first))
        changed |= _fuse_group(rewriter, ins, users[start:split])
        start = split
    return True if changed else MATCHED_UNCHANGED


def _fuse_group(rewriter: Rewriter, ins: Instruction, group: list[Instruction]) -> bool:
    """Fuses `group` (users of `ins` alike); whether it did."""
    if len(group) < 2:
        return False
    name = _name(group[0])
    if not group[0].op.defn.has(HorizontallyFusable):
        return False
    op = group[0].op
    if name == "convolution" and op["group"] != 1:
        return False
    # MIGraphX fuses any member; one that does not take `ins` first would change meaning
    if any(not _horizontal_candidate(ins, u, name) for u in group):
        return False
    weights = [u.args[1] for u in group]
    axis, concat_axis = 1, 0
    if name != "convolution":
        axis = concat_axis = len(weights[0].shape.lens) - 1
    concat = make_op("concat", axis=concat_axis)
    if not _fits(concat, weights):
        return False
    after_input = _instructions_after(ins, group)
    if _depends_on(ins, weights, after_input):
        return False
    _move_back(rewriter, ins, weights, after_input)
    concat_ins = rewriter.insert(ins, concat, weights)
    fused = rewriter.insert(ins.next, op, [ins, concat_ins])
    offset = 0
    for member in group:
        n = member.shape.lens[axis]
        rewriter.replace(member, make_op("slice", axes=(axis,), starts=(offset,), ends=(offset + n,)), [fused])
        offset += n
    return True


def _instructions_after(ins: Instruction, group: list[Instruction]) -> set[Instruction]:
    """The instructions between `ins` and the last of its users in `group` (which all follow it)."""
    remaining = set(group)
    seen: set[Instruction] = set()
    x = ins.next
    while remaining and x is not None and x.parent is ins.parent:
        seen.add(x)
        remaining.discard(x)
        x = x.next
    return seen


def _depends_on(pos: Instruction, targets: list[Instruction], after: set[Instruction]) -> bool:
    """Whether one of `targets` is computed from `pos` (moving it before `pos` would break it)."""
    seen: set[Instruction] = set()
    pending = list(targets)
    while pending:
        x = pending.pop()
        if x is pos:
            return True
        if x in after and x not in seen:
            seen.add(x)
            pending.extend(x.args)
    return False


def _still_after(items: Sequence[Instruction], after: set[Instruction]) -> list[Instruction]:
    """MIGraphX's filter in move_instructions_back: for each instruction before `pos`, its first
    occurrence leaves the list (a repeated one stays, and moves)."""
    kept: list[Instruction] = []
    dropped: set[Instruction] = set()
    for x in items:
        if x not in after and x not in dropped:
            dropped.add(x)
        else:
            kept.append(x)
    return kept


def _move_back(rewriter: Rewriter, pos: Instruction, targets: list[Instruction], after: set[Instruction]) -> None:
    """MIGraphX's move_instructions_back: those of `targets` that follow `pos` move before it, each
    after its own inputs, recursively."""
    frames: list[tuple[list[Instruction], Instruction | None]] = [(_still_after(targets, after), None)]
    index = [0]
    while frames:
        items, owner = frames[-1]
        i = index[-1]
        if i < len(items):
            index[-1] += 1
            x = items[i]
            frames.append((_still_after(x.args, after), x))
            index.append(0)
            continue
        frames.pop()
        index.pop()
        if owner is not None:
            rewriter.move_before(owner, pos)
            after.discard(owner)


@pattern("dot")
def find_dot_broadcast(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """dot(broadcast(x), broadcast(y)) broadcast over leading batch axes in both: the dot over the
    rest, broadcast after."""
    if _name(ins) != "dot" or not all(_broadcast(a) for a in ins.args):
        return False
    out_lens = ins.shape.lens
    if len(out_lens) < 3:
        return MATCHED_UNCHANGED
    batch = len(out_lens) - 2
    a, b = ins.args
    naxes = 0
    while naxes < batch and a.shape.strides[naxes] == 0 and b.shape.strides[naxes] == 0:
        naxes += 1
    new_ops: list[tuple[Instruction, Operation | None, Operation | None]] = []
    for x in (a, b):
        source = x.args[0]
        lens = x.shape.lens[naxes:]
        if source.shape.lens == lens:
            new_ops.append((source, None, None))
            continue
        squeeze = None
        extra = source.shape.ndim - len(lens)
        if extra > 0:
            squeeze = make_op("squeeze", axes=tuple(range(extra)))
        if _name(x) == "multibroadcast":
            broadcast = make_op("multibroadcast", out_lens=lens)
        else:
            axis = x.op["axis"] - naxes
            if axis < 0:
                return MATCHED_UNCHANGED
            broadcast = make_op("broadcast", axis=axis, out_lens=lens)
        squeezed = source.shape if squeeze is None else _shape_of(squeeze, [source.shape])
        if _shape_of(broadcast, [squeezed]) is None:
            return MATCHED_UNCHANGED
        new_ops.append((source, squeeze, broadcast))
    new_args = []
    for source, squeeze, broadcast in new_ops:
        if squeeze is not None:
            source = rewriter.insert(ins, squeeze, [source])
        if broadcast is not None:
            source = rewriter.insert(ins, broadcast, [source])
        new_args.append(source)
    dot = rewriter.insert(ins, make_op("dot"), new_args)
    result = rewriter.insert(ins, make_op("multibroadcast", out_lens=out_lens), [dot])
    rewriter.replace_all_uses(ins, result)
    return True


@pattern("concat")
def find_concat_conv(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """concat over channels of convolutions alike: one grouped convolution of concatenated inputs."""
    if _name(ins) != "concat":
        return False
    if not all(used_once(c) and _name(c) == "convolution" for c in ins.args):
        return False
    if ins.op["axis"] != 1 or not ins.args:
        return MATCHED_UNCHANGED
    conv = ins.args[0].op
    if any(c.op != conv or len(c.args) != 2 for c in ins.args):
        return MATCHED_UNCHANGED
    inputs = [c.args[0] for c in ins.args]
    weights = [c.args[1] for c in ins.args]
    if any(x.shape != inputs[0].shape for x in inputs) or any(w.shape != weights[0].shape for w in weights):
        return MATCHED_UNCHANGED
    x = rewriter.insert(ins, make_op("concat", axis=1), inputs)
    w = rewriter.insert(ins, make_op("concat", axis=0), weights)
    rewriter.replace(ins, conv.replace(group=conv["group"] * len(inputs)), [x, w])
    return True


@pattern("convolution")
def find_conv_broadcast_input(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """conv(broadcast(x), w) with `x` constant over space: without padding a dot of `x` with the
    weights summed over space, broadcast; with padding (stride and dilation 1) the convolution of a
    kernel-sized input, its centre broadcast over the interior."""
    if _name(ins) != "convolution" or len(ins.args) != 2:
        return False
    bcast, w = ins.args
    if not _broadcast(bcast) or len(bcast.args) != 1 or not constant(w):
        return False
    x = bcast.args[0]
    op = ins.op
    if op["group"] != 1 or op["padding_mode"] != 0:
        return MATCHED_UNCHANGED
    x_lens = x.shape.lens
    if len(x_lens) > 2 and any(n != 1 for n in x_lens[2:]):
        return MATCHED_UNCHANGED
    ndim = w.shape.ndim
    spatial = ndim - 2
    oc, ic = w.shape.lens[0], w.shape.lens[1]
    out_lens = ins.shape.lens
    n = out_lens[0]
    if x.shape.elements != n * ic:
        return MATCHED_UNCHANGED
    # MIGraphX assumes this; a broadcast that varies over space would change meaning
    if any(length != 1 and stride != 0 for length, stride in zip(bcast.shape.lens[2:], bcast.shape.strides[2:])):
        return MATCHED_UNCHANGED
    padding = list(op["padding"])
    if any(p != 0 for p in padding):
        if any(v != 1 for v in op["stride"]) or any(v != 1 for v in op["dilation"]):
            return MATCHED_UNCHANGED
        if len(padding) == spatial:
            padding = padding + padding
        if any(out_lens[i + 2] <= padding[i] + padding[i + spatial] for i in range(spatial)):
            return MATCHED_UNCHANGED
        _small_conv(rewriter, ins, x, w, bcast, padding)
        return True
    axes = tuple(range(2, ndim))
    w_reduced = rewriter.insert(ins, make_op("reduce_sum", axes=axes), [w])
    w_2d = rewriter.insert(ins, make_op("reshape", dims=(oc, ic)), [w_reduced])
    w_t = rewriter.insert(ins, make_op("transpose", permutation=(1, 0)), [w_2d])
    if x.shape.ndim == 1 and n == 1:
        x_2d = rewriter.insert(ins, make_op("unsqueeze", axes=(0,)), [x])
    else:
        x_2d = rewriter.insert(ins, make_op("reshape", dims=(n, ic)), [x])
    dot = rewriter.insert(ins, make_op("dot"), [x_2d, w_t])
    unsqueezed = rewriter.insert(ins, make_op("unsqueeze", axes=axes), [dot])
    rewriter.replace(ins, make_op("multibroadcast", out_lens=out_lens), [unsqueezed])
    return True


def _small_conv(
    rewriter: Rewriter, ins: Instruction, x: Instruction, w: Instruction, bcast: Instruction, padding: list[int]
) -> None:
    spatial = w.shape.ndim - 2
    out_lens = ins.shape.lens
    small_lens = (*bcast.shape.lens[:2], *w.shape.lens[2:])
    small_bcast = rewriter.insert(ins, _broadcast_to(bcast, small_lens), [x])
    current = rewriter.insert(ins, ins.op, [small_bcast, w])
    for i in range(spatial):
        p_start, p_end = padding[i], padding[i + spatial]
        axis = i + 2
        interior = out_lens[axis] - p_start - p_end
        if interior == 1:
            continue
        pieces = []
        if p_start > 0:
            pieces.append(rewriter.insert(ins, make_op("slice", axes=(axis,), starts=(0,), ends=(p_start,)), [current]))
        center = rewriter.insert(ins, make_op("slice", axes=(axis,), starts=(p_start,), ends=(p_start + 1,)), [current])
        center_lens = list(center.shape.lens)
        center_lens[axis] = interior
        pieces.append(rewriter.insert(ins, make_op("multibroadcast", out_lens=center_lens), [center]))
        if p_end > 0:
            end = make_op("slice", axes=(axis,), starts=(p_start + 1,), ends=(p_start + 1 + p_end,))
            pieces.append(rewriter.insert(ins, end, [current]))
        current = rewriter.insert(ins, make_op("concat", axis=axis), pieces)
    rewriter.replace_all_uses(ins, current)


REWRITES = (
    find_conv_broadcast_input,
    find_dot_broadcast,
    find_add_convs,
    find_conv_dot_horiz_fusion,
    find_mul_conv,
    find_mul_slice_conv,
    find_mul_dot,
    find_dot_slice,
    find_dot_mul,
    find_dot_add,
    find_conv_add,
    find_concat_conv,
)
