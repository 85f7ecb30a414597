"""The kernel plan (mgxir/analysis/kernel_plan.py): what it says about fused_reduce and pointwise
modules as MIGraphX's fusion makes them, and what it refuses."""

from __future__ import annotations

import pytest

from mgxir import parse, run_passes
from mgxir.analysis.kernel_plan import StepKind, Unplannable, plan_body, plan_reduce
from mgxir.ir.dtype import DType
from mgxir.ir.program import Program


def _fused(text: str, op: str) -> tuple[Program, object]:
    program = parse('module: "main"\n' + text)
    run_passes(program, "rewrite_reduce,fuse")
    found = [ins for m in program.reachable_modules() for ins in m if ins.op.defn.name == op]
    assert len(found) == 1, program
    return program, found[0]


SOFTMAX = """
x = @param:x -> half_type, {4, 8}
@1 = softmax[axis=1](x)
@2 = @return(@1)
"""


def test_softmax_body() -> None:
    """max, then exp(x - max), its sum, the quotient: two passes over the row, element values
    (the parameter, x - max, exp, the quotient) and row values (the reductions, their broadcasts)."""
    _, ins = _fused(SOFTMAX, "fused_reduce")
    plan = plan_reduce(ins.module_args[0], ins.op["axes"], [a.shape for a in ins.args], ins.shape)
    assert plan.lens == (4, 8) and plan.axes == (1,) and plan.kept == (0,)
    assert (plan.rows, plan.row_length, plan.elements) == (4, 8, 32)
    assert [r.reducer.combine for r in plan.reductions] == ["max", "sum"]
    assert [r.level for r in plan.reductions] == [1, 2] and plan.passes == (1, 2)
    # half folds in float, from the identities -inf and 0
    assert [(r.accumulator, r.identity) for r in plan.reductions] == [
        (DType.float, float("-inf")),
        (DType.float, 0),
    ]
    assert plan.is_element_value(plan.result)
    for r in plan.reductions:
        assert not plan.step(r.instruction).per_element and plan.is_element_value(r.source)
    views = [s for s in plan.steps if s.kind is StepKind.VIEW]
    assert views and all(not s.per_element for s in views)  # broadcasts of the reductions
    assert plan.step(plan.result).level == 2
    # the quotient needs x - max, exp and itself: every element value but the parameter
    needed = plan.needed_for(plan.result)
    assert plan.result in [s.instruction for s in needed] and all(s.per_element for s in needed)
    assert plan.output.strides == (8, 1) and plan.collapsed(plan.axes) == ([8], [[1], [1]])


@pytest.mark.parametrize(
    ("op", "t", "accumulator", "identity"),
    [
        ("reduce_sum", DType.int8, DType.int64, 0),
        ("reduce_prod", DType.uint8, DType.uint64, 1),
        ("reduce_max", DType.uint32, DType.uint64, 0),
        ("reduce_min", DType.uint64, DType.uint64, 2**64 - 1),
        ("reduce_min", DType.int32, DType.int64, 2**63 - 1),
        ("reduce_max", DType.double, DType.double, float("-inf")),
        ("reduce_any", DType.float, DType.int32, 0),
        ("reduce_all", DType.bool, DType.int32, 1),
    ],
)
def test_accumulators_and_identities(op: str, t: DType, accumulator: DType, identity: float) -> None:
    """Integers fold in 64 bits (the reference's sums wrap once, at the end); any/all fold 0/1."""
    text = f"x = @param:x -> {t.type_name}, {{3, 5}}\n@1 = {op}[axes={{1}}](x)\n@2 = @return(@1)\n"
    _, ins = _fused(text, "fused_reduce")
    plan = plan_reduce(ins.module_args[0], ins.op["axes"], [a.shape for a in ins.args], ins.shape)
    (r,) = plan.reductions
    assert (r.accumulator, r.identity) == (accumulator, identity)
    assert not plan.is_element_value(plan.result)


def test_transposed_input_strides() -> None:
    text = """
x = @param:x -> float_type, {6, 4}
@1 = transpose[permutation={1, 0}](x)
@2 = reduce_sum[axes={1}](@1)
@3 = @return(@2)
"""
    _, ins = _fused(text, "fused_reduce")
    plan = plan_reduce(ins.module_args[0], ins.op["axes"], [a.shape for a in ins.args], ins.shape)
    assert plan.inputs[0].strides == (1, 4)
    assert plan.output.strides == (1, 0)  # the reduced output is broadcast along the row


def test_refusals() -> None:
    _, ins = _fused(SOFTMAX, "fused_reduce")
    module, shapes = ins.module_args[0], [a.shape for a in ins.args]
    with pytest.raises(Unplannable, match="parameters for 2 inputs"):
        plan_reduce(module, ins.op["axes"], shapes * 2, ins.shape)
    with pytest.raises(Unplannable, match="over other axes"):
        plan_reduce(module, [0], shapes, ins.shape)


def test_pointwise_body_binds_parameters_by_name() -> None:
    text = """
a = @param:a -> float_type, {2, 3}
b = @param:b -> float_type, {2, 3}
@1 = sub(b,a)
@2 = relu(@1)
@3 = @return(@2)
"""
    _, ins = _fused(text, "pointwise")
    plan = plan_body(ins.module_args[0])
    assert [p.param_name for p in plan.parameters] == sorted(p.param_name for p in plan.parameters)
    assert [s.instruction.op.name for s in plan.steps] == ["sub", "relu"]
    assert [s.kind for s in plan.steps] == [StepKind.OP, StepKind.OP]
    assert plan.results == (plan.steps[-1].instruction,)
