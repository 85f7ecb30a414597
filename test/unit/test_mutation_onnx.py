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
from mgxir.ir.shape import DynamicDimension  # noqa: E402
from mgxir.translate.onnx import ImportOptions, import_model  # noqa: E402


def _run(
    tmp_path: Path, node, inputs: dict[str, np.ndarray], opset: int, options: ImportOptions | None = None
) -> tuple[object, np.ndarray]:
    """The imported program and its one output for `inputs` (float32 or float16 tensors)."""
    element = TensorProto.FLOAT16 if next(iter(inputs.values())).dtype == np.float16 else TensorProto.FLOAT
    infos = [helper.make_tensor_value_info(name, element, value.shape) for name, value in inputs.items()]
    output = helper.make_tensor_value_info(node.output[0], element, None)
    graph = helper.make_graph([node], "g", infos, [output])
    path = tmp_path / "m.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString())
    program = import_model(str(path), options)
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


@pytest.mark.parametrize("beta", [-2.0, -0.5, 0.0, 1.0, 0.25, 2.0])
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


def _gemm_inputs(dtype: type) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {
        "a": rng.uniform(-2, 2, (2, 3)).astype(dtype),
        "b": rng.uniform(-2, 2, (3, 4)).astype(dtype),
        "c": rng.uniform(1, 3, (4,)).astype(dtype),
    }


def test_gemm_defaults_are_one_one_and_no_transposes(tmp_path: Path) -> None:
    """Killed mutants: alpha's, beta's, transA's and transB's defaults changed."""
    inputs = _gemm_inputs(np.float32)
    _, got = _run(tmp_path, helper.make_node("Gemm", ["a", "b", "c"], ["y"]), inputs, 13)
    a, b, c = (inputs[k].astype(np.float64) for k in "abc")
    np.testing.assert_allclose(got, a @ b + c, rtol=1e-5, atol=1e-5)


def test_gemm_in_half_keeps_half(tmp_path: Path) -> None:
    """alpha and beta are float literals: A and C scaled in half come back to half before the dot and
    the add. Killed mutants: the converts after the scaling dropped or their type changed."""
    inputs = _gemm_inputs(np.float16)
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=-1.5)
    program, got = _run(tmp_path, node, inputs, 13)
    assert got.dtype == np.float16
    assert all(i.shape.dtype.numpy == np.float16 for i in program.main if i.op.defn.name in ("dot", "add"))
    a, b, c = (inputs[k].astype(np.float64) for k in "abc")
    np.testing.assert_allclose(got, 0.5 * a @ b - 1.5 * c, rtol=1e-2, atol=1e-2)


def test_gemm_with_a_dynamic_batch_broadcasts_c(tmp_path: Path) -> None:
    """A {1..4, 3}: C is broadcast to the dot's dynamic shape. Killed mutants: that broadcast's
    input or shape argument changed."""
    inputs = _gemm_inputs(np.float32)
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], beta=-0.5)
    options = ImportOptions(dyn_input_dims={"a": [DynamicDimension(1, 4), DynamicDimension(3, 3)]})
    program, got = _run(tmp_path, node, inputs, 13, options)
    assert any(p.shape.is_dynamic for p in program.main.parameters())
    a, b, c = (inputs[k].astype(np.float64) for k in "abc")
    np.testing.assert_allclose(got, a @ b - 0.5 * c, rtol=1e-5, atol=1e-5)


def _matches_onnxruntime(tmp_path: Path, node, inputs: dict[str, np.ndarray], opset: int) -> None:
    """The interpreter's result for a one-node model is onnxruntime's."""
    ort = pytest.importorskip("onnxruntime")
    _, got = _run(tmp_path, node, inputs, opset)
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, inputs)
    # MIGraphX squeezes a {1} to {1} (a vector times a vector): a rank-0 result is one element
    assert got.shape == (want.shape or (1,))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, -2])
def test_hardmax_marks_the_first_maximum(tmp_path: Path, opset: int, axis: int | None) -> None:
    """Before opset 13 Hardmax works on the input flattened to 2-D at `axis` (default 1), from 13 on
    one axis (default -1). Killed mutants: the old path's axis wrap, flattening and final reshape."""
    x = np.random.default_rng(2).permutation(24).astype(np.float32).reshape(2, 3, 4)
    x[1, 2, 0] = x[1, 2, 3] = 30.0  # a tie: the first one is marked
    attributes = {} if axis is None else {"axis": axis}
    _matches_onnxruntime(tmp_path, helper.make_node("Hardmax", ["x"], ["y"], **attributes), {"x": x}, opset)


@pytest.mark.parametrize("p", [1, 2, None])
@pytest.mark.parametrize("axis", [None, 0, 1, -2])
def test_lpnormalization_divides_by_the_norm_along_axis(tmp_path: Path, p: int | None, axis: int | None) -> None:
    """x / ||x||_p along `axis` (default -1, p default 2); a zero norm divides by 1. Killed mutants:
    the default p and axis, abs for p=1, sqrt for p=2, the zero guard."""
    x = np.random.default_rng(3).uniform(-2, 2, (3, 4)).astype(np.float32)
    x[1, :] = 0.0
    x[:, 2] = 0.0
    attributes = {key: value for key, value in (("p", p), ("axis", axis)) if value is not None}
    node = helper.make_node("LpNormalization", ["x"], ["y"], **attributes)
    _matches_onnxruntime(tmp_path, node, {"x": x}, 13)


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,)), ((2, 1, 3, 4), (5, 4, 2)), ((5,), (2, 5, 3)), ((2, 3, 5), (5,))],
)
def test_matmul_of_vectors_and_broadcast_batches(
    tmp_path: Path, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> None:
    """numpy.matmul's rules: a 1-D operand gains an axis (prepended for A, appended for B) that the
    result drops; batch axes broadcast. Killed mutants: the squeezed axes and the broadcast dims."""
    rng = np.random.default_rng(4)
    inputs = {"a": rng.uniform(-2, 2, a_shape).astype(np.float32), "b": rng.uniform(-2, 2, b_shape).astype(np.float32)}
    _matches_onnxruntime(tmp_path, helper.make_node("MatMul", ["a", "b"], ["y"]), inputs, 13)
