"""Shape rules against numpy's own broadcasting and reductions, on random shapes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mgxir.ir.dtype import DType
from mgxir.ir.operation import ShapeError
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape

lens_strategy = st.lists(st.integers(1, 4), min_size=1, max_size=4)


def shape_of(op_name: str, inputs: list[Shape], **attributes) -> Shape:
    op = make_op(op_name, **attributes)
    return op.defn.shape(op, inputs, [])


@settings(max_examples=60, deadline=None)
@given(lens_strategy, st.data())
def test_reduce_matches_numpy(lens: list[int], data: st.DataObject) -> None:
    axes = data.draw(st.lists(st.integers(-len(lens), len(lens) - 1), min_size=1, max_size=len(lens) + 1))
    x = np.zeros(lens, np.float32)
    # MIGraphX sets each named axis to 1, so an axis named twice (as 1 and 1 - rank) is one axis
    want = np.sum(x, axis=tuple({a % len(lens) for a in axes}), keepdims=True).shape
    assert shape_of("reduce_sum", [Shape.make(DType.float, lens)], axes=tuple(axes)).lens == want


@settings(max_examples=60, deadline=None)
@given(lens_strategy, lens_strategy)
def test_multibroadcast_matches_numpy(a: list[int], b: list[int]) -> None:
    sa, sb = Shape.make(DType.float, a), Shape.make(DType.float, b)
    try:
        want = np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError:
        want = None
    try:
        got = shape_of("multibroadcast", [sa, sb]).lens
    except ShapeError as e:
        assert want is None, str(e)
        assert "multibroadcast" in str(e) and "dimension" in str(e)
        return
    assert got == want


@settings(max_examples=60, deadline=None)
@given(lens_strategy, st.data())
def test_softmax_axis_and_squeeze(lens: list[int], data: st.DataObject) -> None:
    axis = data.draw(st.integers(-len(lens), len(lens) - 1))
    s = Shape.make(DType.float, lens)
    assert shape_of("softmax", [s], axis=axis).lens == tuple(lens)
    unsqueezed = shape_of("unsqueeze", [s], axes=(axis,))
    assert unsqueezed.lens == np.expand_dims(np.zeros(lens), axis).shape
    assert shape_of("squeeze", [unsqueezed], axes=(axis,)).lens == tuple(lens)
