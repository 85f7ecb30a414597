"""optimize_module: a second round after the constant folding of the first, statistics named by pass,
and what `run_and_report_change` reports."""

from __future__ import annotations

from mgxir.passes.base import PassContext
from mgxir.passes.dead_code_elimination import DeadCodeElimination
from mgxir.passes.eliminate_common_subexpression import EliminateCommonSubexpression
from mgxir.passes.optimize_module import OptimizeModule, run_and_report_change
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program

X = 'module: "main"\nx = @param:x -> float_type, {2}, {1}\n'
# 0.5 + 0.5 folds to 1 in the first round's propagate_constant; the multiplication by it goes in the second
FOLD_THEN_SIMPLIFY = X + (
    "@1 = @literal{0.5, 0.5} -> float_type, {2}, {1}\n"
    "@2 = add(@1,@1) -> float_type, {2}, {1}\n"
    "@3 = mul(x,@2) -> float_type, {2}, {1}\n"
    "@4 = neg(@3) -> float_type, {2}, {1}\n"
    "@5 = @return(@4)\n"
)
NEG_X = X + "@1 = neg(x) -> float_type, {2}, {1}\n@2 = @return(@1)\n"


def test_what_the_first_round_folds_the_second_simplifies() -> None:
    program = parse_program(FOLD_THEN_SIMPLIFY)
    context = PassContext()
    OptimizeModule().apply(program, context)
    assert print_program(program) == print_program(parse_program(NEG_X))
    assert dict(context.statistics) == {
        "propagate_constant: instructions folded": 1,
        "dead_code_elimination: instructions removed": 2,
        "simplify_algebra: find_unit_ops applied": 1,
        "simplify_algebra: instructions removed": 2,
    }


def test_a_common_subexpression_alone_is_merged() -> None:
    source = X + (
        "@1 = neg(x) -> float_type, {2}, {1}\n@2 = neg(x) -> float_type, {2}, {1}\n"
        "@3 = add(@1,@2) -> float_type, {2}, {1}\n@4 = @return(@3)\n"
    )
    program = parse_program(source)
    context = PassContext()
    OptimizeModule().apply(program, context)
    assert [i.op.name for i in program.main] == ["@param", "neg", "add", "@return"]
    assert context.statistics["eliminate_common_subexpression: instructions merged"] == 1


def test_run_and_report_change_says_whether_any_pass_counted() -> None:
    passes = [EliminateCommonSubexpression(), DeadCodeElimination()]
    program = parse_program(NEG_X)
    context = PassContext()
    assert run_and_report_change([], program.main, context) is False
    assert run_and_report_change(passes, program.main, context) is False
    assert dict(context.statistics) == {}
    program = parse_program(NEG_X.replace("@2 = @return(@1)", "@2 = tanh(x) -> float_type, {2}, {1}\n@3 = @return(@1)"))
    assert run_and_report_change([*passes, EliminateCommonSubexpression()], program.main, context) is True
    assert dict(context.statistics) == {"dead_code_elimination: instructions removed": 1}


def test_the_inner_loop_repeats_while_it_changes() -> None:
    # simplify_algebra drops the multiplication by one only after simplify_reshapes ran; the transposes
    # it leaves back to back cancel in the next iteration
    source = (
        'module: "main"\nx = @param:x -> float_type, {2, 3}, {3, 1}\n'
        "@1 = transpose[permutation={1, 0}](x) -> float_type, {3, 2}, {1, 3}\n"
        "@2 = @literal{1} -> float_type, {1}, {0}\n"
        "@3 = multibroadcast[out_lens={3, 2},out_dyn_dims={}](@2) -> float_type, {3, 2}, {0, 0}\n"
        "@4 = mul(@1,@3) -> float_type, {3, 2}, {1, 3}\n"
        "@5 = transpose[permutation={1, 0}](@4) -> float_type, {2, 3}, {3, 1}\n"
        "@6 = neg(@5) -> float_type, {2, 3}, {3, 1}\n@7 = @return(@6)\n"
    )
    program = parse_program(source)
    OptimizeModule().apply(program, PassContext())
    assert [i.op.name for i in program.main] == ["@param", "neg", "@return"]
