"""Ops no other test ran, each against an independent oracle: onnxruntime, numpy written another way,
or the semantics in MIGraphX's operator list (../shared/reference/migraphx-ops.md). `run` also checks
each result against the op's shape rule."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from test_ops_compute import data, onnx_node, run

from mgxir.ir.dtype import DType
from mgxir.ir.operation import ShapeError
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape


def shape_of(name: str, inputs: list[Shape], **attributes) -> Shape:
    op = make_op(name, **attributes)
    return op.defn.shape(op, inputs, [])


@pytest.mark.parametrize("size", [1, 3, 5])  # onnxruntime takes odd sizes only
def test_lrn_matches_onnxruntime(size: int) -> None:
    x = data(2, 6, 3, 3)
    (want,) = onnx_node("LRN", [x], size=size, alpha=0.2, beta=0.6, bias=1.5)
    got = run("lrn", [x], size=size, alpha=0.2, beta=0.6, bias=1.5)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_nonzero_pads_onnxruntimes_indices_with_zeros() -> None:
    x = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]], np.float32)
    (want,) = onnx_node("NonZero", [x])
    got = run("nonzero", [x])
    assert got.shape == (2, 6)  # MIGraphX's static form: rank x elements, unused columns zero
    np.testing.assert_array_equal(got[:, : want.shape[1]], want)
    assert not got[:, want.shape[1] :].any()


def test_quant_dot_int8_accumulates_in_int32() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (2, 3, 5)).astype(np.int8)
    b = rng.integers(-128, 128, (2, 5, 4)).astype(np.int8)
    got = run("quant_dot", [a, b])
    assert got.dtype == np.int32
    want = np.einsum("bij,bjk->bik", a.astype(np.int64), b.astype(np.int64))
    np.testing.assert_array_equal(got, want)


def test_quant_dot_fp8_gives_float() -> None:
    fp8 = ml_dtypes.float8_e4m3fnuz
    a = data(3, 4).astype(fp8)
    b = data(4, 2).astype(fp8)
    got = run("quant_dot", [a, b])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-6)
    with pytest.raises(ShapeError, match="cannot multiply"):
        shape_of("quant_dot", [Shape.make(DType.int8, (3, 4)), Shape.make(DType.int8, (3, 4))])


def test_scalar_broadcasts_one_element_with_zero_strides() -> None:
    got = run("scalar", [np.array([2.5], np.float32)], scalar_bcst_dims=(2, 3))
    np.testing.assert_array_equal(got, np.full((2, 3), 2.5, np.float32))
    shape = shape_of("scalar", [Shape.make(DType.float, (1,))], scalar_bcst_dims=(2, 3))
    assert shape.strides == (0, 0)
    with pytest.raises(ShapeError, match="2 elements, not 1"):
        shape_of("scalar", [Shape.make(DType.float, (2,))], scalar_bcst_dims=(2, 3))


def test_as_shape_reinterprets_the_bytes() -> None:
    x = data(2, 3)
    target = Shape.make(DType.int32, (3, 2))
    got = run("as_shape", [x], shape=target)
    np.testing.assert_array_equal(got, np.frombuffer(x.tobytes(), np.int32).reshape(3, 2))
    transposed = Shape.make(DType.float, (3, 2), (1, 3))
    np.testing.assert_array_equal(run("as_shape", [x], shape=transposed), x.T)
    with pytest.raises(ShapeError, match="do not fit"):
        shape_of("as_shape", [Shape.make(DType.float, (2,))], shape=Shape.make(DType.double, (2,)))
    with pytest.raises(ShapeError, match="needs a shape"):
        shape_of("as_shape", [Shape.make(DType.float, (2,))])


def test_layout_keeps_values_and_stores_in_permutation_order() -> None:
    x = data(2, 3, 4)
    got = run("layout", [x], permutation=(0, 2, 1))
    np.testing.assert_array_equal(got, x)
    shape = shape_of("layout", [Shape.make(DType.float, (2, 3, 4))], permutation=(0, 2, 1))
    assert tuple(s // 4 for s in got.strides) == shape.strides == (12, 1, 3)
    with pytest.raises(ShapeError, match="not a permutation"):
        shape_of("layout", [Shape.make(DType.float, (2, 3, 4))], permutation=(0, 1))


def test_random_seed_gives_one_value_of_its_type() -> None:
    first = run("random_seed", [], dtype=DType.uint32)
    assert first.shape == (1,) and first.dtype == np.uint32
    assert run("random_seed", []).dtype == np.uint64
    assert make_op("random_seed").defn.has_side_effects


def test_random_uniform_draws_mt19937_in_range() -> None:
    seed = np.array([7], np.uint64)
    got = run("random_uniform", [seed, np.zeros((3, 4), np.float32)])
    want = np.random.Generator(np.random.MT19937(7)).random((3, 4)).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    assert ((got >= 0) & (got < 1)).all()
    np.testing.assert_array_equal(run("random_uniform", [seed, np.zeros((3, 4), np.float32)]), got)
    ints = run("random_uniform", [seed, np.zeros(50, np.uint8)])
    assert ints.dtype == np.uint8 and len(set(ints.tolist())) > 10


@pytest.mark.parametrize("direction", [0, 1])
def test_scan_slice_takes_one_slice_from_either_end(direction: int) -> None:
    x = data(3, 4, 2)
    for i in range(4):
        got = run("scan_slice", [x, np.array([i], np.int64)], axis=-2, direction=direction)
        j = 3 - i if direction else i
        np.testing.assert_array_equal(got, x[:, j : j + 1, :])


def test_capture_passes_its_input_through() -> None:
    x = data(2, 3)
    np.testing.assert_array_equal(run("capture", [x], ins_index=3), x)
    assert make_op("capture").defn.has_side_effects


def test_bit_cast_reinterprets_each_element() -> None:
    x = np.array([1.0, -2.0, np.inf], np.float32)
    np.testing.assert_array_equal(run("bit_cast", [x], target_type=DType.int32), x.view(np.int32))
    h = np.array([1.0, 0.5], np.float16)
    np.testing.assert_array_equal(run("bit_cast", [h], target_type=DType.uint16), [0x3C00, 0x3800])
    with pytest.raises(ShapeError, match="differ in size"):
        shape_of("bit_cast", [Shape.make(DType.float, (2,))], target_type=DType.half)


def test_outline_is_zeros_of_its_shape() -> None:
    got = run("outline", [], shape=Shape.make(DType.half, (2, 2)))
    assert got.dtype == np.float16 and not got.any() and got.shape == (2, 2)
    with pytest.raises(ShapeError, match="needs a shape"):
        shape_of("outline", [])


@pytest.mark.parametrize("alpha", [1.0, 0.3])
def test_elu_matches_onnxruntime(alpha: float) -> None:
    x = data(3, 4)
    (want,) = onnx_node("Elu", [x], alpha=alpha)
    np.testing.assert_allclose(run("elu", [x], alpha=alpha), want, rtol=1e-6, atol=1e-7)


def test_not_is_logical_not_in_the_input_type() -> None:
    b = np.array([True, False, True])
    (want,) = onnx_node("Not", [b])
    np.testing.assert_array_equal(run("not", [b]), want)
    # unary_not: `not x` on a number, kept in the number's type
    x = np.array([0.0, 2.0, -1.5, 0.0], np.float32)
    got = run("not", [x])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [1.0, 0.0, 0.0, 1.0])
