"""Every elementwise operator's scalar meaning (mgxir/ops/scalar.py), evaluated by the numpy
emitter, computes what its reference compute computes on every edge value of every type it takes."""

from __future__ import annotations

import pytest
from scalar_cases import cases, disagreement, numpy_meaning, reference

from mgxir.ir.dtype import DType
from mgxir.ir.registry import all_ops, lookup
from mgxir.ops.scalar import has_scalar_meaning

CASES = list(cases())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_meaning_is_the_reference(case) -> None:
    want = reference(case)
    meant = numpy_meaning(case)
    if meant is None:
        pytest.skip("no scalar meaning for these types (the host computes it)")
    if want is None:
        pytest.skip("the reference refuses these operands (numpy has no such operation)")
    got, _ = meant
    # the numpy emitter calls numpy's own functions, so even math functions agree exactly
    assert disagreement(case, got, want, inexact=False) is None, disagreement(case, got, want, inexact=False)


def test_every_pointwise_operator_has_a_meaning() -> None:
    """Every pointwise operator, for float operands or results (bitwise_and takes no floats)."""
    covered = {c.op.name for c in CASES if DType.float in (*c.types, c.out) and numpy_meaning(c) is not None}
    pointwise = {name for name in all_ops() if lookup(name).pointwise}
    assert pointwise - {"bitwise_and"} <= covered
    assert all(has_scalar_meaning(lookup(name)) for name in pointwise)
