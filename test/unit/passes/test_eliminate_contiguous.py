"""eliminate_contiguous: which users take the uncopied input (and which must keep the copy), the
second round for split slices, and its statistics."""

from __future__ import annotations

from mgxir.passes.base import PassContext
from mgxir.passes.eliminate_contiguous import EliminateContiguous
from mgxir.text.parser import parse_program
from mgxir.verifier import verify

X = "x = @param:x -> float_type, {2, 3}, {3, 1}\n"
Y = "y = @param:y -> float_type, {3, 2}, {2, 1}\n"
# @2 copies the transposed x
COPY = (
    "@1 = transpose[permutation={1, 0}](x) -> float_type, {3, 2}, {1, 3}\n"
    "@2 = contiguous(@1) -> float_type, {3, 2}, {2, 1}\n"
)


def _eliminate(body: str) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Each instruction's arguments by operator name, and the statistics."""
    program = parse_program('module: "main"\n' + body)
    names = dict(zip(program.main, [line.split(" = ")[0] for line in body.splitlines()], strict=True))
    context = PassContext()
    EliminateContiguous().apply(program, context)
    verify(program)
    args = {names[i]: [a.op.name for a in i.args] for i in program.main if i in names}
    return args, dict(context.statistics)


def test_a_user_whose_layout_turns_standard_takes_the_input() -> None:
    body = X + COPY + "@3 = transpose[permutation={1, 0}](@2) -> float_type, {2, 3}, {1, 2}\n@4 = @return(@3)\n"
    args, statistics = _eliminate(body)
    assert args["@3"] == ["transpose"] and statistics == {"contiguous bypassed": 1}


def test_the_return_and_unknown_ops_keep_their_copy() -> None:
    args, statistics = _eliminate(X + COPY + "@3 = @return(@2)\n")
    assert args["@3"] == ["contiguous"] and statistics == {}
    args, statistics = _eliminate(X + COPY + "@3 = foo(@2) -> float_type, {3, 2}, {2, 1}\n@4 = @return(@3)\n")
    assert args["@3"] == ["contiguous"] and statistics == {}


def test_a_users_user_is_checked_with_the_changed_shape_only() -> None:
    # neg(@1) keeps the transposed layout, so add sees it next to y's standard layout: a standard result
    body = X + Y + COPY + "@3 = neg(@2) -> float_type, {3, 2}, {2, 1}\n"
    body += "@4 = add(@3,y) -> float_type, {3, 2}, {2, 1}\n@5 = @return(@4)\n"
    args, statistics = _eliminate(body)
    assert args["@3"] == ["transpose"] and statistics == {"contiguous bypassed": 1}


def test_one_user_that_cannot_take_the_layout_keeps_the_copy() -> None:
    # neg(@1) stays transposed; of its users transpose turns standard, but foo cannot take it
    body = X + COPY + "@3 = neg(@2) -> float_type, {3, 2}, {2, 1}\n"
    body += "@4 = foo(@3) -> float_type, {3, 2}, {2, 1}\n"
    body += "@5 = transpose[permutation={1, 0}](@3) -> float_type, {2, 3}, {1, 2}\n@6 = @return(@4,@5)\n"
    args, statistics = _eliminate(body)
    assert args["@3"] == ["contiguous"] and statistics == {}


def test_each_argument_is_tried_and_only_the_copy_takes_its_source_shape() -> None:
    body = X + Y + COPY + "@3 = add(y,@2) -> float_type, {3, 2}, {2, 1}\n@4 = @return(@3)\n"
    args, statistics = _eliminate(body)
    assert args["@3"] == ["@param", "transpose"] and statistics == {"contiguous bypassed": 1}


def test_dead_code_is_skipped_and_later_users_still_bypassed() -> None:
    body = X + COPY + "@3 = neg(@2) -> float_type, {3, 2}, {2, 1}\n"
    body += "@4 = transpose[permutation={1, 0}](@2) -> float_type, {2, 3}, {1, 2}\n@5 = @return(@4)\n"
    args, statistics = _eliminate(body)
    assert args["@3"] == ["contiguous"] and args["@4"] == ["transpose"]
    assert statistics == {"contiguous bypassed": 1}


def test_split_slices_are_bypassed_in_the_second_round() -> None:
    body = X + "@1 = contiguous(x) -> float_type, {2, 3}, {3, 1}\n"
    body += "@2 = slice[axes={0},starts={0},ends={1}](@1) -> float_type, {1, 3}, {3, 1}\n"
    body += "@3 = slice[axes={0},starts={1},ends={2}](@1) -> float_type, {1, 3}, {3, 1}\n"
    body += "@4 = add(@2,@3) -> float_type, {1, 3}, {3, 1}\n@5 = @return(@4)\n"
    args, statistics = _eliminate(body)
    assert args["@2"] == args["@3"] == ["@param"] and statistics == {"contiguous bypassed": 2}


def test_a_kept_copy_of_a_constant_is_folded_and_counted() -> None:
    body = "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}\n"
    body += "@1 = transpose[permutation={1, 0}](@0) -> float_type, {2, 2}, {1, 2}\n"
    body += "@2 = contiguous(@1) -> float_type, {2, 2}, {2, 1}\n"
    body += "@3 = neg(@2) -> float_type, {2, 2}, {2, 1}\n"
    args, statistics = _eliminate(body)
    assert args["@3"] == ["@literal"] and statistics == {"contiguous of a constant folded": 1}


def test_a_user_whose_shape_rule_refuses_the_layout_keeps_the_copy() -> None:
    # reshape_lazy (a view) needs a standard input: directly, and as the user of a user
    body = X + COPY + "@3 = reshape_lazy[dims={6}](@2) -> float_type, {6}, {1}\n@4 = @return(@3)\n"
    args, statistics = _eliminate(body)
    assert args["@3"] == ["contiguous"] and statistics == {}
    body = X + COPY + "@3 = neg(@2) -> float_type, {3, 2}, {2, 1}\n"
    body += "@4 = reshape_lazy[dims={6}](@3) -> float_type, {6}, {1}\n@5 = @return(@4)\n"
    args, statistics = _eliminate(body)
    assert args["@3"] == ["contiguous"] and statistics == {}


def test_a_split_slice_waits_for_the_copy_of_a_constant_to_be_folded() -> None:
    # the slice shares the copy with a neg that cannot take the layout: the first round folds the copy
    # into a literal, which the slice then reads too
    body = "@0 = @literal{1, 2, 3, 4, 5, 6} -> float_type, {2, 3}, {3, 1}\n"
    body += "@1 = transpose[permutation={1, 0}](@0) -> float_type, {3, 2}, {1, 3}\n"
    body += "@2 = contiguous(@1) -> float_type, {3, 2}, {2, 1}\n"
    body += "@3 = slice[axes={1},starts={0},ends={1}](@2) -> float_type, {3, 1}, {2, 1}\n"
    body += "@4 = contiguous(@3) -> float_type, {3, 1}, {1, 1}\n"
    body += "@5 = neg(@2) -> float_type, {3, 2}, {2, 1}\n@6 = @return(@4,@5)\n"
    args, statistics = _eliminate(body)
    assert args["@3"] == args["@5"] == ["@literal"] and args["@6"] == ["contiguous", "neg"]
    assert statistics == {"contiguous of a constant folded": 1}


def test_a_dynamic_result_keeps_the_copy() -> None:
    body = "x = @param:x -> dynamic, float_type, {[1..4], 3}\n"
    body += "@1 = contiguous(x) -> dynamic, float_type, {[1..4], 3}\n"
    body += "@2 = neg(@1) -> dynamic, float_type, {[1..4], 3}\n@3 = @return(@2)\n"
    args, statistics = _eliminate(body)
    assert args["@2"] == ["contiguous"] and statistics == {}


def test_a_pointwise_call_takes_the_input_when_its_result_stays_standard() -> None:
    main = X + Y + COPY + "@3 = pointwise(y,@2), [main:pointwise0] -> float_type, {3, 2}, {2, 1}\n@4 = @return(@3)\n"
    body = (
        'module: "main:pointwise0"\n'
        "main:pointwise0:x0 = @param:x0 -> float_type, {1}, {0}\n"
        "main:pointwise0:x1 = @param:x1 -> float_type, {1}, {0}\n"
        "main:pointwise0:@2 = add(main:pointwise0:x0,main:pointwise0:x1) -> float_type, {1}, {0}\n"
        "main:pointwise0:@3 = @return(main:pointwise0:@2)\n"
    )
    program = parse_program('module: "main"\n' + main + "\n" + body)
    context = PassContext()
    EliminateContiguous().apply(program, context)
    verify(program)
    call = list(program.main)[4]
    assert [a.op.name for a in call.args] == ["@param", "transpose"]
    assert context.statistics == {"contiguous bypassed": 1}
