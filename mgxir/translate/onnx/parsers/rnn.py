"""Recurrent ONNX operators: RNN, GRU and LSTM as MIGraphX's rnn, gru and lstm ops."""

from __future__ import annotations

from mgxir.ir.instruction import Instruction
from mgxir.ops.registry import make_op
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError
from mgxir.translate.onnx.registry import onnx_op

Args = list[Instruction]

ACTIVATIONS = {"tanh": "tanh", "relu": "relu", "sigmoid": "sigmoid", "leakyrelu": "leaky_relu", "elu": "elu"}
DIRECTIONS = {"forward": 0, "reverse": 1, "bidirectional": 2}
# op -> (default activations of one direction, index of the input giving hidden_size, its axis,
# number of inputs the op takes, inputs transposed with layout=1)
RECURRENT = {
    "RNN": ("rnn", ("tanh",), 1, 1, 6, (0, 5)),
    "GRU": ("gru", ("sigmoid", "tanh"), 2, 2, 6, (0, 5)),
    "LSTM": ("lstm", ("sigmoid", "tanh", "tanh"), 2, 2, 8, (0, 5, 6)),
}


@onnx_op("RNN", "GRU", "LSTM")
def parse_recurrent(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    label = info.op_type
    name, defaults, size_input, size_axis, n_inputs, layout_inputs = RECURRENT[label]
    hidden_size = args[size_input].shape.lens[size_axis]
    if info.has("hidden_size") and info.attr_int("hidden_size") != hidden_size:
        raise ParseError(f"{label}: hidden size mismatch in input and attribute")
    direction_name = info.attr_str("direction", "forward") or "forward"
    if direction_name not in DIRECTIONS:
        if label == "LSTM":
            raise ParseError("LSTM: incorrect direction attribute")
        direction_name = "forward"
    direction = DIRECTIONS[direction_name]
    bidirectional = direction == 2
    names = list(defaults) * (2 if bidirectional else 1)
    if label == "RNN":
        names = ["tanh", "tanh"]
    if info.has("activations"):
        names = [n.lower() for n in info.attr_strs("activations")]
    if label == "RNN" and len(names) == 2 and not bidirectional:
        names = names[:1]
    wanted = len(defaults) * (2 if bidirectional else 1)
    if len(names) != wanted:
        raise ParseError(f"{label}: Invalid activation functions number, should be: {wanted}")
    for n in names:
        if n not in ACTIVATIONS:
            raise ParseError(f"{label}: activation function {n} not supported")
    attrs = {
        "hidden_size": hidden_size,
        "actv_func": tuple(make_op(ACTIVATIONS[n]) for n in names),
        "direction": direction,
        "clip": info.attr_float("clip", 0.0),
    }
    if label == "GRU":
        attrs["linear_before_reset"] = info.attr_int("linear_before_reset", 0)
    if label == "LSTM":
        attrs["input_forget"] = info.attr_int("input_forget", 0)
    layout = info.attr_int("layout", 0)
    args = list(args)
    if len(args) < n_inputs:
        undefined = info.add("undefined")
        args += [undefined] * (n_inputs - len(args))
    if layout:
        for i in layout_inputs:
            if i == 0 or args[i].name != "undefined":
                args[i] = info.add("transpose", args[i], permutation=[1, 0, 2])
    hidden_states = info.add(name, *args, **attrs)
    outputs = [hidden_states, info.add("rnn_last_hs_output", hidden_states)]
    if label == "LSTM":
        outputs.append(info.add("rnn_last_cell_output", hidden_states))
    if layout:
        outputs = [info.add("transpose", outputs[0], permutation=[2, 0, 1, 3])] + [
            info.add("transpose", o, permutation=[1, 0, 2]) for o in outputs[1:]
        ]
    return outputs
