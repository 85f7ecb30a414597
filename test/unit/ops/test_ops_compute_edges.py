"""Reference compute of the pooling and resize forms the other compute tests leave out, against
onnxruntime: Lp pooling, average pooling that counts the padding, global pooling (dyn_global), and
resize whose sizes or scales come as an input."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
from test_ops_compute import data, onnx_node, run

from mgxir.ir.dtype import DType
from mgxir.ir.operation import ComputeError
from mgxir.ir.registry import make_op


def test_lp_pooling_matches_onnxruntime() -> None:
    x = data(1, 2, 6, 5)
    (want,) = onnx_node("LpPool", [x], kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 0], p=2)
    got = run("pooling", [x], mode=2, lengths=(3, 2), stride=(2, 1), padding=(1, 0), lp_order=2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("ceil", [False, True])
def test_average_pooling_counting_the_padding_matches_onnxruntime(ceil: bool) -> None:
    x = data(1, 3, 6, 6)
    (want,) = onnx_node(
        "AveragePool",
        [x],
        kernel_shape=[3, 3],
        strides=[2, 2],
        pads=[1, 1, 1, 1],
        count_include_pad=1,
        ceil_mode=int(ceil),
    )
    got = run(
        "pooling", [x], mode=0, lengths=(3, 3), stride=(2, 2), padding=(1, 1), count_include_pad=True, ceil_mode=ceil
    )
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("mode", "onnx_op"), [(0, "GlobalAveragePool"), (1, "GlobalMaxPool")])
def test_global_pooling_matches_onnxruntime(mode: int, onnx_op: str) -> None:
    x = data(2, 3, 4, 5)
    (want,) = onnx_node(onnx_op, [x])
    got = run("pooling", [x], mode=mode, dyn_global=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_resize_sizes_and_scales_inputs_match_onnxruntime() -> None:
    x = data(1, 1, 3, 4)
    sizes = np.array([1, 1, 5, 6], np.int64)
    want = run("resize", [x], sizes=(1, 1, 5, 6), mode="nearest")  # the attribute form, checked against onnxruntime
    np.testing.assert_array_equal(run("resize", [x, sizes], mode="nearest"), want)
    scales = np.array([1, 1, 2.0, 0.5], np.float32)
    (want,) = onnx_node("Resize", [x, np.array([], np.float32), scales], mode="linear")
    np.testing.assert_allclose(run("resize", [x, scales], mode="linear"), want, rtol=1e-5, atol=1e-6)


def test_broadcast_with_dims_broadcasts_to_the_runtime_dims() -> None:
    x = data(3, 1)
    got = run("broadcast_with_dims", [x, np.array([2, 1, 4], np.int64)])
    np.testing.assert_array_equal(got, np.broadcast_to(x, (2, 3, 4)))


def test_dynamic_range_without_a_finite_count_is_refused() -> None:
    op = make_op("dynamic_range")
    start, limit, delta = (np.array(v, np.float32) for v in (0.0, np.inf, 1.0))
    with pytest.raises(ComputeError, match=r"^dynamic_range: computed element count is not finite$"):
        op.defn.compute(op, [start, limit, delta], [], None)


GATHERND_CASES = [
    # (data lens, indices, batch_dims): negative indices count from the end, as ONNX's GatherND
    ((2, 3, 4), [[[-1, 0], [1, -3]], [[0, 2], [-2, 1]]], 0),
    ((2, 3), [1, -1], 0),
    ((2, 3, 4), [[[-1], [0]], [[2], [-3]]], 1),
    ((2, 3, 4), [[[2, -1]], [[0, 3]]], 1),
]


@pytest.mark.parametrize(("lens", "indices", "batch_dims"), GATHERND_CASES)
def test_gathernd_matches_onnxruntime(lens: tuple[int, ...], indices: list, batch_dims: int) -> None:
    x = data(*lens)
    index = np.array(indices, np.int64)
    (want,) = onnx_node("GatherND", [x, index], batch_dims=batch_dims)
    got = run("gathernd", [x, index], batch_dims=batch_dims)
    np.testing.assert_array_equal(got, want.reshape(want.shape or (1,)))


def test_cubic_resize_matches_onnxruntime() -> None:
    x = data(1, 1, 4, 5)
    scales = np.array([1, 1, 1.5, 0.6], np.float32)
    (want,) = onnx_node("Resize", [x, np.array([], np.float32), scales], mode="cubic")
    got = run("resize", [x], scales=(1.0, 1.0, 1.5, 0.6), mode="cubic")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_resize_keeps_a_scale_whose_length_rounds_back_to_the_input_length() -> None:
    # 3 x 1.2 floors to 3, yet MIGraphX's resize samples at (i + 0.5) / 1.2 - 0.5 (onnxruntime
    # copies the input instead): floor gives source indices 0, 0, 1
    x = data(1, 3)
    np.testing.assert_array_equal(run("resize", [x], scales=(1.0, 1.2), mode="nearest"), x[:, [0, 0, 1]])


@pytest.mark.parametrize("mode", ["nearest", "cubic"])
def test_resize_of_an_empty_axis(mode: str) -> None:
    x = np.zeros((2, 0), np.float32)
    assert run("resize", [x], sizes=(4, 0), mode=mode).shape == (4, 0)
    assert run("resize", [x, np.array([4, 0], np.int64)], mode=mode).shape == (4, 0)
    # cubic taps of an empty axis give zeros
    np.testing.assert_array_equal(run("resize", [x], sizes=(2, 3), mode="cubic"), np.zeros((2, 3), np.float32))


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"sizes": (2, 3), "mode": "area"}, "resize: mode 'area' has no reference implementation"),
        (
            {"sizes": (2, 6), "coordinate_transformation_mode": "crop"},
            "resize: unknown coordinate_transformation_mode 'crop'",
        ),
        ({"sizes": (2, 6), "nearest_mode": "up"}, "resize: unknown nearest_mode 'up'"),
    ],
)
def test_resize_compute_refuses_what_it_has_no_reference_for(attributes: dict, message: str) -> None:
    op = make_op("resize", **attributes)
    with pytest.raises(ComputeError) as raised:
        op.defn.compute(op, [data(2, 3)], [], None)
    assert str(raised.value) == message


def test_reductions_accumulate_wide_and_round_once() -> None:
    # float and bfloat16 sums that a narrow accumulator would lose: 2**24 + 4 x 1 in float
    single = np.array([2**24, 1, 1, 1, 1], np.float32)
    assert run("reduce_sum", [single], axes=(0,))[0] == 2**24 + 4
    bf16 = DType.bf16.numpy
    wide = np.array([256, 1, 1, 1, 1], bf16)
    assert float(run("reduce_sum", [wide], axes=(0,))[0]) == 260
    # integers are summed exactly, not through float64
    big = np.array([2**53 + 1, 2], np.int64)
    assert run("reduce_sum", [big], axes=(0,))[0] == 2**53 + 3


def test_reduction_axes_as_an_input() -> None:
    x = data(2, 3, 4)
    got = run("reduce_sum", [x, np.array([0, -1], np.int64)])
    np.testing.assert_allclose(got, x.astype(np.float64).sum(axis=(0, 2), keepdims=True), rtol=1e-6)
    op = make_op("reduce_max")
    with pytest.raises(Exception, match=r"^reduce_max: axis 3 is out of range for rank 3$"):
        op.defn.compute(op, [x, np.array([3], np.int64)], [], None)


def test_softmax_is_stable_for_large_and_far_apart_rows() -> None:
    x = np.array([[800.0, 801.0], [-1000.0, -1001.0]], np.float32)
    e = np.exp(np.array([[-1.0, 0.0], [0.0, -1.0]]))
    want = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(run("softmax", [x], axis=1), want, rtol=1e-6)
    np.testing.assert_allclose(run("logsoftmax", [x], axis=1), np.log(want), rtol=1e-6)


def test_argmax_compute_names_the_operator_in_an_axis_error() -> None:
    op = make_op("argmax", axis=2)
    with pytest.raises(Exception, match=r"^argmax: axis 2 is out of range for rank 2$"):
        op.defn.compute(op, [data(2, 3)], [], None)


def test_ceil_mode_max_pooling_with_uneven_padding_matches_onnxruntime() -> None:
    x = data(1, 2, 6, 7)
    (want,) = onnx_node("MaxPool", [x], kernel_shape=[3, 3], strides=[3, 3], pads=[1, 0, 1, 2], ceil_mode=1)
    got = run("pooling", [x], mode=1, lengths=(3, 3), stride=(3, 3), padding=(1, 0, 1, 2), ceil_mode=True)
    np.testing.assert_array_equal(got, want)


def test_average_pooling_counts_only_the_input_under_uneven_padding() -> None:
    # the corner window holds one element of the input; the padding differs per axis
    x = data(1, 2, 4, 5)
    (want,) = onnx_node("AveragePool", [x], kernel_shape=[2, 2], pads=[1, 1, 1, 0])
    got = run("pooling", [x], mode=0, lengths=(2, 2), stride=(1, 1), padding=(1, 1, 1, 0))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_cubic_resize_of_rank_three_agrees_with_rank_four() -> None:
    x = data(1, 1, 4, 5)
    (want,) = onnx_node("Resize", [x, np.array([], np.float32), np.array([1, 1, 1.5, 0.6], np.float32)], mode="cubic")
    got = run("resize", [x[0]], scales=(1.0, 1.5, 0.6), mode="cubic")
    np.testing.assert_allclose(got, want[0], rtol=1e-5, atol=1e-5)


def test_cubic_resize_from_an_empty_leading_axis_gives_zeros() -> None:
    got = run("resize", [np.zeros((0, 2), np.float32)], sizes=(3, 2), mode="cubic")
    np.testing.assert_array_equal(got, np.zeros((3, 2), np.float32))


def test_broadcast_computes_a_read_only_view_shaped_by_the_second_input() -> None:
    x = data(3)
    got = run("broadcast", [x, data(2, 3, 4)], axis=1)
    np.testing.assert_array_equal(got, np.broadcast_to(x[None, :, None], (2, 3, 4)))
    assert not got.flags.writeable and np.shares_memory(got, x)
    got = run("broadcast", [x], axis=0, out_lens=(3, 2))
    np.testing.assert_array_equal(got, np.broadcast_to(x[:, None], (3, 2)))


def test_multibroadcast_of_several_inputs_takes_their_common_shape() -> None:
    x = data(3, 1)
    np.testing.assert_array_equal(run("multibroadcast", [x, data(2, 1, 4)]), np.broadcast_to(x, (2, 3, 4)))


def test_contiguous_gives_a_row_major_copy() -> None:
    x = data(3, 4)
    for given in (x, x.T):
        got = run("contiguous", [given])
        np.testing.assert_array_equal(got, given)
        assert got.flags.c_contiguous and not np.shares_memory(got, given)


def test_reshape_squeeze_unsqueeze_and_flatten_compute() -> None:
    x = data(2, 1, 3)
    np.testing.assert_array_equal(run("reshape", [x], dims=(0, 3, 1)), x.reshape(2, 3, 1))
    np.testing.assert_array_equal(run("reshape", [x, data(3, 2)]), x.reshape(3, 2))
    np.testing.assert_array_equal(run("squeeze", [x]), x.reshape(2, 3))
    np.testing.assert_array_equal(run("squeeze", [x], axes=(-2,)), x.reshape(2, 3))
    ones = data(2, 1, 3, 1)
    np.testing.assert_array_equal(run("squeeze", [ones], axes=(1,)), ones.reshape(2, 3, 1))
    one = data(1, 1)
    np.testing.assert_array_equal(run("squeeze", [one]), one.reshape(1))
    op = make_op("squeeze", axes=(3,))
    with pytest.raises(Exception, match=r"^squeeze: axis 3 is out of range for rank 3$"):
        op.defn.compute(op, [x], [], None)
    np.testing.assert_array_equal(run("unsqueeze", [x.T], axes=(0, 4)), x.T.reshape(1, 3, 1, 2, 1))
    np.testing.assert_array_equal(run("unsqueeze", [data(6)], axes=(0,), steps=(2,)).shape, (2, 3))
    # a 0-d value unsqueezes to {1}, as MIGraphX's scalar
    assert run("unsqueeze", [np.array(2.0, np.float32)], axes=(0,)).shape == (1,)
    np.testing.assert_array_equal(run("flatten", [data(2, 3, 4)], axis=-1).shape, (6, 4))
    np.testing.assert_array_equal(run("flatten", [data(2, 3, 4)], axis=0).shape, (1, 24))
    np.testing.assert_array_equal(run("flatten", [data(2, 3, 4)], axis=-2).shape, (2, 12))


def test_slice_compute_clamps_and_counts_negative_bounds_from_the_end() -> None:
    x = data(5, 6)
    np.testing.assert_array_equal(run("slice", [x], axes=(0, -1), starts=(-9, 1), ends=(9, -1)), x[:, 1:5])
    np.testing.assert_array_equal(run("slice", [x], axes=(1,), starts=(0,), ends=(0,)), x[:, 0:0])
    np.testing.assert_array_equal(run("slice", [x], axes=(1,), starts=(-1,), ends=(6,)), x[:, 5:6])
    np.testing.assert_array_equal(run("slice", [x], axes=(1,), starts=(4,), ends=(-9,)), x[:, 4:4])
    starts, ends = np.array([1, -2], np.int64), np.array([3, 6], np.int64)
    np.testing.assert_array_equal(run("slice", [x, starts, ends], axes=(0, 1)), x[1:3, 4:6])
    np.testing.assert_array_equal(run("slice", [x, np.array([2], np.int64)], axes=(1,), ends=(4,)), x[:, 2:4])
    axes = np.array([1], np.int64)
    got = run("slice", [x, np.array([2], np.int64), np.array([-1], np.int64), axes])
    np.testing.assert_array_equal(got, x[:, 2:5])
    op = make_op("slice", axes=(2,), starts=(0,), ends=(1,))
    with pytest.raises(Exception, match=r"^slice: axis 2 is out of range for rank 2$"):
        op.defn.compute(op, [x], [], None)


def test_concat_identity_and_undefined_compute() -> None:
    a, b = data(2, 3), data(2, 2)
    np.testing.assert_array_equal(run("concat", [a, b], axis=1), np.concatenate([a, b], axis=1))
    np.testing.assert_array_equal(run("identity", [a]), a)
    undefined = run("undefined", [])
    assert undefined.dtype == np.float32 and undefined.shape == ()


def nms_inputs() -> tuple[np.ndarray, np.ndarray]:
    # 20 boxes in the unit square (unions below 1), some with their corners given high-to-low
    rng = np.random.default_rng(7)
    corners = rng.uniform(0, 1, (2, 20, 4)).astype(np.float32)
    scores = rng.uniform(0, 1, (2, 3, 20)).astype(np.float32)
    scores[0, 0, 3] = 0.25  # exactly the score threshold: not selected
    # two empty boxes at one point (their union is 0): neither suppresses the other
    corners[1, :2] = 0.5
    scores[1, 1, :2] = [0.99, 0.98]
    return corners, scores


@pytest.mark.parametrize("center_point_box", [0, 1])
@pytest.mark.parametrize("given", [3, 4, 5])
def test_nonmaxsuppression_matches_onnxruntime(center_point_box: int, given: int) -> None:
    boxes, scores = nms_inputs()
    extra = [np.array([20], np.int64), np.array([0.3], np.float32), np.array([0.25], np.float32)][: given - 2]
    (want,) = onnx_node("NonMaxSuppression", [boxes, scores, *extra], center_point_box=center_point_box)
    attributes = {"center_point_box": bool(center_point_box)}
    got = run("nonmaxsuppression", [boxes, scores, *extra], use_dyn_output=True, **attributes)
    np.testing.assert_array_equal(got, want)
    padded = run("nonmaxsuppression", [boxes, scores, *extra], **attributes)
    assert padded.shape == (2 * 3 * 20, 3)
    np.testing.assert_array_equal(padded[: len(want)], want)
    assert not padded[len(want) :].any()


def test_nonmaxsuppression_without_a_box_count_selects_nothing() -> None:
    boxes, scores = nms_inputs()
    assert run("nonmaxsuppression", [boxes, scores], use_dyn_output=True).shape == (0, 3)
    assert not run("nonmaxsuppression", [boxes, scores]).any()


ROIS = np.array(
    [[0.5, 1.0, 5.5, 4.0], [-2.0, -1.5, 9.0, 10.0], [3.0, 2.0, 3.2, 2.1], [6.5, 5.0, 13.0, 12.0]], np.float32
)


def test_roialign_samples_exactly_on_the_border_of_the_image() -> None:
    # one sample per bin, at (-1, -1) and at (height, width): both still inside, as onnxruntime
    x = data(1, 2, 6, 7)
    rois = np.array([[-1.5, -1.5, -0.5, -0.5], [6.5, 5.5, 7.5, 6.5]], np.float32)
    index = np.zeros(2, np.int64)
    attributes = {"output_height": 1, "output_width": 1, "sampling_ratio": 1}
    transform = "output_half_pixel"
    (want,) = onnx_node("RoiAlign", [x, rois, index], coordinate_transformation_mode=transform, **attributes)
    got = run("roialign", [x, rois, index], coordinate_transformation_mode=transform, **attributes)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got.all()


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("sampling_ratio", [0, 2])
def test_roialign_matches_onnxruntime(mode: str, transform: str, sampling_ratio: int) -> None:
    x = data(2, 3, 6, 7)
    index = np.array([0, 1, 1, 0], np.int64)
    attributes = {"output_height": 3, "output_width": 2, "sampling_ratio": sampling_ratio, "spatial_scale": 0.9}
    (want,) = onnx_node("RoiAlign", [x, ROIS, index], mode=mode, coordinate_transformation_mode=transform, **attributes)
    got = run(
        "roialign", [x, ROIS, index], mode=int(mode == "max"), coordinate_transformation_mode=transform, **attributes
    )
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("x_lens", "w_lens", "attributes"),
    [
        ((1, 4, 3, 5), (4, 3, 2, 3), {"stride": (2, 1), "dilation": (1, 2), "padding": (1, 0, 0, 2), "group": 2}),
        ((2, 3, 4), (3, 2, 3), {"stride": (3,), "dilation": (2,), "padding": (1, 2)}),
    ],
)
def test_convolution_backwards_matches_onnxruntime(x_lens: tuple, w_lens: tuple, attributes: dict) -> None:
    x, w = data(*x_lens), data(*w_lens)
    k = len(x_lens) - 2
    pads = list(attributes["padding"]) if len(attributes["padding"]) == 2 * k else list(attributes["padding"]) * 2
    (want,) = onnx_node(
        "ConvTranspose",
        [x, w],
        strides=list(attributes["stride"]),
        dilations=list(attributes["dilation"]),
        pads=pads,
        group=attributes.get("group", 1),
    )
    np.testing.assert_allclose(run("convolution_backwards", [x, w], **attributes), want, rtol=1e-4, atol=1e-5)


def test_im2col_rows_are_the_padded_dilated_windows() -> None:
    x, w = data(1, 2, 5, 6), data(3, 2, 2, 3)
    got = run("im2col", [x, w], padding=(1, 0, 2, 1), stride=(2, 1), dilation=(1, 2))
    padded = np.pad(x[0], [(0, 0), (1, 2), (0, 1)])
    rows = [
        padded[:, i : i + 2, j : j + 5 : 2].reshape(-1)
        for i in range(0, padded.shape[1] - 1, 2)
        for j in range(padded.shape[2] - 4)
    ]
    np.testing.assert_array_equal(got, np.array(rows))
    # a kernel exactly as large as the padded image gives one row
    assert run("im2col", [data(1, 1, 2, 3), data(1, 1, 2, 3)]).shape == (1, 6)
