"""mgx-reduce against a plain one-instruction-at-a-time delta loop, in the same run.

Usage: VENV/bin/python bench/bench_reduce.py [--jobs N] [--baseline-limit SECONDS] [--model resnet50|bert]

ResNet-50 and BERT-base are built as ONNX graphs with onnx.helper (no torch): the real architectures
and layer counts (ResNet-50: the 7x7 stem, 16 bottleneck blocks in stages of 3, 4, 6, 3, the
classifier; BERT-base: embeddings, 12 encoder layers with multi-head attention, a `Where` masking the
scores, GELU by `Erf`, layer norms) with small widths and random weights as initializers, so that a
candidate's text and inputs stay small. They are imported with mgxir's ONNX importer and reduced with
an `--interesting` shell command that holds on a few instructions:
- ResNet-50: "fuse_pointwise makes a pointwise module holding an `add` and a `relu`";
- BERT: "fuse_pointwise makes a pointwise module holding a `where`".

Both reducers use the same worker pool size, the same test and the same cache; the peer is a
`RemoveInstructions` delta pass fixed at one instruction per candidate, repeated until a whole round
removes nothing (the loop llvm-reduce and C-Vise improve on). It stops after `--baseline-limit`
seconds and says so. Printed: instructions before and after, candidates tried, wall time, and the
ratios.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time

import numpy as np

from mgxir.diagnostics import DiagnosticSink
from mgxir.drivers.common import register_target_ops
from mgxir.drivers.reduce.candidate import instruction_count
from mgxir.drivers.reduce.engine import Progress, Reducer, check_input, prepare
from mgxir.drivers.reduce.interesting import ShellCommand
from mgxir.drivers.reduce.strategies import RemoveInstructions
from mgxir.drivers.run import gather_inputs
from mgxir.ops import register_all_ops

BIN = os.path.dirname(sys.executable)
TESTS = {
    "resnet50": (
        "out=$({bin}/mgx-opt -p fuse_pointwise {{}}) && echo \"$out\" | grep -q 'pointwise[0-9]*:.* = add(' "
        "&& echo \"$out\" | grep -q 'pointwise[0-9]*:.* = relu('"
    ),
    "bert": "{bin}/mgx-opt -p fuse_pointwise {{}} | grep -q 'pointwise[0-9]*:.* = where('",
}


class Graph:
    """Nodes, inputs and random initializers of an ONNX graph being built."""

    def __init__(self, seed: int = 0) -> None:
        self.nodes: list = []
        self.inputs: list = []
        self.initializers: list = []
        self.count = 0
        self.rng = np.random.default_rng(seed)

    def op(self, op_type: str, inputs: list[str], **attrs: object) -> str:
        from onnx import helper

        self.count += 1
        out = f"{op_type.lower()}{self.count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def weight(self, *shape: int, scale: float = 0.1) -> str:
        from onnx import numpy_helper

        self.count += 1
        name = f"w{self.count}"
        data = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.initializers.append(numpy_helper.from_array(data, name))
        return name

    def constant(self, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.count += 1
        name = f"c{self.count}"
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def input(self, name: str, elem_type: int, shape: list[int]) -> str:
        from onnx import helper

        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def model(self, output: str, name: str) -> object:
        from onnx import TensorProto, helper

        graph = helper.make_graph(
            self.nodes,
            name,
            self.inputs,
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
            self.initializers,
        )
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# ResNet-50: (width, blocks, first stride) of its four stages; widths divided by WIDTH_DIVISOR
RESNET_STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))
WIDTH_DIVISOR = 16


def resnet50() -> object:
    from onnx import TensorProto

    g = Graph()

    def conv(x: str, cin: int, cout: int, kernel: int, stride: int = 1) -> str:
        pad = kernel // 2
        return g.op(
            "Conv",
            [x, g.weight(cout, cin, kernel, kernel), g.weight(cout)],
            kernel_shape=[kernel, kernel],
            strides=[stride, stride],
            pads=[pad] * 4,
        )

    stem = 64 // WIDTH_DIVISOR
    x = g.input("x", TensorProto.FLOAT, [1, 3, 32, 32])
    x = g.op("Relu", [conv(x, 3, stem, 7, 2)])
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = stem
    for width, count, first_stride in RESNET_STAGES:
        width //= WIDTH_DIVISOR
        for i in range(count):
            stride = first_stride if i == 0 else 1
            y = g.op("Relu", [conv(x, cin, width, 1)])
            y = g.op("Relu", [conv(y, width, width, 3, stride)])
            y = conv(y, width, width * 4, 1)
            shortcut = conv(x, cin, width * 4, 1, stride) if (stride != 1 or cin != width * 4) else x
            x = g.op("Relu", [g.op("Add", [y, shortcut])])
            cin = width * 4
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    x = g.op("Gemm", [x, g.weight(1000, cin), g.weight(1000)], transB=1)
    return g.model(x, "resnet50")


# BERT-base: 12 layers, 12 heads; hidden 768 divided by WIDTH_DIVISOR (48, 4 per head), sequence 16
BERT_LAYERS, BERT_HEADS, BERT_HIDDEN, BERT_SEQUENCE, BERT_VOCAB = 12, 12, 768 // WIDTH_DIVISOR, 16, 100


def bert() -> object:
    from onnx import TensorProto

    g = Graph()
    hidden, heads, sequence = BERT_HIDDEN, BERT_HEADS, BERT_SEQUENCE
    head = hidden // heads

    def linear(x: str, cin: int, cout: int) -> str:
        return g.op("Add", [g.op("MatMul", [x, g.weight(cin, cout)]), g.weight(cout)])

    def layer_norm(x: str) -> str:
        return g.op("LayerNormalization", [x, g.weight(hidden), g.weight(hidden)], axis=-1, epsilon=1e-12)

    def split_heads(x: str) -> str:
        shape = g.constant(np.array([1, sequence, heads, head], np.int64))
        return g.op("Transpose", [g.op("Reshape", [x, shape])], perm=[0, 2, 1, 3])

    ids = g.input("input_ids", TensorProto.INT64, [1, sequence])
    mask = g.input("attention_mask", TensorProto.BOOL, [1, 1, 1, sequence])
    positions = g.constant(np.arange(sequence, dtype=np.int64).reshape(1, sequence))
    x = g.op(
        "Add",
        [g.op("Gather", [g.weight(BERT_VOCAB, hidden), ids]), g.op("Gather", [g.weight(512, hidden), positions])],
    )
    x = layer_norm(x)
    scale = g.constant(np.array(math.sqrt(head), np.float32))
    masked = g.constant(np.array(-10000.0, np.float32))
    inv_sqrt2 = g.constant(np.array(1 / math.sqrt(2), np.float32))
    half, one = g.constant(np.array(0.5, np.float32)), g.constant(np.array(1.0, np.float32))
    for _ in range(BERT_LAYERS):
        q, k, v = (split_heads(linear(x, hidden, hidden)) for _ in range(3))
        scores = g.op("Div", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]), scale])
        scores = g.op("Where", [mask, scores, masked])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Transpose", [context], perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, g.constant(np.array([1, sequence, hidden], np.int64))])
        x = layer_norm(g.op("Add", [linear(context, hidden, hidden), x]))
        up = linear(x, hidden, 4 * hidden)
        erf = g.op("Erf", [g.op("Mul", [up, inv_sqrt2])])
        gelu = g.op("Mul", [g.op("Mul", [up, half]), g.op("Add", [erf, one])])
        x = layer_norm(g.op("Add", [linear(gelu, 4 * hidden, hidden), x]))
    return g.model(x, "bert")


MODELS = {"resnet50": resnet50, "bert": bert}


class OneAtATime(RemoveInstructions):
    """The peer: cut one instruction per candidate, in order, round after round."""

    name = "one-at-a-time"

    def reset(self) -> None:
        self.chunk_size = 1
        self.position = 0


def reduce_with(name: str, start, command: str, jobs: int, limit: float | None, folder: str) -> dict:
    test = check_input(ShellCommand(command, 120), start, folder)
    began = time.monotonic()
    with Reducer(test, jobs, 120, folder, Progress(quiet=True), time_limit=limit) as reducer:
        if name == "one-at-a-time":
            reducer.strategies = [OneAtATime()]
        result = reducer.reduce(start)
    return {
        "after": instruction_count(result.program),
        "tried": reducer.statistics.tried,
        "hits": reducer.statistics.cache_hits,
        "seconds": time.monotonic() - began,
        "finished": not reducer.stopped,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--baseline-limit", type=float, default=600.0, help="seconds the peer may run")
    parser.add_argument("--model", choices=list(MODELS), action="append")
    args = parser.parse_args(argv)
    import onnx

    from mgxir.drivers.formats import read_onnx

    register_all_ops()
    register_target_ops()
    print(f"machine: {os.cpu_count()} cores, jobs {args.jobs}; python {sys.version.split()[0]}")
    print("| model | reducer | instructions | after | candidates tried | cache hits | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    rows = {}
    for model_name in args.model or list(MODELS):
        folder = tempfile.mkdtemp(prefix="bench-reduce.")
        try:
            path = os.path.join(folder, f"{model_name}.onnx")
            onnx.save(MODELS[model_name](), path)
            program = read_onnx(path, {}, DiagnosticSink())
            before = instruction_count(program)
            command = TESTS[model_name].format(bin=BIN)
            for reducer_name, limit in (("mgx-reduce", None), ("one-at-a-time", args.baseline_limit)):
                start = prepare(program.clone(), gather_inputs(program, [], "random", 0))
                row = reduce_with(reducer_name, start, command, args.jobs, limit, folder)
                rows[model_name, reducer_name] = row
                stopped = "" if row["finished"] else " (stopped)"
                print(
                    f"| {model_name} | {reducer_name} | {before} | {row['after']}{stopped} | {row['tried']} | "
                    f"{row['hits']} | {row['seconds']:.1f} |",
                    flush=True,
                )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    for model_name in args.model or list(MODELS):
        ours, peer = rows[model_name, "mgx-reduce"], rows[model_name, "one-at-a-time"]
        print(
            f"{model_name}: peer / mgx-reduce: {peer['tried'] / max(1, ours['tried']):.1f}x candidates, "
            f"{peer['seconds'] / max(1e-9, ours['seconds']):.1f}x time"
            + ("" if peer["finished"] else " (peer stopped at its limit: at least these)")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
