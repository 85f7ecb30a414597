"""Recurrent operators (rnn, gru, lstm) unrolled over the static sequence, and the helpers that read
or move their states. Each step is `linalg.generic` contractions and elementwise gates in f32 (f64
for double); per-batch sequence lengths pick the time step each batch entry reads and the output
rows it fills (tensor.extract at computed positions)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from iree.compiler import ir
from iree.compiler.dialects import arith, tensor

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import ComputeError, Operation
from mgxir.ops.rnn import BIDIRECTIONAL, REVERSE, Recurrent
from mgxir.translate.mlir.emitter import PARALLEL, REDUCTION
from mgxir.translate.mlir.families.indexed import IndexMath, indexed
from mgxir.translate.mlir.registry import lowers, scalar_rule
from mgxir.translate.mlir.scalar import CannotLower

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]

# what the rnn instruction's lowering leaves for rnn_last_hs_output / rnn_last_cell_output
LAST_STATES = "recurrent last states"


class _Step:
    """Tensor arithmetic of one recurrent op in the working float type `w`."""

    def __init__(self, lowering: Lowering, op: Operation, w: DType) -> None:
        self.lowering = lowering
        self.e = lowering.emitter
        self.s = lowering.scalars
        self.op = op
        self.w = w

    def matmul_t(self, a: ir.Value, b: ir.Value, m: int, n: int, k: int) -> ir.Value:
        """a {m, k} times the transpose of b {n, k}."""
        e, s, w = self.e, self.s, self.w
        maps = [e.projection(3, [0, 2]), e.projection(3, [1, 2])]
        init = e.filled(w, [m, n], 0)

        def body(xs: Values) -> Values:
            return [s.add(xs[2], s.mul(xs[0], xs[1], w), w)]

        return e.generic(
            [(a, maps[0]), (b, maps[1])], [(init, e.projection(3, [0, 1]))], [PARALLEL, PARALLEL, REDUCTION], body
        )[0]

    def columns(self, value: ir.Value, m: int, start: int, n: int) -> ir.Value:
        result = self.lowering.types.tensor(self.w, [m, n])
        return tensor.extract_slice(result, value, [], [], [], [0, start], [m, n], [1, 1])

    def rows(self, value: ir.Value, lens: list[int], start: int, n: int) -> ir.Value:
        """Rows start..start+n of a vector (lens [N]) or of a matrix."""
        out = [n, *lens[1:]]
        result = self.lowering.types.tensor(self.w, out)
        return tensor.extract_slice(result, value, [], [], [], [start] + [0] * (len(lens) - 1), out, [1] * len(lens))

    def map(self, lens: list[int], inputs: list[tuple[ir.Value, bool]], body: Callable[[Values], ir.Value]) -> ir.Value:
        """An elementwise generic over {batch, hidden}; an input marked True is a {hidden} vector."""
        e = self.e
        vector, identity = e.projection(2, [1]), e.identity_map(2)
        ins = [(v, vector if is_vector else identity) for v, is_vector in inputs]
        init = e.empty(self.w, lens)
        return e.generic(ins, [(init, identity)], [PARALLEL, PARALLEL], lambda xs: [body(xs[: len(inputs)])])[0]

    def activate(self, f: Operation, x: ir.Value, clipped: bool = True) -> ir.Value:
        """f(x), x clipped to [-clip, clip] first where the op has a clip (the gates' inputs)."""
        rule = scalar_rule(f.defn)
        if rule is None:
            raise CannotLower(f"activation function '{f.name}' has no scalar lowering")
        clip = self.op["clip"]
        if clip > 0 and clipped:
            x = self.s.min(self.s.max(x, self.s.const(-clip, self.w), self.w), self.s.const(clip, self.w), self.w)
        return rule.lower(self.s, f, [x], [self.w], self.w)

    def add(self, *xs: ir.Value) -> ir.Value:
        total = xs[0]
        for x in xs[1:]:
            total = arith.addf(total, x)
        return total


# a cell: (step, x·Wᵀ {batch, G·H}, h, c, weights, activation functions, batch, hidden) -> (h, c)
Weights = dict[str, ir.Value]


def _rnn_cell(st: _Step, xw: ir.Value, h: ir.Value, c: ir.Value, wt: Weights, act: list, m: int, n: int):
    (f,) = act
    rec = st.matmul_t(h, wt["R"], m, n, n)
    pre = st.map([m, n], [(xw, False), (rec, False), (wt["Wb"], True), (wt["Rb"], True)], lambda v: st.add(*v))
    return st.map([m, n], [(pre, False)], lambda v: st.activate(f, v[0])), c


def _gru_cell(st: _Step, xw: ir.Value, h: ir.Value, c: ir.Value, wt: Weights, act: list, m: int, n: int):
    f, g = act
    r_all, wb, rb = wt["R"], wt["Wb"], wt["Rb"]
    rec = st.matmul_t(h, st.rows(r_all, [3 * n, n], 0, 2 * n), m, 2 * n, n)

    def gate(i: int) -> ir.Value:
        parts = [
            (st.columns(xw, m, i * n, n), False),
            (st.columns(rec, m, i * n, n), False),
            (st.rows(wb, [3 * n], i * n, n), True),
            (st.rows(rb, [3 * n], i * n, n), True),
        ]
        return st.map([m, n], parts, lambda v: st.activate(f, st.add(*v)))

    z, reset = gate(0), gate(1)
    r_h = st.rows(r_all, [3 * n, n], 2 * n, n)
    wb_h, rb_h = st.rows(wb, [3 * n], 2 * n, n), st.rows(rb, [3 * n], 2 * n, n)
    xw_h = st.columns(xw, m, 2 * n, n)
    if st.op["linear_before_reset"]:
        rec_h = st.matmul_t(h, r_h, m, n, n)
        parts = [(xw_h, False), (reset, False), (rec_h, False), (rb_h, True), (wb_h, True)]
        candidate = st.map([m, n], parts, lambda v: st.add(v[0], arith.mulf(v[1], arith.addf(v[2], v[3])), v[4]))
    else:
        reset_h = st.map([m, n], [(reset, False), (h, False)], lambda v: arith.mulf(v[0], v[1]))
        rec_h = st.matmul_t(reset_h, r_h, m, n, n)
        parts = [(xw_h, False), (rec_h, False), (rb_h, True), (wb_h, True)]
        candidate = st.map([m, n], parts, lambda v: st.add(*v))
    one = st.s.const(1, st.w)

    def blend(v: Values) -> ir.Value:
        zz, cand, hh = v
        return arith.addf(arith.mulf(arith.subf(one, zz), st.activate(g, cand)), arith.mulf(zz, hh))

    return st.map([m, n], [(z, False), (candidate, False), (h, False)], blend), c


def _lstm_cell(st: _Step, xw: ir.Value, h: ir.Value, c: ir.Value, wt: Weights, act: list, m: int, n: int):
    f, g, out_act = act
    rec = st.matmul_t(h, wt["R"], m, 4 * n, n)
    parts = [(xw, False), (rec, False), (wt["Wb"], True), (wt["Rb"], True)]
    pre = st.map([m, 4 * n], parts, lambda v: st.add(*v))
    p = wt["P"]
    gates = [st.columns(pre, m, i * n, n) for i in range(4)]  # input, output, forget, cell
    peep = [st.rows(p, [3 * n], i * n, n) for i in range(3)]
    one = st.s.const(1, st.w)
    input_forget = st.op["input_forget"]

    def cell(v: Values) -> ir.Value:
        gi, gf, gc, pi, pf, cc = v
        i = st.activate(f, arith.addf(gi, arith.mulf(pi, cc)))
        forget = arith.subf(one, i) if input_forget else st.activate(f, arith.addf(gf, arith.mulf(pf, cc)))
        return arith.addf(arith.mulf(forget, cc), arith.mulf(i, st.activate(g, gc)))

    new_c = st.map(
        [m, n],
        [(gates[0], False), (gates[2], False), (gates[3], False), (peep[0], True), (peep[2], True), (c, False)],
        cell,
    )

    def hidden(v: Values) -> ir.Value:
        go, po, cc = v
        return arith.mulf(st.activate(f, arith.addf(go, arith.mulf(po, cc))), st.activate(out_act, cc, clipped=False))

    return st.map([m, n], [(gates[1], False), (peep[1], True), (new_c, False)], hidden), new_c


CELLS = {"rnn": _rnn_cell, "gru": _gru_cell, "lstm": _lstm_cell}


def _present(ins: Instruction, args: Values, i: int) -> ir.Value | None:
    """Input i, or None where it is missing or an `undefined` placeholder."""
    if i >= len(args) or ins.args[i].op.name == "undefined":
        return None
    return args[i]


@lowers(
    *CELLS,
    to="unrolled over the sequence: linalg.generic contractions and gates per step (f32), "
    "sequence lengths applied with tensor.extract at computed positions",
)
def _recurrent(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    op = ins.op
    defn = op.defn
    assert isinstance(defn, Recurrent)
    x_shape = ins.args[0].shape
    t = x_shape.dtype
    if not t.is_float:
        raise CannotLower(f"{op.name} of {t.type_name} has no lowering (floating-point types only)")
    w = DType.double if t is DType.double else DType.float
    e, s, x = lowering.emitter, lowering.scalars, IndexMath(lowering)
    st = _Step(lowering, op, w)
    seq, batch, width = x_shape.lens
    hidden = op["hidden_size"]
    dirs = 2 if op["direction"] == BIDIRECTIONAL else 1
    g = defn.gates

    def widen(i: int) -> ir.Value:
        shape = ins.args[i].shape
        value = args[i]
        if shape.dtype is w:
            return value
        return e.elementwise([(value, shape.lens)], w, shape.lens, lambda xs: [s.to_float(xs[0], shape.dtype, w)])

    def part(value: ir.Value, lens: list[int], d: int) -> ir.Value:
        """Direction d of a {dirs, ...} input, without the direction dimension."""
        result = lowering.types.tensor(w, lens[1:])
        return tensor.extract_slice(
            result, value, [], [], [], [d] + [0] * (len(lens) - 1), [1, *lens[1:]], [1] * len(lens)
        )

    xs = widen(0)
    weights_in, recurrent_in = widen(1), widen(2)
    bias_in = widen(3) if _present(ins, args, 3) is not None else None
    lengths_value = _present(ins, args, 4)
    initial = {name: widen(i) if _present(ins, args, i) is not None else None for name, i in (("h", 5), ("c", 6))}
    peephole = widen(7) if _present(ins, args, 7) is not None else None
    lengths_t = ins.args[4].shape.dtype if lengths_value is not None else DType.int64
    if lengths_value is not None:
        lengths = e.reshape(lengths_value, ins.args[4].shape.lens, [batch])
    else:
        lengths = e.filled(DType.int64, [batch], seq)

    def steps_of(b: ir.Value) -> ir.Value:
        return x.from_element(tensor.extract(lengths, [b]), lengths_t)

    outputs, last_h, last_c = [], [], []
    for d in range(dirs):
        reverse = op["direction"] == REVERSE or d == 1
        wt: Weights = {"R": part(recurrent_in, [dirs, g * hidden, hidden], d)}
        w_d = part(weights_in, [dirs, g * hidden, width], d)
        if bias_in is not None:
            b_d = part(bias_in, [dirs, 2 * g * hidden], d)
            wt["Wb"] = st.rows(b_d, [2 * g * hidden], 0, g * hidden)
            wt["Rb"] = st.rows(b_d, [2 * g * hidden], g * hidden, g * hidden)
        else:
            wt["Wb"] = wt["Rb"] = e.filled(w, [g * hidden], 0)
        wt["P"] = part(peephole, [dirs, 3 * hidden], d) if peephole is not None else e.filled(w, [3 * hidden], 0)
        state = {
            name: part(v, [dirs, batch, hidden], d) if v is not None else e.filled(w, [batch, hidden], 0)
            for name, v in initial.items()
        }
        try:
            act = defn.functions(op, d)
        except ComputeError as e:
            raise CannotLower(str(e)) from None
        step_states = []
        for k in range(seq):

            def read_x(coords: Values, scalars: Values, k: int = k, reverse: bool = reverse) -> Values:
                b, i = coords
                time = x.sub(x.sub(steps_of(b), 1), k) if reverse else x.const(k)
                return [tensor.extract(xs, [x.clamp(time, 0, seq - 1), b, i])]

            xt = indexed(lowering, w, [batch, width], read_x)
            xw = st.matmul_t(xt, w_d, batch, g * hidden, width)
            new_h, new_c = CELLS[op.name](st, xw, state["h"], state["c"], wt, act, batch, hidden)

            def keep(coords: Values, scalars: Values, k: int = k) -> Values:
                fresh_h, fresh_c, old_h, old_c, _ = scalars
                active = x.lt(x.const(k), steps_of(coords[0]))
                return [arith.select(active, fresh_h, old_h)]

            def keep_c(coords: Values, scalars: Values, k: int = k) -> Values:
                fresh, old, _ = scalars
                return [arith.select(x.lt(x.const(k), steps_of(coords[0])), fresh, old)]

            identity = e.identity_map(2)
            maps = [(v, identity) for v in (new_h, new_c, state["h"], state["c"])]
            state["h"] = indexed(lowering, w, [batch, hidden], keep, inputs=maps)
            if op.name == "lstm":
                pairs = [(new_c, identity), (state["c"], identity)]
                state["c"] = indexed(lowering, w, [batch, hidden], keep_c, inputs=pairs)
            step_states.append(e.reshape(state["h"], [batch, hidden], [1, batch, hidden]))
        stacked = (
            step_states[0]
            if seq == 1
            else tensor.concat(lowering.types.tensor(w, [seq, batch, hidden]), 0, step_states)
        )

        def place(coords: Values, scalars: Values, stacked: ir.Value = stacked, reverse: bool = reverse) -> Values:
            row, _, b, j = coords
            steps = steps_of(b)
            k = x.sub(x.sub(steps, 1), row) if reverse else row
            value = tensor.extract(stacked, [x.clamp(k, 0, seq - 1), b, j])
            return [arith.select(x.lt(row, steps), value, s.const(0, w))]

        outputs.append(indexed(lowering, w, [seq, 1, batch, hidden], place))
        last_h.append(state["h"])
        last_c.append(state["c"])

    # the final states, made where rnn_last_hs_output / rnn_last_cell_output asks for them (after this op)
    lowering.function_values[(LAST_STATES, ins)] = (last_h, last_c, w, t)
    return _joined(lowering, outputs, [seq, dirs, batch, hidden], 1, w, t)


def _joined(lowering: Lowering, values: Values, lens: list[int], axis: int, w: DType, t: DType) -> ir.Value:
    """Values concatenated along `axis`, converted from the working type `w` to `t`."""
    e, s = lowering.emitter, lowering.scalars
    value = values[0] if len(values) == 1 else tensor.concat(lowering.types.tensor(w, lens), axis, values)
    if w is t:
        return value
    return e.elementwise([(value, lens)], t, lens, lambda v: [s.convert(v[0], w, t)])


@lowers(
    "rnn_last_hs_output",
    "rnn_last_cell_output",
    to="the final state its rnn/gru/lstm argument's lowering computed (no op of its own)",
)
def _last_state(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    found = lowering.function_values.get((LAST_STATES, ins.args[0]))
    if found is None:
        raise CannotLower("its argument must be an rnn, gru or lstm instruction of the same module")
    last_h, last_c, w, t = found
    states = last_h if ins.op.name == "rnn_last_hs_output" else last_c
    dirs, batch, hidden = ins.shape.lens
    rows = [lowering.emitter.reshape(v, [batch, hidden], [1, batch, hidden]) for v in states]
    return _joined(lowering, rows, [dirs, batch, hidden], 0, w, t)


def _lengths(lowering: Lowering, ins: Instruction, args: Values) -> Callable[[ir.Value], ir.Value]:
    """Reads the sequence length of a batch entry (input 1) as an index."""
    shape = ins.args[1].shape
    flat = lowering.emitter.reshape(args[1], shape.lens, [shape.elements])
    x = IndexMath(lowering)
    return lambda b: x.from_element(tensor.extract(flat, [b]), shape.dtype)


def _reversed(ins: Instruction, d: ir.Value, x: IndexMath) -> ir.Value:
    """i1: direction d runs backwards."""
    if ins.op["direction"] == REVERSE:
        return arith.constant(ir.IntegerType.get_signless(1), ir.IntegerAttr.get(ir.IntegerType.get_signless(1), 1))
    return x.eq(d, 1)


@lowers("rnn_var_sl_last_output", to="linalg.generic reading each entry's last step with tensor.extract")
def _var_sl_last_output(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    x = IndexMath(lowering)
    steps_of = _lengths(lowering, ins, args)
    seq = ins.args[0].shape.lens[0]

    def body(coords: Values, scalars: Values) -> Values:
        d, b, j = coords
        row = x.select(_reversed(ins, d, x), 0, x.sub(steps_of(b), 1))
        return [tensor.extract(args[0], [x.clamp(row, 0, seq - 1), d, b, j])]

    return indexed(lowering, ins.shape.dtype, ins.shape.lens, body)


@lowers("rnn_var_sl_shift_output", to="linalg.generic moving right-aligned rows back (tensor.extract), zeros after")
def _var_sl_shift_output(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    x, s = IndexMath(lowering), lowering.scalars
    steps_of = _lengths(lowering, ins, args)
    seq = ins.args[0].shape.lens[0]
    t = ins.shape.dtype

    def body(coords: Values, scalars: Values) -> Values:
        r, d, b, j = coords
        n = steps_of(b)
        start = x.select(_reversed(ins, d, x), x.sub(x.const(seq), n), 0)
        value = tensor.extract(args[0], [x.clamp(x.add(start, r), 0, seq - 1), d, b, j])
        return [arith.select(x.lt(r, n), value, s.const(0, t))]

    return indexed(lowering, t, ins.shape.lens, body)


@lowers(
    "rnn_var_sl_shift_sequence", to="linalg.generic right-aligning each entry's rows (tensor.extract), zeros before"
)
def _var_sl_shift_sequence(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    x, s = IndexMath(lowering), lowering.scalars
    steps_of = _lengths(lowering, ins, args)
    seq = ins.args[0].shape.lens[0]
    t = ins.shape.dtype

    def body(coords: Values, scalars: Values) -> Values:
        r, b, *rest = coords
        start = x.sub(x.const(seq), steps_of(b))
        value = tensor.extract(args[0], [x.clamp(x.sub(r, start), 0, seq - 1), b, *rest])
        return [arith.select(x.le(start, r), value, s.const(0, t))]

    return indexed(lowering, t, ins.shape.lens, body)
