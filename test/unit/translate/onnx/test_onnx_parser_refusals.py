"""ONNX nodes MIGraphX's parsers refuse give MIGraphX's message (src/onnx/parse_*.cpp) as one
line naming the model, and the valid corners next to them import and compute what onnxruntime
computes. Each model is one node built with onnx.helper, so the table says what is refused."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from mgxir.diagnostics import DiagnosticSink, MgxError  # noqa: E402
from mgxir.ir.shape import DynamicDimension  # noqa: E402
from mgxir.translate.onnx import ImportOptions, import_model  # noqa: E402
from mgxir.verifier import verify  # noqa: E402

ROOT = Path(__file__).resolve().parents[4]

# an input is a list of dims (a float graph input), an ndarray (an initializer), None (an omitted
# optional input), or a (TensorProto type, dims) pair (a typed graph input)
Input = Any


@dataclass
class Node:
    op: str
    inputs: list[Input]
    attrs: dict[str, Any] = field(default_factory=dict)
    outputs: int = 1
    opset: int = 13
    dynamic: dict[int, list[DynamicDimension]] = field(default_factory=dict)  # input index -> dims
    domain: str = ""


def _build(node: Node) -> tuple[onnx.ModelProto, ImportOptions]:
    names: list[str] = []
    graph_inputs, initializers = [], []
    options = ImportOptions()
    for i, given in enumerate(node.inputs):
        name = f"in{i}"
        if given is None:
            names.append("")
            continue
        names.append(name)
        if isinstance(given, np.ndarray):
            initializers.append(numpy_helper.from_array(given, name))
        elif isinstance(given, tuple):
            graph_inputs.append(helper.make_tensor_value_info(name, given[0], given[1]))
        else:
            graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, given))
        if i in node.dynamic:
            options.dyn_input_dims[name] = node.dynamic[i]
    outputs = [f"out{i}" for i in range(node.outputs)]
    onnx_node = helper.make_node(node.op, names, outputs, domain=node.domain or None, **node.attrs)
    graph = helper.make_graph(
        [onnx_node],
        "g",
        graph_inputs,
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        initializers,
    )
    opsets = [helper.make_opsetid("", node.opset)]
    if node.domain:
        opsets.append(helper.make_opsetid(node.domain, 1))
    return helper.make_model(graph, opset_imports=opsets), options


def _save(tmp_path: Path, node: Node) -> tuple[str, ImportOptions]:
    model, options = _build(node)
    path = tmp_path / "node.onnx"
    path.write_bytes(model.SerializeToString())
    return str(path), options


def _refusal(tmp_path: Path, node: Node) -> str:
    path, options = _save(tmp_path, node)
    with pytest.raises(MgxError) as caught:
        sink = DiagnosticSink()
        verify(import_model(path, options, sink), sink)
    message = caught.value.render()
    assert "\n" not in message.strip() and "Traceback" not in message
    assert path in message
    return message


def _f32(*dims: int) -> np.ndarray:
    return np.arange(int(np.prod(dims)), dtype=np.float32).reshape(dims)


def _i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


DYN = DynamicDimension
MS = "com.microsoft"
DYN_1x4 = {0: [DYN(1, 4), DYN(3, 3)]}
DYN_4D = {0: [DYN(1, 4), DYN(3, 3), DYN(4, 4), DYN(4, 4)]}

REFUSED: dict[str, tuple[Node, str]] = {
    # tensor.py
    "gather_elements axis": (
        Node("GatherElements", [[2, 3], np.zeros((2, 3), np.int64)], {"axis": 5}),
        "GATHERELEMENTS: axis is out of range.",
    ),
    "constant attr of the wrong type": (
        Node("Constant", [], {"value_float": "a"}),
        "Constant attribute 'value_float' has the wrong type",
    ),
    "constant_of_shape two values": (
        Node("ConstantOfShape", [_i64(2, 3)], {"value": numpy_helper.from_array(np.zeros(2, np.float32))}),
        "ConstantOfShape: attribute value can contain only 1 elements!",
    ),
    "constant_of_shape no input": (Node("ConstantOfShape", []), "ConstantOfShape : must have 1 input!"),
    "constant_of_shape negative": (Node("ConstantOfShape", [_i64(2, -3)]), "ConstantOfShape: negative dimensions"),
    "shape two operands": (Node("Shape", [[2], [2]]), "Shape: operator should have 1 operand"),
    "reshape no shape": (Node("Reshape", [[2, 3]], opset=4), "Reshape: missing the shape attribute"),
    "expand dynamic input": (
        Node("Expand", [[2, 3], _i64(2, 3)], dynamic=DYN_1x4),
        "PARSE_EXPAND: dynamic input tensor with fixed dims input not supported",
    ),
    "tile repeats": (Node("Tile", [[2, 3], _i64(2)]), "tile op-builder: repeats size mismatch with input shape"),
    "range delta zero": (
        Node("Range", [np.array(0, np.float32), np.array(4, np.float32), np.array(0, np.float32)]),
        "PARSE_RANGE: delta must be non-zero",
    ),
    "gather_elements rank": (
        Node("GatherElements", [[2, 3], np.zeros((2,), np.int64)]),
        "PARSE_GATHER_ELEMENTS: input data and index must have the same rank!",
    ),
    "depth_to_space blocksize": (
        Node("DepthToSpace", [[1, 4, 2, 2]], {"blocksize": 0}),
        "DepthToSpace: blocksize is less than 1",
    ),
    "depth_to_space quotient": (
        Node("DepthToSpace", [[1, 6, 2, 2]], {"blocksize": 2}),
        "DepthToSpace: div by blocksize quotient not int",
    ),
    "depth_to_space mode": (
        Node("DepthToSpace", [[1, 4, 2, 2]], {"blocksize": 2, "mode": "XYZ"}),
        "DepthToSpace: mode attribute cannot be read.",
    ),
    "pad no pads": (Node("Pad", [[2, 3]], opset=2), "PARSE_PAD: `pads` must be available"),
    "pad reflect dynamic": (
        Node("Pad", [[2, 3], _i64(0, 1, 0, 1)], {"mode": "reflect"}, dynamic=DYN_1x4),
        "PARSE_PAD: reflect padding with dynamic shape not supported",
    ),
    "pad wrap": (
        Node("Pad", [[2, 3], _i64(0, 1, 0, 1)], {"mode": "wrap"}, opset=19),
        "PARSE_PAD: MIGraphX currently only supports constant, reflect, and edge padding",
    ),
    "pad variable value": (
        Node("Pad", [[2, 3], _i64(0, 1, 0, 1), [1]]),
        "PARSE_PAD: input `value` must be constant",
    ),
    "pad two values": (
        Node("Pad", [[2, 3], _i64(0, 1, 0, 1), np.zeros(2, np.float32)]),
        "PARSE_PAD: `value` should contain only one element",
    ),
    "space_to_depth rank": (
        Node("SpaceToDepth", [[1, 4, 2]], {"blocksize": 2}),
        "SpaceToDepth: the input must have rank 4",
    ),
    "reverse_sequence variable lens": (
        Node("ReverseSequence", [[2, 3], (TensorProto.INT64, [3])]),
        "REVERSESEQUENCE: cannot handle variable sequence_lens",
    ),
    "constant_fill extra_shape": (
        Node("ConstantFill", [], {"extra_shape": [1], "shape": [2]}, opset=1),
        "ConstantFill: cannot handle extra shape attribute",
    ),
    "constant_fill no input": (
        Node("ConstantFill", [], {"input_as_shape": 1}, opset=1),
        "ConstantFill: need an input argument as output shape",
    ),
    "constant_fill shape and input": (
        Node("ConstantFill", [_i64(2)], {"input_as_shape": 1, "shape": [2]}, opset=1),
        "ConstantFill: cannot set the shape argument and pass in an input at the same time",
    ),
    "constant_fill variable input": (
        Node("ConstantFill", [(TensorProto.INT64, [2])], {"input_as_shape": 1}, opset=1),
        "ConstantFill: dynamic shape is not supported",
    ),
    "constant_fill no shape": (
        Node("ConstantFill", [], {"input_as_shape": 0}, opset=1),
        "ConstantFill: attribute output shape is needed",
    ),
    "constant_fill input_as_shape 2": (
        Node("ConstantFill", [], {"input_as_shape": 2}, opset=1),
        "ConstantFill: wrong value of attribute input_as_shape",
    ),
    # elementwise.py
    "binary three operands": (Node("Add", [[2], [2], [2]]), "binary operators should have 2 operands"),
    "binary broadcast dynamic": (
        Node("Add", [[2, 3], [3]], {"broadcast": 1, "axis": 1}, opset=6, dynamic=DYN_1x4),
        "Binary op broadcast attribute not supported for dynamic input shapes",
    ),
    "pow bool": (
        Node("Pow", [(TensorProto.BOOL, [2]), [2]], opset=15),
        "PARSE_POW: Input data type not supported!",
    ),
    "cast no to": (Node("Cast", [[2]]), "PARSE_CAST: missing to type attribute!"),
    "where mixed": (
        Node("Where", [(TensorProto.BOOL, [2, 3]), [2, 3], [2, 3]], dynamic={1: [DYN(1, 4), DYN(3, 3)]}),
        "PARSE_WHERE: doesn't support mixed static and dynamic shape inputs",
    ),
    # nn.py
    "conv strides": (
        Node("Conv", [[1, 1, 4, 4], _f32(1, 1, 2, 2)], {"strides": [1]}),
        "Inconsistent strides size, is: 1, should be: 2",
    ),
    "conv dilations": (
        Node("Conv", [[1, 1, 4, 4], _f32(1, 1, 2, 2)], {"dilations": [1, 1, 1]}),
        "Inconsistent dilations size, is: 3, should be: 2",
    ),
    "conv pads": (
        Node("Conv", [[1, 1, 4, 4], _f32(1, 1, 2, 2)], {"pads": [1, 1, 1]}),
        "Inconsistent paddings size, is: 3, should be: 2 or: 4",
    ),
    "pool count_include_pad dynamic": (
        Node("AveragePool", [[1, 3, 4, 4]], {"kernel_shape": [2, 2], "count_include_pad": 1}, dynamic=DYN_4D),
        "PARSE_POOLING: count_include_pad attribute is not supported for dynamic input shape",
    ),
    "pool asymmetric dynamic": (
        Node("AveragePool", [[1, 3, 4, 4]], {"kernel_shape": [2, 2], "pads": [0, 0, 1, 1]}, dynamic=DYN_4D),
        "PARSE_POOLING: asymmetric padding not supported for dynamic input shape",
    ),
    "gemm bias": (Node("MatMul", [[2, 3], [3, 4], [4]]), "dot: Bias Args not supported"),
    "batchnorm of an empty tensor": (
        Node("BatchNormalization", [np.zeros(0, np.float32), _f32(1), _f32(1), _f32(1), _f32(1)]),
        "batchnorm op_builder: rank 0 input tensor, unhandled data format",
    ),
    "conv_transpose auto_pad dynamic": (
        Node("ConvTranspose", [[1, 1, 4, 4], _f32(1, 1, 2, 2)], {"auto_pad": "SAME_UPPER"}, dynamic=DYN_4D),
        "PARSE_CONV_TRANSPOSE: auto padding not supported with dynamic shapes",
    ),
    "roi_align mode": (
        Node(
            "RoiAlign",
            [[1, 1, 4, 4], np.zeros((1, 4), np.float32), np.zeros(1, np.int64)],
            {"coordinate_transformation_mode": "xyz"},
            opset=16,
        ),
        'coordinate_transformation_mode "xyz": invalid value!',
    ),
    # quantized.py
    "quantize_linear inputs": (
        Node("QuantizeLinear", [[2]]),
        "QuantizeLinear: must have either 2 or 3 inputs, 1 input(s) provided",
    ),
    "quantize_linear scale type": (
        Node("QuantizeLinear", [[2], np.array(1, np.float16)], opset=19),
        "QuantizeLinear: x and y_scale must be of same type",
    ),
    "dynamic_quantize_linear dynamic": (
        Node("DynamicQuantizeLinear", [[2, 3]], outputs=3, dynamic=DYN_1x4),
        "DYNAMICQUANTIZELINEAR: dynamic shapes are not supported",
    ),
    "matmul_integer dynamic": (
        Node("MatMulInteger", [(TensorProto.INT8, [2, 3]), (TensorProto.INT8, [3, 4])], dynamic=DYN_1x4),
        "dynamic inputs not supported",
    ),
    # control.py, random.py, rnn.py, sampling.py
    "loop one input": (Node("Loop", [_i64(3)]), "Loop: needs the trip count and condition inputs"),
    "if no branches": (Node("If", [np.array(True)]), "If: missing the then_branch attribute"),
    "scan opset 8": (Node("Scan", [[2]], opset=8), "Scan: Opset 8 version not supported"),
    "scan no body": (Node("Scan", [[2]], {"num_scan_inputs": 1}, opset=11), "Scan: body attribute required"),
    "multinomial no input": (Node("Multinomial", []), "PARSE_MULTINOMIAL: no arguments given"),
    "multinomial no sample_size": (Node("Multinomial", [[1, 3]]), "PARSE_MULTINOMIAL: sample_size not given"),
    # its random-draw buffer was made (16 GiB of float64 zeros) before its size was checked
    "multinomial huge sample_size": (
        Node("Multinomial", [[1, 3]], {"sample_size": 2**31 - 1}),
        "a constant of [1, 2147483647] float_type elements (8589934588 bytes) is larger than the importer builds",
    ),
    "multinomial negative sample_size": (
        Node("Multinomial", [[1, 3]], {"sample_size": -2}),
        "tensor dimensions [1, -2] are negative",
    ),
    "rnn hidden size": (
        Node("RNN", [[1, 2, 3], _f32(1, 4, 3), _f32(1, 4, 4)], {"hidden_size": 5}),
        "RNN: hidden size mismatch in input and attribute",
    ),
    "rnn activation": (
        Node("RNN", [[1, 2, 3], _f32(1, 4, 3), _f32(1, 4, 4)], {"activations": ["Nope"]}),
        "RNN: activation function nope not supported",
    ),
    "lstm direction": (
        Node("LSTM", [[1, 2, 3], _f32(1, 16, 3), _f32(1, 16, 4)], {"direction": "sideways"}),
        "LSTM: incorrect direction attribute",
    ),
    "resize sizes rank": (
        Node("Resize", [[1, 1, 2, 2], None, None, _i64(4, 4)]),
        "PARSE_RESIZE: specified output size's rank does not match input size",
    ),
    "resize scales rank": (
        Node("Resize", [[1, 1, 2, 2], None, np.ones((4, 2), np.float32)]),
        "PARSE_RESIZE: ranks of input and scale are different!",
    ),
    "resize tf_crop_and_resize": (
        Node(
            "Resize",
            [[1, 1, 2, 2], None, np.array([1, 1, 2, 2], np.float32)],
            {"coordinate_transformation_mode": "tf_crop_and_resize"},
        ),
        'PARSE_RESIZE: "tf_crop_and_resize" mode is not supported!',
    ),
    "resize exclude_outside": (
        Node("Resize", [[1, 1, 2, 2], None, np.array([1, 1, 2, 2], np.float32)], {"exclude_outside": 1}),
        "PARSE_RESIZE exclude_outside 1 is not supported!",
    ),
    # transformer.py (com.microsoft)
    "quick_gelu no alpha": (Node("QuickGelu", [[2]], domain=MS), "PARSE_GELU: QuickGelu needs its alpha attribute"),
    "attention qkv sizes type": (
        Node("Attention", [[2, 4, 6], _f32(6, 18)], {"num_heads": 2, "qkv_hidden_sizes": [6.0, 6.0, 6.0]}, domain=MS),
        "PARSE_ATTENTION: qkv_hidden_sizes must be int64 type",
    ),
    "attention qkv sizes zero": (
        Node("Attention", [[2, 4, 6], _f32(6, 18)], {"num_heads": 2, "qkv_hidden_sizes": [0, 0, 18]}, domain=MS),
        "PARSE_ATTENTION: qkv_hidden_sizes must be nonzero and valid",
    ),
    "attention weight type": (
        Node("Attention", [[2, 4, 6], np.ones((6, 18), np.float16)], {"num_heads": 2}, domain=MS),
        "Attention: Input and weight datatype must be the same",
    ),
    "attention uneven weights": (
        Node("Attention", [[2, 4, 6], _f32(6, 16)], {"num_heads": 2}, domain=MS),
        "Attention: QKV size attribute must be set with non even weights",
    ),
    "attention qkv sum": (
        Node("Attention", [[2, 4, 6], _f32(6, 18)], {"num_heads": 2, "qkv_hidden_sizes": [4, 4, 4]}, domain=MS),
        "Attention: q k v hidden sizes sum must match weights tensor 1 dimension",
    ),
    "attention bias size": (
        Node("Attention", [[2, 4, 6], _f32(6, 18), _f32(12)], {"num_heads": 2}, domain=MS),
        "Attention: q k v hidden sizes sum must match bias tensor 0 dimension",
    ),
    "attention bias type": (
        Node("Attention", [[2, 4, 6], _f32(6, 18), np.ones(18, np.float16)], {"num_heads": 2}, domain=MS),
        "Attention: input bias must be the same type as input vector",
    ),
    "group_query_attention softcap": (
        Node(
            "GroupQueryAttention",
            [[1, 2, 8], [1, 2, 8], [1, 2, 8]],
            {"num_heads": 2, "kv_num_heads": 2, "softcap": 1.0},
            domain=MS,
        ),
        "GroupQueryAttention: non-zero softcap is not yet supported.",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refusal_is_migraphx_message(tmp_path: Path, case: str) -> None:
    node, message = REFUSED[case]
    assert message in _refusal(tmp_path, node)


# -- valid corners next to the refusals, against onnxruntime ---------------------------------------

sys.path.insert(0, str(ROOT / "bench"))

MATCHING: dict[str, Node] = {
    "constant float attr": Node("Constant", [], {"value_float": 2.5}),
    "constant ints attr": Node("Constant", [], {"value_ints": [1, 2, 3]}),
    "matmul_integer 1-d by 1-d": Node("MatMulInteger", [(TensorProto.INT8, [3]), (TensorProto.INT8, [3])]),
    "matmul_integer 1-d by 2-d": Node("MatMulInteger", [(TensorProto.INT8, [3]), (TensorProto.INT8, [3, 2])]),
    "pad value attribute": Node("Pad", [[2, 3]], {"pads": [0, 1, 0, 1], "value": 2.0}, opset=2),
    "clip max only": Node("Clip", [[2, 3], None, np.array(1.5, np.float32)]),
    "clip int32 without limits": Node("Clip", [(TensorProto.INT32, [2, 3])]),
    "space_to_depth": Node("SpaceToDepth", [[1, 2, 4, 4]], {"blocksize": 2}),
    "grid_sample bicubic reflection aligned": Node(
        "GridSample",
        [[1, 1, 4, 4], [1, 3, 3, 2]],
        {"mode": "bicubic", "padding_mode": "reflection", "align_corners": 1},
        opset=16,
    ),
}


@pytest.mark.parametrize("case", sorted(MATCHING))
def test_valid_corner_matches_onnxruntime(tmp_path: Path, case: str) -> None:
    pytest.importorskip("onnxruntime")
    from onnx_oracle import check_model

    path, options = _save(tmp_path, MATCHING[case])
    result = check_model(path)
    assert result.status == "match", result.message


# MIGraphX's bicubic GridSample clips (border) or reflects (reflection) the unnormalised coordinate
# before taking its 4x4 neighbourhood, and then pads each tap again (parse_gridsample.cpp's
# grid_sampler and bicubic_sampler); onnxruntime pads only the taps, so grid points outside the
# image give other numbers. The importer does what MIGraphX does.
MIGRAPHX_DIFFERS: dict[str, Node] = {
    "grid_sample bicubic border": Node(
        "GridSample", [[1, 1, 4, 4], [1, 3, 3, 2]], {"mode": "bicubic", "padding_mode": "border"}, opset=16
    ),
    "grid_sample bicubic reflection": Node(
        "GridSample", [[1, 1, 4, 4], [1, 3, 3, 2]], {"mode": "bicubic", "padding_mode": "reflection"}, opset=16
    ),
}


@pytest.mark.parametrize("case", sorted(MIGRAPHX_DIFFERS))
def test_where_migraphx_differs_from_onnxruntime(tmp_path: Path, case: str) -> None:
    pytest.importorskip("onnxruntime")
    from onnx_oracle import check_model

    path, options = _save(tmp_path, MIGRAPHX_DIFFERS[case])
    result = check_model(path)
    assert result.status == "mismatch" and "output 0: rms error" in result.message, result.message
