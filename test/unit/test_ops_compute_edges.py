"""Reference compute of the pooling and resize forms the other compute tests leave out, against
onnxruntime: Lp pooling, average pooling that counts the padding, global pooling (dyn_global), and
resize whose sizes or scales come as an input."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
from test_ops_compute import data, onnx_node, run

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
