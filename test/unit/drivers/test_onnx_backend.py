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

EXPECTED = Path(__file__).parents[1] / "data" / "onnx_node_passes.txt"


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
    assert rep.programs[((0, 3),)].main.get_parameter("x").shape.lens == (0, 3)
    rep.run({"x": np.ones((2, 3), np.float32)})
    assert len(rep.programs) == 3  # prepare's own import, then (2, 3) once and (0, 3)


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
