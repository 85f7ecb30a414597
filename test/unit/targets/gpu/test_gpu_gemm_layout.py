"""How cuBLASLt reads a matrix operand (the GPU lowering's gemm_layout): transposed or not, the
leading dimension, and the batch axes collapsed into one count and stride, or None where a copy is
needed first."""

from __future__ import annotations

import pytest

from mgxir import DType, Shape
from mgxir.targets.gpu.lowering import gemm_layout

CASES = [
    ((2, 3), None, (False, 3, 1, 0)),
    ((3, 2), (1, 3), (True, 3, 1, 0)),  # a transposed view
    ((2, 3), (6, 2), None),  # neither matrix axis is contiguous
    ((2, 3), (2, 1), None),  # rows overlap: the leading dimension is under the row length
    ((2, 3), (0, 1), None),  # a broadcast row: every row is the same memory
    ((3, 2), (1, 0), None),  # a broadcast column, transposed
    ((2, 1), (0, 1), None),  # a broadcast single column
    ((2, 1), (5, 7), (False, 5, 1, 0)),  # one column: rows 5 apart, whatever the column stride
    ((1, 3), (9, 4), (True, 4, 1, 0)),  # one row, strided columns: read transposed
    ((1, 3), (0, 1), (False, 3, 1, 0)),  # one row: any row stride, the row length stands in
    ((4, 2, 3), None, (False, 3, 4, 6)),
    ((2, 2, 2, 3), None, (False, 3, 4, 6)),  # two batch axes collapse into one stride
    ((2, 2, 2, 3), (24, 6, 3, 1), None),  # ... unless they are not evenly spaced
    ((1, 2, 3), None, (False, 3, 1, 0)),  # a batch axis of 1 counts for nothing
    ((4, 3, 2), (6, 1, 3), (True, 3, 4, 6)),  # a batch of transposed views
]


@pytest.mark.parametrize(("lens", "strides", "expected"), CASES)
def test_gemm_layout(lens: tuple[int, ...], strides: tuple[int, ...] | None, expected: object) -> None:
    shape = Shape.make(DType.float, lens) if strides is None else Shape.make(DType.float, lens, strides)
    assert gemm_layout(shape) == expected


def _layout(lens: tuple[int, ...], strides: tuple[int, ...] | None = None):
    from mgxir.targets.gpu.blas import Layout

    shape = Shape.make(DType.float, lens) if strides is None else Shape.make(DType.float, lens, strides)
    return Layout(*gemm_layout(shape))


FOLDS = [
    # BERT's projection: (32, 128, 768) x one (768, 3072) weight -> one 4096-row product
    (((32, 128, 768), None), ((32, 768, 3072), (0, 3072, 1)), ((32, 128, 3072), None), 4096),
    (((32, 128, 768), None), ((768, 3072), None), ((32, 128, 3072), None), 4096),  # B not batched at all
    (((32, 128, 64), None), ((32, 64, 128), None), ((32, 128, 128), None), None),  # a B per batch
    (((32, 128, 64), (8192, 1, 128)), ((64, 128), None), ((32, 128, 128), None), None),  # A transposed
    (((32, 128, 64), (9000, 64, 1)), ((64, 128), None), ((32, 128, 128), None), None),  # A's batches apart
    (((32, 128, 64), None), ((64, 128), None), ((32, 128, 128), (20000, 128, 1)), None),  # output's apart
    (((128, 64), None), ((64, 128), None), ((128, 128), None), None),  # nothing to fold
]


@pytest.mark.parametrize(("a", "b", "out", "rows"), FOLDS)
def test_fold_batch(a: tuple, b: tuple, out: tuple, rows: int | None) -> None:
    from mgxir.targets.gpu.blas import fold_batch

    folded = fold_batch(_layout(*a), _layout(*b), _layout(*out), out[0][-2])
    if rows is None:
        assert folded is None
    else:
        assert folded is not None
        la, lb, lo, n = folded
        assert n == rows and la.batch == lb.batch == lo.batch == 1
        assert (la.ld, lb.ld, lo.ld) == (_layout(*a).ld, _layout(*b).ld, _layout(*out).ld)
