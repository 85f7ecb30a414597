"""Reference compute of cubic resize (against onnxruntime), the group-query-attention helpers and
the target-internal broadcast_for_dot, fixed_pad, dynamic_range and select_module (against numpy
written another way, following MIGraphX's semantics)."""

from __future__ import annotations

import numpy as np
import pytest

from mgxir.diagnostics import MgxError
from mgxir.interp.interpreter import run_program
from mgxir.text.parser import parse_program

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


def _loop_concat_past_present(new: np.ndarray, seqlens: np.ndarray, cache: np.ndarray) -> np.ndarray:
    out = cache.copy()
    batch, kv_heads, sequence, head_size = new.shape
    for b in range(batch):
        first_row = 0 if sequence > 1 else int(seqlens[b])
        for h in range(kv_heads):
            for s in range(sequence):
                for d in range(head_size):
                    out[b, h, first_row + s, d] = new[b, h, s, d]
    return out


@pytest.mark.parametrize("sequence", [1, 3])
def test_concat_past_present_writes_new_rows_into_the_cache(sequence: int) -> None:
    new = data(2, 2, sequence, 4)
    cache = data(2, 2, 6, 4)
    seqlens = np.array([2, 5], np.int32)
    got = run("concat_past_present", [new, seqlens, cache], kv_num_heads=2)
    np.testing.assert_array_equal(got, _loop_concat_past_present(new, seqlens, cache))
    assert got.shape == cache.shape and not np.shares_memory(got, cache)


def test_concat_past_present_rejects_rows_past_the_cache() -> None:
    new = data(1, 1, 1, 4)
    with pytest.raises(ValueError, match="outside the cache"):
        run("concat_past_present", [new, np.array([9], np.int32), data(1, 1, 3, 4)], kv_num_heads=1)


def _loop_gqa_rotary(
    qkv: np.ndarray, seqlens: np.ndarray, cos: np.ndarray, sin: np.ndarray, heads: int, kv_heads: int, interleaved: bool
) -> np.ndarray:
    out = qkv.copy()
    batch, _, sequence, head_size = qkv.shape
    half = cos.shape[1]
    for b in range(batch):
        for n in range(heads + kv_heads):
            for s in range(sequence):
                position = int(seqlens[b]) if sequence == 1 else s
                for i in range(2 * half):
                    if interleaved:
                        k, partner, sign = i // 2, i + 1 if i % 2 == 0 else i - 1, -1.0 if i % 2 == 0 else 1.0
                    else:
                        k, partner, sign = i % half, (i + half) % (2 * half), -1.0 if i < half else 1.0
                    out[b, n, s, i] = (
                        qkv[b, n, s, i] * cos[position, k] + sign * qkv[b, n, s, partner] * sin[position, k]
                    )
    return out


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("sequence", [1, 4])
@pytest.mark.parametrize("rotary", [8, 4])
def test_gqa_rotary_embedding_matches_loops(interleaved: bool, sequence: int, rotary: int) -> None:
    heads, kv_heads, head_size = 4, 2, 8
    qkv = data(2, heads + 2 * kv_heads, sequence, head_size)
    angles = np.arange(10)[:, None] * (1.0 / 10 ** (np.arange(rotary // 2) / (rotary // 2)))[None, :]
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    seqlens = np.array([3, 7], np.int32)
    got = run(
        "gqa_rotary_embedding",
        [qkv, seqlens, cos, sin],
        num_heads=heads,
        kv_num_heads=kv_heads,
        interleaved=interleaved,
    )
    want = _loop_gqa_rotary(qkv, seqlens, cos, sin, heads, kv_heads, interleaved)
    assert got.dtype == qkv.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[:, heads + kv_heads :], qkv[:, heads + kv_heads :])


def test_broadcast_for_dot_broadcasts_only_the_batch_dimensions() -> None:
    matrix = data(5, 7)
    batched = data(2, 3, 4, 5)
    got = run("broadcast_for_dot", [matrix, batched])
    assert got.shape == (2, 3, 5, 7)
    for b in range(2):
        for c in range(3):
            np.testing.assert_array_equal(got[b, c], matrix)
    unchanged = run("broadcast_for_dot", [batched, matrix])
    np.testing.assert_array_equal(unchanged, batched)
    partial = run("broadcast_for_dot", [data(1, 3, 4, 5), data(2, 1, 5, 6)])
    assert partial.shape == (2, 3, 4, 5)
    with pytest.raises(ValueError, match="do not broadcast"):
        run("broadcast_for_dot", [data(2, 4, 5), data(3, 5, 6)])


def _run_text(text: str, params: dict[str, np.ndarray]) -> list:
    return run_program(parse_program(text), params)


FIXED_PAD = """module: "main"
x = @param:x -> float_type, {[1..3], 3}
@1 = fixed_pad(x)
@2 = @return(@1)
"""


def test_fixed_pad_pads_a_dynamic_input_to_its_maximum_lengths() -> None:
    x = np.array([[-3, -2, -1], [0, 1, 2]], np.float32)
    (got,) = _run_text(FIXED_PAD, {"x": x})
    np.testing.assert_array_equal(got, [[-3, -2, -1], [0, 1, 2], [0, 0, 0]])
    full = data(3, 3)
    (same,) = _run_text(FIXED_PAD, {"x": full})
    np.testing.assert_array_equal(same, full)
    static = data(2, 3)
    np.testing.assert_array_equal(run("fixed_pad", [static]), static)


@pytest.mark.parametrize(
    ("start", "limit", "delta", "dtype"),
    [
        (0, 5, 1, np.int64),
        (10, 4, -3, np.int32),
        (1.0, 2.0, 0.3, np.float32),
        (5, 2, 1, np.int64),
        (2.5, -1.0, -0.5, np.float32),
    ],
)
def test_dynamic_range_matches_onnx_range(start: float, limit: float, delta: float, dtype: type) -> None:
    scalars = [np.array(v, dtype) for v in (start, limit, delta)]
    (want,) = onnx_node("Range", scalars)
    got = run("dynamic_range", [s.reshape(1) for s in scalars])
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    value_count = max(int(np.ceil((float(scalars[1]) - float(scalars[0])) / float(scalars[2]))), 0)
    by_loop = [scalars[0] + dtype(i) * scalars[2] for i in range(value_count)]
    np.testing.assert_array_equal(got, np.array(by_loop, dtype))


def test_dynamic_range_caps_at_max_output_and_rejects_zero_delta() -> None:
    inputs = [np.array([v], np.int64) for v in (0, 100, 1)]
    np.testing.assert_array_equal(run("dynamic_range", inputs, max_output=4), [0, 1, 2, 3])
    with pytest.raises(ValueError, match="non-zero"):
        run("dynamic_range", [np.array([v], np.int64) for v in (0, 3, 0)])


SELECT_MODULE = """module: "main"
data = @param:data -> float_type, {[1..4], 4}
@1 = select_module[output_dyn_shapes=[float_type, {[1..4], 4}]](data), [batch_1, batch_2]
@2 = get_tuple_elem[index=0](@1)
@3 = @return(@2)

module: "batch_1"
batch_1:data = @param:data -> float_type, {1, 4}, {4, 1}
batch_1:@1 = neg(batch_1:data) -> float_type, {1, 4}, {4, 1}
batch_1:@2 = @return(batch_1:@1)

module: "batch_2"
batch_2:data = @param:data -> float_type, {2, 4}, {4, 1}
batch_2:@1 = exp(batch_2:data) -> float_type, {2, 4}, {4, 1}
batch_2:@2 = @return(batch_2:@1)
"""


def test_select_module_runs_the_module_whose_parameters_fit() -> None:
    one = data(1, 4)
    two = data(2, 4)
    (got_one,) = _run_text(SELECT_MODULE, {"data": one})
    np.testing.assert_array_equal(got_one, -one)
    (got_two,) = _run_text(SELECT_MODULE, {"data": two})
    np.testing.assert_allclose(got_two, np.exp(two), rtol=1e-6)
    with pytest.raises(MgxError, match="no module's parameter shapes fit"):
        _run_text(SELECT_MODULE, {"data": data(3, 4)})
