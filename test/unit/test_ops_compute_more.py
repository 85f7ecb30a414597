"""Reference compute of scatter, onehot, unique, recurrent, vision and resize ops against onnxruntime
one-node models (or numpy written another way where ONNX has no such op)."""

from __future__ import annotations

import numpy as np
import pytest

from mgxir.ir.dtype import DType
from mgxir.ir.registry import make_op

pytest.importorskip("onnxruntime")
from test_ops_compute import data, onnx_node, run

RNG = np.random.default_rng(1)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "min", "max"])
def test_scatter_elements(reduction: str) -> None:
    x = data(3, 4)
    indices = np.array([[0, 2, 1, 0], [2, -1, 0, 1]], np.int64)
    updates = data(2, 4)
    extra = {} if reduction == "none" else {"reduction": reduction}
    (want,) = onnx_node("ScatterElements", [x, indices, updates], axis=0, **extra)
    got = run(f"scatter_{reduction}", [x, indices, updates], axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_scatter_out_of_bounds_is_skipped_or_an_error() -> None:
    x = np.zeros((2, 2), np.float32)
    indices = np.array([[5, 1]], np.int64)
    updates = np.ones((1, 2), np.float32)
    got = run("scatter_none", [x, indices, updates], axis=0, skip_out_of_bounds=True)
    np.testing.assert_array_equal(got, [[0, 0], [0, 1]])
    with pytest.raises(ValueError, match="out of range"):
        run("scatter_none", [x, indices, updates], axis=0)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "min", "max"])
def test_scatternd(reduction: str) -> None:
    x = data(4, 3, 2)
    indices = np.array([[[1, 0]], [[3, 2]], [[1, 0]]], np.int64)
    if reduction == "none":
        indices = indices[:2]
    updates = data(indices.shape[0], 1, 2)
    extra = {} if reduction == "none" else {"reduction": reduction}
    (want,) = onnx_node("ScatterND", [x, indices, updates], **extra)
    np.testing.assert_allclose(run(f"scatternd_{reduction}", [x, indices, updates]), want, rtol=1e-6)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_onehot(axis: int) -> None:
    indices = np.array([[0, 3, -1], [1, 5, 2]], np.int64)
    values = np.array([-1.0, 7.0], np.float32)
    depth = np.array(4, np.int64)
    (want,) = onnx_node("OneHot", [indices, depth, values], axis=axis)
    np.testing.assert_array_equal(run("onehot", [indices, values], axis=axis, depth=4), want)
    np.testing.assert_array_equal(run("onehot", [indices, depth, values], axis=axis), want)


@pytest.mark.parametrize("sort", [True, False])
def test_unique(sort: bool) -> None:
    x = np.array([2.0, 1.0, 1.0, 3.0, 4.0, 3.0], np.float32)
    want = onnx_node("Unique", [x], n_outputs=4, sorted=int(sort))
    for got, expected in zip(run("unique", [x], sorted=sort), want):
        np.testing.assert_array_equal(got, expected)


def test_unique_rows() -> None:
    x = np.array([[1, 2], [3, 4], [1, 2]], np.float32)
    want = onnx_node("Unique", [x], n_outputs=4, axis=0, sorted=1)
    for got, expected in zip(run("unique", [x], axis=0), want):
        np.testing.assert_array_equal(got, expected)


def _recurrent_inputs(gates: int, dirs: int, hidden: int = 3, seq: int = 4, batch: int = 2, width: int = 5):
    return [
        data(seq, batch, width),
        data(dirs, gates * hidden, width) / 2,
        data(dirs, gates * hidden, hidden) / 2,
        data(dirs, 2 * gates * hidden) / 2,
        np.array([4, 2], np.int32)[:batch],
        data(dirs, batch, hidden),
    ]


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize(("name", "onnx_name", "gates"), [("rnn", "RNN", 1), ("gru", "GRU", 3), ("lstm", "LSTM", 4)])
def test_recurrent_against_onnxruntime(name: str, onnx_name: str, gates: int, direction: str) -> None:
    dirs = 2 if direction == "bidirectional" else 1
    inputs = _recurrent_inputs(gates, dirs)
    y, y_h = onnx_node(onnx_name, inputs, n_outputs=2, hidden_size=3, direction=direction)[:2]
    op = make_op(name, hidden_size=3, direction=direction)
    states = op.defn.compute(op, inputs, [], lambda m, a: [])
    np.testing.assert_allclose(states, y, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(run("rnn_last_hs_output", [states]), y_h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        run("rnn_var_sl_last_output", [states, inputs[4]], direction=direction), y_h, rtol=1e-4, atol=1e-5
    )


def test_lstm_cell_output_and_gru_linear_before_reset() -> None:
    inputs = _recurrent_inputs(4, 1)
    _, _, y_c = onnx_node("LSTM", inputs, n_outputs=3, hidden_size=3)
    states = run("lstm", inputs, hidden_size=3)
    np.testing.assert_allclose(run("rnn_last_cell_output", [states]), y_c, rtol=1e-4, atol=1e-5)
    inputs = _recurrent_inputs(3, 1)
    (y,) = onnx_node("GRU", inputs, hidden_size=3, linear_before_reset=1)
    np.testing.assert_allclose(run("gru", inputs, hidden_size=3, linear_before_reset=1), y, rtol=1e-4, atol=1e-5)


def test_rnn_sequence_shifts_invert_each_other() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    lengths = np.array([3, 1], np.int64)
    right = run("rnn_var_sl_shift_sequence", [x, lengths])
    np.testing.assert_array_equal(right[:, 1], [[0, 0], [0, 0], [2, 3]])
    back = run("rnn_var_sl_shift_output", [right[:, None], lengths], direction="reverse")
    np.testing.assert_array_equal(back[:, 0, 1], [[2, 3], [0, 0], [0, 0]])


@pytest.mark.parametrize(("group", "stride", "padding"), [(1, (1, 1), (0, 0)), (2, (2, 1), (1, 0, 0, 1))])
def test_convolution_backwards(group: int, stride: tuple, padding: tuple) -> None:
    x = data(1, 4, 3, 5)
    w = data(4, 3, 2, 3)
    pads = list(padding) if len(padding) == 4 else [*padding, *padding]
    (want,) = onnx_node("ConvTranspose", [x, w], group=group, strides=list(stride), pads=pads)
    got = run("convolution_backwards", [x, w], group=group, stride=stride, padding=padding)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_im2col_matches_convolution() -> None:
    x = data(1, 2, 5, 4)
    w = data(3, 2, 3, 2)
    columns = run("im2col", [x, w], padding=(1, 0), stride=(2, 1))
    conv = run("convolution", [x, w], padding=(1, 0), stride=(2, 1))
    np.testing.assert_allclose((columns @ w.reshape(3, -1).T).T.reshape(conv.shape), conv, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
def test_roialign(transform: str) -> None:
    x = data(2, 3, 6, 7)
    rois = np.array([[0.5, 1.0, 4.0, 5.5], [1.0, 0.0, 6.5, 3.0], [-1.0, 2.0, 3.0, 8.0]], np.float32)
    batch = np.array([0, 1, 1], np.int64)
    attributes = {"output_height": 2, "output_width": 3, "sampling_ratio": 2, "spatial_scale": 0.9}
    (want,) = onnx_node("RoiAlign", [x, rois, batch], coordinate_transformation_mode=transform, **attributes)
    got = run("roialign", [x, rois, batch], coordinate_transformation_mode=transform, **attributes)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("center", [False, True])
def test_nonmaxsuppression(center: bool) -> None:
    boxes = RNG.uniform(0, 4, (2, 6, 4)).astype(np.float32)
    if not center:
        boxes[..., 2:] = boxes[..., :2] + RNG.uniform(0.5, 2, (2, 6, 2))
    scores = RNG.permutation(24).reshape(2, 2, 6).astype(np.float32) / 24
    limits = [np.array([3], np.int64), np.array([0.3], np.float32), np.array([0.1], np.float32)]
    (want,) = onnx_node("NonMaxSuppression", [boxes, scores, *limits], center_point_box=int(center))
    got = run("nonmaxsuppression", [boxes, scores, *limits], center_point_box=center)
    assert got.shape == (24, 3)
    np.testing.assert_array_equal(got[: len(want)], want)
    assert not got[len(want) :].any()


@pytest.mark.parametrize(
    ("mode", "transform", "nearest"),
    [
        ("nearest", "asymmetric", "floor"),
        ("nearest", "half_pixel", "round_prefer_floor"),
        ("nearest", "align_corners", "round_prefer_ceil"),
        ("nearest", "tf_half_pixel_for_nn", "ceil"),
        ("linear", "half_pixel", "floor"),
        ("linear", "align_corners", "floor"),
        ("linear", "asymmetric", "floor"),
        ("linear", "pytorch_half_pixel", "floor"),
    ],
)
def test_resize(mode: str, transform: str, nearest: str) -> None:
    x = data(1, 2, 3, 4)
    scales = np.array([1, 1, 2.0, 1.5], np.float32)
    (want,) = onnx_node(
        "Resize",
        [x, np.array([], np.float32), scales],
        mode=mode,
        coordinate_transformation_mode=transform,
        nearest_mode=nearest,
    )
    got = run(
        "resize", [x], scales=tuple(scales), mode=mode, coordinate_transformation_mode=transform, nearest_mode=nearest
    )
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    downsized = run(
        "resize", [x, np.array([1, 2, 2, 3], np.int64)], mode=mode, coordinate_transformation_mode=transform
    )
    assert downsized.shape == (1, 2, 2, 3)


def test_multinomial_int4_fp4_and_introspection() -> None:
    cdf = np.cumsum(np.array([[0.2, 0.3, 0.5]], np.float32), axis=1)
    samples = np.array([[0.1, 0.2, 0.45, 0.99]], np.float32)
    np.testing.assert_array_equal(run("multinomial", [cdf, samples]), [[0, 1, 1, 2]])
    x = np.array([[-8, 7, 3, -1]], np.int8)
    packed = run("pack_int4", [x])
    assert packed.shape == (1, 2) and packed.view(np.uint8)[0, 0] == 0x78
    np.testing.assert_array_equal(run("unpack_int4", [packed]), x)
    floats = np.array([0.5, -6.0, 1.4, 2.6], np.float32)
    np.testing.assert_array_equal(
        run("unpack_fp4", [run("pack_fp4", [floats])], input_types=[DType.fp4x2]), [0.5, -6.0, 1.5, 3.0]
    )
    np.testing.assert_array_equal(run("dimensions_of", [np.zeros((2, 3, 4))], start=1, end=3), [3, 4])
    np.testing.assert_array_equal(run("fill", [np.array([2.0]), np.zeros(3)]), [2.0, 2.0, 2.0])


def test_unknown_prints_its_onnx_name_and_has_no_compute() -> None:
    from mgxir.ir.registry import lookup

    defn = lookup("unknown:Foo")
    assert defn is not None
    op = defn.make(op="Foo")
    assert op.text == "unknown:Foo"
    with pytest.raises(ValueError, match="unknown:Foo"):
        op.defn.compute(op, [], [], lambda m, a: [])
