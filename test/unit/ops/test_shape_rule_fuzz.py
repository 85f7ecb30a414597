"""Every registered operator's shape rule, given random attributes and input shapes, returns a shape
(or None) or raises ShapeError, the user error the verifier reports at the instruction: never
IndexError, KeyError, ZeroDivisionError or another exception, which the verifier now reports as an
internal error (issue 24: it used to turn them into user errors, hiding bugs in the rules)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mgxir.drivers.common import register_target_ops
from mgxir.ir.attributes import (
    BoolKind,
    DynamicDimsKind,
    EnumKind,
    FloatKind,
    FloatListKind,
    IntKind,
    IntListKind,
    OptionalKind,
    ShapeKind,
    StringKind,
    TypeKind,
)
from mgxir.ir.dtype import DType
from mgxir.ir.operation import OpDef, Operation, ShapeError
from mgxir.ir.registry import all_ops
from mgxir.ir.shape import DynamicDimension, Shape
from mgxir.ops import register_all_ops

register_all_ops()
# the targets' operators too (gpu::gemm, ...), whatever other tests have imported before this one
register_target_ops()

DTYPES = [DType.float, DType.half, DType.int64, DType.int32, DType.bool, DType.uint8, DType.int8]
SMALL = st.integers(-3, 6)
EDGE = st.sampled_from([0, -1, 1 << 31, -(1 << 40), 1 << 62])
INTS = st.one_of(SMALL, SMALL, SMALL, EDGE)


@st.composite
def shapes(draw: Any) -> Shape:
    dtype = draw(st.sampled_from(DTYPES))
    if draw(st.integers(0, 9)) == 0:
        dims = draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), min_size=1, max_size=4))
        return Shape.dynamic(dtype, [DynamicDimension(lo, max(lo, hi)) for lo, hi in dims])
    lens = draw(st.lists(st.integers(0, 5), min_size=0, max_size=5))
    if draw(st.booleans()):
        return Shape.make(dtype, lens)
    strides = draw(st.lists(st.integers(0, 8), min_size=len(lens), max_size=len(lens)))
    return Shape.make(dtype, lens, strides)


KINDS_DRAWN = (
    OptionalKind,
    EnumKind,
    IntKind,
    BoolKind,
    FloatKind,
    StringKind,
    IntListKind,
    FloatListKind,
    TypeKind,
    ShapeKind,
)


def _values(kind: Any) -> st.SearchStrategy[Any]:
    if isinstance(kind, OptionalKind):
        return st.one_of(st.none(), _values(kind.inner))
    if isinstance(kind, EnumKind):
        return st.integers(0, len(kind.words) - 1)
    table: dict[type, st.SearchStrategy[Any]] = {
        IntKind: INTS,
        BoolKind: st.booleans(),
        FloatKind: st.one_of(st.floats(-4, 4), st.sampled_from([0.0, float("nan"), float("inf")])),
        StringKind: st.sampled_from(["", "nearest", "linear", "NCHW", "none", "x"]),
        IntListKind: st.lists(INTS, max_size=5).map(tuple),
        FloatListKind: st.lists(st.floats(-4, 4), max_size=5).map(tuple),
        TypeKind: st.sampled_from(DTYPES),
        ShapeKind: shapes(),
        DynamicDimsKind: st.just(()),
    }
    return table.get(type(kind), st.nothing())


@st.composite
def operations(draw: Any, defn: OpDef) -> Operation:
    values = {
        a.name: draw(_values(a.kind))
        for a in defn.attributes
        if type(a.kind) in KINDS_DRAWN and draw(st.integers(0, 2)) == 0
    }
    return defn.make(**values)


def _rules() -> list[str]:
    return sorted(
        name
        for name, defn in all_ops().items()
        if not defn.is_opaque and not defn.is_builtin and defn.module_arity[0] == 0 and defn.shape is not OpDef.shape
    )


# examples per operator: a fixed set in CI, MGXIR_SHAPE_RULE_EXAMPLES=N draws N new ones each run
LONG = "MGXIR_SHAPE_RULE_EXAMPLES" in os.environ
EXAMPLES = int(os.environ.get("MGXIR_SHAPE_RULE_EXAMPLES", "25"))


@pytest.mark.parametrize("name", _rules())
def test_a_shape_rule_raises_only_shape_errors(name: str) -> None:
    defn = all_ops()[name]
    lo, hi = defn.arity
    most = min(hi if hi is not None else lo + 3, lo + 3)

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=not LONG)
    @given(
        op=operations(defn), inputs=st.integers(lo, most).flatmap(lambda n: st.lists(shapes(), min_size=n, max_size=n))
    )
    def check(op: Operation, inputs: list[Shape]) -> None:
        try:
            result = defn.shape(op, inputs, [])
        except ShapeError:
            return
        assert result is None or isinstance(result, Shape)

    check()


NCHW = Shape.make(DType.float, (1, 1, 4, 4))
W22 = Shape.make(DType.float, (1, 1, 2, 2))
DYN_NCHW = Shape.dynamic(
    DType.float, [DynamicDimension(1, 2), DynamicDimension(1, 1), DynamicDimension(4, 8), DynamicDimension(4, 4)]
)
RANK0 = Shape.make(DType.float, ())
F4 = Shape.make(DType.float, (4,))

# each was a ZeroDivisionError, IndexError or StopIteration inside the rule (an internal error once
# the verifier stopped turning those into user errors)
REFUSED = [
    ("pooling", {"stride": (0, 0), "lengths": (2, 2)}, [NCHW], "pooling: stride {0, 0} has a 0"),
    ("pooling", {"stride": (0, 1), "lengths": (2, 2)}, [DYN_NCHW], "pooling: stride {0, 1} has a 0"),
    ("pooling", {"lengths": (2,)}, [DYN_NCHW], "pooling: lengths, dilations and padding do not fit 2 spatial"),
    ("convolution", {"stride": (1, 0)}, [NCHW, W22], "convolution: stride {1, 0} has a 0"),
    ("convolution", {"stride": (0, 0), "padding_mode": 1}, [DYN_NCHW, W22], "convolution: stride {0, 0} has a 0"),
    ("im2col", {"stride": (0, 1)}, [NCHW, W22], "im2col: stride {0, 1} has a 0"),
    ("im2col", {"stride": (1,)}, [NCHW, W22], "im2col: padding, stride and dilation need 2 values"),
    ("step", {"axes": (0,), "steps": (0,)}, [F4], "step: steps {0} have a 0"),
    ("broadcast", {"axis": -1, "out_lens": ()}, [F4], "broadcast: axis -1 is out of range for output rank 0"),
    ("reshape", {"dims": (0,)}, [RANK0], "reshape: dimension 0 is 0 (the input's), but the input has rank 0"),
    ("unsqueeze", {"axes": (0, 0)}, [F4], "unsqueeze: axes {0, 0} name an axis twice"),
    ("gathernd", {}, [F4, RANK0], "gathernd: the indices need rank 1 or more"),
    ("broadcast_with_dims", {}, [F4, RANK0], "broadcast_with_dims: the dims input must have rank 1 or more"),
]


@pytest.mark.parametrize(("name", "attributes", "inputs", "message"), REFUSED, ids=[r[-1] for r in REFUSED])
def test_rules_refuse_what_divided_by_zero_or_indexed_past_the_end(
    name: str, attributes: dict[str, Any], inputs: list[Shape], message: str
) -> None:
    op = all_ops()[name].make(**attributes)
    with pytest.raises(ShapeError) as refused:
        op.defn.shape(op, inputs, [])
    assert str(refused.value).startswith(message), str(refused.value)


def test_an_unexpected_exception_in_a_rule_is_not_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verifier reported IndexError, KeyError, ValueError, TypeError and ZeroDivisionError from
    a rule as the user's mistake; now only ShapeError is, and a bug in a rule is an internal error."""
    from mgxir.diagnostics import DiagnosticSink, MgxError
    from mgxir.text.parser import parse_program
    from mgxir.verifier import verify

    text = 'module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = neg(x)\n'
    neg = all_ops()["neg"]

    def broken(op: Operation, inputs: Any, modules: Any) -> Shape:
        raise ZeroDivisionError("a bug in the rule")

    monkeypatch.setattr(neg, "shape", broken)
    with pytest.raises(ZeroDivisionError):
        verify(parse_program(text, "p.mgx"), DiagnosticSink())

    def refusing(op: Operation, inputs: Any, modules: Any) -> Shape:
        raise ShapeError("neg: refused")

    monkeypatch.setattr(neg, "shape", refusing)
    with pytest.raises(MgxError, match=r"p\.mgx:3:1: error: neg: refused"):
        verify(parse_program(text, "p.mgx"), DiagnosticSink())
