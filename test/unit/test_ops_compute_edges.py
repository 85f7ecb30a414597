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
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_cubic_resize_of_rank_three_agrees_with_rank_four() -> None:
    x = data(1, 1, 4, 5)
    (want,) = onnx_node("Resize", [x, np.array([], np.float32), np.array([1, 1, 1.5, 0.6], np.float32)], mode="cubic")
    got = run("resize", [x[0]], scales=(1.0, 1.5, 0.6), mode="cubic")
    np.testing.assert_allclose(got, want[0], rtol=1e-5, atol=1e-5)


def test_cubic_resize_from_an_empty_leading_axis_gives_zeros() -> None:
    got = run("resize", [np.zeros((0, 2), np.float32)], sizes=(3, 2), mode="cubic")
    np.testing.assert_array_equal(got, np.zeros((3, 2), np.float32))
