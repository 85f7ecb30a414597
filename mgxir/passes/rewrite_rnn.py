"""rewrite_rnn: as MIGraphX's rewrite_rnn, each `rnn`, `gru` and `lstm` is unrolled over its
sequence into slice/dot/add/activation/concat instructions, one cell per direction, and the
`rnn_last_hs_output` / `rnn_last_cell_output` readers take the unrolled final states. Sequence
lengths that are all equal shorten the unrolling (zero-padded after); lengths that differ or are not
constant shift the reverse direction's sequence and read the states through the
`rnn_var_sl_shift_output` / `rnn_var_sl_last_output` ops.

MIGraphX's rewrite ignores `clip` and LSTM's `input_forget`, which changes results, so mgxir leaves
an op that sets either as it is (as it does a dynamic one). `exact_gates=true` (the `gpu` pipeline's
choice, so that such RNNs run as gemms and pointwise kernels rather than on the host) unrolls them
too, as the reference computes them: each gate's pre-activation clipped to [-clip, clip] before its
activation, and with input_forget the forget gate 1 - the input gate. That differs from MIGraphX's
output on purpose: MIGraphX's unrolled program gives other numbers than its own reference op."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from mgxir.interp.interpreter import Interpreter
from mgxir.ir import traits
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.ops.rnn import BIDIRECTIONAL, FORWARD, Recurrent
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.propagate_constant import ConstantAnalysis, evaluate_constant
from mgxir.passes.rewrite import Rewriter

_BIAS, _SEQ_LENS, _INITIAL_H, _INITIAL_C, _PEEPHOLE = 3, 4, 5, 6, 7


class CellInputs(NamedTuple):
    """One direction's inputs; absent bias or peephole is None."""

    seq: Instruction
    w: Instruction
    r: Instruction
    bias: Instruction | None
    initial_h: Instruction
    initial_c: Instruction | None
    peephole: Instruction | None


class CellOutputs(NamedTuple):
    """The states of all steps but the last (None for a single step) and of the last step, each
    {steps, 1, batch, hidden}; LSTM adds its cell states likewise."""

    hidden_states: Instruction | None
    last_hidden: Instruction
    cell_states: Instruction | None = None
    last_cell: Instruction | None = None


class Joined(NamedTuple):
    """The rewritten result (the recurrent instruction, now a concat) and what its readers take."""

    hidden: Instruction
    last_hidden: Instruction
    cell_states: Instruction | None = None
    last_cell: Instruction | None = None


class SequenceLengths:
    """MIGraphX's is_variable_seq_lens and get_seq_len for one recurrent instruction."""

    def __init__(self, seq_lens: Instruction | None, max_len: int, constant: ConstantAnalysis, module: Module):
        self.seq_lens = seq_lens
        self.variable = False
        self.length = max_len
        if seq_lens is None:
            return
        if not constant(seq_lens):
            self.variable = True
            return
        assert module.program is not None
        values = evaluate_constant(seq_lens, {}, Interpreter(module.program)).astype(np.int64).ravel()
        if values.size and not np.all(values == values[0]):
            self.variable = True
        elif values.size:
            self.length = int(values[0])


def _present(args: Sequence[Instruction], index: int) -> Instruction | None:
    if index < len(args) and args[index].op.defn.name != "undefined":
        return args[index]
    return None


class RnnRewriter:
    """Inserts the unrolled instructions before the recurrent instruction `ins`."""

    def __init__(self, module: Module, ins: Instruction, lengths: SequenceLengths):
        self.module = module
        self.ins = ins
        self.lengths = lengths
        self.clip = float(ins.op["clip"])
        self.input_forget = ins.op.defn.name == "lstm" and bool(ins.op["input_forget"])

    def add(self, name: str, args: Sequence[Instruction], **attributes: object) -> Instruction:
        return self.module.insert(self.ins, make_op(name, **attributes), args)

    def apply(self, op: Operation, args: list[Instruction], defn: Recurrent) -> None:
        direction = op["direction"]
        bidirectional = direction == BIDIRECTIONAL
        dirs = 2 if bidirectional else 1
        functions = defn.activation_functions(op)
        per_direction = defn.functions_per_direction
        seq = args[0]
        hidden_size = args[2].shape.lens[2]
        state_shape = Shape.make(seq.shape.dtype, (1, seq.shape.lens[1], hidden_size))
        is_lstm = defn.name == "lstm"

        def per_direction_input(index: int) -> list[Instruction | None]:
            """The input sliced per direction; a missing initial state is zeros, other inputs None."""
            given = _present(args, index)
            if given is not None:
                return [self.direction_slice(given, d) for d in range(dirs)] if bidirectional else [given]
            if index in (_INITIAL_H, _INITIAL_C):
                return [self.module.add_literal(Literal(state_shape, np.zeros(state_shape.lens))) for _ in range(dirs)]
            return [None] * dirs

        indices = [1, 2, _BIAS, _INITIAL_H] + ([_INITIAL_C, _PEEPHOLE] if is_lstm else [])
        split = {index: per_direction_input(index) for index in indices}

        def cell(is_forward: bool, d: int, x: Instruction) -> CellOutputs:
            w, r, bias, initial_h, initial_c, peephole = (
                split[i][d] if i in split else None for i in (1, 2, _BIAS, _INITIAL_H, _INITIAL_C, _PEEPHOLE)
            )
            assert w is not None and r is not None and initial_h is not None
            inputs = CellInputs(x, w, r, bias, initial_h, initial_c, peephole)
            chosen = functions[d * per_direction : (d + 1) * per_direction]
            if defn.name == "rnn":
                return self.vanilla_rnn_cell(is_forward, inputs, chosen[0])
            if defn.name == "gru":
                return self.gru_cell(is_forward, inputs, op["linear_before_reset"], chosen)
            return self.lstm_cell(is_forward, inputs, chosen)

        if bidirectional:
            forward = cell(True, 0, seq)
            if self.lengths.variable:
                seq = self.shift_sequence(seq)
            reverse = cell(False, 1, seq)
            joined = (
                self.join_lstm_bidirectional(forward, reverse) if is_lstm else self.join_bidirectional(forward, reverse)
            )
        else:
            is_forward = direction == FORWARD
            if not is_forward and self.lengths.variable:
                seq = self.shift_sequence(seq)
            result = cell(is_forward, 0, seq)
            joined = (
                self.join_lstm_one_direction(result, is_forward)
                if is_lstm
                else self.join_one_direction(result, is_forward)
            )

        hidden = self.pad_hidden_states(seq, joined.hidden)
        hidden = self.replace_last_hs_output(hidden, joined.last_hidden, direction)
        if joined.cell_states is not None and joined.last_cell is not None:
            self.replace_last_cell_output(hidden, joined.cell_states, joined.last_cell, direction)

    def shift_sequence(self, seq: Instruction) -> Instruction:
        assert self.lengths.seq_lens is not None
        return self.add("rnn_var_sl_shift_sequence", [seq, self.lengths.seq_lens])

    # -- pieces shared by the three cells -------------------------------------------------------

    def direction_slice(self, arg: Instruction, d: int) -> Instruction:
        return self.add("slice", [arg], axes=(0,), starts=(d,), ends=(d + 1,))

    def squeeze(self, arg: Instruction) -> Instruction:
        return self.add("squeeze", [arg], axes=(0,))

    def transposed(self, arg: Instruction) -> Instruction:
        return self.add("transpose", [arg], permutation=(1, 0))

    def slice(self, arg: Instruction, axis: int, start: int, end: int) -> Instruction:
        return self.add("slice", [arg], axes=(axis,), starts=(start,), ends=(end,))

    def broadcast(self, arg: Instruction, lens: tuple[int, ...]) -> Instruction:
        return self.add("broadcast", [arg], axis=1, out_lens=lens)

    def step_input(self, seq: Instruction, index: int) -> Instruction:
        xt = self.slice(seq, 0, index, index + 1)
        return self.squeeze(self.add("contiguous", [xt]))

    def activation(self, function: Operation, arg: Instruction, clipped: bool = True) -> Instruction:
        """function(arg), arg clipped to [-clip, clip] first where the op sets clip (the reference
        clips every gate and candidate before its activation, not LSTM's cell state)."""
        if clipped and self.clip > 0:
            bound = Shape.make(arg.shape.dtype, arg.shape.lens)
            low = self.module.add_literal(Literal(bound, np.full(bound.lens, -self.clip)))
            high = self.module.add_literal(Literal(bound, np.full(bound.lens, self.clip)))
            arg = self.add("clip", [arg, low, high])
        return self.module.insert(self.ins, function, [arg])

    def steps(self, is_forward: bool) -> list[tuple[int, int]]:
        count = self.lengths.length
        return [(i, i if is_forward else count - 1 - i) for i in range(count)]

    def collect(self, states: Instruction | None, step: Instruction, is_forward: bool) -> Instruction:
        """The states so far with this step's added: after them going forward, before them in reverse."""
        return step if states is None else self.all_steps(states, step, is_forward)

    # -- cells ----------------------------------------------------------------------------------

    def vanilla_rnn_cell(self, is_forward: bool, inputs: CellInputs, function: Operation) -> CellOutputs:
        tran_sw = self.transposed(self.squeeze(inputs.w))
        tran_sr = self.transposed(self.squeeze(inputs.r))
        sih = self.squeeze(inputs.initial_h)
        bias = None
        if inputs.bias is not None:
            hs = inputs.r.shape.lens[2]
            sbias = self.squeeze(inputs.bias)
            wrb = self.add("add", [self.slice(sbias, 0, 0, hs), self.slice(sbias, 0, hs, 2 * hs)])
            bias = self.broadcast(wrb, sih.shape.lens)
        hidden_states = None
        last = self.add("unsqueeze", [sih], axes=(0, 1))
        steps = self.steps(is_forward)
        for i, index in steps:
            xt = self.step_input(inputs.seq, index)
            xt_wi = self.add("dot", [xt, tran_sw])
            ht_ri = self.add("dot", [sih, tran_sr])
            if bias is not None:
                xt_wi = self.add("add", [xt_wi, bias])
            sih = self.activation(function, self.add("add", [xt_wi, ht_ri]))
            last = self.add("unsqueeze", [sih], axes=(0, 1))
            if i < len(steps) - 1:
                hidden_states = self.collect(hidden_states, last, is_forward)
        return CellOutputs(hidden_states, last)

    def gru_cell(
        self, is_forward: bool, inputs: CellInputs, linear_before_reset: int, functions: list[Operation]
    ) -> CellOutputs:
        gate, candidate_function = functions
        hs = inputs.r.shape.lens[2]
        batch = inputs.seq.shape.lens[1]
        ones_shape = Shape.make(inputs.seq.shape.dtype, (batch, hs))
        ones = self.module.add_literal(Literal(ones_shape, np.ones(ones_shape.lens)))
        tw = self.transposed(self.squeeze(inputs.w))
        sr = self.squeeze(inputs.r)
        trzr = self.transposed(self.slice(sr, 0, 0, 2 * hs))
        trh = self.transposed(self.slice(sr, 0, 2 * hs, 3 * hs))
        sih = self.squeeze(inputs.initial_h)
        bs = inputs.initial_h.shape.lens[1]
        bwb = brb_zr = brb_h = None
        if inputs.bias is not None:
            sbias = self.squeeze(inputs.bias)
            bwb = self.broadcast(self.slice(sbias, 0, 0, 3 * hs), (bs, 3 * hs))
            rb_zr = self.slice(sbias, 0, 3 * hs, 5 * hs)
            rb_h = self.slice(sbias, 0, 5 * hs, 6 * hs)
            brb_zr = self.broadcast(rb_zr, (bs, 2 * hs))
            brb_h = self.broadcast(rb_h, (bs, hs))
        hidden_states = None
        last = None
        steps = self.steps(is_forward)
        for i, index in steps:
            xt = self.step_input(inputs.seq, index)
            xt_w = self.add("dot", [xt, tw])
            ih1_rzr = self.add("dot", [sih, trzr])
            if bwb is not None and brb_zr is not None:
                xt_w = self.add("add", [xt_w, bwb])
                ih1_rzr = self.add("add", [ih1_rzr, brb_zr])
            xw_z = self.slice(xt_w, 1, 0, hs)
            xw_r = self.slice(xt_w, 1, hs, 2 * hs)
            xw_h = self.slice(xt_w, 1, 2 * hs, 3 * hs)
            hr_z = self.slice(ih1_rzr, 1, 0, hs)
            hr_r = self.slice(ih1_rzr, 1, hs, 2 * hs)
            zt = self.activation(gate, self.add("add", [xw_z, hr_z]))
            rt = self.activation(gate, self.add("add", [xw_r, hr_r]))
            if linear_before_reset == 0:
                hr_h = self.add("dot", [self.add("mul", [rt, sih]), trh])
                if brb_h is not None:
                    hr_h = self.add("add", [hr_h, brb_h])
            else:
                ht1_rh = self.add("dot", [sih, trh])
                if brb_h is not None:
                    ht1_rh = self.add("add", [ht1_rh, brb_h])
                hr_h = self.add("mul", [rt, ht1_rh])
            ht = self.activation(candidate_function, self.add("add", [xw_h, hr_h]))
            one_minus_zt_ht = self.add("mul", [self.add("sub", [ones, zt]), ht])
            zt_ht1 = self.add("mul", [zt, sih])
            sih = self.add("add", [one_minus_zt_ht, zt_ht1])
            last = self.add("unsqueeze", [sih], axes=(0, 1))
            if i < len(steps) - 1:
                hidden_states = self.collect(hidden_states, last, is_forward)
        assert last is not None
        return CellOutputs(hidden_states, last)

    def lstm_cell(self, is_forward: bool, inputs: CellInputs, functions: list[Operation]) -> CellOutputs:
        gate, candidate_function, output_function = functions
        hs = inputs.r.shape.lens[2]
        bs = inputs.initial_h.shape.lens[1]
        tsw = self.transposed(self.squeeze(inputs.w))
        tsr = self.transposed(self.squeeze(inputs.r))
        sih = self.squeeze(inputs.initial_h)
        assert inputs.initial_c is not None
        sic = self.squeeze(inputs.initial_c)
        ic_lens = sic.shape.lens
        wrb = None
        if inputs.bias is not None:
            sbias = self.squeeze(inputs.bias)
            ub_wrb = self.add("add", [self.slice(sbias, 0, 0, 4 * hs), self.slice(sbias, 0, 4 * hs, 8 * hs)])
            wrb = self.broadcast(ub_wrb, (bs, 4 * hs))
        peephole: list[Instruction] = []
        if inputs.peephole is not None:
            spph = self.squeeze(inputs.peephole)
            for gate_index in range(3):  # input, output, forget
                part = self.slice(spph, 0, gate_index * hs, (gate_index + 1) * hs)
                peephole.append(self.broadcast(part, ic_lens))
        ones = None
        if self.input_forget:
            ones = self.module.add_literal(Literal(Shape.make(sic.shape.dtype, ic_lens), np.ones(ic_lens)))
        hidden_states = cell_states = last_hidden = last_cell = None
        steps = self.steps(is_forward)
        for i, index in steps:
            xt = self.step_input(inputs.seq, index)
            xt_tsw = self.add("dot", [xt, tsw])
            sih_tsr = self.add("dot", [sih, tsr])
            xt_sih = self.add("add", [xt_tsw, sih_tsr])
            if wrb is not None:
                xt_sih = self.add("add", [xt_sih, wrb])
            it_before = self.slice(xt_sih, 1, 0, hs)
            ot_before = self.slice(xt_sih, 1, hs, 2 * hs)
            ft_before = self.slice(xt_sih, 1, 2 * hs, 3 * hs)
            ct_before = self.slice(xt_sih, 1, 3 * hs, 4 * hs)
            if peephole:
                it_before = self.add("add", [it_before, self.add("mul", [peephole[0], sic])])
                ft_before = self.add("add", [ft_before, self.add("mul", [peephole[2], sic])])
            it = self.activation(gate, it_before)
            ft = self.add("sub", [ones, it]) if ones is not None else self.activation(gate, ft_before)
            ct = self.activation(candidate_function, ct_before)
            cellt = self.add("add", [self.add("mul", [ft, sic]), self.add("mul", [it, ct])])
            if peephole:
                ot_before = self.add("add", [ot_before, self.add("mul", [peephole[1], cellt])])
            ot = self.activation(gate, ot_before)
            ht = self.add("mul", [ot, self.activation(output_function, cellt, clipped=False)])
            sic, sih = cellt, ht
            last_hidden = self.add("unsqueeze", [ht], axes=(0, 1))
            last_cell = self.add("unsqueeze", [cellt], axes=(0, 1))
            if i < len(steps) - 1:
                hidden_states = self.collect(hidden_states, last_hidden, is_forward)
                cell_states = self.collect(cell_states, last_cell, is_forward)
        assert last_hidden is not None
        return CellOutputs(hidden_states, last_hidden, cell_states, last_cell)

    # -- joining the directions into the result -------------------------------------------------

    def all_steps(self, states: Instruction, last: Instruction, is_forward: bool) -> Instruction:
        """A cell's states of every step in sequence order (the last step is first in reverse)."""
        return self.add("concat", [states, last] if is_forward else [last, states], axis=0)

    def join_bidirectional(self, forward: CellOutputs, reverse: CellOutputs) -> Joined:
        last_output = self.squeeze(self.add("concat", [forward.last_hidden, reverse.last_hidden], axis=1))
        if forward.hidden_states is None or reverse.hidden_states is None:
            pair = [forward.last_hidden, reverse.last_hidden]
        else:
            pair = [
                self.all_steps(forward.hidden_states, forward.last_hidden, True),
                self.all_steps(reverse.hidden_states, reverse.last_hidden, False),
            ]
        return Joined(Rewriter(self.module).replace(self.ins, make_op("concat", axis=1), pair), last_output)

    def join_one_direction(self, result: CellOutputs, is_forward: bool) -> Joined:
        last_output = self.squeeze(result.last_hidden)
        return Joined(self.replace_with_steps(result.hidden_states, result.last_hidden, is_forward), last_output)

    def replace_with_steps(self, states: Instruction | None, last: Instruction, is_forward: bool) -> Instruction:
        """The recurrent instruction becomes the concat of one direction's states."""
        if states is None:
            pair = [last]
        else:
            pair = [states, last] if is_forward else [last, states]
        return Rewriter(self.module).replace(self.ins, make_op("concat", axis=0), pair)

    def join_lstm_bidirectional(self, forward: CellOutputs, reverse: CellOutputs) -> Joined:
        assert forward.last_cell is not None and reverse.last_cell is not None
        both_hidden = self.add("concat", [forward.last_hidden, reverse.last_hidden], axis=1)
        both_cell = self.add("concat", [forward.last_cell, reverse.last_cell], axis=1)
        last_hidden = self.squeeze(both_hidden)
        last_cell = self.squeeze(both_cell)
        if forward.hidden_states is None or reverse.hidden_states is None:
            cell_states = both_cell
            pair = [forward.last_hidden, reverse.last_hidden]
        else:
            assert forward.cell_states is not None and reverse.cell_states is not None
            pair = [
                self.all_steps(forward.hidden_states, forward.last_hidden, True),
                self.all_steps(reverse.hidden_states, reverse.last_hidden, False),
            ]
            forward_cells = self.all_steps(forward.cell_states, forward.last_cell, True)
            reverse_cells = self.all_steps(reverse.cell_states, reverse.last_cell, False)
            cell_states = self.add("concat", [forward_cells, reverse_cells], axis=1)
        hidden = Rewriter(self.module).replace(self.ins, make_op("concat", axis=1), pair)
        return Joined(hidden, last_hidden, cell_states, last_cell)

    def join_lstm_one_direction(self, result: CellOutputs, is_forward: bool) -> Joined:
        assert result.last_cell is not None
        last_hidden = self.squeeze(result.last_hidden)
        last_cell = self.squeeze(result.last_cell)
        if result.cell_states is None:
            cell_states = result.last_cell
        else:
            cell_states = self.all_steps(result.cell_states, result.last_cell, is_forward)
        hidden = self.replace_with_steps(result.hidden_states, result.last_hidden, is_forward)
        return Joined(hidden, last_hidden, cell_states, last_cell)

    # -- the result's readers -------------------------------------------------------------------

    def pad_hidden_states(self, seq: Instruction, hidden: Instruction) -> Instruction:
        """Zeros after the states when every sequence is shorter than the input."""
        max_len = seq.shape.lens[0]
        if self.lengths.length >= max_len:
            return hidden
        pad_lens = (max_len - self.lengths.length, *hidden.shape.lens[1:])
        pad_shape = Shape.make(hidden.shape.dtype, pad_lens)
        zeros = self.module.add_literal(Literal(pad_shape, np.zeros(pad_lens)))
        padded = self.module.insert(hidden.next, make_op("concat", axis=0), [hidden, zeros])
        Rewriter(self.module).replace_all_uses(hidden, padded)
        return padded

    def replace_last_hs_output(self, hidden: Instruction, last_output: Instruction, direction: int) -> Instruction:
        seq_lens = self.lengths.seq_lens
        if not self.lengths.variable or seq_lens is None:
            for user in [u for u in hidden.users if u.op.defn.name == "rnn_last_hs_output"]:
                Rewriter(self.module).replace_all_uses(user, last_output)
            return hidden
        shift = make_op("rnn_var_sl_shift_output", output_name="hidden_states", direction=direction)
        shifted = self.module.insert(hidden.next, shift, [hidden, seq_lens])
        Rewriter(self.module).replace_all_uses(hidden, shifted)
        for user in [u for u in shifted.users if u.op.defn.name == "rnn_last_hs_output"]:
            Rewriter(self.module).replace(
                user, make_op("rnn_var_sl_last_output", direction=direction), [user.args[0], seq_lens]
            )
        return shifted

    def replace_last_cell_output(
        self, hidden: Instruction, cell_states: Instruction, last_cell: Instruction, direction: int
    ) -> None:
        readers = [u for u in hidden.users if u.op.defn.name == "rnn_last_cell_output"]
        seq_lens = self.lengths.seq_lens
        if not self.lengths.variable or seq_lens is None:
            for reader in readers:
                Rewriter(self.module).replace_all_uses(reader, last_cell)
            return
        if readers:
            shift = make_op("rnn_var_sl_shift_output", output_name="cell_outputs", direction=direction)
            cell_states = self.module.insert(hidden.next, shift, [cell_states, seq_lens])
        for reader in readers:
            Rewriter(self.module).replace(
                reader, make_op("rnn_var_sl_last_output", direction=direction), [cell_states, seq_lens]
            )


def rewritable(ins: Instruction, exact_gates: bool = False) -> bool:
    """Whether the rewrite keeps this op's meaning: MIGraphX's ignores clip and input_forget,
    `exact_gates` computes them."""
    op = ins.op
    if ins.shape.is_dynamic or any(a.shape.is_dynamic for a in ins.args[:3]):
        return False
    return exact_gates or (op["clip"] == 0 and not (op.defn.name == "lstm" and op["input_forget"]))


@dataclasses.dataclass
class RewriteRnn(ModulePass):
    name = "rewrite_rnn"
    description = "Unroll rnn, gru and lstm into dot/add/activation/concat over the sequence."
    exact_gates: bool = False  # also unroll ops with clip or input_forget, computing them (MIGraphX drops them)

    def apply_module(self, module: Module, context: PassContext) -> None:
        recurrent = [ins for ins in module if ins.op.defn.has(traits.Recurrent) and rewritable(ins, self.exact_gates)]
        if not recurrent:
            return
        constant = ConstantAnalysis()
        for ins in recurrent:
            args = list(ins.args)
            lengths = SequenceLengths(_present(args, _SEQ_LENS), args[0].shape.lens[0], constant, module)
            defn = ins.op.defn
            assert isinstance(defn, Recurrent)
            RnnRewriter(module, ins, lengths).apply(ins.op, args, defn)
            context.count(f"{defn.name} unrolled")
