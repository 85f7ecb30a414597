"""propagate_constant's skip_propagate: broadcasts over less memory than they cover (and what reads them
through contiguous or views) stay views, other constants fold; unpack_int4 never folds."""

from __future__ import annotations

import pytest

from mgxir.passes.base import PassContext
from mgxir.passes.propagate_constant import ConstantAnalysis, PropagateConstant
from mgxir.text.parser import parse_program
from mgxir.verifier import verify

PARAMS = 'module: "main"\nx = @param:x -> float_type, {2, 3}, {3, 1}\ny = @param:y -> float_type, {1, 3}, {3, 1}\n'
SCALAR = "@1 = @literal{2} -> float_type, {1}, {0}\n"
WIDE = "@2 = multibroadcast[out_lens={2, 3},out_dyn_dims={}](@1) -> float_type, {2, 3}, {0, 0}\n"
ADD_X = "@9 = add(x,@8) -> float_type, {2, 3}, {3, 1}\n@10 = @return(@9)\n"
ADD_Y = "@9 = add(y,@8) -> float_type, {1, 3}, {3, 1}\n@10 = @return(@9)\n"


@pytest.mark.parametrize(
    ("body", "folded"),
    [
        # a contiguous of a broadcast scalar stays a broadcast
        (SCALAR + WIDE + "@8 = contiguous(@2) -> float_type, {2, 3}, {3, 1}\n" + ADD_X, 0),
        # a computation that reads a broadcast folds
        (
            SCALAR
            + WIDE
            + "@3 = @literal{1, 2, 3, 4, 5, 6} -> float_type, {2, 3}, {3, 1}\n"
            + "@8 = add(@2,@3) -> float_type, {2, 3}, {3, 1}\n"
            + ADD_X,
            1,
        ),
        # a broadcast that covers no more elements than it reads folds
        (
            "@1 = @literal{1, 2, 3} -> float_type, {3}, {1}\n"
            + "@8 = multibroadcast[out_lens={1, 3},out_dyn_dims={}](@1) -> float_type, {1, 3}, {0, 1}\n"
            + ADD_Y,
            1,
        ),
        # a view of a literal that is itself a broadcast over less memory stays a view
        (
            "@1 = @literal{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3} -> float_type, {4, 3}, {0, 1}\n"
            + "@8 = slice[axes={0},starts={0},ends={1}](@1) -> float_type, {1, 3}, {0, 1}\n"
            + ADD_Y,
            0,
        ),
        # and one of a literal whose broadcast covers no more elements folds
        (
            "@1 = @literal{1, 2, 3} -> float_type, {1, 3}, {0, 1}\n"
            + "@8 = slice[axes={1},starts={0},ends={3}](@1) -> float_type, {1, 3}, {0, 1}\n"
            + ADD_Y,
            1,
        ),
        # unpack_int4 is never folded
        (
            "@1 = @literal{1, 2, 3} -> int8_type, {1, 3}, {3, 1}\n"
            + "@2 = unpack_int4(@1) -> int8_type, {1, 6}, {6, 1}\n"
            + "z = @param:z -> int8_type, {1, 6}, {6, 1}\n"
            + "@8 = add(z,@2) -> int8_type, {1, 6}, {6, 1}\n@9 = @return(@8)\n",
            0,
        ),
    ],
)
def test_broadcasts_stay_views(body: str, folded: int) -> None:
    program = parse_program(PARAMS + body)
    context = PassContext()
    PropagateConstant().apply(program, context)
    verify(program)
    assert context.statistics["instructions folded"] == folded


def test_main_only_leaves_the_branches_alone() -> None:
    source = (
        'module: "main"\nx = @param:x -> float_type, {2}, {1}\nc = @param:c -> bool_type, {1}, {0}\n'
        "@2 = if(c), [then, else] -> [float_type, {2}, {1}]\n"
        "@3 = get_tuple_elem[index=0](@2) -> float_type, {2}, {1}\n@4 = @return(@3)\n\n"
    )
    for branch in ("then", "else"):
        source += (
            f'module: "{branch}"\n{branch}:@0 = @literal{{1, 2}} -> float_type, {{2}}, {{1}}\n'
            f"{branch}:@1 = neg({branch}:@0) -> float_type, {{2}}, {{1}}\n"
            f"{branch}:@2 = add(x,{branch}:@1) -> float_type, {{2}}, {{1}}\n{branch}:@3 = @return({branch}:@2)\n\n"
        )
    for main_only, folded in ((True, 0), (False, 2)):
        program = parse_program(source)
        context = PassContext(main_only=main_only)
        PropagateConstant().apply(program, context)
        assert context.statistics["instructions folded"] == folded


SIX = "@1 = @literal{1, 2, 3, 4, 5, 6} -> float_type, {2, 3}, {3, 1}\n"
NEG_ABS = "@2 = neg(@1) -> float_type, {2, 3}, {3, 1}\n@8 = abs(@2) -> float_type, {2, 3}, {3, 1}\n"


@pytest.mark.parametrize(
    ("body", "skip_ops", "folded"),
    [
        # an elided literal has no values to fold
        ("@1 = @literal{ ... } -> float_type, {2, 3}, {3, 1}\n@8 = neg(@1) -> float_type, {2, 3}, {3, 1}\n", "", 0),
        # capture has a side effect
        (SIX + "@8 = capture[ins_index=0](@1) -> float_type, {2, 3}, {3, 1}\n", "", 0),
        # skip_ops is a comma-separated list
        (SIX + "@2 = neg(@1) -> float_type, {2, 3}, {3, 1}\n@8 = abs(@2) -> float_type, {2, 3}, {3, 1}\n", "abs", 1),
        (
            SIX + "@2 = neg(@1) -> float_type, {2, 3}, {3, 1}\n@8 = abs(@2) -> float_type, {2, 3}, {3, 1}\n",
            "abs,neg",
            0,
        ),
    ],
)
def test_what_is_not_folded(body: str, skip_ops: str, folded: int) -> None:
    program = parse_program(PARAMS + body + ADD_X)
    context = PassContext()
    PropagateConstant(skip_ops=skip_ops).apply(program, context)
    verify(program)
    assert context.statistics["instructions folded"] == folded


def test_a_folded_slice_becomes_a_standard_literal() -> None:
    program = parse_program(
        PARAMS
        + "@1 = @literal{1, 2, 3, 4, 5, 6, 7, 8} -> float_type, {2, 4}, {4, 1}\n"
        + "@8 = slice[axes={1},starts={1},ends={4}](@1) -> float_type, {2, 3}, {4, 1}\n"
        + ADD_X
    )
    PropagateConstant().apply(program, PassContext())
    verify(program)
    folded = next(ins for ins in program.main if ins.is_literal and ins.shape.lens == (2, 3))
    assert folded.shape.strides == (3, 1)
    assert folded.literal.data.tolist() == [[2, 3, 4], [6, 7, 8]]


POINTWISE_OVER_A_LITERAL = """module: "main"
x = @param:x -> float_type, {2}, {1}
@1 = @literal{1, 2} -> float_type, {2}, {1}
@2 = pointwise(@1), [main:pointwise0] -> float_type, {2}, {1}
@3 = add(x,@2) -> float_type, {2}, {1}
@4 = @return(@3)

module: "main:pointwise0"
main:pointwise0:x0 = @param:x0 -> float_type, {1}, {0}
main:pointwise0:@1 = neg(main:pointwise0:x0) -> float_type, {1}, {0}
main:pointwise0:@2 = @return(main:pointwise0:@1)
"""


def test_module_calls_are_not_constants() -> None:
    program = parse_program(POINTWISE_OVER_A_LITERAL)
    context = PassContext()
    PropagateConstant().apply(program, context)
    assert "instructions folded" not in context.statistics
    assert [ins.op.name for ins in program.main][2] == "pointwise"


def test_constant_analysis_answers_true_or_false() -> None:
    program = parse_program(
        PARAMS
        + SIX
        + "@2 = neg(@1) -> float_type, {2, 3}, {3, 1}\n"
        + "@3 = neg(x) -> float_type, {2, 3}, {3, 1}\n"
        + "@4 = capture[ins_index=0](@1) -> float_type, {2, 3}, {3, 1}\n"
        + "@5 = undefined -> float_type, {2, 3}, {3, 1}\n"
        + "@6 = add(@2,@3) -> float_type, {2, 3}, {3, 1}\n"
        + "@7 = @return(@6)\n"
    )
    x, _, literal, neg_literal, neg_x, capture, undefined, add, _ = list(program.main)
    constant = ConstantAnalysis()
    assert constant(add) is False  # asked first: its inputs are answered on the way
    assert constant(neg_literal) is True and constant(literal) is True
    for ins in (x, neg_x, capture, undefined):
        assert constant(ins) is False


def test_a_dynamic_result_is_constant_but_has_no_value_to_fold() -> None:
    program = parse_program(
        'module: "main"\n@0 = @literal{1, 2, 3} -> float_type, {3}, {1}\n'
        "@1 = neg(@0) -> dynamic, float_type, {[1..4]}\n@2 = @return(@1)\n"
    )
    _, dynamic, _ = list(program.main)
    assert ConstantAnalysis()(dynamic) is False
    assert ConstantAnalysis(need_values=False)(dynamic) is True
