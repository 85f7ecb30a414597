"""Reference compute of cubic resize (against onnxruntime), the group-query-attention helpers and
the target-internal broadcast_for_dot, fixed_pad, dynamic_range and select_module (against numpy
written another way, following MIGraphX's semantics)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
from test_ops_compute import data, onnx_node, run


@pytest.mark.parametrize(
    ("transform", "coefficient", "scales"),
    [
        ("half_pixel", -0.75, (1, 1, 2.0, 1.5)),
        ("half_pixel", -0.5, (1, 1, 0.6, 2.5)),
        ("align_corners", -0.75, (1, 1, 1.75, 3.0)),
        ("asymmetric", -0.75, (1, 1, 2.0, 0.5)),
        ("pytorch_half_pixel", -0.5, (1, 1, 1.5, 2.0)),
    ],
)
def test_resize_cubic_matches_onnxruntime(transform: str, coefficient: float, scales: tuple[float, ...]) -> None:
    x = data(2, 3, 5, 4)
    scale_array = np.array(scales, np.float32)
    (want,) = onnx_node(
        "Resize",
        [x, np.array([], np.float32), scale_array],
        mode="cubic",
        coordinate_transformation_mode=transform,
        cubic_coeff_a=coefficient,
    )
    got = run(
        "resize",
        [x],
        scales=tuple(float(s) for s in scale_array),
        mode="cubic",
        coordinate_transformation_mode=transform,
        cubic_coeff_a=coefficient,
    )
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _onnx_resize_to_sizes(x: np.ndarray, sizes: np.ndarray, **attributes: object) -> np.ndarray:
    """ONNX Resize with `sizes`, leaving the roi and scales inputs unnamed as the spec requires."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
            helper.make_tensor_value_info("sizes", TensorProto.INT64, sizes.shape),
        ],
        [onnx.ValueInfoProto(name="y")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x, "sizes": sizes})[0]


def test_resize_cubic_with_sizes_input_matches_onnxruntime() -> None:
    x = data(1, 1, 4, 6)
    sizes = np.array([1, 1, 7, 3], np.int64)
    want = _onnx_resize_to_sizes(x, sizes, mode="cubic", cubic_coeff_a=-0.75)
    got = run("resize", [x, sizes], mode="cubic", coordinate_transformation_mode="half_pixel")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_resize_cubic_at_scale_one_is_the_identity() -> None:
    x = data(1, 2, 3, 4)
    got = run("resize", [x], scales=(1.0, 1.0, 1.0, 1.0), mode="cubic", coordinate_transformation_mode="half_pixel")
    np.testing.assert_allclose(got, x, rtol=1e-6)
