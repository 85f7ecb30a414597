"""Recurrent operators (ONNX RNN, GRU, LSTM) and the helpers that read their last states.

Inputs follow ONNX: X {seq, batch, input}, W {dirs, gates*H, input}, R {dirs, gates*H, H}, then the
optional B {dirs, 2*gates*H}, sequence_lens {batch}, initial_h {dirs, batch, H} (LSTM: initial_c and
P {dirs, 3H}); an absent optional input is an `undefined` instruction. The result is the hidden
state of every step, {seq, dirs, batch, H}; `rnn_last_hs_output` and `rnn_last_cell_output` read
the final states that the reference compute attaches to that result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from mgxir.ir import traits
from mgxir.ir.attributes import FLOAT, INT, RNN_DIRECTION, STRING, Attr
from mgxir.ir.operation import ComputeError, OpDef, Operation, RunModule, RuntimeValue
from mgxir.ir.registry import OPERATIONS, make_op, register
from mgxir.ir.shape import Shape
from mgxir.ops import elementwise  # noqa: F401  (the actv_func defaults are elementwise ops: registered first)
from mgxir.ops.common import fail, lens_text, require_static

if TYPE_CHECKING:
    from mgxir.ir.module import Module

Shapes = Sequence[Shape]
Modules = Sequence["Module"]
Arrays = list[np.ndarray]

FORWARD, REVERSE, BIDIRECTIONAL = 0, 1, 2


class HiddenStates(np.ndarray):
    """An rnn result that also carries its final hidden (and LSTM cell) state per direction."""

    last_hidden: np.ndarray | None = None
    last_cell: np.ndarray | None = None


def _present(inputs: Arrays, i: int) -> np.ndarray | None:
    """Input i, or None where it is missing or an `undefined` placeholder (a 0-d array)."""
    if i >= len(inputs) or inputs[i].ndim == 0:
        return None
    return inputs[i]


class Recurrent(OpDef):
    traits = (traits.Recurrent,)
    gates: ClassVar[int] = 1
    functions_per_direction: ClassVar[int] = 1
    default_functions: ClassVar[tuple[str, ...]] = ("tanh",)
    # which listed function each slot takes, by the number listed (other counts: the list as it is)
    one_direction_patterns: ClassVar[dict[int, tuple[int, ...]]] = {}
    bidirectional_patterns: ClassVar[dict[int, tuple[int, ...]]] = {1: (0, 0)}
    arity = (3, 6)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x, w, r = inputs[:3]
        require_static(self.name, x, w, r)
        hidden = op["hidden_size"]
        dirs = 2 if op["direction"] == BIDIRECTIONAL else 1
        if x.ndim != 3:
            raise fail(self.name, f"X must have rank 3 {{seq, batch, input}}, got {lens_text(x.lens)}")
        want_w = (dirs, self.gates * hidden, x.lens[2])
        if w.lens != want_w:
            raise fail(self.name, f"W is {lens_text(w.lens)}, expected {lens_text(want_w)}")
        want_r = (dirs, self.gates * hidden, hidden)
        if r.lens != want_r:
            raise fail(self.name, f"R is {lens_text(r.lens)}, expected {lens_text(want_r)}")
        return Shape.make(x.dtype, (x.lens[0], dirs, x.lens[1], hidden))

    def activation_functions(self, op: Operation) -> list[Operation]:
        """Every direction's activation functions, one direction after another, filled in from a
        short `actv_func` list as MIGraphX's rewrite_rnn does."""
        listed = list(op["actv_func"])
        bidirectional = op["direction"] == BIDIRECTIONAL
        if not listed:
            return [make_op(name) for name in self.default_functions * (2 if bidirectional else 1)]
        pattern = (self.bidirectional_patterns if bidirectional else self.one_direction_patterns).get(len(listed))
        return listed if pattern is None else [listed[i] for i in pattern]

    def functions(self, op: Operation, direction: int) -> list[Operation]:
        """The activation functions for one direction."""
        n = self.functions_per_direction
        chosen = self.activation_functions(op)[direction * n : direction * n + n]
        if len(chosen) < n:
            raise ComputeError(f"{self.name}: needs {n} activation functions per direction, got {len(chosen)}")
        return chosen

    def step(
        self, op: Operation, xw: np.ndarray, h: np.ndarray, c: np.ndarray, weights: dict, act: list
    ) -> tuple[np.ndarray, np.ndarray]:
        """One time step of the cell; each recurrent op overrides it."""
        raise ComputeError(f"{self.name}: no cell step is defined")

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x, w, r = (a.astype(np.float64) for a in inputs[:3])
        seq, batch, _ = x.shape
        hidden = op["hidden_size"]
        dirs = w.shape[0]
        g = self.gates
        bias = _present(inputs, 3)
        lengths = _present(inputs, 4)
        initial_h = _present(inputs, 5)
        initial_c = _present(inputs, 6)
        peephole = _present(inputs, 7)
        steps = np.full(batch, seq, np.int64) if lengths is None else lengths.astype(np.int64).reshape(batch)
        out = np.zeros((seq, dirs, batch, hidden))
        last_h = np.zeros((dirs, batch, hidden))
        last_c = np.zeros((dirs, batch, hidden))

        def activation(f: Operation) -> object:
            return lambda v: f.defn.compute(f, [v], [], run_module)

        for d in range(dirs):
            reverse = op["direction"] == REVERSE or d == 1
            b = np.zeros(2 * g * hidden) if bias is None else bias[d].astype(np.float64)
            weights = {
                "R": r[d],
                "Wb": b[: g * hidden],
                "Rb": b[g * hidden :],
                "P": np.zeros(3 * hidden) if peephole is None else peephole[d].astype(np.float64),
            }
            act = [activation(f) for f in self.functions(op, d)]
            h = np.zeros((batch, hidden)) if initial_h is None else initial_h[d].astype(np.float64)
            c = np.zeros((batch, hidden)) if initial_c is None else initial_c[d].astype(np.float64)
            for k in range(seq):
                active = k < steps
                t = np.where(reverse, steps - 1 - k, k)
                xt = x[np.clip(t, 0, seq - 1), np.arange(batch)]
                new_h, new_c = self.step(op, xt @ w[d].T, h, c, weights, act)
                h = np.where(active[:, None], new_h, h)
                c = np.where(active[:, None], new_c, c)
                for bi in np.nonzero(active)[0]:
                    out[t[bi], d, bi] = h[bi]
            last_h[d], last_c[d] = h, c
        dtype = inputs[0].dtype
        result = out.astype(dtype).view(HiddenStates)
        result.last_hidden = last_h.astype(dtype)
        result.last_cell = last_c.astype(dtype)
        return result


def _clip(op: Operation, v: np.ndarray) -> np.ndarray:
    return np.clip(v, -op["clip"], op["clip"]) if op["clip"] > 0 else v


@register
class Rnn(Recurrent):
    name = "rnn"
    attributes = (
        Attr("hidden_size", INT, 1),
        Attr("actv_func", OPERATIONS, ("tanh", "tanh")),
        Attr("direction", RNN_DIRECTION, FORWARD),
        Attr("clip", FLOAT, 0.0),
    )

    def step(self, op, xw, h, c, weights, act):  # type: ignore[no-untyped-def]
        (f,) = act
        return f(_clip(op, xw + h @ weights["R"].T + weights["Wb"] + weights["Rb"])), c


@register
class Gru(Recurrent):
    name = "gru"
    attributes = (
        Attr("hidden_size", INT, 1),
        Attr("actv_func", OPERATIONS, ("sigmoid", "tanh")),
        Attr("direction", RNN_DIRECTION, FORWARD),
        Attr("clip", FLOAT, 0.0),
        Attr("linear_before_reset", INT, 0),
    )
    gates = 3
    functions_per_direction = 2
    default_functions = ("sigmoid", "tanh")
    one_direction_patterns = {1: (0, 0)}
    bidirectional_patterns = {1: (0, 0, 0, 0), 2: (0, 1, 0, 1), 3: (0, 1, 2, 0)}

    def step(self, op, xw, h, c, weights, act):  # type: ignore[no-untyped-def]
        f, g = act
        n = h.shape[1]
        r, wb, rb = weights["R"], weights["Wb"], weights["Rb"]
        recurrent = h @ r[: 2 * n].T
        z = f(_clip(op, xw[:, :n] + recurrent[:, :n] + wb[:n] + rb[:n]))
        reset = f(_clip(op, xw[:, n : 2 * n] + recurrent[:, n:] + wb[n : 2 * n] + rb[n : 2 * n]))
        if op["linear_before_reset"]:
            candidate = xw[:, 2 * n :] + reset * (h @ r[2 * n :].T + rb[2 * n :]) + wb[2 * n :]
        else:
            candidate = xw[:, 2 * n :] + (reset * h) @ r[2 * n :].T + rb[2 * n :] + wb[2 * n :]
        hidden = g(_clip(op, candidate))
        return (1 - z) * hidden + z * h, c


@register
class Lstm(Recurrent):
    name = "lstm"
    attributes = (
        Attr("hidden_size", INT, 1),
        Attr("actv_func", OPERATIONS, ("sigmoid", "tanh", "tanh")),
        Attr("direction", RNN_DIRECTION, FORWARD),
        Attr("clip", FLOAT, 0.0),
        Attr("input_forget", INT, 0),
    )
    gates = 4
    functions_per_direction = 3
    default_functions = ("sigmoid", "tanh", "tanh")
    one_direction_patterns = {1: (0, 0, 0), 2: (0, 1, 1)}
    bidirectional_patterns = {
        1: (0, 0, 0, 0, 0, 0),
        2: (0, 1, 1, 0, 1, 1),
        3: (0, 1, 2, 0, 1, 2),
        4: (0, 1, 2, 3, 3, 3),
        5: (0, 1, 2, 3, 4, 4),
    }
    arity = (3, 8)

    def step(self, op, xw, h, c, weights, act):  # type: ignore[no-untyped-def]
        f, g, out_act = act
        n = h.shape[1]
        pre = xw + h @ weights["R"].T + weights["Wb"] + weights["Rb"]
        p = weights["P"]
        # ONNX gate order: input, output, forget, cell; peepholes: input, output, forget
        i = f(_clip(op, pre[:, :n] + p[:n] * c))
        forget = 1 - i if op["input_forget"] else f(_clip(op, pre[:, 2 * n : 3 * n] + p[2 * n :] * c))
        cell = forget * c + i * g(_clip(op, pre[:, 3 * n :]))
        o = f(_clip(op, pre[:, n : 2 * n] + p[n : 2 * n] * cell))
        return o * out_act(cell), cell


class _LastState(OpDef):
    state: ClassVar[str] = "last_hidden"
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        require_static(self.name, x)
        if x.ndim != 4:
            raise fail(self.name, f"expects an rnn result {{seq, dirs, batch, hidden}}, got {lens_text(x.lens)}")
        return Shape.make(x.dtype, x.lens[1:])

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        state = getattr(inputs[0], self.state, None)
        if state is None:
            raise ComputeError(f"{self.name}: its input must be the result of an rnn, gru or lstm instruction")
        return np.asarray(state)


@register
class RnnLastHsOutput(_LastState):
    name = "rnn_last_hs_output"


@register
class RnnLastCellOutput(_LastState):
    name = "rnn_last_cell_output"
    state = "last_cell"


@register
class RnnVarSlLastOutput(OpDef):
    """The hidden state after each batch entry's own sequence length (inputs: states, lengths)."""

    name = "rnn_var_sl_last_output"
    attributes = (Attr("direction", RNN_DIRECTION, FORWARD),)
    arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        require_static(self.name, inputs[0])
        return Shape.make(inputs[0].dtype, inputs[0].lens[1:])

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        states, lengths = inputs[0], inputs[1].astype(np.int64).reshape(-1)
        _, dirs, batch, _ = states.shape
        out = np.empty(states.shape[1:], states.dtype)
        for d in range(dirs):
            reverse = op["direction"] == REVERSE or d == 1
            for b in range(batch):
                out[d, b] = states[0 if reverse else lengths[b] - 1, d, b]
        return out


@register
class RnnVarSlShiftOutput(OpDef):
    """Moves reverse-direction states computed on right-aligned sequences back to the start."""

    name = "rnn_var_sl_shift_output"
    attributes = (Attr("output_name", STRING, "hidden_states"), Attr("direction", RNN_DIRECTION, FORWARD))
    arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        return inputs[0]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        states, lengths = inputs[0], inputs[1].astype(np.int64).reshape(-1)
        seq, dirs, batch = states.shape[:3]
        out = np.zeros_like(states)
        for d in range(dirs):
            shifted = op["direction"] == REVERSE or d == 1
            for b in range(batch):
                n = int(lengths[b])
                start = seq - n if shifted else 0
                out[:n, d, b] = states[start : start + n, d, b]
        return out


@register
class RnnVarSlShiftSequence(OpDef):
    """Right-aligns each batch entry's sequence of length seq_lens[b] (inputs: X, lengths)."""

    name = "rnn_var_sl_shift_sequence"
    arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        return inputs[0]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x, lengths = inputs[0], inputs[1].astype(np.int64).reshape(-1)
        seq = x.shape[0]
        out = np.zeros_like(x)
        for b, n in enumerate(lengths):
            out[seq - n :, b] = x[:n, b]
        return out
