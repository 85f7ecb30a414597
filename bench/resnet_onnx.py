"""bench_models.py's ResNet-50 written out as an ONNX graph without torch: the operators torch's
exporter emits for the folded model (Conv with bias, Relu, Add, MaxPool, ReduceMean, Flatten, Gemm),
each weight a graph input named by the torch module's state-dict key, so a compiled module can be
fed the torch model's own weights. Whole or in parts (`stem`, `block0`..`block15`, `head`), to
find where a backend first differs.

    python bench/resnet_onnx.py OUT [--batch 1] [--part NAME ...] [--random-weights]

With `--random-weights` the weights are initializers (seeded random values, He-scaled) instead of
graph inputs: a model whose import holds its 25M weights as literals, as an exported one does.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))  # width, blocks, first stride


@dataclass(frozen=True)
class Block:
    index: int
    cin: int
    width: int
    stride: int
    size: int  # input height and width

    @property
    def cout(self) -> int:
        return self.width * 4

    @property
    def has_down(self) -> bool:
        return self.stride != 1 or self.cin != self.cout


def blocks() -> Iterator[Block]:
    cin, size, index = 64, 56, 0
    for width, count, stride in STAGES:
        for i in range(count):
            s = stride if i == 0 else 1
            yield Block(index, cin, width, s, size)
            cin, size, index = width * 4, size // s, index + 1


def parts() -> list[str]:
    return ["stem", *(f"block{b.index}" for b in blocks()), "head"]


# parts that are not a stretch of the model: the stem and blocks 0-3; block 3 (the first strided
# downsample) behind a Relu, so that its input is a value the module computes rather than an argument
EXTRA_PARTS = ("upto3", "relu_block3")


class Graph:
    def __init__(self, elem_type: int = 1) -> None:
        self.elem_type = elem_type  # ONNX's FLOAT (1) or FLOAT16 (10)
        self.nodes: list = []
        self.inputs: list = []
        self.count = 0

    def value(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def weight(self, name: str, dims: list[int]) -> str:
        from onnx import helper

        self.inputs.append(helper.make_tensor_value_info(name, self.elem_type, dims))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: object) -> str:
        from onnx import helper

        out = self.value()
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def conv(self, x: str, key: str, cin: int, cout: int, kernel: int, stride: int) -> str:
        w = self.weight(f"{key}.weight", [cout, cin, kernel, kernel])
        b = self.weight(f"{key}.bias", [cout])
        pad = kernel // 2
        return self.op("Conv", [x, w, b], kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pad] * 4)

    def block(self, x: str, b: Block) -> str:
        key = f"blocks.{b.index}"
        identity = self.conv(x, f"{key}.down", b.cin, b.cout, 1, b.stride) if b.has_down else x
        y = self.op("Relu", [self.conv(x, f"{key}.a", b.cin, b.width, 1, 1)])
        y = self.op("Relu", [self.conv(y, f"{key}.b", b.width, b.width, 3, b.stride)])
        return self.op("Relu", [self.op("Add", [self.conv(y, f"{key}.c", b.width, b.cout, 1, 1), identity])])

    def stem(self, x: str) -> str:
        y = self.op("Relu", [self.conv(x, "stem", 3, 64, 7, 2)])
        return self.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])

    def head(self, x: str) -> str:
        pooled = self.op("ReduceMean", [x], axes=[2, 3], keepdims=1)
        flat = self.op("Flatten", [pooled], axis=1)
        w, bias = self.weight("fc.weight", [1000, 2048]), self.weight("fc.bias", [1000])
        return self.op("Gemm", [flat, w, bias], transB=1)


def input_shape(part: str, batch: int) -> list[int]:
    if part in ("stem", "all", "upto3"):
        return [batch, 3, 224, 224]
    if part == "head":
        return [batch, 2048, 7, 7]
    b = list(blocks())[int(part.removeprefix("relu_").removeprefix("block"))]
    return [batch, b.cin, b.size, b.size]


def build(part: str = "all", batch: int = 1, elem_type: int = 1) -> object:
    """The ONNX model of `part` ('all', 'stem', 'blockN', 'head', EXTRA_PARTS); its first input is
    'input'."""
    from onnx import helper

    g = Graph(elem_type)
    x = "input"
    if part in ("all", "stem", "upto3"):
        x = g.stem(x)
    if part.startswith("relu_"):
        x = g.op("Relu", [x])
    for b in blocks():
        if part == "all" or part.removeprefix("relu_") == f"block{b.index}" or (part == "upto3" and b.index <= 3):
            x = g.block(x, b)
    if part in ("all", "head"):
        x = g.head(x)
    nodes = g.nodes
    nodes[-1].output[0] = "output"
    graph = helper.make_graph(
        nodes,
        f"resnet50_{part}",
        [helper.make_tensor_value_info("input", elem_type, input_shape(part, batch)), *g.inputs],
        [helper.make_tensor_value_info("output", elem_type, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def main(argv: list[str] | None = None) -> int:
    import onnx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--part", action="append", default=[])
    parser.add_argument("--random-weights", action="store_true")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for part in args.part or ["all"]:
        model = build(part, args.batch)
        if args.random_weights:
            with_random_weights(model)
        onnx.save(model, str(args.out / f"resnet50_{part}.onnx"))
    return 0


def with_random_weights(model: object, seed: int = 0) -> None:
    """Every graph input but `input` becomes an initializer of seeded random values."""
    import numpy as np
    from onnx import numpy_helper

    rng = np.random.default_rng(seed)
    graph = model.graph  # type: ignore[attr-defined]
    weights = [i for i in graph.input if i.name != "input"]
    for info in weights:
        dims = [d.dim_value for d in info.type.tensor_type.shape.dim]
        fan_in = int(np.prod(dims[1:])) if len(dims) > 1 else 1
        values = rng.standard_normal(dims, dtype=np.float32) * np.float32(np.sqrt(2.0 / fan_in))
        graph.initializer.append(numpy_helper.from_array(values, info.name))
        graph.input.remove(info)


if __name__ == "__main__":
    raise SystemExit(main())
