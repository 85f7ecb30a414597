"""The ONNX parsers' numeric corners that hand-made mutants showed untested (issues 20 and 23): each
model is imported and run on the reference interpreter, and its result compared with numpy's
reading of the ONNX operator's definition."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper  # noqa: E402

from mgxir.diagnostics import DiagnosticSink  # noqa: E402
from mgxir.interp import Interpreter  # noqa: E402
from mgxir.ir.shape import DynamicDimension  # noqa: E402
from mgxir.translate.onnx import ImportOptions, import_model  # noqa: E402


def _run(
    tmp_path: Path,
    node,
    inputs: dict[str, np.ndarray],
    opset: int,
    options: ImportOptions | None = None,
    output_type: type | None = None,
    constants: dict[str, np.ndarray] | None = None,
) -> tuple[object, np.ndarray]:
    """The imported program and its one output for `inputs`."""

    def element(dtype: np.dtype) -> int:
        return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    infos = [helper.make_tensor_value_info(name, element(v.dtype), v.shape) for name, v in inputs.items()]
    output_dtype = output_type or next(iter(inputs.values())).dtype
    output = helper.make_tensor_value_info(node.output[0], element(output_dtype), None)
    initializers = [numpy_helper.from_array(value, name) for name, value in (constants or {}).items()]
    graph = helper.make_graph([node], "g", infos, [output], initializers)
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


def _conv_integer(x: np.ndarray, w: np.ndarray, x_zp: np.ndarray, w_zp: np.ndarray) -> np.ndarray:
    """ConvInteger's definition, no padding, stride 1: sum((x - x_zp) * (w - w_zp)) in int64, w_zp one
    per output channel or one for all."""
    x64 = x.astype(np.int64) - x_zp.astype(np.int64)
    w64 = w.astype(np.int64) - w_zp.astype(np.int64).reshape(-1, 1, 1, 1)
    windows = np.lib.stride_tricks.sliding_window_view(x64, w.shape[2:], axis=(2, 3))
    return np.einsum("nchwij,kcij->nkhw", windows, w64)


@pytest.mark.parametrize("constant_zero_points", [True, False])
@pytest.mark.parametrize(
    ("x_type", "w_type", "x_zp", "w_zp"),
    [
        (np.uint8, np.uint8, None, None),
        (np.uint8, np.int8, [3], None),
        (np.uint8, np.uint8, [128], [7, 128, 200]),  # a symmetric x zero point and one per channel
        (np.int8, np.uint8, [-5], [9]),
        (np.int8, np.int8, [0], [-3, 4, 0]),
        (np.uint8, np.int8, [127], [0]),  # 127 is not uint8's symmetric value
        (np.int8, np.uint8, [-5], None),
        (np.uint8, np.uint8, [200], [128]),
    ],
)
def test_conv_integer_subtracts_the_zero_points(
    tmp_path: Path,
    x_type: type,
    w_type: type,
    x_zp: list[int] | None,
    w_zp: list[int] | None,
    constant_zero_points: bool,
) -> None:
    """MIGraphX shifts uint8 operands to int8 (and their zero points with them) and subtracts the
    zero points' convolutions: the result is the definition's, exactly. Killed mutants: the shift,
    the symmetric-value test, each correction term and its broadcast. A missing zero point is
    MIGraphX's symmetric value (op::builder::quant_convolution::get_zero_point): 128 for uint8, where
    ONNX says 0."""
    rng = np.random.default_rng(6)
    info_x, info_w = np.iinfo(x_type), np.iinfo(w_type)
    inputs = {
        "x": rng.integers(info_x.min, info_x.max + 1, (1, 2, 5, 4)).astype(x_type),
        "w": rng.integers(info_w.min, info_w.max + 1, (3, 2, 3, 2)).astype(w_type),
    }
    names = ["x", "w"]
    if x_zp is not None:
        inputs["x_zp"] = np.array(x_zp, x_type)
        names.append("x_zp")
    if w_zp is not None:
        inputs["w_zp"] = np.array(w_zp, w_type)
        names += ["w_zp"] if x_zp is not None else ["", "w_zp"]
    # zero points as constants (the parser tells symmetric ones from their values) and as inputs
    constants = {k: inputs.pop(k) for k in ("x_zp", "w_zp") if k in inputs and constant_zero_points}
    node = helper.make_node("ConvInteger", names, ["y"])
    _, got = _run(tmp_path, node, inputs, 13, output_type=np.int32, constants=constants)
    inputs |= constants

    def default(dtype: type) -> np.ndarray:
        return np.array([128 if dtype is np.uint8 else 0])

    want = _conv_integer(
        inputs["x"], inputs["w"], inputs.get("x_zp", default(x_type)), inputs.get("w_zp", default(w_type))
    )
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
def test_softmax_axis_attribute_is_read(tmp_path: Path, op_type: str) -> None:
    """Killed mutants: the attribute's name changed (the default used instead)."""
    x = np.random.default_rng(7).uniform(-3, 3, (2, 3, 4)).astype(np.float32)
    _, got = _run(tmp_path, helper.make_node(op_type, ["x"], ["y"], axis=0), {"x": x}, 13)
    want = _softmax(x.astype(np.float64), 0)
    np.testing.assert_allclose(got, np.log(want) if op_type == "LogSoftmax" else want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("a_shape", "b_shape"), [((2, 3, 3), (3, 4)), ((2, 3), (1, 3, 4))])
def test_gemm_of_an_operand_not_of_rank_2_is_refused(
    tmp_path: Path, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> None:
    """Killed mutants: the rank check's 'or' as 'and', its message dropped."""
    from mgxir.diagnostics import MgxError

    inputs = {"a": np.ones(a_shape, np.float32), "b": np.ones(b_shape, np.float32)}
    with pytest.raises(MgxError, match="gemm op_builder: A and B should be rank 2, A is rank"):
        _run(tmp_path, helper.make_node("Gemm", ["a", "b"], ["y"]), inputs, 13)


@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 5), (2, 4, 3, 2)])
@pytest.mark.parametrize("epsilon", [None, 0.25])
def test_batchnorm_normalizes_along_the_channel_axis(
    tmp_path: Path, shape: tuple[int, ...], epsilon: float | None
) -> None:
    """scale (x - mean) / sqrt(var + epsilon) + bias, the four vectors along axis 1 (epsilon 1e-5 by
    default, variances near it so that it counts). Killed mutants: the epsilon, each operand's place
    and the unsqueezed axes of rank > 2."""
    rng = np.random.default_rng(8)
    channels = shape[1]
    inputs = {
        "x": rng.uniform(-2, 2, shape).astype(np.float32),
        "scale": rng.uniform(0.5, 2, channels).astype(np.float32),
        "bias": rng.uniform(-1, 1, channels).astype(np.float32),
        "mean": rng.uniform(-1, 1, channels).astype(np.float32),
        "var": rng.uniform(1e-5, 4e-5, channels).astype(np.float32),
    }
    attributes = {} if epsilon is None else {"epsilon": epsilon}
    node = helper.make_node("BatchNormalization", list(inputs), ["y"], **attributes)
    _, got = _run(tmp_path, node, inputs, 15)
    along = (1, channels) + (1,) * (len(shape) - 2)
    x, scale, bias, mean, var = (v.astype(np.float64) for v in inputs.values())
    eps = 1e-5 if epsilon is None else epsilon
    want = scale.reshape(along) * (x - mean.reshape(along)) / np.sqrt(var.reshape(along) + eps) + bias.reshape(along)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
