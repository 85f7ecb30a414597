"""Shape logic against MIGraphX's definitions."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mgxir import DType, Shape
from mgxir.ir.shape import DynamicDimension, find_common_permutation, find_permutation, standard_strides


def test_standard_strides_are_row_major():
    assert standard_strides((2, 3, 4)) == (12, 4, 1)
    assert standard_strides(()) == ()
    assert standard_strides((5,)) == (1,)


def test_scalar_shape():
    s = Shape.scalar_of(DType.float)
    assert s.lens == (1,) and s.strides == (0,)
    assert s.scalar and s.broadcasted and s.packed and s.standard
    assert s.elements == 1 and s.bytes == 4


def test_transposed_and_standard():
    t = Shape.make(DType.float, (1, 2, 2, 4), (16, 2, 1, 4))
    assert t.transposed and not t.standard and t.packed
    assert find_permutation(t) == (0, 3, 1, 2)
    assert Shape.make(DType.float, (2, 3)).standard


def test_broadcast_predicates():
    b = Shape.make(DType.float, (4, 8), (0, 1))
    assert b.broadcasted and not b.standard and not b.packed and not b.transposed
    assert b.element_space == 8 and b.elements == 32


def test_size_one_axes_are_ignored_for_standard():
    # MIGraphX ignores strides of size-1 axes (gridsample golden file: {1, 1, 1}, {2, 2, 2})
    assert Shape.make(DType.float, (1, 1, 1), (2, 2, 2)).standard
    assert Shape.make(DType.float, (3, 1), (1, 7)).standard
    assert not Shape.make(DType.float, (3, 2), (1, 3)).standard


def test_interning_makes_equal_shapes_identical():
    a = Shape.make(DType.half, (3, 5))
    b = Shape.make(DType.half, [3, 5], [5, 1])
    assert a is b and a == b and hash(a) == hash(b)
    assert Shape.make(DType.float, (3, 5)) != a


def test_dynamic_and_tuple_shapes():
    d = Shape.dynamic(DType.float, [(1, 4), (3, 3)])
    assert d.is_dynamic and d.ndim == 2 and d.dyn_dims[1] == DynamicDimension(3, 3)
    assert not d.standard and not d.packed
    t = Shape.tuple_of([d, Shape.make(DType.int64, (2,))])
    assert t.is_tuple and t.sub_shapes[0] is d


def test_every_dtype_has_a_numpy_dtype():
    for t in DType:
        if t is DType.tuple:
            continue
        assert np.dtype(t.numpy).itemsize == t.itemsize
        assert DType.from_name(t.type_name) is t
    assert DType.bf16.numpy.name == "bfloat16"
    assert DType.fp8e4m3fnuz.numpy.name == "float8_e4m3fnuz"


def test_with_lens_keeps_the_permutation():
    t = Shape.make(DType.float, (2, 3), (1, 2))
    r = t.with_lens((4, 5))
    assert r.strides == (1, 4)


def test_common_permutation_prefers_the_majority():
    std = Shape.make(DType.float, (2, 3))
    tr = Shape.make(DType.float, (2, 3), (1, 2))
    assert find_common_permutation([tr, std, std]) == (0, 1)
    assert find_common_permutation([tr, tr, std]) == (1, 0)
    # broadcast shapes do not vote; none left means identity
    assert find_common_permutation([Shape.make(DType.float, (2, 3), (0, 1))]) == (0, 1)


@given(st.lists(st.integers(1, 5), min_size=1, max_size=5), st.randoms())
def test_permuted_shapes_match_numpy(lens, rnd):
    perm = list(range(len(lens)))
    rnd.shuffle(perm)
    s = Shape.make(DType.float, lens)
    arr = np.zeros(lens, dtype=np.float32)
    view = arr.transpose(perm)
    t = Shape.make(DType.float, [lens[p] for p in perm], [s.strides[p] for p in perm])
    assert tuple(x // 4 for x in view.strides) == t.strides
    assert t.packed
    # numpy, like MIGraphX, ignores the strides of size-1 axes when it calls an array contiguous
    assert t.standard == view.flags["C_CONTIGUOUS"]
