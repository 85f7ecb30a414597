"""Numbers of the quantization family of ONNX operators (the QLinear ops, DynamicQuantizeLinear,
DynamicScale, MXQuantizeDequantize, MatMulNBits, MatMulBnb4) against onnxruntime where it runs the
model, against onnxruntime on the same computation written with standard ONNX operators where it
refuses the model, and against numpy written after MIGraphX's semantics where MIGraphX differs from
onnxruntime (each such case says so)."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from mgxir.diagnostics import DiagnosticSink, MgxError  # noqa: E402
from mgxir.interp import Interpreter  # noqa: E402
from mgxir.ir.dtype import DType  # noqa: E402
from mgxir.ir.registry import make_op  # noqa: E402
from mgxir.translate.onnx import import_model  # noqa: E402
from mgxir.translate.onnx.parsers.lowbit import NF4_VALUES  # noqa: E402

MODELS = Path(__file__).resolve().parents[5] / "shared" / "onnx-models"
needs_models = pytest.mark.skipif(not MODELS.is_dir(), reason=f"MIGraphX's ONNX models are not at {MODELS}")
CONTRIB = "com.microsoft"


def _load(name: str) -> onnx.ModelProto:
    return onnx.load(str(MODELS / f"{name}.onnx"))


def _mgxir(model: onnx.ModelProto | str, feeds: dict[str, np.ndarray], tmp_path: Path | None = None) -> list:
    if isinstance(model, str):
        path = str(MODELS / f"{model}.onnx")
    else:
        assert tmp_path is not None
        path = str(tmp_path / "m.onnx")
        Path(path).write_bytes(model.SerializeToString())
    sink = DiagnosticSink()
    return [np.asarray(o) for o in Interpreter(import_model(path, sink=sink), sink).run(feeds)]


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime on the model, its contrib operators (written in the default domain in MIGraphX's
    test models) moved to onnxruntime's contrib domain; no graph optimization, so nothing is fused."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for node in model.graph.node:
        if not onnx.defs.has(node.op_type):
            node.domain = CONTRIB
    if any(n.domain == CONTRIB for n in model.graph.node):
        model.opset_import.append(helper.make_opsetid(CONTRIB, 1))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _random_int8(shape, dtype, rng: np.random.Generator) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


def _close_quantized(got: np.ndarray, want: np.ndarray) -> None:
    """Quantized results agree but for rounding: off by one at most, in a few elements."""
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert got.shape == want.shape
    assert diff.max() <= 1, f"off by {diff.max()}"
    assert np.count_nonzero(diff) <= max(1, diff.size // 20), f"{np.count_nonzero(diff)} of {diff.size} differ"


# -- quantizelinear as MIGraphX's ref computes it -------------------------------------------------


def test_quantizelinear_divides_in_the_input_type() -> None:
    """6.25 / 0.02 is 312.5 in float (a tie, rounded to even: 312) but 312.50000698... in double (313):
    MIGraphX divides in the input's type."""
    op = make_op("quantizelinear")
    x, scale, zero = np.array([6.25], np.float32), np.array([0.02], np.float32), np.array([0], np.int16)
    assert op.defn.compute(op, [x, scale, zero], [], lambda m, a: []).tolist() == [312]


def test_quantizelinear_to_float_is_not_rounded() -> None:
    """A float result (the MX types, rounded later by pack_fp4) is x / scale as it is."""
    op = make_op("quantizelinear", out_type=DType.float)
    x, scale = np.array([1.5, -0.75], np.float32), np.array([1.0, 1.0], np.float32)
    assert op.defn.compute(op, [x, scale], [], lambda m, a: []).tolist() == [1.5, -0.75]


@needs_models
def test_qlinearaveragepool_3d_rounds_as_migraphx() -> None:
    """The 3-D pool on random inputs (a batch of 8 through a model made for 1) equals MIGraphX's ref
    computation element for element: dequantize
    (double, stored as float), average in double, divide by y_scale in float, round half to even."""
    rng = np.random.default_rng(3)
    x = _random_int8((8, 3, 3, 3, 3), np.int8, rng)
    dq = (x.astype(np.float64) * np.float32(0.05)).astype(np.float32).astype(np.float64)
    windows = np.lib.stride_tricks.sliding_window_view(dq, (2, 2, 2), axis=(2, 3, 4))
    average = windows.mean(axis=(-3, -2, -1)).astype(np.float32)
    want = np.clip(np.rint(average / np.float32(0.02)), -128, 127).astype(np.int8)
    got = np.concatenate([_mgxir("qlinearaveragepool_3d_test", {"x": x[i : i + 1]})[0] for i in range(len(x))])
    assert np.array_equal(got, want)
    peer = np.concatenate([_ort(_load("qlinearaveragepool_3d_test"), {"x": x[i : i + 1]})[0] for i in range(len(x))])
    _close_quantized(got, peer)


# -- QLinear models onnxruntime runs ---------------------------------------------------------------

QLINEAR_MODELS = [
    "qlinearadd_bcast_test",
    "qlinearadd_test",
    "qlinearmul_bcast_test",
    "qlinearmul_test",
    "qlinearsigmoid_test",
    "qlinearleakyrelu_test",
    "qlinearconcat_test",
    "qlinearaveragepool_2d_ceil_test",
    "qlinearaveragepool_2d_pads_count_include_pad_test",
    "qlinearaveragepool_2d_same_lower_test",
    "qlinearaveragepool_2d_same_upper_test",
    "qlinearaveragepool_2d_strides_test",
    "qlinearaveragepool_notset_test",
    "qlinearglobalavgpool_test",
    "qlinearconv_pad_1_test",
    "qlinearconv_test",
    "qlinearmatmul_1D_test",
    "qlinearmatmul_2D_test",
    "qlinearmatmul_3D_test",
    "qlinearmatmul_2D_perchannel_test",
]


def _feeds(model: onnx.ModelProto, rng: np.random.Generator) -> dict[str, np.ndarray]:
    initializers = {i.name for i in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dtype = helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        if np.issubdtype(dtype, np.integer):
            feeds[value.name] = _random_int8(shape, dtype, rng)
        else:
            feeds[value.name] = rng.uniform(-2, 2, shape).astype(dtype)
    return feeds


@needs_models
@pytest.mark.parametrize("name", QLINEAR_MODELS)
def test_qlinear_against_onnxruntime(name: str) -> None:
    model = _load(name)
    feeds = _feeds(model, np.random.default_rng(len(name)))
    (got,) = _mgxir(name, feeds)
    (want,) = _ort(model, feeds)
    _close_quantized(got.reshape(want.shape), want)


# -- QLinear models onnxruntime refuses: the same computation in standard ONNX operators ------------


def _initializer(model: onnx.ModelProto, name: str) -> onnx.TensorProto:
    return next(i for i in model.graph.initializer if i.name == name)


def _with_output_type(model: onnx.ModelProto, elem_type: int) -> onnx.ModelProto:
    """The model with its output declared of the type the operator gives (MIGraphX's test model
    declares another, which MIGraphX ignores and onnxruntime refuses)."""
    fixed = onnx.ModelProto.FromString(model.SerializeToString())
    fixed.graph.output[0].type.tensor_type.elem_type = elem_type
    return fixed


@needs_models
@pytest.mark.parametrize(
    ("name", "elem_type"),
    [
        ("qlinearaveragepool_1d_test", TensorProto.INT8),
        ("qlinearaveragepool_nt_cip_test", TensorProto.UINT8),
        ("qlinearconcat_3d_test", TensorProto.INT8),
    ],
)
def test_qlinear_with_a_wrongly_declared_output(name: str, elem_type: int) -> None:
    model = _load(name)
    feeds = _feeds(model, np.random.default_rng(7))
    (got,) = _mgxir(name, feeds)
    (want,) = _ort(_with_output_type(model, elem_type), feeds)
    _close_quantized(got, want)


def _qdq_model(name: str, node: onnx.NodeProto, per_axis: dict[str, int] | None = None) -> onnx.ModelProto:
    """`node` (a float op on inputs "xf", "wf") between standard DequantizeLinear/QuantizeLinear
    nodes, with the QLinear model's inputs, initializers and output."""
    model = _load(name)
    q = model.graph.node[0]
    per_axis = per_axis or {}
    nodes = [
        helper.make_node("DequantizeLinear", [q.input[0], q.input[1], q.input[2]], ["xf"], axis=per_axis.get("x", 1)),
        helper.make_node("DequantizeLinear", [q.input[3], q.input[4], q.input[5]], ["wf"], axis=per_axis.get("w", 1)),
        node,
        helper.make_node("QuantizeLinear", ["yf", q.input[6], q.input[7]], [q.output[0]]),
    ]
    graph = helper.make_graph(nodes, "qdq", list(model.graph.input), list(model.graph.output), model.graph.initializer)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


@needs_models
@pytest.mark.parametrize("name", ["qlinearconv_pad_0_test", "qlinearconv_scale_1D_test"])
def test_qlinearconv_with_mixed_types(name: str) -> None:
    """uint8 input, int8 output: onnxruntime's QLinearConv has no kernel for it; the same as
    DequantizeLinear, Conv, QuantizeLinear."""
    model = _load(name)
    pads = next((list(a.ints) for a in model.graph.node[0].attribute if a.name == "pads"), [0, 0, 0, 0])
    conv = helper.make_node("Conv", ["xf", "wf"], ["yf"], pads=pads)
    reference = _qdq_model(name, conv, {"w": 0})
    feeds = _feeds(model, np.random.default_rng(11))
    (got,) = _mgxir(name, feeds)
    (want,) = _ort(reference, feeds)
    _close_quantized(got, want)


@needs_models
def test_qlinearaveragepool_with_dilations() -> None:
    """onnxruntime's QLinearAveragePool has no dilations; the same as DequantizeLinear, AveragePool,
    QuantizeLinear."""
    name = "qlinearaveragepool_2d_dilations_test"
    model = _load(name)
    attrs = {a.name: helper.get_attribute_value(a) for a in model.graph.node[0].attribute}
    q = model.graph.node[0]
    nodes = [
        helper.make_node("DequantizeLinear", list(q.input[:3]), ["xf"]),
        helper.make_node("AveragePool", ["xf"], ["yf"], **attrs),
        helper.make_node("QuantizeLinear", ["yf", q.input[3], q.input[4]], [q.output[0]]),
    ]
    output = helper.make_tensor_value_info(q.output[0], TensorProto.INT8, None)
    graph = helper.make_graph(nodes, "qdq", list(model.graph.input), [output], model.graph.initializer)
    reference = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    feeds = _feeds(model, np.random.default_rng(5))
    (got,) = _mgxir(name, feeds)
    (want,) = _ort(reference, feeds)
    _close_quantized(got, want)


@needs_models
def test_qlinearmatmul_with_n_d_scales() -> None:
    """Per-row scales of A shaped [2, 3, 1] and per-column scales of B shaped [2, 1, 5]: onnxruntime
    takes only scalars or vectors; the same computation in float with broadcasting."""
    name = "qlinearmatmul_N_D_perchannel_test"
    model = _load(name)

    def value(n: str) -> np.ndarray:
        return numpy_helper.to_array(_initializer(model, n))

    a = _random_int8((2, 3, 4), np.uint8, np.random.default_rng(9))
    fa = (a.astype(np.float64) - value("A_zero_point")) * value("A_scale")
    fb = (value("B").astype(np.float64) - value("B_zero_point")) * value("B_scale")
    product = (fa.astype(np.float32) @ fb.astype(np.float32)).astype(np.float32)
    want = np.clip(np.rint(product / value("C_scale")) + value("C_zero_point"), 0, 255)
    (got,) = _mgxir(name, {"A": a})
    _close_quantized(got, want)


# -- DynamicQuantizeLinear, MatMulNBits: onnxruntime runs them -------------------------------------


@needs_models
@pytest.mark.parametrize("name", ["dynamicquantizelinear_1d_test", "dynamicquantizelinear_2d_test"])
def test_dynamicquantizelinear(name: str) -> None:
    model = _load(name)
    feeds = _feeds(model, np.random.default_rng(2))
    got = _mgxir(name, feeds)
    want = _ort(model, feeds)
    _close_quantized(got[0], want[0])
    np.testing.assert_allclose(got[1].ravel(), want[1].ravel(), rtol=1e-6)
    assert got[2].ravel().tolist() == want[2].ravel().tolist()


@needs_models
@pytest.mark.parametrize("name", ["matmulnbits_mm_test", "matmulnbits_mm2_test", "matmulnbits_vm_test"])
def test_matmulnbits(name: str) -> None:
    model = _load(name)
    feeds = _feeds(model, np.random.default_rng(4))
    (got,) = _mgxir(name, feeds)
    (want,) = _ort(model, feeds)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-4)


# -- where MIGraphX differs from onnxruntime --------------------------------------------------------


def _bnb4_as_migraphx(
    a: np.ndarray, b: np.ndarray, absmax: np.ndarray, n: int, quant_type: int, block_size: int = 16
) -> np.ndarray:
    """MIGraphX's MatMulBnb4: the low nibble first; FP4 read as the 4-bit value over 8, NF4 through
    the code book; each block scaled by its absmax (the last block may be a runt)."""
    k = a.shape[-1]
    nibbles = np.stack([b & 15, b >> 4], axis=1).reshape(-1)[: n * k]
    values = nibbles / np.float32(8) if quant_type == 0 else np.asarray(NF4_VALUES, np.float32)[nibbles]
    weights = (values * np.repeat(absmax, block_size)[: n * k]).astype(np.float32).reshape(n, k)
    return a @ weights.T


@needs_models
@pytest.mark.parametrize(("name", "n", "quant_type"), [("matmulbnb4_fp4_test", 4, 0), ("matmulbnb4_nf4_test", 8, 1)])
def test_matmulbnb4_differs_from_onnxruntime(name: str, n: int, quant_type: int) -> None:
    """MIGraphX reads MatMulBnb4's packed bytes low nibble first and its FP4 as value / 8;
    onnxruntime (bitsandbytes) reads the high nibble first and FP4 through bitsandbytes' FP4 code
    book. mgxir computes what MIGraphX does, which is not what onnxruntime does."""
    model = _load(name)
    feeds = _feeds(model, np.random.default_rng(6))
    feeds["absmax"] = np.abs(feeds["absmax"]) + np.float32(0.5)
    (got,) = _mgxir(name, feeds)
    want = _bnb4_as_migraphx(feeds["A"], feeds["B"], feeds["absmax"], n, quant_type)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    (peer,) = _ort(model, feeds)
    assert not np.allclose(got, peer, rtol=1e-2, atol=1e-2)


def _mx_as_migraphx(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """MXFP4 quantize-dequantize and the block scales: blocks of 32 along `axis` (the runt block
    zero-padded), scale 2^floor(log2(max |x|)) / 4, elements rounded to fp4e2m1 (saturating at 6)."""
    moved = np.moveaxis(x, axis, -1)
    length = moved.shape[-1]
    padded = np.concatenate([moved, np.zeros((*moved.shape[:-1], -length % 32), x.dtype)], axis=-1)
    blocks = padded.reshape(*padded.shape[:-1], -1, 32)
    scales = (2.0 ** np.floor(np.log2(np.abs(blocks).max(axis=-1, keepdims=True))) / 4).astype(np.float32)
    spread = np.broadcast_to(scales, blocks.shape).reshape(padded.shape)[..., :length]
    elements = np.clip(moved.astype(np.float64) / spread, -6, 6).astype(ml_dtypes.float4_e2m1fn)
    return np.moveaxis(elements.astype(np.float32) * spread, -1, axis), np.moveaxis(scales[..., 0], -1, axis)


@needs_models
@pytest.mark.parametrize(("name", "axis"), [("mxqdq_odd_test", 0), ("mxqdq_even_test", 1), ("mxqdq_small_test", 1)])
def test_mxquantizedequantize(name: str, axis: int) -> None:
    """Not an onnxruntime operator: against numpy written after MIGraphX's definition."""
    x = np.random.default_rng(8).uniform(
        -3, 3, [d.dim_value for d in _load(name).graph.input[0].type.tensor_type.shape.dim]
    )
    x = x.astype(np.float32)
    (got,) = _mgxir(name, {"input": x})
    assert np.array_equal(got, _mx_as_migraphx(x, axis)[0])


@needs_models
@pytest.mark.parametrize(
    ("name", "axis"), [("dynamicscale_odd_test", 0), ("dynamicscale_even_test", 1), ("dynamicscale_small_test", 1)]
)
def test_dynamicscale(name: str, axis: int) -> None:
    """Brevitas' DynamicScale (not an onnxruntime operator): the MX block scales."""
    x = np.random.default_rng(10).uniform(
        -3, 3, [d.dim_value for d in _load(name).graph.input[0].type.tensor_type.shape.dim]
    )
    x = x.astype(np.float32)
    (got,) = _mgxir(name, {"input": x})
    assert np.array_equal(got, _mx_as_migraphx(x, axis)[1])


# -- refusals ---------------------------------------------------------------------------------------


def _qlinear_model(op_type: str, inputs: list[tuple[str, int, list[int]]], **attributes) -> onnx.ModelProto:
    values = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    node = helper.make_node(op_type, [n for n, _, _ in inputs], ["y"], **attributes)
    out = helper.make_tensor_value_info("y", TensorProto.UINT8, None)
    return helper.make_model(helper.make_graph([node], "g", values, [out]), opset_imports=[helper.make_opsetid("", 19)])


F, U8, I8, I32 = TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32
SCALAR = [1]


def _q(name: str, elem: int = U8, shape: list[int] | None = None) -> list[tuple[str, int, list[int]]]:
    return [(name, elem, shape or [2, 3]), (f"{name}_s", F, SCALAR), (f"{name}_z", elem, SCALAR)]


REFUSALS = [
    (_qlinear_model("QLinearAdd", _q("a") + _q("b")[:2]), "QLinearAdd: missing inputs"),
    (_qlinear_model("QLinearMul", _q("a", F) + _q("b") + [("c_s", F, SCALAR)]), "QLinearMul: unsupported input type"),
    (_qlinear_model("QLinearAdd", _q("a") + _q("b", I8) + [("c_s", F, SCALAR)]), "QLinearAdd: mismatched input types"),
    (_qlinear_model("QLinearSigmoid", _q("x")), "sigmoid: missing inputs"),
    (_qlinear_model("QLinearLeakyRelu", [*_q("x", F), ("y_s", F, SCALAR)]), "leaky_relu: unsupported input type"),
    (
        _qlinear_model("QLinearConcat", [("y_s", F, SCALAR), ("y_z", U8, SCALAR), *_q("t")[:2]], axis=0),
        "QLINEARCONCAT: missing inputs",
    ),
    (
        _qlinear_model("QLinearConcat", [("y_s", F, SCALAR), ("y_z", F, SCALAR), *_q("t")], axis=0),
        "QLINEARCONCAT: unsupported output type",
    ),
    (
        _qlinear_model(
            "QLinearConcat",
            [("y_s", F, SCALAR), ("y_z", U8, SCALAR), ("t", I8, [2]), ("t_s", F, SCALAR), ("t_z", U8, SCALAR)],
            axis=0,
        ),
        "QLINEARCONCAT: mismatching input types",
    ),
    (
        _qlinear_model("QLinearConcat", [("y_s", F, SCALAR), ("y_z", U8, SCALAR), *_q("t")]),
        "QLINEARCONCAT: missing axis attribute",
    ),
    (
        _qlinear_model("QLinearAveragePool", [*_q("x"), ("y_s", F, SCALAR)]),
        "QLinearAveragePool: input dimensions too small",
    ),
    (
        _qlinear_model("QLinearGlobalAveragePool", [*_q("x", U8, [1, 2, 3]), ("y_s", F, SCALAR), ("y_z", I8, SCALAR)]),
        "QLinearGlobalAveragePool: mismatched type: output zero point",
    ),
    (
        _qlinear_model("QLinearConv", _q("x", U8, [1, 1, 3, 3]) + _q("w", U8, [1, 1, 1, 1]) + [("y_s", F, SCALAR)]),
        "QLINEARCONV: missing inputs",
    ),
    (
        _qlinear_model(
            "QLinearConv", _q("x", U8, [1, 1, 3, 3]) + _q("w", U8, [1, 1, 1, 1]) + _q("y")[1:] + [("b", F, [1])]
        ),
        "QLINEARCONV y bias should be int32",
    ),
    (
        _qlinear_model("QLinearConv", _q("x", U8, [1, 1, 3, 3]) + _q("w", U8, [1, 1, 1, 1]) + _q("y")[1:], strides=[1]),
        "QLINEARCONV: inconsistent strides k-dims: 2 attribute size: 1",
    ),
    (
        _qlinear_model(
            "QLinearAveragePool", [("x", U8, [1, 1, 2, 2]), ("x_s", F, SCALAR), ("x_z", I8, SCALAR), ("y_s", F, SCALAR)]
        ),
        "QLinearAveragePool: mismatched type: input zero point",
    ),
    (
        _qlinear_model(
            "QLinearAveragePool", [*_q("x", U8, [1, 1, 2, 2]), ("y_s", F, SCALAR)], channel_last=1, channels_last=1
        ),
        "QLinearAveragePool: channels_last (N x D1..Dn x C) is not supported",
    ),
    (
        _qlinear_model(
            "QLinearConv",
            [
                ("x", U8, [1, 1, 3, 3]),
                ("x_s", I8, SCALAR),
                ("x_z", U8, SCALAR),
                *_q("w", U8, [1, 1, 1, 1]),
                *_q("y")[1:],
            ],
        ),
        "QLINEARCONV x scale type should be float",
    ),
    (_qlinear_model("QLinearMatMul", _q("a") + _q("b")), "QLINEARMATMUL: missing inputs"),
    (
        _qlinear_model("QLinearMatMul", _q("a", U8, [2, 3]) + _q("b", U8, [2, 3]) + _q("y")[1:]),
        "QLINEARMATMUL: mismatched input dimensions",
    ),
]


@pytest.mark.parametrize(("model", "message"), REFUSALS, ids=[m for _, m in REFUSALS])
def test_qlinear_refusals(tmp_path: Path, model: onnx.ModelProto, message: str) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(MgxError) as caught:
        import_model(str(path))
    assert caught.value.message.endswith(message), caught.value.message


def _qlinearconv_with_bias(w_scale: np.ndarray, w: np.ndarray, bias: np.ndarray) -> onnx.ModelProto:
    inits = [
        numpy_helper.from_array(np.float32(0.02), "x_s"),
        numpy_helper.from_array(np.uint8(120), "x_z"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(w_scale, "w_s"),
        numpy_helper.from_array(np.zeros(w_scale.shape, np.int8), "w_z"),
        numpy_helper.from_array(np.float32(0.05), "y_s"),
        numpy_helper.from_array(np.uint8(128), "y_z"),
        numpy_helper.from_array(bias, "b"),
    ]
    node = helper.make_node(
        "QLinearConv",
        ["x", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z", "b"],
        ["y"],
        auto_pad="SAME_UPPER",
        strides=[2, 2],
    )
    x = helper.make_tensor_value_info("x", U8, [1, 2, 5, 5])
    graph = helper.make_graph([node], "g", [x], [helper.make_tensor_value_info("y", U8, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def test_qlinearconv_bias_and_auto_pad(tmp_path: Path) -> None:
    """An int32 bias dequantized with x_scale * w_scale (per output channel); SAME_UPPER padding
    computed from the weights."""
    rng = np.random.default_rng(12)
    x = _random_int8((1, 2, 5, 5), np.uint8, rng)
    w = _random_int8((3, 2, 3, 3), np.int8, rng)
    bias = rng.integers(-500, 500, 3).astype(np.int32)
    w_scale = np.array([0.01, 0.02, 0.005], np.float32)
    model = _qlinearconv_with_bias(w_scale, w, bias)
    (got,) = _mgxir(model, {"x": x}, tmp_path)
    # ONNX's meaning in exact integers (onnxruntime's u8s8 kernels saturate on AVX2-only machines):
    # 5 wide, stride 2, 3 taps: SAME_UPPER pads 1 before and 1 after
    acc = _integer_convolution(x.astype(np.int64) - 120, w, pads=(1, 1, 1, 1), strides=(2, 2))
    acc += bias.reshape(1, 3, 1, 1)
    scaled = acc * (np.float32(0.02) * w_scale.astype(np.float64)).reshape(1, 3, 1, 1) / 0.05
    want = np.clip(np.rint(scaled) + 128, 0, 255).astype(np.uint8)
    _close_quantized(got, want)


def test_qlinearconv_bias_with_one_weight_scale_is_refused(tmp_path: Path) -> None:
    """MIGraphX dequantizes the bias with x_scale * w_scale broadcast to w_scale's lens only: with one
    weight scale and several output channels dequantizelinear's dims differ, and MIGraphX refuses."""
    rng = np.random.default_rng(12)
    w = _random_int8((3, 2, 3, 3), np.int8, rng)
    model = _qlinearconv_with_bias(np.float32(0.01), w, np.zeros(3, np.int32))
    with pytest.raises(MgxError) as caught:
        _save_and_import(tmp_path, model)
    assert caught.value.message.endswith(
        "QLinearConv node: dequantizelinear: input 1 has lens {1}, input 0 has {3} (dimension 0: 1 vs 3)"
    )


def test_matmulbnb4_runt_block_is_refused(tmp_path: Path) -> None:
    """N * K = 24 elements in blocks of 16: the absmax repeated over 32 elements does not reshape to
    24, and MIGraphX's parser (which slices only after that reshape) refuses the model too."""
    n, k, block_size = 3, 8, 16
    node = helper.make_node("MatMulBnb4", ["A", "B", "absmax"], ["Y"], K=k, N=n, block_size=block_size, quant_type=1)
    inputs = [
        helper.make_tensor_value_info("A", F, [2, k]),
        helper.make_tensor_value_info("B", U8, [(n * k + 1) // 2]),
        helper.make_tensor_value_info("absmax", F, [2]),
    ]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("Y", F, None)])
    with pytest.raises(MgxError) as caught:
        _save_and_import(tmp_path, helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]))
    assert "MatMulBnb4 node: reshape: {24} has 24 elements but the input {2, 16} has 32" in caught.value.message


def _save_and_import(tmp_path: Path, model: onnx.ModelProto):
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return import_model(str(path))


def test_qlinearsigmoid_without_output_zero_point(tmp_path: Path) -> None:
    """Four inputs: the result quantized with a broadcast scale alone (uint8, as quantizelinear gives)."""
    inits = [
        numpy_helper.from_array(np.float32(0.05), "x_s"),
        numpy_helper.from_array(np.uint8(128), "x_z"),
        numpy_helper.from_array(np.float32(1 / 256), "y_s"),
    ]
    node = helper.make_node("QLinearSigmoid", ["x", "x_s", "x_z", "y_s"], ["y"])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", U8, [16])],
        [helper.make_tensor_value_info("y", U8, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    x = _random_int8((16,), np.uint8, np.random.default_rng(14))
    (got,) = _mgxir(model, {"x": x}, tmp_path)
    # onnxruntime 1.32 aborts the process on this model: numpy instead
    dequantized = ((x.astype(np.float64) - 128) * np.float32(0.05)).astype(np.float32)
    sigmoid = (1 / (1 + np.exp(-dequantized.astype(np.float64)))).astype(np.float32)
    want = np.clip(np.rint(sigmoid / np.float32(1 / 256)), 0, 255)
    _close_quantized(got, want)


def test_qlinearmatmul_with_a_vector_b(tmp_path: Path) -> None:
    """B 1-D: unsqueezed on axis 1 and the product squeezed there."""
    inputs = [
        helper.make_tensor_value_info("a", U8, [2, 8]),
        helper.make_tensor_value_info("b", U8, [8]),
    ]
    inits = [
        numpy_helper.from_array(np.float32(0.02), "a_s"),
        numpy_helper.from_array(np.uint8(100), "a_z"),
        numpy_helper.from_array(np.float32(0.03), "b_s"),
        numpy_helper.from_array(np.uint8(120), "b_z"),
        numpy_helper.from_array(np.float32(0.2), "y_s"),
        numpy_helper.from_array(np.uint8(128), "y_z"),
    ]
    node = helper.make_node("QLinearMatMul", ["a", "a_s", "a_z", "b", "b_s", "b_z", "y_s", "y_z"], ["y"])
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", U8, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    rng = np.random.default_rng(15)
    feeds = {"a": _random_int8((2, 8), np.uint8, rng), "b": _random_int8((8,), np.uint8, rng)}
    (got,) = _mgxir(model, feeds, tmp_path)
    (want,) = _ort(model, feeds)
    _close_quantized(got, want)


def test_qlinearconv_pads_of_odd_length_are_dropped(tmp_path: Path) -> None:
    """Five pads on a 2-D convolution pass the size check (5 // 2 == 2) and are then replaced by
    zeros, as MIGraphX's recalc_conv_attributes does."""
    inputs = _q("x", U8, [1, 1, 4, 4]) + _q("w", U8, [1, 1, 3, 3]) + _q("y")[1:]
    program = _save_and_import(tmp_path, _qlinear_model("QLinearConv", inputs, pads=[1, 1, 1, 1, 1]))
    conv = next(i for i in program.main if i.op.name == "convolution")
    assert list(conv.op["padding"]) == [0, 0]


MX_NODES = {
    "DynamicScale": {
        "group_dim": 0,
        "group_size": 32,
        "output_dtype": TensorProto.FLOAT4E2M1,
        "scale_selection_method": "floor",
        "zero_point_selection_method": "None",
    },
    "MXQuantizeDequantize": {"axis": 0, "block_size": 32, "element_dtype": "fp4_e2m1", "rounding_mode": 2},
}
MX_REFUSALS = [
    ("DynamicScale", {"group_size": 16}, 1, "DynamicScale: only group_size of 32 is supported"),
    ("DynamicScale", {"output_dtype": TensorProto.FLOAT}, 1, "DynamicScale: only support MXFP4 type"),
    ("DynamicScale", {"scale_selection_method": "ceil"}, 1, "DynamicScale: only support floor scale selection"),
    ("DynamicScale", {"zero_point_selection_method": "int"}, 1, "DynamicScale: zero_point not supported"),
    ("DynamicScale", {}, 2, "DynamicScale: must have only 1 input"),
    ("DynamicScale", {"group_size": None}, 1, "DynamicScale: attribute 'group_size' is required"),
    ("MXQuantizeDequantize", {"block_size": 16}, 1, "MXQuantizeDequantize: only block_size of 32 is supported"),
    ("MXQuantizeDequantize", {"element_dtype": "fp8_e4m3"}, 1, "MXQuantizeDequantize: only support MXFP4 type"),
    ("MXQuantizeDequantize", {"rounding_mode": 0}, 1, "MXQuantizeDequantize: only round ties to even is supported"),
    ("MXQuantizeDequantize", {}, 2, "MXQuantizeDequantize: must have only 1 input"),
]


@pytest.mark.parametrize(("op_type", "changes", "n_inputs", "message"), MX_REFUSALS, ids=[m for *_, m in MX_REFUSALS])
def test_mx_refusals(tmp_path: Path, op_type: str, changes: dict, n_inputs: int, message: str) -> None:
    attributes = {**MX_NODES[op_type], **changes}
    attributes = {name: value for name, value in attributes.items() if value is not None}
    names = [f"x{i}" for i in range(n_inputs)]
    node = helper.make_node(op_type, names, ["y"], **attributes)
    inputs = [helper.make_tensor_value_info(name, F, [40, 2]) for name in names]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", F, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    with pytest.raises(MgxError) as caught:
        _save_and_import(tmp_path, model)
    assert caught.value.message.endswith(message), caught.value.message


@needs_models
@pytest.mark.parametrize(
    "name",
    [
        "matmulinteger_uns_test",
        "matmulinteger_int8_uint8_test",
        "matmulinteger_int8_uint8_one_zp_test",
        "convinteger_no_bias_uint8_test",
        "convinteger_mismatched_input_types_test",
    ],
)
def test_integer_ops_shift_uint8_without_zero_point(name: str) -> None:
    """MIGraphX runs MatMulInteger and ConvInteger on int8: a uint8 operand is shifted by -128 and
    its zero point with it, but an operand without a zero point is shifted with nothing to take the
    shift back, so MIGraphX computes the op with a zero point of 128 for it where ONNX has 0. mgxir
    computes what MIGraphX does: onnxruntime on the model with those zero points written in."""
    model = _load(name)
    node = model.graph.node[0]
    shapes = {v.name: v.type.tensor_type.elem_type for v in model.graph.input}
    shapes.update({i.name: i.data_type for i in model.graph.initializer})
    as_migraphx = onnx.ModelProto.FromString(model.SerializeToString())
    inputs = list(node.input) + [""] * (4 - len(node.input))
    for index in (0, 1):
        if not inputs[index + 2]:
            zero = np.uint8(128) if shapes[inputs[index]] == U8 else np.int8(0)
            inputs[index + 2] = f"zero_point_{index}"
            as_migraphx.graph.initializer.append(numpy_helper.from_array(zero, inputs[index + 2]))
    del as_migraphx.graph.node[0].input[:]
    as_migraphx.graph.node[0].input.extend(inputs[:4])
    feeds = _feeds(model, np.random.default_rng(16))
    # int8 data within [-4, 123]: MIGraphX subtracts an int8 zero point in int8, which wraps around
    feeds = {k: (v // 2 + 60 if v.dtype == np.int8 else v) for k, v in feeds.items()}
    (got,) = _mgxir(name, feeds)
    zero_points = {i.name: numpy_helper.to_array(i) for i in as_migraphx.graph.initializer}
    a, b = (feeds[n].astype(np.int64) - zero_points[z].astype(np.int64) for n, z in zip(inputs[:2], inputs[2:4]))
    assert np.array_equal(got, _integer_op(node, a, b))
    a_onnx, b_onnx = (feeds[n].astype(np.int64) for n in inputs[:2])
    onnx_zero = {z: zero_points[z] for z in inputs[2:4] if z in set(node.input)}
    a_onnx -= onnx_zero.get(inputs[2], 0)
    b_onnx -= onnx_zero.get(inputs[3], 0)
    assert not np.array_equal(got, _integer_op(node, a_onnx, b_onnx))


def _integer_op(node: onnx.NodeProto, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """MatMulInteger or ConvInteger (no padding, as in these models) of zero-point-free int64 operands."""
    if node.op_type == "MatMulInteger":
        return np.matmul(a, b).astype(np.int32)
    attributes = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    return _integer_convolution(a, b, strides=attributes["strides"], dilations=attributes["dilations"]).astype(np.int32)


def _integer_convolution(
    x: np.ndarray,
    w: np.ndarray,
    pads: tuple[int, ...] | None = None,
    strides: tuple[int, ...] | None = None,
    dilations: tuple[int, ...] | None = None,
) -> np.ndarray:
    """An N-d convolution (group 1) in exact int64 arithmetic: the tests' own integer oracle."""
    spatial = x.ndim - 2
    pads = pads or (0,) * (2 * spatial)
    strides = strides or (1,) * spatial
    dilations = dilations or (1,) * spatial
    x = np.pad(x.astype(np.int64), [(0, 0), (0, 0)] + [(pads[i], pads[i + spatial]) for i in range(spatial)])
    taps = w.shape[2:]
    out = [(x.shape[2 + i] - dilations[i] * (taps[i] - 1) - 1) // strides[i] + 1 for i in range(spatial)]
    y = np.zeros((x.shape[0], w.shape[0], *out), np.int64)
    for tap in np.ndindex(*taps):
        window = tuple(
            slice(tap[i] * dilations[i], tap[i] * dilations[i] + strides[i] * (out[i] - 1) + 1, strides[i])
            for i in range(spatial)
        )
        y += np.einsum(
            "nc...,oc->no...",
            x[(slice(None), slice(None), *window)],
            w[(slice(None), slice(None), *tap)].astype(np.int64),
        )
    return y


def test_gpu_quantize_expression_rounds_integers_only() -> None:
    """The GPU kernel's quantizelinear (its scalar meaning as C++): rint before an integer result,
    none before a float one."""
    from mgxir.ops.scalar import emit
    from mgxir.targets.gpu.kernels import CppEmitter, CValue

    x, s, z = CValue("x", DType.float), CValue("s", DType.float), CValue("z", DType.uint8)
    to_int = CppEmitter("t")
    emit(to_int, make_op("quantizelinear"), [x, s, z], DType.uint8)
    to_float = CppEmitter("t")
    emit(to_float, make_op("quantizelinear", out_type=DType.float), [x, s], DType.float)
    assert "const float t1 = rintf(t0);" in to_int.lines
    assert not any("rint" in line for line in to_float.lines)
