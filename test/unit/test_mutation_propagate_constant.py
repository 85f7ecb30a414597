"""propagate_constant's skip_propagate: broadcasts over less memory than they cover (and what reads them
through contiguous or views) stay views, other constants fold; unpack_int4 never folds."""

from __future__ import annotations

import pytest

from mgxir.passes.base import PassContext
from mgxir.passes.propagate_constant import PropagateConstant
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
