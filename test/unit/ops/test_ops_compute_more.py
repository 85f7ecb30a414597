"""Reference compute of scatter, onehot, unique, recurrent, vision and resize ops against onnxruntime
one-node models (or numpy written another way where ONNX has no such op); then the elementwise,
tensor, indexing and recurrent ops' edge cases, shape rules and refusals."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mgxir.ir.dtype import DType
from mgxir.ir.operation import ComputeError, ShapeError
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape

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


# -- elementwise ops: quantization, convert, where, clip and the table ops' compiled kernels ----------


def _shape_of(name: str, inputs: list[Shape], **attributes) -> Shape:
    op = make_op(name, **attributes)
    return op.defn.shape(op, inputs, [])


def _kernel_result(name: str, inputs: list[np.ndarray], **attributes) -> np.ndarray:
    """What the interpreter runs: the op's kernel for the inputs' shapes, applied to the inputs."""
    op = make_op(name, **attributes)
    shapes = [Shape.make(DType.from_numpy(x.dtype), x.shape) for x in inputs]
    return op.defn.kernel(op, shapes, [], lambda m, a: [])(*inputs)


def _float_shape(*lens: int, strides: tuple[int, ...] | None = None, dtype: DType = DType.float) -> Shape:
    return Shape.make(dtype, lens, strides)


def test_quantizelinear_rounds_half_to_even_adds_the_zero_point_and_saturates() -> None:
    x = np.array([0.7, 0.5, 1.5, -0.3, 100.0, -100.0, 0.0], np.float32)
    scale = np.full(x.shape, 0.2, np.float32)
    # x / scale in float: 0.7 / 0.2 is the tie 3.5 in float32 (3.4999999 in double) and rounds to 4
    np.testing.assert_array_equal(run("quantizelinear", [x, scale]), [4, 2, 8, 0, 255, 0, 0])
    zero = np.full(x.shape, -3, np.int8)
    got = run("quantizelinear", [x, scale, zero])
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, [1, -1, 5, -5, 127, -128, -3])
    got = run("quantizelinear", [x, scale], out_type=DType.int8)
    np.testing.assert_array_equal(got, [4, 2, 8, -2, 127, -128, 0])


def test_quantizelinear_to_a_float_type_divides_without_rounding_and_saturates() -> None:
    x = np.array([0.75, -1.0, 1e6, np.inf], np.float32)
    scale = np.full(x.shape, 0.5, np.float32)
    got = run("quantizelinear", [x, scale], out_type=DType.fp8e4m3fn)
    np.testing.assert_array_equal(got.astype(np.float32), [1.5, -2.0, 448.0, np.nan])  # e4m3fn has no infinity


def test_quantizelinear_by_a_zero_scale_saturates_without_a_warning() -> None:
    x = np.array([1.0, -1.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = run("quantizelinear", [x, np.zeros(2, np.float32)], out_type=DType.int8)
    np.testing.assert_array_equal(got, [127, -128])


def test_quantizelinear_shape_rule() -> None:
    f = _float_shape(2, 3)
    assert _shape_of("quantizelinear", [f, f]) == _float_shape(2, 3, dtype=DType.uint8)
    assert _shape_of("quantizelinear", [f, f], out_type=DType.int8) == _float_shape(2, 3, dtype=DType.int8)
    zero = _float_shape(2, 3, dtype=DType.int16)
    assert _shape_of("quantizelinear", [f, f, zero], out_type=DType.int8).dtype == DType.int16
    # the result keeps the input's axis order, packed
    transposed = _float_shape(2, 3, strides=(1, 2))
    assert _shape_of("quantizelinear", [transposed, f]).strides == (1, 2)
    dynamic = Shape.dynamic(DType.float, [(1, 4), (3, 3)])
    assert _shape_of("quantizelinear", [dynamic, dynamic]) == Shape.dynamic(DType.uint8, [(1, 4), (3, 3)])
    with pytest.raises(ShapeError, match=r"^quantizelinear: Scales and input must be the same type$"):
        _shape_of("quantizelinear", [f, _float_shape(2, 3, dtype=DType.half)])
    with pytest.raises(ShapeError, match=r"^quantizelinear: input 1 has lens \{3, 2\}"):
        _shape_of("quantizelinear", [f, _float_shape(3, 2)])


def test_dequantizelinear_subtracts_the_zero_point_and_scales_in_the_scale_type() -> None:
    x = np.array([0, 5, -7, 127], np.int8)
    scale = np.full(4, 0.25, np.float32)
    got = run("dequantizelinear", [x, scale])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [0.0, 1.25, -1.75, 31.75])
    zero = np.full(4, 3, np.int8)
    np.testing.assert_array_equal(run("dequantizelinear", [x, scale, zero]), [-0.75, 0.5, -2.5, 31.0])
    half_scale = np.full(4, 0.5, np.float16)
    assert run("dequantizelinear", [x, half_scale, zero]).dtype == np.float16


def test_dequantizelinear_shape_rule() -> None:
    q = _float_shape(2, 3, dtype=DType.int8)
    f = _float_shape(2, 3)
    assert _shape_of("dequantizelinear", [q, f]) == f
    assert _shape_of("dequantizelinear", [q, f, q]) == f
    with pytest.raises(ShapeError, match=r"^dequantizelinear: Zero point and input should be the same type\.$"):
        _shape_of("dequantizelinear", [q, f, _float_shape(2, 3, dtype=DType.uint8)])
    with pytest.raises(ShapeError, match=r"^dequantizelinear: input 1 has lens"):
        _shape_of("dequantizelinear", [q, _float_shape(3, 2)])


@pytest.mark.parametrize(
    ("values", "source", "target", "want"),
    [
        # bool: true for x > 0 only
        ([0.0, -1.0, 0.5, 2.0], np.float32, DType.bool, [False, False, True, True]),
        ([0, -3, 4], np.int32, DType.bool, [False, False, True]),
        # integers saturate to the target's range, exactly (not through double)
        ([300, -300, 5], np.int32, DType.int8, [127, -128, 5]),
        ([-5, 100], np.int8, DType.uint8, [0, 100]),
        ([2**60 + 1, -1], np.int64, DType.uint64, [2**60 + 1, 0]),
        ([2**64 - 1, 2**63 + 5, 7], np.uint64, DType.int64, [2**63 - 1, 2**63 - 1, 7]),
        ([2**63 + 5], np.uint64, DType.uint32, [2**32 - 1]),
        # floats truncate toward zero into integers, saturate, NaN becomes 0
        (
            [127.0, -128.0, 126.9, -127.9, 1e9, -1e9, np.nan],
            np.float32,
            DType.int8,
            [127, -128, 126, -127, 127, -128, 0],
        ),
        ([np.inf, -np.inf, 2.5], np.float64, DType.uint8, [255, 0, 2]),
    ],
)
def test_convert_values(values: list, source: type, target: DType, want: list) -> None:
    x = np.array(values, source)
    for got in (run("convert", [x], target_type=target), _kernel_result("convert", [x], target_type=target)):
        assert got.dtype == target.numpy
        np.testing.assert_array_equal(got, np.array(want, target.numpy))


def test_convert_between_floats_saturates_finite_values_and_keeps_infinities_and_nans() -> None:
    x = np.array([1e6, -1e6, np.inf, -np.inf, np.nan, 1.5], np.float32)
    got = _kernel_result("convert", [x], target_type=DType.half)
    np.testing.assert_array_equal(got, np.array([65504, -65504, np.inf, -np.inf, np.nan, 1.5], np.float16))
    fp8 = run("convert", [x], target_type=DType.fp8e4m3fnuz).astype(np.float32)
    np.testing.assert_array_equal(fp8[[0, 1, 5]], [240, -240, 1.5])


def test_bit_cast_reinterprets_the_bits() -> None:
    x = np.array([1.0, -2.0], np.float32)
    want = np.array([0x3F800000, 0xC0000000], np.uint32)
    np.testing.assert_array_equal(run("bit_cast", [x], target_type=DType.uint32), want)
    np.testing.assert_array_equal(_kernel_result("bit_cast", [x], target_type=DType.uint32), want)
    with pytest.raises(ShapeError, match=r"^bit_cast: float_type and int8_type differ in size$"):
        _shape_of("bit_cast", [_float_shape(2)], target_type=DType.int8)


def test_where_selects_with_a_full_or_a_one_element_condition() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = -a
    cond = np.array([[1, 0, 1], [0, 0, 1]], np.bool_)
    np.testing.assert_array_equal(run("where", [cond, a, b]), np.where(cond, a, b))
    # a one-element condition of any rank picks one input whole, keeping the inputs' rank
    np.testing.assert_array_equal(run("where", [np.zeros((1, 1, 1), np.bool_), a, b]), b)
    np.testing.assert_array_equal(run("where", [np.ones((1,), np.bool_), a, b]), a)


def test_where_shape_rule_checks_dims_and_picks_a_layout() -> None:
    std = _float_shape(2, 3)
    cond = Shape.make(DType.bool, (2, 3))
    one = Shape.make(DType.bool, (1,))
    transposed = _float_shape(2, 3, strides=(1, 2))
    gappy = _float_shape(2, 3, strides=(6, 1))  # not packed, axis order standard
    gappy_transposed = _float_shape(2, 3, strides=(1, 4))  # not packed, axis 1 outermost
    broadcast = _float_shape(2, 3, strides=(3, 0))
    assert _shape_of("where", [one, std, std]) == std
    assert _shape_of("where", [cond, transposed, transposed]) == transposed
    assert _shape_of("where", [cond, transposed, std]) == std
    assert _shape_of("where", [cond, gappy, std]) == std
    assert _shape_of("where", [cond, std, gappy]) == std
    assert _shape_of("where", [cond, broadcast, gappy_transposed]).strides == (1, 2)
    assert _shape_of("where", [cond, gappy_transposed, broadcast]).strides == (1, 2)
    assert _shape_of("where", [cond, gappy_transposed, gappy]) == std
    with pytest.raises(ShapeError, match=r"^where: input 1 has lens \{2, 3\}, input 0 has \{3, 2\}"):
        _shape_of("where", [Shape.make(DType.bool, (3, 2)), std, std])
    with pytest.raises(ShapeError, match=r"^where: input 1 has lens \{3, 2\}, input 0 has \{2, 3\}"):
        _shape_of("where", [one, std, _float_shape(3, 2)])
    dynamic = Shape.dynamic(DType.float, [(1, 4), (3, 3)])
    assert _shape_of("where", [one, dynamic, dynamic]) == dynamic
    pair = Shape.tuple_of([std, std])
    with pytest.raises(ShapeError, match=r"^where: a tuple cannot be an input$"):
        _shape_of("where", [one, pair, pair])
    with pytest.raises(ShapeError, match=r"^where: dynamic input shapes must be the same$"):
        _shape_of("where", [one, dynamic, Shape.dynamic(DType.half, [(1, 4), (3, 3)])])


def test_clip_bounds_each_element_and_keeps_the_input_layout() -> None:
    x = np.array([-3.0, 0.5, 4.0, 2.0], np.float32)
    lo = np.array([-1.0, 1.0, 0.0, -5.0], np.float32)
    hi = np.array([1.0, 2.0, 3.0, -4.0], np.float32)
    np.testing.assert_array_equal(run("clip", [x, lo, hi]), [-1.0, 1.0, 3.0, -4.0])
    bounds = _float_shape(2, 3, strides=(0, 0))
    transposed = _float_shape(2, 3, strides=(1, 2))
    assert _shape_of("clip", [transposed, bounds, bounds]) == transposed
    with pytest.raises(ShapeError, match=r"^clip: input 1 has type half_type, input 0 has float_type$"):
        _shape_of("clip", [transposed, _float_shape(2, 3, dtype=DType.half), bounds])
    with pytest.raises(ShapeError, match=r"^clip: input 2 has lens"):
        _shape_of("clip", [transposed, bounds, _float_shape(3, 2)])


def test_leaky_relu_scales_negative_values_by_alpha() -> None:
    x = np.array([-2.0, -0.5, 0.0, 0.5, 3.0], np.float32)
    want = [-0.5, -0.125, 0.0, 0.5, 3.0]
    np.testing.assert_array_equal(run("leaky_relu", [x], alpha=0.25), want)
    np.testing.assert_array_equal(_kernel_result("leaky_relu", [x], alpha=0.25), want)


def test_mod_follows_migraphx_for_one_element_empty_infinite_and_zero_divisors() -> None:
    np.testing.assert_array_equal(run("mod", [np.array([7], np.int32), np.array([3], np.int32)]), [1])
    empty = np.zeros((0, 2), np.int16)
    got = run("mod", [empty, empty])
    assert got.shape == (0, 2) and got.dtype == np.int16
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ints = run("mod", [np.array([-7, 7, 5], np.int32), np.array([3, -3, 0], np.int32)])
        floats = run("mod", [np.array([np.inf, 1.5, 5.5], np.float32), np.array([2.0, 0.0, -2.0], np.float32)])
    assert ints.dtype == np.int32
    np.testing.assert_array_equal(ints, [2, -2, 0])
    np.testing.assert_array_equal(floats, [np.nan, np.nan, -0.5])


def test_integer_div_truncates_toward_zero_exactly() -> None:
    a = np.array([-7, 7, -6, 2**60 + 1, 0], np.int64)
    b = np.array([2, -2, 3, 1, -2], np.int64)
    for got in (run("div", [a, b]), _kernel_result("div", [a, b])):
        np.testing.assert_array_equal(got, [-3, -3, -2, 2**60 + 1, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(run("div", [a[:2], np.zeros(2, np.int64)]), [0, 0])


def test_integer_bitwise_and_and_add_stay_exact() -> None:
    a = np.array([2**40 + 1, 12], np.int64)
    b = np.array([2**40 + 3, 10], np.int64)
    np.testing.assert_array_equal(run("bitwise_and", [a, b]), [2**40 + 1, 8])
    np.testing.assert_array_equal(_kernel_result("add", [a, b]), [2**41 + 4, 22])


@pytest.mark.parametrize("dtype", [DType.bf16, DType.fp8e5m2, DType.fp8e4m3fnuz])
def test_low_precision_floats_compute_in_float32_and_round_once(dtype: DType) -> None:
    x = np.array([0.0058898926, 0.21875, 1.0, 1.5, -0.875], np.float32).astype(dtype.numpy)
    want = (1 / (1 + np.exp(-x.astype(np.float32)))).astype(dtype.numpy)
    for got in (run("sigmoid", [x]), _kernel_result("sigmoid", [x])):
        assert got.dtype == dtype.numpy
        np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
    # exp(6.84375) rounds to a different bf16 from float32 than from double
    e = np.array([6.84375], np.float32).astype(dtype.numpy)
    np.testing.assert_array_equal(
        run("exp", [e]).astype(np.float32), np.exp(e.astype(np.float32)).astype(dtype.numpy).astype(np.float32)
    )


def test_kernels_keep_migraphx_result_types() -> None:
    x = np.array([0.0, 2.0, -1.0], np.float32)
    got = _kernel_result("not", [x])
    assert got.dtype == np.float32  # the unary rule keeps the input type
    np.testing.assert_array_equal(got, [1.0, 0.0, 0.0])
    nan = np.array([np.nan, 1.0], np.float32)
    assert _shape_of("isnan", [_float_shape(2)]) == Shape.make(DType.bool, (2,))
    np.testing.assert_array_equal(_kernel_result("isnan", [nan]), [True, False])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(_kernel_result("atanh", [np.array([0.0], np.float32)]), [0.0])


def test_binary_shape_rule_names_the_op_and_prefers_the_standard_layout() -> None:
    std = _float_shape(2, 3)
    transposed = _float_shape(2, 3, strides=(1, 2))
    assert _shape_of("add", [std, transposed]) == std
    assert _shape_of("add", [transposed, std]) == std
    with pytest.raises(ShapeError, match=r"^mul: input 1 has type half_type, input 0 has float_type$"):
        _shape_of("mul", [std, _float_shape(2, 3, dtype=DType.half)])
    with pytest.raises(ShapeError, match=r"^sub: input 1 has lens"):
        _shape_of("sub", [std, _float_shape(3, 2)])


# -- tensor ops: step, pad, topk, prefix scans, quant_dot, nonzero, as_shape, scalar ------------------


def test_step_takes_every_nth_element_as_a_strided_view() -> None:
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    got = run("step", [x], axes=(0, -1), steps=(2, 4))
    np.testing.assert_array_equal(got, x[::2, ::4])
    shape = _shape_of("step", [_float_shape(5, 6)], axes=(-2, 1), steps=(2, 4))
    assert shape == _float_shape(3, 2, strides=(12, 4))
    assert _shape_of("step", [_float_shape(6, 7)], axes=(1,), steps=(3,)) == _float_shape(6, 3, strides=(7, 3))
    with pytest.raises(ShapeError, match=r"^step: axes and steps must have the same length$"):
        _shape_of("step", [_float_shape(5, 6)], axes=(0,), steps=(2, 2))
    with pytest.raises(ShapeError, match=r"^step: axis 2 is out of range for rank 2$"):
        _shape_of("step", [_float_shape(5, 6)], axes=(2,), steps=(2,))
    with pytest.raises(ShapeError, match=r"^step: axis -3 is out of range for rank 2$"):
        run("step", [x], axes=(-3,), steps=(2,))
    with pytest.raises(ShapeError, match=r"^step: dynamic input shapes"):
        _shape_of("step", [Shape.dynamic(DType.float, [(1, 4)])], axes=(0,), steps=(2,))


@pytest.mark.parametrize(
    ("mode", "pads", "numpy_mode"),
    [(0, (1, 0, 0, 2), "constant"), (1, (0, 2, 1, 1), "reflect"), (2, (2, 1, 1, 0), "edge")],
)
def test_pad_modes_match_numpy(mode: int, pads: tuple, numpy_mode: str) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    widths = [(pads[0], pads[2]), (pads[1], pads[3])]
    extra = {"constant_values": 2.5} if numpy_mode == "constant" else {}
    got = run("pad", [x], mode=mode, pads=pads, value=2.5)
    np.testing.assert_array_equal(got, np.pad(x, widths, mode=numpy_mode, **extra))


def test_pad_negative_pads_crop_either_end() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(run("pad", [x], pads=(-1, 1, 0, -2)), np.pad(x[1:, :2], [(0, 0), (1, 0)]))
    np.testing.assert_array_equal(run("pad", [x], pads=(0, -1, -2, 0)), x[:1, 1:])
    assert _shape_of("pad", [_float_shape(3, 4)], pads=(-1, 1, -2, -5)) == _float_shape(0, 0)
    with pytest.raises(ShapeError, match=r"^pad: dimension 1 would have negative size -2$"):
        _shape_of("pad", [_float_shape(3, 4)], pads=(0, -3, 0, -3))
    with pytest.raises(ShapeError, match=r"^pad: pads \{1, 1\} need 4 values for rank 2$"):
        _shape_of("pad", [_float_shape(3, 4)], pads=(1, 1))
    dynamic = Shape.dynamic(DType.float, [(1, 4), (3, 3)])
    assert _shape_of("pad", [dynamic], pads=(-1, 0, 0, 1)) == Shape.dynamic(DType.float, [(0, 3), (4, 4)])
    with pytest.raises(ShapeError, match=r"^pad: dimension 0 would have negative size -1$"):
        _shape_of("pad", [dynamic], pads=(-2, 0, 0, 0))


def test_topk_is_stable_along_any_axis() -> None:
    x = np.tile(np.array([3, 1, 3, 2, 1, 3, 2, 2], np.float32), 5)[:, None] * np.ones((1, 2), np.float32)
    for largest in (True, False):
        values, indices = run("topk", [x], k=12, axis=0, largest=largest)
        order = np.argsort(-x[:, 0] if largest else x[:, 0], kind="stable")[:12]
        np.testing.assert_array_equal(indices[:, 0], order)
        np.testing.assert_array_equal(values[:, 1], x[order, 1])
    assert _shape_of("topk", [_float_shape(3, 4)], k=4, axis=-1) == Shape.tuple_of(
        [_float_shape(3, 4), Shape.make(DType.int64, (3, 4))]
    )
    with pytest.raises(ShapeError, match=r"^topk: k=5 is larger than dimension 1 \(4\)$"):
        _shape_of("topk", [_float_shape(3, 4)], k=5, axis=1)
    with pytest.raises(ShapeError, match=r"^topk: axis 2 is out of range for rank 2$"):
        _shape_of("topk", [_float_shape(3, 4)], axis=2)
    with pytest.raises(ShapeError, match=r"^topk: axis -3 is out of range for rank 2$"):
        run("topk", [x], axis=-3)
    with pytest.raises(ShapeError, match=r"^topk: dynamic input shapes"):
        _shape_of("topk", [Shape.dynamic(DType.float, [(1, 4)])])


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_prefix_scan_sum_keeps_the_type(exclusive: bool, reverse: bool) -> None:
    x = np.array([[100, 27, -3], [5, 1, 2]], np.int8)
    data = x[:, ::-1] if reverse else x
    want = np.cumsum(data, axis=1, dtype=np.int8)
    if exclusive:
        want = np.concatenate([np.zeros((2, 1), np.int8), want[:, :-1]], axis=1)
    if reverse:
        want = want[:, ::-1]
    got = run("prefix_scan_sum", [x], axis=-1, exclusive=exclusive, reverse=reverse)
    np.testing.assert_array_equal(got, want)
    column = np.array([[4], [5]], np.float32)
    np.testing.assert_array_equal(
        run("prefix_scan_sum", [column], axis=1, exclusive=exclusive), column * (not exclusive)
    )
    with pytest.raises(ShapeError, match=r"^prefix_scan_sum: axis 2 is out of range for rank 2$"):
        _shape_of("prefix_scan_sum", [_float_shape(2, 3)], axis=2)
    with pytest.raises(ShapeError, match=r"^prefix_scan_sum: axis 2 is out of range for rank 2$"):
        run("prefix_scan_sum", [x], axis=2)


def test_quant_dot_shape_rule_refusals_name_the_op() -> None:
    q = Shape.make(DType.int8, (2, 3))
    with pytest.raises(ShapeError, match=r"^quant_dot: input 1 has type uint8_type, input 0 has int8_type$"):
        _shape_of("quant_dot", [q, Shape.make(DType.uint8, (3, 2))])
    dynamic = Shape.dynamic(DType.int8, [(1, 4), (3, 3)])
    for a, b in ((dynamic, q), (q, dynamic)):
        with pytest.raises(ShapeError, match=r"^quant_dot: dynamic input shapes"):
            _shape_of("quant_dot", [a, b])
    with pytest.raises(ShapeError, match=r"^quant_dot: cannot multiply \{3\} by \{3\}$"):
        _shape_of("quant_dot", [Shape.make(DType.int8, (3,)), Shape.make(DType.int8, (3,))])


def test_nonzero_refuses_dynamic_input() -> None:
    with pytest.raises(ShapeError, match=r"^nonzero: dynamic input shapes"):
        _shape_of("nonzero", [Shape.dynamic(DType.float, [(1, 4)])])


def test_view_ops_refusals_name_the_op() -> None:
    with pytest.raises(ShapeError, match=r"^as_shape: needs a shape attribute$"):
        _shape_of("as_shape", [_float_shape(2)])
    with pytest.raises(ShapeError, match=r"^as_shape: 16 bytes do not fit the input's 8$"):
        _shape_of("as_shape", [_float_shape(2)], shape=Shape.make(DType.double, (2,)))
    with pytest.raises(ShapeError, match=r"^scalar: the input has 2 elements, not 1$"):
        _shape_of("scalar", [_float_shape(2)], scalar_bcst_dims=(2,))
    with pytest.raises(ShapeError, match=r"^reverse: axis 2 is out of range for rank 2$"):
        _shape_of("reverse", [_float_shape(2, 3)], axes=(2,))
    with pytest.raises(ShapeError, match=r"^reverse: axis -3 is out of range for rank 2$"):
        run("reverse", [data(2, 3)], axes=(-3,))
    with pytest.raises(ShapeError, match=r"^layout: \{0, 0\} is not a permutation of 2 axes$"):
        _shape_of("layout", [_float_shape(2, 3)], permutation=(0, 0))
    # a one-element input of any rank broadcasts to the dims
    np.testing.assert_array_equal(run("scalar", [np.full((1, 1), 4.0, np.float32)], scalar_bcst_dims=(3,)), [4, 4, 4])


# -- indexing ops: scatter, scatternd, onehot, unique ----------------------------------------------


def test_scatter_elements_leaves_its_input_alone_and_names_bad_indices() -> None:
    x = np.zeros((2, 3), np.float32)
    updates = np.ones((2, 3), np.float32)
    got = run("scatter_add", [x, np.array([[1, 0, 1], [1, 1, 0]], np.int64), updates], axis=0)
    np.testing.assert_array_equal(got, [[0, 1, 1], [2, 1, 1]])
    assert not x.any()
    at_size = np.array([[0, 2, 1]], np.int64)  # one past the end: skipped when asked, else an error
    skipped = run("scatter_none", [x, at_size, updates[:1]], axis=0, skip_out_of_bounds=True)
    np.testing.assert_array_equal(skipped, [[1, 0, 0], [0, 0, 1]])
    with pytest.raises(ComputeError, match=r"^scatter_none: index 2 is out of range for dimension 0 of size 2$"):
        run("scatter_none", [x, at_size, updates[:1]], axis=0)
    with pytest.raises(ComputeError, match=r"^scatter_mul: data, indices and updates must have the same rank$"):
        run("scatter_mul", [x, np.array([0, 1], np.int64), np.ones(2, np.float32)], axis=0)
    with pytest.raises(ComputeError, match=r"^scatter_max: updates \{1, 3\} are smaller than indices \{2, 3\}$"):
        run("scatter_max", [x, np.zeros((2, 3), np.int64), updates[:1]], axis=0)
    with pytest.raises(ShapeError, match=r"^scatter_min: axis 2 is out of range for rank 2$"):
        _shape_of("scatter_min", [_float_shape(2, 3), Shape.make(DType.int64, (2, 3)), _float_shape(2, 3)], axis=2)
    with pytest.raises(ShapeError, match=r"^scatter_min: axis -3 is out of range for rank 2$"):
        run("scatter_min", [x, at_size, updates[:1]], axis=-3)


def test_scatternd_writes_at_offset_zero_into_a_copy_of_any_layout() -> None:
    data_t = np.arange(6, dtype=np.float32).reshape(3, 2).T  # a transposed (not C-ordered) input
    got = run("scatternd_none", [data_t, np.array([[0, 0], [1, 2]], np.int64), np.array([-1, -2], np.float32)])
    np.testing.assert_array_equal(got, [[-1, 2, 4], [1, 3, -2]])
    np.testing.assert_array_equal(data_t, np.arange(6, dtype=np.float32).reshape(3, 2).T)
    plain = np.zeros((2, 3), np.float32)
    np.testing.assert_array_equal(
        run("scatternd_mul", [plain, np.array([[1, 1]], np.int64), np.ones(1, np.float32)]), plain
    )
    assert not plain.any()
    written = run("scatternd_max", [plain, np.array([[1, 1]], np.int64), np.ones(1, np.float32)])
    assert written[1, 1] == 1 and not plain.any()
    for index in ([[2, 0]], [[-1, 0]]):
        with pytest.raises(ComputeError, match=r"^scatternd_add: index \{-?\d, 0\} addresses offset -?\d, outside"):
            run("scatternd_add", [data_t, np.array(index, np.int64), np.ones(1, np.float32)])


def test_scatternd_shape_rule() -> None:
    data = _float_shape(2, 3)
    indices = Shape.make(DType.int64, (4, 1))
    updates = _float_shape(4, 3)
    assert _shape_of("scatternd_none", [_float_shape(2, 3, strides=(0, 1)), indices, updates]) == data
    dynamic = Shape.dynamic(DType.float, [(1, 4), (3, 3)])
    for i in range(3):
        inputs = [data, indices, updates]
        inputs[i] = dynamic if i != 1 else Shape.dynamic(DType.int64, [(1, 4), (1, 1)])
        with pytest.raises(ShapeError, match=r"^scatternd_none: dynamic input shapes"):
            _shape_of("scatternd_none", inputs)
    with pytest.raises(ShapeError, match=r"^scatternd_mul: the last dimension of indices \(0\) must be in 1\.\.2$"):
        _shape_of("scatternd_mul", [data, Shape.make(DType.int64, ()), updates])


def test_onehot_shape_rule() -> None:
    indices = Shape.make(DType.int64, (2, 3))
    values = _float_shape(2)
    assert _shape_of("onehot", [indices, values], depth=0, axis=1) == _float_shape(2, 0, 3)
    assert _shape_of("onehot", [indices, Shape.make(DType.int64, (1,)), values], axis=-1) == Shape.dynamic(
        DType.float, [(2, 2), (3, 3), (0, 2**64 - 1)]
    )
    dynamic = Shape.dynamic(DType.int64, [(1, 4), (3, 3)])
    assert _shape_of("onehot", [dynamic, Shape.make(DType.int64, (1,)), values], axis=0) == Shape.dynamic(
        DType.float, [(0, 2**64 - 1), (1, 4), (3, 3)]
    )
    assert _shape_of("onehot", [dynamic, values], depth=5, axis=1) == Shape.dynamic(
        DType.float, [(1, 4), (5, 5), (3, 3)]
    )
    with pytest.raises(ShapeError, match=r"^onehot: axis 3 is out of range for rank 3$"):
        _shape_of("onehot", [indices, values], depth=4, axis=3)
    with pytest.raises(ShapeError, match=r"^onehot: without a depth attribute it takes \(indices, depth, values\)$"):
        _shape_of("onehot", [indices, values])
    with pytest.raises(ShapeError, match=r"^onehot: with a depth attribute it takes \(indices, values\)$"):
        _shape_of("onehot", [indices, values, values], depth=4)
    with pytest.raises(ShapeError, match=r"^onehot: depth -1 is negative$"):
        _shape_of("onehot", [indices, values], depth=-1)


def test_onehot_compute_of_depth_zero_and_refusals() -> None:
    indices = np.array([[0, 1]], np.int64)
    values = np.array([0.0, 1.0], np.float32)
    assert run("onehot", [indices, values], depth=0).shape == (1, 2, 0)
    with pytest.raises(ComputeError, match=r"^onehot: depth -2 is negative$"):
        run("onehot", [indices, np.array([-2], np.int64), values])
    with pytest.raises(ShapeError, match=r"^onehot: axis 3 is out of range for rank 3$"):
        run("onehot", [indices, values], depth=2, axis=3)


def test_unique_of_a_matrix_counts_elements_or_rows() -> None:
    x = np.array([[3, 1, 3], [1, 3, 1]], np.float32)
    values, first, inverse, counts = run("unique", [x])
    np.testing.assert_array_equal(values, [1, 3])
    np.testing.assert_array_equal(first, [1, 0])
    np.testing.assert_array_equal(inverse, [1, 0, 1, 0, 1, 0])
    np.testing.assert_array_equal(counts, [3, 3])
    cube = np.array([[[1, 2]], [[0, 0]], [[1, 2]]], np.float32)
    values, _, inverse, counts = run("unique", [cube], axis=0, sorted=False)
    np.testing.assert_array_equal(values, [[[1, 2]], [[0, 0]]])
    np.testing.assert_array_equal(inverse, [0, 1, 0])
    np.testing.assert_array_equal(counts, [2, 1])


def test_unique_shape_rule() -> None:
    x = _float_shape(2, 3)
    index = Shape.dynamic(DType.int64, [(1, 6)])
    assert _shape_of("unique", [x]) == Shape.tuple_of([Shape.dynamic(DType.float, [(1, 6)]), index, index, index])
    rows = Shape.dynamic(DType.int64, [(1, 2)])
    assert _shape_of("unique", [x], axis=0) == Shape.tuple_of(
        [Shape.dynamic(DType.float, [(1, 2), (3, 3)]), rows, rows, rows]
    )
    with pytest.raises(ShapeError, match=r"^unique: only axis 0 or none is supported, got 1$"):
        _shape_of("unique", [x], axis=1)
    with pytest.raises(ShapeError, match=r"^unique: axis 2 is out of range for rank 2$"):
        _shape_of("unique", [x], axis=2)
    with pytest.raises(ShapeError, match=r"^unique: dynamic input shapes"):
        _shape_of("unique", [Shape.dynamic(DType.float, [(1, 4)])])


# -- recurrent ops ---------------------------------------------------------------------------------


def test_lstm_with_initial_cell_peepholes_clip_and_coupled_gates_matches_onnxruntime() -> None:
    inputs = _recurrent_inputs(4, 1)
    inputs[0] = inputs[0] * 3
    cell = data(1, 2, 3)
    peephole = data(1, 9)
    full = [*inputs, cell, peephole]
    for extra in ({}, {"clip": 0.7}, {"input_forget": 1}):
        y, _, y_c = onnx_node("LSTM", full, n_outputs=3, hidden_size=3, **extra)
        states = run("lstm", full, hidden_size=3, **extra)
        np.testing.assert_allclose(states, y, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(run("rnn_last_cell_output", [states]), y_c, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_rnn_activation_functions_clip_and_defaults(direction: str) -> None:
    dirs = 2 if direction == "bidirectional" else 1
    inputs = _recurrent_inputs(1, dirs)
    inputs[0] = inputs[0] * 3
    (want,) = onnx_node(
        "RNN",
        inputs,
        hidden_size=3,
        direction=direction,
        activations=["LeakyRelu"] * dirs,
        activation_alpha=[0.3] * dirs,
    )
    leaky = make_op("leaky_relu", alpha=0.3)
    np.testing.assert_allclose(
        run("rnn", inputs, hidden_size=3, direction=direction, actv_func=(leaky,)), want, rtol=1e-4, atol=1e-5
    )
    inputs = _recurrent_inputs(3, dirs)
    (want,) = onnx_node("GRU", inputs, hidden_size=3, direction=direction, clip=0.4)
    got = run("gru", inputs, hidden_size=3, direction=direction, clip=0.4, actv_func=())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_recurrent_result_takes_the_type_of_x() -> None:
    inputs = _recurrent_inputs(1, 1)
    inputs[0] = inputs[0].astype(np.float16)
    assert run("rnn", inputs, hidden_size=3).dtype == np.float16


def test_recurrent_shape_rule() -> None:
    x = _float_shape(4, 2, 5)
    w = _float_shape(2, 9, 5)
    r = _float_shape(2, 9, 3)
    assert _shape_of("gru", [x, w, r], hidden_size=3, direction="bidirectional") == _float_shape(4, 2, 2, 3)
    dynamic = Shape.dynamic(DType.float, [(1, 4), (2, 2), (5, 5)])
    for i in range(3):
        inputs = [x, w, r]
        inputs[i] = dynamic
        with pytest.raises(ShapeError, match=r"^gru: dynamic input shapes"):
            _shape_of("gru", inputs, hidden_size=3, direction="bidirectional")
    with pytest.raises(ShapeError, match=r"^rnn: X must have rank 3 \{seq, batch, input\}, got \{4, 2\}$"):
        _shape_of("rnn", [_float_shape(4, 2), w, r], hidden_size=3)
    with pytest.raises(ShapeError, match=r"^gru: W is \{2, 9, 5\}, expected \{1, 9, 5\}$"):
        _shape_of("gru", [x, w, r], hidden_size=3)
    with pytest.raises(ShapeError, match=r"^lstm: R is \{2, 9, 3\}, expected \{2, 12, 3\}$"):
        _shape_of("lstm", [x, _float_shape(2, 12, 5), r], hidden_size=3, direction="bidirectional")


def test_rnn_state_readers_refuse_what_is_not_an_rnn_result() -> None:
    with pytest.raises(ComputeError, match=r"^rnn_last_cell_output: its input must be the result of an rnn, gru"):
        run("rnn_last_cell_output", [data(4, 1, 2, 3)])
    with pytest.raises(ShapeError, match=r"^rnn_last_hs_output: expects an rnn result \{seq, dirs, batch, hidden\}"):
        _shape_of("rnn_last_hs_output", [_float_shape(4, 2, 3)])
    dynamic = Shape.dynamic(DType.float, [(1, 4), (1, 1), (2, 2), (3, 3)])
    for name in ("rnn_last_hs_output", "rnn_var_sl_last_output"):
        with pytest.raises(ShapeError, match=rf"^{name}: dynamic input shapes"):
            _shape_of(name, [dynamic, Shape.make(DType.int64, (2,))])


def test_rnn_var_sl_ops_take_lengths_of_any_shape() -> None:
    states = np.arange(24, dtype=np.float32).reshape(3, 2, 2, 2)
    lengths = np.array([[3], [1]], np.int64)
    got = run("rnn_var_sl_last_output", [states, lengths], direction="bidirectional")
    np.testing.assert_array_equal(got, [[states[2, 0, 0], states[0, 0, 1]], [states[0, 1, 0], states[0, 1, 1]]])
    # forward states stay where they are; reverse (and a bidirectional op's second direction) move to the start
    forward = run("rnn_var_sl_shift_output", [states, lengths], direction="forward")
    np.testing.assert_array_equal(forward[:, :, 0], states[:, :, 0])
    np.testing.assert_array_equal(forward[:, 0, 1], [states[0, 0, 1], [0, 0], [0, 0]])
    both = run("rnn_var_sl_shift_output", [states, lengths], direction="bidirectional")
    np.testing.assert_array_equal(both[:, 0], forward[:, 0])
    np.testing.assert_array_equal(both[:, 1, 1], [states[2, 1, 1], [0, 0], [0, 0]])
    shifted = run("rnn_var_sl_shift_sequence", [states[:, 0], lengths])
    np.testing.assert_array_equal(shifted[:, 1], [[0, 0], [0, 0], states[0, 0, 1]])
