"""mgxir as an ONNX backend (mgxir/drivers/onnx_backend.py) and ONNX's node conformance suite on it:
every case that passed when test/unit/data/onnx_node_passes.txt was written still passes, and no case
ends in anything but a pass, a mismatch or a one-line refusal (issue 23)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from mgxir.diagnostics import MgxError  # noqa: E402
from mgxir.drivers.onnx_backend import check_node_case, node_test_cases, prepare  # noqa: E402
from mgxir.translate.onnx import ImportOptions, import_model_proto  # noqa: E402

EXPECTED = Path(__file__).parents[1] / "data" / "onnx_node_passes.txt"


def onnx_import(model: onnx.ModelProto) -> object:
    from mgxir.diagnostics import DiagnosticSink

    return import_model_proto(model, "<model>", ImportOptions(), DiagnosticSink())


def _model(node: onnx.NodeProto, inputs: list, outputs: list, opset: int = 19) -> onnx.ModelProto:
    graph = helper.make_graph([node], "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_zero_dimensional_values_stay_zero_dimensional() -> None:
    """MIGraphX makes a 0-d ONNX value the scalar {1}: at the backend's boundary it is 0-d again."""
    scalar = [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in ("a", "b")]
    rep = prepare(
        _model(
            helper.make_node("Add", ["a", "b"], ["y"]),
            scalar,
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
        )
    )
    (y,) = rep.run([np.float32(2.5), np.float32(-1)])
    assert y.shape == () and y.dtype == np.float32 and y == 1.5


def test_inputs_are_imported_for_the_shapes_given() -> None:
    """Symbolic and empty dimensions: each set of input shapes imports once, at those shapes."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    rep = prepare(
        _model(
            helper.make_node("Relu", ["x"], ["y"]),
            [x],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
        )
    )
    (y,) = rep.run([np.array([[-1, 2, -3], [4, -5, 6]], np.float32)])
    assert y.tolist() == [[0, 2, 0], [4, 0, 6]]
    rep.run([np.zeros((0, 3), np.float32)])  # MIGraphX's parser makes an op of an empty input `undefined`
    assert rep.programs[(((0, 3),), ())].main.get_parameter("x").shape.lens == (0, 3)
    rep.run({"x": np.ones((2, 3), np.float32)})
    assert len(rep.programs) == 3  # prepare's own import, then (2, 3) once and (0, 3)


def test_operands_migraphx_wants_constant_are_imported_for_the_values_given() -> None:
    """MIGraphX's parser refuses TopK's k as a graph input; the backend imports k as a constant of
    the value given, once per value (mgxir's addition)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])
    k = helper.make_tensor_value_info("k", TensorProto.INT64, [1])
    outputs = [
        helper.make_tensor_value_info(n, t, [None]) for n, t in (("v", TensorProto.FLOAT), ("i", TensorProto.INT64))
    ]
    model = _model(helper.make_node("TopK", ["x", "k"], ["v", "i"]), [x, k], outputs)
    with pytest.raises(MgxError, match="k input must be constant"):
        onnx_import(model)
    rep = prepare(model)
    values = np.array([3, 1, 4, 1, 5], np.float32)
    for kept in (2, 3, 2):
        v, i = rep.run([values, np.array([kept], np.int64)])
        assert v.tolist() == sorted(values.tolist(), reverse=True)[:kept]
        assert i.tolist() == [4, 2, 0][:kept]
    assert len(rep.programs) == 2
    with pytest.raises(MgxError, match="takes tensors"):
        rep.run([[values], np.array([2], np.int64)])


def test_only_the_cpu_device() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    with pytest.raises(MgxError, match="device CPU"):
        prepare(_model(helper.make_node("Relu", ["x"], ["y"]), [x], [x]), device="CUDA")


@pytest.fixture(scope="module")
def suite() -> dict[str, tuple[str, str]]:
    return {case.name: check_node_case(case) for case in node_test_cases()}


def test_node_suite_keeps_every_pass(suite: dict[str, tuple[str, str]]) -> None:
    expected = EXPECTED.read_text().split()
    lost = {name: suite.get(name, ("missing", "")) for name in expected if suite.get(name, ("",))[0] != "pass"}
    assert not lost, f"{len(lost)} node tests no longer pass: {dict(list(lost.items())[:10])}"
    counts = Counter(status for status, _ in suite.values())
    print(f"ONNX node tests: {dict(counts)} of {len(suite)}")


def test_node_suite_ends_in_no_internal_error(suite: dict[str, tuple[str, str]]) -> None:
    errors = {name: why for name, (status, why) in suite.items() if status == "error"}
    assert not errors, errors
    refusals = [why for status, why in suite.values() if status == "refused"]
    assert all("\n" not in why and why for why in refusals)


@pytest.mark.parametrize(("opset", "refused"), [(19, True), (23, False)])
def test_attention_without_num_heads_is_onnx_attention_from_opset_23(opset: int, refused: bool) -> None:
    """Before opset 23 an Attention without num_heads is MIGraphX's contrib op, which refuses it; from 23
    on it is ONNX's own Attention (mgxir's addition): softmax(Q K^T / sqrt(d)) V per head."""
    q, k, v = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 2, 3, 4]) for n in "qkv")
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 4])
    model = _model(helper.make_node("Attention", ["q", "k", "v"], ["y"]), [q, k, v], [y], opset)
    if refused:
        with pytest.raises(MgxError, match="num_heads attribute required"):
            prepare(model)
        return
    rng = np.random.default_rng(3)
    qv, kv, vv = (rng.standard_normal((1, 2, 3, 4)).astype(np.float32) for _ in range(3))
    (got,) = prepare(model).run([qv, kv, vv])[:1]
    scores = qv @ kv.transpose(0, 1, 3, 2) / 2
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(got, (weights / weights.sum(-1, keepdims=True)) @ vv, rtol=1e-5)


@pytest.mark.parametrize("dims", [(3,), (3, 2)])
def test_softmax_cross_entropy_whose_rank_is_not_its_class_count(dims: tuple[int, ...]) -> None:
    """MIGraphX sizes the class-last permutation by the class count and refuses these; mgxir
    (its addition) permutes by the rank: loss = -log softmax(scores)[label] at every position."""
    classes = 4
    scores_info = helper.make_tensor_value_info("s", TensorProto.FLOAT, [2, classes, *dims])
    labels_info = helper.make_tensor_value_info("l", TensorProto.INT64, [2, *dims])
    loss_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, *dims])
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["s", "l"], ["y"], reduction="none")
    rng = np.random.default_rng(5)
    scores = rng.standard_normal((2, classes, *dims)).astype(np.float32)
    labels = rng.integers(0, classes, (2, *dims))
    (got,) = prepare(_model(node, [scores_info, labels_info], [loss_info], 13)).run([scores, labels])[:1]
    log_softmax = scores - np.log(np.exp(scores).sum(axis=1, keepdims=True))
    want = -np.take_along_axis(log_softmax, labels[:, None], axis=1)[:, 0]
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("length", [6, 8, 11])
@pytest.mark.parametrize("complex_input", [False, True])
def test_dft_with_a_length_is_numpys_fft(length: int, complex_input: bool) -> None:
    """DFT (mgxir's addition) truncates or zero-pads the signal to dft_length as numpy.fft.fft does."""
    channels = 2 if complex_input else 1
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, channels])
    n_info = helper.make_tensor_value_info("n", TensorProto.INT64, [])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = _model(helper.make_node("DFT", ["x", "n"], ["y"], axis=1), [x_info, n_info], [y_info], 19)
    signal = np.random.default_rng(length).standard_normal((2, 8, channels)).astype(np.float32)
    (got,) = prepare(model).run([signal, np.array(length, np.int64)])
    values = signal[..., 0] + 1j * signal[..., 1] if complex_input else signal[..., 0]
    want = np.fft.fft(values, n=length, axis=1)
    np.testing.assert_allclose(got, np.stack([want.real, want.imag], axis=-1), rtol=1e-5, atol=1e-5)


def _constant(name: str, values: list[int]) -> onnx.TensorProto:
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


HOSTILE = {
    "affine grid of 10^12 positions": (
        helper.make_node("AffineGrid", ["theta", "size"], ["y"]),
        [("theta", [1, 2, 3])],
        [_constant("size", [1, 1, 1000000, 1000000])],
    ),
    "affine grid of a negative size": (
        helper.make_node("AffineGrid", ["theta", "size"], ["y"]),
        [("theta", [1, 2, 3])],
        [_constant("size", [1, 1, -2, -3])],
    ),
    "col2im with a zero block": (
        helper.make_node("Col2Im", ["x", "image", "block"], ["y"]),
        [("x", [1, 4, 4])],
        [_constant("image", [4, 4]), _constant("block", [0, 2])],
    ),
    "col2im with one stride for two axes": (
        helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=[1]),
        [("x", [1, 4, 9])],
        [_constant("image", [4, 4]), _constant("block", [2, 2])],
    ),
    "dft of 10^9 points": (
        helper.make_node("DFT", ["x", "n"], ["y"]),
        [("x", [1, 8, 1])],
        [helper.make_tensor("n", TensorProto.INT64, [], [1000000000])],
    ),
    "center crop to a negative size": (
        helper.make_node("CenterCropPad", ["x", "shape"], ["y"]),
        [("x", [4, 4])],
        [_constant("shape", [-1, 2])],
    ),
    "window of 10^12": (
        helper.make_node("HannWindow", ["n"], ["y"]),
        [],
        [helper.make_tensor("n", TensorProto.INT64, [], [1000000000000])],
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_operands_of_mgxirs_own_parsers_are_one_line_refusals(case: str) -> None:
    """The parsers mgxir adds check sizes before they build a literal and refuse bad operands in
    one line (no exception of their own, no huge allocation)."""
    node, inputs, initializers = HOSTILE[case]
    values = [helper.make_tensor_value_info(n, TensorProto.FLOAT, lens) for n, lens in inputs]
    graph = helper.make_graph([node], "g", values, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    graph.initializer.extend(initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
    with pytest.raises(MgxError) as caught:
        prepare(model)
    message = caught.value.render()
    assert "\n" not in message and "Error:" not in message, message
