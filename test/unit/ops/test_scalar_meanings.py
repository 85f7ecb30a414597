"""Every elementwise operator's scalar meaning (mgxir/ops/scalar.py), evaluated by the numpy
emitter, computes what its reference compute computes on every edge value of every type it takes."""

from __future__ import annotations

import pytest
from scalar_cases import cases, disagreement, numpy_meaning, reference

from mgxir.ir.dtype import DType
from mgxir.ir.operation import ShapeError
from mgxir.ir.registry import all_ops, lookup, make_op
from mgxir.ir.shape import Shape
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


def _takes_floats(name: str) -> bool:
    """Whether the operator's shape rule takes float operands (mgxir's bit operators do not)."""
    op = make_op(name)
    try:
        op.defn.shape(op, [Shape.make(DType.float, [2])] * op.defn.arity[0], [])
    except ShapeError:
        return False
    return True


def test_every_pointwise_operator_has_a_meaning() -> None:
    """Every pointwise operator, for float operands or results (bitwise_and and the operators whose
    shape rule refuses floats take no floats)."""
    covered = {c.op.name for c in CASES if DType.float in (*c.types, c.out) and numpy_meaning(c) is not None}
    pointwise = {name for name in all_ops() if lookup(name).pointwise}
    assert {name for name in pointwise if _takes_floats(name)} - {"bitwise_and"} <= covered
    assert all(has_scalar_meaning(lookup(name)) for name in pointwise)
