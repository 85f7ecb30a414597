"""bench_models.py's BERT-base written out as an ONNX graph without torch, as resnet_onnx.py does
for ResNet-50: each weight a graph input named by the torch module's state-dict key, so a compiled
module can be fed the torch model's own weights. A Linear's weight is taken transposed (input
`KEY.weight.T`, shape [in, out]: feed `weight.T`), as torch's exporter folds it.

    python bench/bert_onnx.py OUT [--batch 1] [--layers 12] [--f16]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

HIDDEN, HEADS, SEQUENCE, VOCAB, POSITIONS = 768, 12, 128, 30522, 512
TRANSPOSED = ".T"  # the suffix of inputs fed as the transpose of the state-dict tensor


class Graph:
    def __init__(self, elem_type: int) -> None:
        self.elem_type = elem_type  # ONNX's FLOAT (1) or FLOAT16 (10)
        self.nodes: list = []
        self.inputs: list = []
        self.initializers: list = []
        self.count = 0

    def op(self, op_type: str, inputs: list[str], **attrs: object) -> str:
        from onnx import helper

        self.count += 1
        out = f"v{self.count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def weight(self, name: str, dims: list[int]) -> str:
        from onnx import helper

        self.inputs.append(helper.make_tensor_value_info(name, self.elem_type, dims))
        return name

    def constant(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def scalar(self, name: str, value: float) -> str:
        return self.constant(name, np.array(value, np.float16 if self.elem_type == 10 else np.float32))

    def linear(self, x: str, key: str, cin: int, cout: int) -> str:
        w = self.weight(f"{key}.weight{TRANSPOSED}", [cin, cout])
        return self.op("Add", [self.op("MatMul", [x, w]), self.weight(f"{key}.bias", [cout])])

    def norm(self, x: str, key: str) -> str:
        scale, bias = self.weight(f"{key}.weight", [HIDDEN]), self.weight(f"{key}.bias", [HIDDEN])
        return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=1e-12)

    def layer(self, x: str, key: str, batch: int) -> str:
        d = HIDDEN // HEADS
        qkv = self.linear(x, f"{key}.qkv", HIDDEN, 3 * HIDDEN)
        qkv = self.op("Reshape", [qkv, self.constant(f"{key}.qkv_shape", np.array([batch, SEQUENCE, 3, HEADS, d]))])
        qkv = self.op("Transpose", [qkv], perm=[2, 0, 3, 1, 4])
        q, k, v = (self.op("Gather", [qkv, f"index{i}"], axis=0) for i in range(3))
        scores = self.op("MatMul", [q, self.op("Transpose", [k], perm=[0, 1, 3, 2])])
        scores = self.op("Mul", [scores, "scale"])
        context = self.op("MatMul", [self.op("Softmax", [scores], axis=-1), v])
        context = self.op("Transpose", [context], perm=[0, 2, 1, 3])
        context = self.op("Reshape", [context, "hidden_shape"])
        x = self.norm(self.op("Add", [x, self.linear(context, f"{key}.out", HIDDEN, HIDDEN)]), f"{key}.norm1")
        up = self.linear(x, f"{key}.up", HIDDEN, 4 * HIDDEN)
        erf = self.op("Erf", [self.op("Mul", [up, "inv_sqrt2"])])
        gelu = self.op("Mul", [self.op("Mul", [up, "half"]), self.op("Add", [erf, "one"])])
        return self.norm(self.op("Add", [x, self.linear(gelu, f"{key}.down", 4 * HIDDEN, HIDDEN)]), f"{key}.norm2")


def build(batch: int = 1, elem_type: int = 1, layers: int = 12) -> object:
    """The ONNX model; its first input is 'input' (token ids, int64 [batch, 128])."""
    from onnx import TensorProto, helper

    g = Graph(elem_type)
    for i in range(3):
        g.constant(f"index{i}", np.array(i, np.int64))
    g.scalar("scale", 1.0 / math.sqrt(HIDDEN // HEADS))
    g.scalar("inv_sqrt2", 1.0 / math.sqrt(2.0))
    g.scalar("half", 0.5)
    g.scalar("one", 1.0)
    g.constant("hidden_shape", np.array([batch, SEQUENCE, HIDDEN]))
    words = g.op("Gather", [g.weight("words.weight", [VOCAB, HIDDEN]), "input"], axis=0)
    positions_ids = g.constant("position_ids", np.arange(SEQUENCE, dtype=np.int64)[None])
    positions = g.op("Gather", [g.weight("positions.weight", [POSITIONS, HIDDEN]), positions_ids], axis=0)
    type_ids = g.constant("type_ids", np.zeros((batch, SEQUENCE), np.int64))
    types = g.op("Gather", [g.weight("types.weight", [2, HIDDEN]), type_ids], axis=0)
    x = g.norm(g.op("Add", [g.op("Add", [words, positions]), types]), "norm")
    for i in range(layers):
        x = g.layer(x, f"layers.{i}", batch)
    g.nodes[-1].output[0] = "output"
    graph = helper.make_graph(
        g.nodes,
        "bert",
        [helper.make_tensor_value_info("input", TensorProto.INT64, [batch, SEQUENCE]), *g.inputs],
        [helper.make_tensor_value_info("output", elem_type, [batch, SEQUENCE, HIDDEN])],
        g.initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def feed(state: dict[str, np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
    """The weights of a torch state dict (as numpy arrays) under the graph's input names."""
    found = {}
    for name in names:
        if name.endswith(TRANSPOSED):
            found[name] = np.ascontiguousarray(state[name.removesuffix(TRANSPOSED)].T)
        elif name in state:
            found[name] = state[name]
    return found


def main(argv: list[str] | None = None) -> int:
    import onnx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--f16", action="store_true")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    onnx.save(build(args.batch, 10 if args.f16 else 1, args.layers), str(args.out / "bert.onnx"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
