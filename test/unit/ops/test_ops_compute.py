"""Each op's reference compute against an independent oracle: onnxruntime on a one-node ONNX model,
or numpy written another way."""

from __future__ import annotations

import numpy as np
import pytest

from mgxir.ir.dtype import DType
from mgxir.ir.operation import ShapeError
from mgxir.ir.registry import all_ops, make_op
from mgxir.ir.shape import Shape

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

RNG = np.random.default_rng(0)


def run(name: str, inputs: list[np.ndarray], input_types: list[DType] | None = None, **attributes):
    """The op's compute on `inputs`, after checking that its result has the lengths and type that
    the op's shape rule gives for the inputs' shapes."""
    op = make_op(name, **attributes)
    result = op.defn.compute(op, inputs, [], lambda m, a: [])
    input_types = input_types or [DType.from_numpy(x.dtype) for x in inputs]
    try:
        shape = op.defn.shape(op, [Shape.make(t, x.shape) for t, x in zip(input_types, inputs)], [])
    except ShapeError as e:
        # a result shape that depends on input values (resize's sizes input) is known only for literals
        assert "no static shape rule" in str(e), str(e)
        return result
    if shape is not None:  # None: a target-internal op whose result shape is taken as printed
        check_against_shape_rule(name, result, shape)
    return result


def check_against_shape_rule(name: str, result: object, shape: Shape) -> None:
    if shape.is_tuple:
        assert isinstance(result, tuple) and len(result) == len(shape.sub_shapes), name
        for element, sub in zip(result, shape.sub_shapes):
            check_against_shape_rule(name, element, sub)
        return
    array = np.asarray(result)
    assert array.dtype == shape.dtype.numpy, f"{name}: compute gives {array.dtype}, shape rule {shape}"
    if shape.is_dynamic:
        # a data-dependent length (nonzero, unique, onehot's depth input) lies within its range
        assert array.ndim == shape.ndim, f"{name}: compute gives {array.shape}, shape rule {shape}"
        for length, dim in zip(array.shape, shape.dyn_dims):
            assert dim.min <= length <= dim.max, f"{name}: compute gives {array.shape}, shape rule {shape}"
        return
    assert tuple(array.shape) == tuple(shape.lens), f"{name}: compute gives {array.shape}, shape rule {shape}"


def onnx_node(op_type: str, inputs: list[np.ndarray], n_outputs: int = 1, **attributes) -> list[np.ndarray]:
    names = [f"i{k}" for k in range(len(inputs))]
    outs = [f"o{k}" for k in range(n_outputs)]
    node = helper.make_node(op_type, names, outs, **attributes)
    elem = {
        np.dtype(np.float32): TensorProto.FLOAT,
        np.dtype(np.int64): TensorProto.INT64,
        np.dtype(np.int32): TensorProto.INT32,
        np.dtype(np.bool_): TensorProto.BOOL,
    }
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info(n, elem[x.dtype], x.shape) for n, x in zip(names, inputs)],
        [onnx.ValueInfoProto(name=o) for o in outs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(names, inputs)))


def data(*lens: int, positive: bool = False) -> np.ndarray:
    x = RNG.uniform(0.1 if positive else -2, 2, lens).astype(np.float32)
    return x


UNARY_ONNX = {
    "abs": "Abs",
    "acos": "Acos",
    "asin": "Asin",
    "atan": "Atan",
    "ceil": "Ceil",
    "cos": "Cos",
    "cosh": "Cosh",
    "erf": "Erf",
    "exp": "Exp",
    "floor": "Floor",
    "neg": "Neg",
    "recip": "Reciprocal",
    "relu": "Relu",
    "sigmoid": "Sigmoid",
    "sign": "Sign",
    "sin": "Sin",
    "sinh": "Sinh",
    "tan": "Tan",
    "tanh": "Tanh",
    "asinh": "Asinh",
    "nearbyint": "Round",
}
POSITIVE_ONNX = {"log": "Log", "sqrt": "Sqrt", "acosh": "Acosh", "atanh": "Atanh"}


@pytest.mark.parametrize("name", sorted({**UNARY_ONNX, **POSITIVE_ONNX}))
def test_unary_against_onnxruntime(name: str) -> None:
    onnx_name = {**UNARY_ONNX, **POSITIVE_ONNX}[name]
    x = data(3, 4, positive=name in POSITIVE_ONNX)
    if name == "acosh":
        x = x + 1
    if name in ("acos", "asin", "atanh"):
        x = x / 2.1
    if name == "nearbyint":
        x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.4, 2.6], np.float32)
    (want,) = onnx_node(onnx_name, [x])
    got = run(name, [x])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


BINARY_ONNX = {
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "pow": "Pow",
    "max": "Max",
    "min": "Min",
    "prelu": "PRelu",
}


@pytest.mark.parametrize("name", sorted(BINARY_ONNX))
def test_binary_against_onnxruntime(name: str) -> None:
    a, b = data(2, 5), data(2, 5, positive=True)
    if name == "pow":
        a = np.abs(a)
    (want,) = onnx_node(BINARY_ONNX[name], [a, b])
    np.testing.assert_allclose(run(name, [a, b]), want, rtol=1e-5)


def test_comparisons_return_the_input_type() -> None:
    a, b = np.array([1, 2, 3], np.float32), np.array([3, 2, 1], np.float32)
    for name, fn in (("equal", np.equal), ("greater", np.greater), ("less", np.less)):
        got = run(name, [a, b])
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, fn(a, b).astype(np.float32))


def test_mod_is_python_style_and_fmod_c_style() -> None:
    a = np.array([-7, 7, -7, 7], np.int32)
    b = np.array([3, -3, -3, 3], np.int32)
    assert run("mod", [a, b]).tolist() == [a_ % b_ for a_, b_ in zip(a.tolist(), b.tolist())]
    import math

    assert run("fmod", [a, b]).tolist() == [int(math.fmod(a_, b_)) for a_, b_ in zip(a.tolist(), b.tolist())]
    assert run("div", [a, b]).tolist() == [int(a_ / b_) for a_, b_ in zip(a.tolist(), b.tolist())]


def test_convert_saturates_and_truncates() -> None:
    x = np.array([1e6, -1e6, 2.7, -2.7, np.nan, 0.5, -0.5], np.float32)
    assert run("convert", [x], target_type=DType.int8).tolist() == [127, -128, 2, -2, 0, 0, 0]
    assert run("convert", [x], target_type=DType.half)[:2].tolist() == [65504.0, -65504.0]
    assert run("convert", [x], target_type=DType.bool).tolist() == [True, False, True, False, False, True, False]
    e4m3 = run("convert", [np.array([1000.0, -1000.0], np.float32)], target_type=DType.fp8e4m3fn)
    assert e4m3.astype(np.float32).tolist() == [448.0, -448.0]


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_and_logsoftmax(axis: int) -> None:
    x = data(3, 4, 5)
    (want,) = onnx_node("Softmax", [x], axis=axis)
    np.testing.assert_allclose(run("softmax", [x], axis=axis), want, rtol=1e-5)
    (want,) = onnx_node("LogSoftmax", [x], axis=axis)
    np.testing.assert_allclose(run("logsoftmax", [x], axis=axis), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "name,onnx_name",
    [
        ("reduce_sum", "ReduceSum"),
        ("reduce_mean", "ReduceMean"),
        ("reduce_max", "ReduceMax"),
        ("reduce_min", "ReduceMin"),
        ("reduce_prod", "ReduceProd"),
    ],
)
def test_reductions(name: str, onnx_name: str) -> None:
    x = data(2, 3, 4)
    if onnx_name == "ReduceSum":
        (want,) = onnx_node(onnx_name, [x, np.array([0, -1], np.int64)], keepdims=1)
    else:
        (want,) = onnx_node(onnx_name, [x], axes=[0, -1], keepdims=1)
    np.testing.assert_allclose(run(name, [x], axes=(0, -1)), want, rtol=1e-5)


def test_integer_mean_is_migraphx_64_bit_sum_divided() -> None:
    """MIGraphX's reduce_mean of integers: the 64-bit sum (wrapping), divided as C++ divides
    (truncated toward zero); of bools the count divided (true only where all are)."""
    x = np.array([[-7, 2], [7, -2], [2**63 - 1, 3]], np.int64)
    assert run("reduce_mean", [x], axes=(1,)).reshape(-1).tolist() == [-2, 2, -(2**62) + 1]
    small = np.array([[250, 255, 255]], np.uint8)
    assert run("reduce_mean", [small], axes=(1,)).reshape(-1).tolist() == [253]
    flags = np.array([[True, False], [True, True]])
    assert run("reduce_mean", [flags], axes=(1,)).reshape(-1).tolist() == [False, True]


@pytest.mark.parametrize("last", [False, True])
def test_argmax_argmin(last: bool) -> None:
    x = np.array([[1, 3, 3], [2, 2, 0]], np.float32)
    for name, onnx_name in (("argmax", "ArgMax"), ("argmin", "ArgMin")):
        (want,) = onnx_node(onnx_name, [x], axis=1, keepdims=1, select_last_index=int(last))
        np.testing.assert_array_equal(run(name, [x], axis=1, select_last_index=last), want)


def test_dot_and_gather() -> None:
    a, b = data(2, 3, 4), data(2, 4, 5)
    np.testing.assert_allclose(run("dot", [a, b]), np.einsum("bij,bjk->bik", a, b), rtol=1e-5)
    x = data(4, 3)
    idx = np.array([[0, -1], [2, 1]], np.int64)
    (want,) = onnx_node("Gather", [x, idx], axis=0)
    np.testing.assert_array_equal(run("gather", [x, idx], axis=0), want)


@pytest.mark.parametrize(
    "group,padding,stride,dilation", [(1, (1, 1), (1, 1), (1, 1)), (2, (0, 1, 1, 0), (2, 1), (1, 2))]
)
def test_convolution(group: int, padding: tuple, stride: tuple, dilation: tuple) -> None:
    x, w = data(1, 4, 6, 7), data(6, 4 // group, 3, 2)
    pads = list(padding) if len(padding) == 4 else [*padding, *padding]
    (want,) = onnx_node("Conv", [x, w], group=group, pads=pads, strides=list(stride), dilations=list(dilation))
    got = run("convolution", [x, w], padding=padding, stride=stride, dilation=dilation, group=group)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("ceil", [False, True])
def test_pooling(ceil: bool) -> None:
    x = data(1, 2, 7, 6)
    (want,) = onnx_node("MaxPool", [x], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 0], ceil_mode=int(ceil))
    got = run("pooling", [x], mode=1, lengths=(3, 2), stride=(2, 2), padding=(1, 0), ceil_mode=ceil)
    np.testing.assert_allclose(got, want)
    (want,) = onnx_node("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    got = run("pooling", [x], mode=0, lengths=(3, 3), stride=(2, 2), padding=(1, 1))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)  # sums that cancel differ in the last bit


def test_views_share_memory() -> None:
    x = data(2, 3, 4)
    for name, attributes in (
        ("transpose", {"permutation": (2, 0, 1)}),
        ("slice", {"axes": (1,), "starts": (1,), "ends": (3,)}),
        ("multibroadcast", {"out_lens": (5, 2, 3, 4)}),
        ("broadcast", {"axis": 1, "out_lens": (5, 2, 3, 4)}),
        ("reshape", {"dims": (6, 4)}),
        ("unsqueeze", {"axes": (0,)}),
    ):
        assert np.shares_memory(run(name, [x], **attributes), x), name
    assert not np.shares_memory(run("contiguous", [x.transpose(1, 0, 2)]), x)


def test_topk_pad_reverse_scan() -> None:
    x = data(3, 5)
    values, indices = run("topk", [x], k=2, axis=1)
    want_v, want_i = onnx_node("TopK", [x, np.array([2], np.int64)], n_outputs=2, axis=1)
    np.testing.assert_array_equal(values, want_v)
    np.testing.assert_array_equal(indices, want_i)
    (want,) = onnx_node("Pad", [x, np.array([1, 0, 0, 2], np.int64)], mode="reflect")
    np.testing.assert_array_equal(run("pad", [x], pads=(1, 0, 0, 2), mode=1), want)
    np.testing.assert_array_equal(run("reverse", [x], axes=(-1,)), x[:, ::-1])
    (want,) = onnx_node("CumSum", [x, np.array(1, np.int64)], exclusive=1, reverse=1)
    np.testing.assert_allclose(run("prefix_scan_sum", [x], axis=1, exclusive=True, reverse=True), want, rtol=1e-5)


def test_ref_lowered_forwards_compute() -> None:
    from mgxir.ir.registry import lookup

    ref_add = lookup("ref::add")
    assert ref_add is not None and ref_add.has_compute
    a = data(2, 2)
    np.testing.assert_array_equal(ref_add.compute(ref_add.make(), [a, a], [], lambda m, x: []), a + a)


def test_catalogue_reports_ops_without_compute() -> None:
    missing = sorted(n for n, d in all_ops().items() if not d.is_builtin and not d.has_compute)
    assert "add" not in missing
