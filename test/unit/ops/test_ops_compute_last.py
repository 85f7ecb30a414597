"""Reference compute of cubic resize (against onnxruntime), the group-query-attention helpers and
the target-internal broadcast_for_dot, fixed_pad, dynamic_range and select_module (against numpy
written another way, following MIGraphX's semantics)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from mgxir.diagnostics import MgxError
from mgxir.interp.interpreter import run_program
from mgxir.ir.dtype import DType
from mgxir.ir.operation import ShapeError
from mgxir.ir.program import Program
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape, format_shape
from mgxir.text.parser import parse_program
from mgxir.verifier import verify

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


# -- sampling, packing, introspection and target-internal operators: edges and refusals --------------


def _shape_of(name: str, shapes: list[Shape], **attributes: object) -> Shape:
    op = make_op(name, **attributes)
    return op.defn.shape(op, shapes, [])


def _verified(text: str) -> Program:
    program = parse_program(text)
    verify(program)
    return program


DYNAMIC_2D = Shape.dynamic(DType.float, [(1, 4), (3, 3)])


def test_multinomial_samples_against_an_unnormalised_cdf() -> None:
    """MIGraphX's multinomial: the class is std::upper_bound(cdf row, sample * last cdf value)."""
    cdf = np.array([[1, 3, 6], [2, 2, 4], [5, 6, 10]], np.float32)
    samples = np.array([[0.1, 0.5], [0.4, 0.99], [0.55, 0.45]], np.float32)
    got = run("multinomial", [cdf, samples])
    want = [[np.searchsorted(c, s * c[-1], side="right") for s in row] for c, row in zip(cdf, samples)]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [[0, 2], [0, 2], [1, 0]])
    # one row of samples serves every row of the cdf
    np.testing.assert_array_equal(run("multinomial", [cdf, samples[:1]]), [[0, 2], [0, 2], [0, 1]])


@pytest.mark.parametrize(
    ("name", "shapes", "attributes", "message"),
    [
        ("multinomial", [DYNAMIC_2D, Shape.make(DType.float, (2, 3))], {}, "multinomial: dynamic input shapes"),
        ("multinomial", [Shape.make(DType.float, (2, 3)), DYNAMIC_2D], {}, "multinomial: dynamic input shapes"),
        (
            "multinomial",
            [Shape.make(DType.float, (2, 3)), Shape.make(DType.float, (2, 3))],
            {"dtype": DType.bool},
            "multinomial: a boolean output type is invalid",
        ),
        ("pack_int4", [Shape.dynamic(DType.int8, [(1, 4), (4, 4)])], {}, "pack_int4: dynamic input shapes"),
        ("pack_int4", [Shape.make(DType.int8, (2, 4))], {"axis": 2}, "pack_int4: axis 2 is out of range for rank 2"),
        ("pack_fp4", [DYNAMIC_2D], {}, "pack_fp4: dynamic input shapes"),
        ("pack_fp4", [Shape.make(DType.float, (2, 4))], {"axis": -3}, "pack_fp4: axis -3 is out of range for rank 2"),
        ("unpack_fp4", [Shape.dynamic(DType.fp4x2, [(1, 4), (4, 4)])], {}, "unpack_fp4: dynamic input shapes"),
        ("unpack_fp4", [Shape.make(DType.fp4x2, (2, 4))], {"axis": 5}, "unpack_fp4: axis 5 is out of range for rank 2"),
        ("scan_slice", [DYNAMIC_2D, Shape.make(DType.int64, (1,))], {}, "scan_slice: dynamic input shapes"),
        (
            "scan_slice",
            [Shape.make(DType.float, (2, 3)), Shape.make(DType.int64, (1,))],
            {"axis": 2},
            "scan_slice: axis 2 is out of range for rank 2",
        ),
        ("dimensions_of", [Shape.make(DType.float, (2, 3))], {"start": 1, "end": 1}, "must be less than end 1"),
        (
            "fill",
            [Shape.make(DType.float, (2,)), Shape.make(DType.float, (4, 3))],
            {},
            "fill: the value must have one element, got {2}",
        ),
        (
            "broadcast_with_dims",
            [Shape.make(DType.float, (2, 3)), Shape.dynamic(DType.int64, [(1, 3)])],
            {},
            "broadcast_with_dims: the dims input must have a static shape",
        ),
        (
            "dynamic_range",
            [Shape.make(DType.float, (1,)), Shape.make(DType.float, (1,)), Shape.make(DType.int32, (1,))],
            {},
            "dynamic_range: start, limit and delta must have the same type",
        ),
    ],
)
def test_shape_rules_refuse_naming_the_operator(name: str, shapes: list[Shape], attributes: dict, message: str) -> None:
    with pytest.raises(ShapeError) as caught:
        _shape_of(name, shapes, **attributes)
    assert str(caught.value).startswith(name + ": "), str(caught.value)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("name", "x"),
    [
        ("pack_int4", np.zeros((2, 4), np.int8)),
        ("unpack_int4", np.zeros((2, 4), np.int8)),
        ("pack_fp4", np.zeros((2, 4), np.float32)),
        ("unpack_fp4", np.zeros((2, 4), np.uint8)),
        ("scan_slice", np.zeros((2, 4), np.float32)),
    ],
)
def test_computes_refuse_an_axis_out_of_range_naming_the_operator(name: str, x: np.ndarray) -> None:
    op = make_op(name, axis=3)
    inputs = [x, np.array([0])] if name == "scan_slice" else [x]
    with pytest.raises(ShapeError, match=f"^{name}: axis 3 is out of range for rank 2$"):
        op.defn.compute(op, inputs, [], lambda m, a: [])


def test_packing_halves_the_axis_in_integers() -> None:
    packed = _shape_of("pack_int4", [Shape.make(DType.uint8, (7, 22))])
    assert format_shape(packed) == "uint8_type, {7, 11}, {11, 1}"
    fp4 = _shape_of("pack_fp4", [Shape.make(DType.float, (9, 26))])
    assert format_shape(fp4) == "fp4x2_type, {9, 13}, {13, 1}"


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_int4_and_fp4_packing_of_rank_three_along_each_axis(axis: int) -> None:
    rng = np.random.default_rng(axis)
    lens = [2, 4, 6]
    x = rng.integers(-8, 8, lens).astype(np.int8)
    packed = run("pack_int4", [x], axis=axis)
    # element 2i of the axis in the low nibble, 2i+1 in the high one
    moved = np.moveaxis(x, axis, -1).view(np.uint8)
    want = np.moveaxis(((moved[..., 1::2] << 4) | (moved[..., 0::2] & 0xF)).astype(np.uint8).view(np.int8), -1, axis)
    np.testing.assert_array_equal(packed, want)
    np.testing.assert_array_equal(run("unpack_int4", [packed], axis=axis), x)
    floats = rng.choice([-6.0, -1.5, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0], lens).astype(np.float32)
    fp4 = run("pack_fp4", [floats], axis=axis)
    assert fp4.shape == tuple(n // 2 if k == axis else n for k, n in enumerate(lens))
    unpacked = run("unpack_fp4", [fp4.view(np.uint8)], axis=axis, input_types=[DType.fp4x2])
    np.testing.assert_array_equal(unpacked.astype(np.float32), floats)


def test_random_seed_draws_a_32_bit_seed_each_run() -> None:
    """MIGraphX's random_seed is std::random_device{}(): an unsigned int."""
    op = make_op("random_seed")
    seeds = [int(op.defn.compute(op, [], [], lambda m, a: [])[0]) for _ in range(32)]
    assert all(0 <= s < 2**32 for s in seeds)
    assert len(set(seeds)) > 2


def test_random_uniform_integers_cover_zero_to_the_maximum_and_the_seed_is_the_first_element() -> None:
    like = np.zeros((64, 64), np.uint8)
    seed = np.array([[7, 99]], np.uint64)
    drawn = run("random_uniform", [seed, like])
    assert drawn.dtype == np.uint8 and drawn.min() == 0 and drawn.max() == 255
    again = run("random_uniform", [np.array([7], np.uint64), like])
    np.testing.assert_array_equal(drawn, again)
    floats = run("random_uniform", [seed, np.zeros((3, 5), np.float32)])
    assert floats.dtype == np.float32 and ((floats >= 0) & (floats < 1)).all()


def test_fill_takes_a_dynamic_buffer_and_refuses_a_dynamic_value() -> None:
    value = Shape.make(DType.float, (1,))
    assert _shape_of("fill", [value, DYNAMIC_2D]) == DYNAMIC_2D
    with pytest.raises(ShapeError, match="fill: the value must have one element"):
        _shape_of("fill", [DYNAMIC_2D, Shape.make(DType.float, (4, 3))])


def test_scan_slice_keeps_the_input_strides_and_reads_the_first_index_element() -> None:
    transposed = Shape.make(DType.float, (3, 4), (1, 3))
    assert _shape_of("scan_slice", [transposed, Shape.make(DType.int64, (1,))], axis=1) == Shape.make(
        DType.float, (3, 1), (1, 3)
    )
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = run("scan_slice", [x, np.array([[2, 0]])], axis=1, direction=1)
    np.testing.assert_array_equal(got, x[:, 1:2])


def test_concat_past_present_refusals_name_the_rows() -> None:
    new = data(1, 1, 1, 4)
    with pytest.raises(ValueError, match=r"^concat_past_present: rows 3\.\.4 of batch 0 fall outside the cache$"):
        run("concat_past_present", [new, np.array([3], np.int32), data(1, 1, 3, 4)], kv_num_heads=1)
    # more kv heads than the new rows hold
    with pytest.raises(ValueError, match=r"^concat_past_present: rows 0\.\.1 of batch 0 fall outside the cache$"):
        run("concat_past_present", [new, np.array([0], np.int32), data(1, 2, 3, 4)], kv_num_heads=2)


def _gqa_inputs(seqlens: list[int], sequence: int = 1) -> list[np.ndarray]:
    qkv = data(2, 3, sequence, 4)
    cos = np.cos(np.arange(6, dtype=np.float32))[:, None].repeat(2, axis=1)
    sin = np.sin(np.arange(6, dtype=np.float32))[:, None].repeat(2, axis=1)
    return [qkv, np.array(seqlens, np.int32), cos, sin]


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (_gqa_inputs([1, 2])[:3], "gqa_rotary_embedding: needs qkv, seqlens_k, cos and sin caches, got 3 inputs"),
        (_gqa_inputs([1, 6]), "gqa_rotary_embedding: positions exceed the 6-row cos/sin cache"),
        (_gqa_inputs([1, 9]), "gqa_rotary_embedding: positions exceed the 6-row cos/sin cache"),
        (_gqa_inputs([-1, 2]), "gqa_rotary_embedding: positions exceed the 6-row cos/sin cache"),
        (_gqa_inputs([1, 2], sequence=7), "gqa_rotary_embedding: positions exceed the 6-row cos/sin cache"),
    ],
)
def test_gqa_rotary_embedding_refusals(inputs: list[np.ndarray], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        run("gqa_rotary_embedding", inputs, num_heads=1, kv_num_heads=1)


def test_gqa_rotary_embedding_refuses_a_rotary_width_over_the_head_size() -> None:
    qkv, seqlens, cos, sin = _gqa_inputs([1, 2])
    wide = np.ones((6, 3), np.float32)
    with pytest.raises(ValueError, match=r"^gqa_rotary_embedding: rotary width 6 exceeds head size 4$"):
        run("gqa_rotary_embedding", [qkv, seqlens, wide, wide], num_heads=1, kv_num_heads=1)


def test_broadcast_for_dot_refusals_name_the_ranks_and_batch_dimensions() -> None:
    with pytest.raises(ValueError, match=r"^broadcast_for_dot: inputs need rank at least 2, got 1 and 3$"):
        run("broadcast_for_dot", [data(5), data(2, 5, 6)])
    with pytest.raises(ValueError, match=r"^broadcast_for_dot: inputs need rank at least 2, got 3 and 1$"):
        run("broadcast_for_dot", [data(2, 5, 6), data(5)])
    message = r"^broadcast_for_dot: batch dimensions \{2, 3\} and \{4, 3\} do not broadcast$"
    with pytest.raises(ValueError, match=message):
        run("broadcast_for_dot", [data(2, 3, 4, 5), data(4, 3, 5, 6)])
    with pytest.raises(ValueError, match=r"^broadcast_for_dot: batch dimensions \{2\} and \{3\} do not broadcast$"):
        run("broadcast_for_dot", [data(2, 4, 5), data(3, 5, 6)])


FIXED_PAD_INT = """module: "main"
x = @param:x -> int32_type, {[1..3], 3}
s = @param:s -> int32_type, {2, 2}
@2 = fixed_pad(x)
@3 = fixed_pad(s)
@4 = @return(@2,@3)
"""


def test_fixed_pad_keeps_the_type_passes_a_static_input_and_refuses_longer_inputs() -> None:
    x = np.array([[1, 2, 3]], np.int32)
    s = np.array([[4, 5], [6, 7]], np.int32)
    padded, same = _run_text(FIXED_PAD_INT, {"x": x, "s": s})
    assert padded.dtype == np.int32
    np.testing.assert_array_equal(padded, [[1, 2, 3], [0, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(same, s)
    with pytest.raises(MgxError, match=r"fixed_pad: runtime lengths \{4, 3\} exceed the maximum \{3, 3\}$"):
        _run_text(FIXED_PAD_INT, {"x": np.zeros((4, 3), np.int32), "s": s})
    with pytest.raises(MgxError, match=r"fixed_pad: runtime lengths \{3\} exceed the maximum \{3, 3\}$"):
        _run_text(FIXED_PAD_INT, {"x": np.zeros(3, np.int32), "s": s})


def test_dynamic_range_overflows_to_infinity_quietly_and_reads_first_elements() -> None:
    start, limit, delta = (np.array([v], np.float32) for v in (-3e38, 2.9e38, 2e38))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the third step's 2 * 2e38 overflows float32
        got = run("dynamic_range", [start, limit, delta])
        np.testing.assert_allclose(got[:2], [-3e38, -1e38], rtol=1e-6)
        assert got.dtype == np.float32 and got.shape == (3,) and got[2] == np.inf
        with pytest.raises(ValueError, match=r"^dynamic_range: computed element count is not finite$"):
            run("dynamic_range", [np.array([v], np.float32) for v in (np.inf, np.inf, 1.0)])
    pairs = [np.array([v, 100], np.int64) for v in (2, 11, 3)]
    np.testing.assert_array_equal(run("dynamic_range", pairs), [2, 5, 8])


def test_dynamic_range_steps_in_the_start_type() -> None:
    """start + i * delta in float32, as MIGraphX computes it (float64 arithmetic rounds differently)."""
    start, limit, delta = (np.array([v], np.float32) for v in (0.05, 0.62, 0.05))
    got = run("dynamic_range", [start, limit, delta])
    steps = np.arange(12, dtype=np.float32)
    np.testing.assert_array_equal(got, start[0] + steps * delta[0])
    assert not np.array_equal(got, (np.float64(start[0]) + np.arange(12) * np.float64(delta[0])).astype(np.float32))


RUNS_MODULE = """module: "main"
x = @param:x -> float_type, {2}
y = @param:y -> float_type, {2}
@2 = group[tag=one](y,x), [one] -> float_type, {2}
@3 = run_on_target[target_id=0](y,x), [two] -> [float_type, {2}, float_type, {2}]
@4 = get_tuple_elem[index=1](@3)
@5 = @return(@2,@4,@3)

module: "one"
one:b = @param:b -> float_type, {2}
one:a = @param:a -> float_type, {2}
one:@2 = sub(one:a,one:b)
one:@3 = @return(one:@2)

module: "two"
two:b = @param:b -> float_type, {2}
two:a = @param:a -> float_type, {2}
two:@2 = neg(two:a)
two:@3 = mul(two:a,two:b)
two:@4 = @return(two:@2,two:@3)
"""


def test_group_and_run_on_target_run_their_module_on_their_inputs() -> None:
    x = np.array([1, 2], np.float32)
    y = np.array([5, 7], np.float32)
    single, second, both = run_program(_verified(RUNS_MODULE), {"x": x, "y": y})
    # inputs bind to the module's parameters sorted by name: a = y, b = x
    assert isinstance(single, np.ndarray)
    np.testing.assert_array_equal(single, y - x)
    np.testing.assert_array_equal(second, y * x)
    assert isinstance(both, tuple) and len(both) == 2
    np.testing.assert_array_equal(both[0], -y)


SELECT_WITH_OUTPUTS = """module: "main"
data = @param:data -> float_type, {[1..4], 4}
@1 = select_module[output_dyn_shapes=[float_type, {[1..4], 4}, int32_type, {1, 4}]](data), [two_inputs, dyn, batch_1]
@2 = @return(@1)

module: "two_inputs"
two_inputs:extra = @param:extra -> float_type, {1, 4}
two_inputs:data = @param:data -> float_type, {1, 4}
two_inputs:@2 = add(two_inputs:data,two_inputs:extra)
two_inputs:@3 = @return(two_inputs:@2,two_inputs:@2)

module: "dyn"
dyn:data = @param:data -> float_type, {[1..4], 4}
dyn:@1 = neg(dyn:data)
dyn:@2 = @return(dyn:@1,dyn:@1)

module: "batch_1"
batch_1:data = @param:data -> float_type, {1, 4}
batch_1:#output_0 = @param:batch_1:#output_0 -> int32_type, {1, 4}
batch_1:@2 = exp(batch_1:data)
batch_1:@3 = @return(batch_1:@2,batch_1:#output_0)
"""


def test_select_module_skips_modules_that_take_more_inputs_or_dynamic_shapes_and_fills_output_buffers() -> None:
    program = _verified(SELECT_WITH_OUTPUTS)
    assert program.main.output_shapes()[0] == Shape.tuple_of(
        [Shape.dynamic(DType.float, [(1, 4), (4, 4)]), Shape.make(DType.int32, (1, 4))]
    )
    x = data(1, 4)
    ((result, buffer),) = run_program(program, {"data": x})
    np.testing.assert_allclose(result, np.exp(x), rtol=1e-6)
    assert buffer.dtype == np.int32 and buffer.shape == (1, 4) and not buffer.any()
    # a 0-d runtime value fits a {1} parameter
    scalar = SELECT_WITH_OUTPUTS.replace("{1, 4}", "{1}").replace("{[1..4], 4}", "{[1..4]}")
    ((result, _),) = run_program(_verified(scalar), {"data": np.array(0.5, np.float32)})
    np.testing.assert_allclose(result, np.exp(0.5), rtol=1e-6)
    with pytest.raises(MgxError, match="no module's parameter shapes fit"):
        run_program(program, {"data": data(4, 4)})


def test_unknown_operators_take_their_first_input_shape_or_the_printed_one() -> None:
    program = _verified(
        'module: "main"\nx = @param:x -> float_type, {2, 3}\n@1 = unknown:Foo(x)\n'
        "@2 = unknown:Bar() -> int8_type, {4}\n@3 = @return(@1,@2)\n"
    )
    assert program.main.output_shapes() == [Shape.make(DType.float, (2, 3)), Shape.make(DType.int8, (4,))]
