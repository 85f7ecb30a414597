"""The ONNX parsers' numeric corners that hand-made mutants showed untested (issues 20 and 23): each
model is imported and run on the reference interpreter, and its result compared with numpy's
reading of the ONNX operator's definition."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from mgxir.diagnostics import DiagnosticSink  # noqa: E402
from mgxir.interp import Interpreter  # noqa: E402
from mgxir.translate.onnx import import_model  # noqa: E402


def _run(tmp_path: Path, node, inputs: dict[str, np.ndarray], opset: int) -> tuple[object, np.ndarray]:
    """The imported program and its one output for `inputs` (float32 tensors)."""
    infos = [helper.make_tensor_value_info(name, TensorProto.FLOAT, value.shape) for name, value in inputs.items()]
    output = helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, None)
    graph = helper.make_graph([node], "g", infos, [output])
    path = tmp_path / "m.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString())
    program = import_model(str(path))
    (result,) = Interpreter(program, DiagnosticSink()).run(inputs)
    return program, np.asarray(result)


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = np.exp(x - x.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize(("opset", "axis"), [(12, 1), (13, -1), (14, -1)])
def test_softmax_default_axis_is_the_last_from_opset_13(tmp_path: Path, op_type: str, opset: int, axis: int) -> None:
    """Opset 13 made -1 the default axis (before: 1). Killed mutant: `opset_version > 13`."""
    x = np.random.default_rng(0).uniform(-3, 3, (2, 3, 4)).astype(np.float32)
    program, got = _run(tmp_path, helper.make_node(op_type, ["x"], ["y"]), {"x": x}, opset)
    (step,) = [i for i in program.main if i.op.defn.name == op_type.lower()]
    assert step.op["axis"] == axis
    want = _softmax(x.astype(np.float64), axis)
    np.testing.assert_allclose(got, np.log(want) if op_type == "LogSoftmax" else want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("beta", [-2.0, -0.5, 0.0, 1.0, 0.25])
@pytest.mark.parametrize("c_shape", [(4,), (3, 4)])
def test_gemm_adds_beta_times_c_for_every_nonzero_beta(tmp_path: Path, beta: float, c_shape: tuple[int, ...]) -> None:
    """Y = alpha A B + beta C, C broadcast; beta 0 leaves C out (a NaN in it does not reach Y, as in
    MIGraphX). Killed mutant: the bias dropped for a negative beta (`beta > 0` for `beta != 0`)."""
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-2, 2, (2, 3)).astype(np.float32), rng.uniform(-2, 2, (4, 2)).astype(np.float32)
    c = rng.uniform(1, 3, c_shape).astype(np.float32)
    if beta == 0.0:
        c[..., 0] = np.nan
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=1.5, beta=beta, transA=1, transB=1)
    _, got = _run(tmp_path, node, {"a": a, "b": b, "c": c}, 13)
    want = 1.5 * (a.T.astype(np.float64) @ b.T) + (beta * c if beta else 0.0)
    assert got.shape == (3, 4)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
