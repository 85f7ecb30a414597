"""dead_code_elimination and eliminate_common_subexpression, result and statistics exactly (written
against the mutants scripts/mutation.py found surviving the lit cases and the differential runs)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from lit_cases import check_lit_in_process, lit_cases, lit_runs
from simplify_cases import module, params, reprinted, simplified

from mgxir.ir.program import Program
from mgxir.passes import simplify_algebra
from mgxir.passes.base import PassContext
from mgxir.passes.dead_code_elimination import DeadCodeElimination, eliminate_dead_code, remove_unused_modules
from mgxir.passes.eliminate_common_subexpression import EliminateCommonSubexpression
from mgxir.passes.registry import parse_pipeline
from mgxir.passes.simplify_algebra import SimplifyAlgebra
from mgxir.text.parser import parse_program as parse_text
from mgxir.text.printer import print_program
from mgxir.verifier import verify


def parse_program(text: str) -> Program:
    program = parse_text(text)
    verify(program)
    return program


def _lines(program: object) -> list[str]:
    return print_program(program).strip().splitlines()


DEAD_CHAIN = """module: "main"
x = @param:x -> float_type, {2}, {1}
y = @param:y -> float_type, {2}, {1}
@2 = mul(x,y) -> float_type, {2}, {1}
@3 = tanh(@2) -> float_type, {2}, {1}
@4 = capture[ins_index=0](x) -> float_type, {2}, {1}
@5 = sin(x) -> float_type, {2}, {1}
@6 = neg(y) -> float_type, {2}, {1}
"""


def test_dce_removes_a_dead_chain_backwards_and_keeps_params_side_effects_and_the_last() -> None:
    program = parse_program(DEAD_CHAIN)
    context = PassContext()
    DeadCodeElimination().apply(program, context)
    assert _lines(program) == [
        'module: "main"',
        "x = @param:x -> float_type, {2}, {1}",
        "y = @param:y -> float_type, {2}, {1}",
        "@2 = capture[ins_index=0](x) -> float_type, {2}, {1}",
        "@3 = neg(y) -> float_type, {2}, {1}",
    ]
    assert dict(context.statistics) == {"instructions removed": 3}


def test_dce_returns_its_count_and_needs_no_context() -> None:
    program = parse_program(DEAD_CHAIN)
    assert eliminate_dead_code(program.main) == 3
    assert eliminate_dead_code(program.main) == 0
    assert remove_unused_modules(program) == 0


IF_PROGRAM = """module: "main"
x = @param:x -> float_type, {2}, {1}
cond = @param:cond -> bool_type, {1}, {0}
@2 = if(cond), [If_0_if, If_0_else]
@3 = get_tuple_elem[index=0](@2)
@4 = @return(@3)

module: "If_0_if"
If_0_if:@0 = neg(x)
If_0_if:@1 = exp(x)
If_0_if:@2 = @return(If_0_if:@0)

module: "If_0_else"
If_0_else:@0 = exp(x)
If_0_else:@1 = @return(If_0_else:@0)

module: "orphan"
orphan:@0 = @literal{1} -> float_type, {1}, {0}
orphan:@1 = @return(orphan:@0)

module: "orphan2"
orphan2:@0 = @literal{1} -> float_type, {1}, {0}
orphan2:@1 = @return(orphan2:@0)
"""


def test_dce_removes_unreached_modules_and_dead_code_in_submodules() -> None:
    program = parse_program(IF_PROGRAM)
    context = PassContext()
    DeadCodeElimination().apply(program, context)
    assert list(program.modules) == ["main", "If_0_if", "If_0_else"]
    assert "If_0_if:@1 = exp(x)" not in print_program(program)
    assert dict(context.statistics) == {"instructions removed": 1, "modules removed": 2}


def test_dce_removes_nothing_where_nothing_is_dead() -> None:
    program = parse_program(IF_PROGRAM.split('module: "orphan"')[0].replace("If_0_if:@1 = exp(x)\n", ""))
    before = print_program(program)
    context = PassContext()
    DeadCodeElimination().apply(program, context)
    assert print_program(program) == before
    assert not context.statistics


CSE = """module: "main"
x = @param:x -> float_type, {2}, {1}
y = @param:y -> float_type, {2}, {1}
z = @param:z -> float_type, {2}, {1}
@3 = add(x,y) -> float_type, {2}, {1}
@4 = add(x,y) -> float_type, {2}, {1}
@5 = add(x,y) -> float_type, {2}, {1}
@6 = add(x,z) -> float_type, {2}, {1}
@7 = capture[ins_index=0](x) -> float_type, {2}, {1}
@8 = capture[ins_index=0](x) -> float_type, {2}, {1}
@9 = mul(@3,@4) -> float_type, {2}, {1}
@10 = mul(@9,@5) -> float_type, {2}, {1}
@11 = mul(@10,@6) -> float_type, {2}, {1}
@12 = mul(@11,@7) -> float_type, {2}, {1}
@13 = mul(@12,@8) -> float_type, {2}, {1}
@14 = @return(@13)
"""


def test_cse_merges_every_repeat_into_the_first_and_counts_them() -> None:
    program = parse_program(CSE)
    context = PassContext()
    EliminateCommonSubexpression().apply(program, context)
    assert _lines(program)[4:] == [
        "@3 = add(x,y) -> float_type, {2}, {1}",
        "@4 = add(x,z) -> float_type, {2}, {1}",
        "@5 = capture[ins_index=0](x) -> float_type, {2}, {1}",
        "@6 = capture[ins_index=0](x) -> float_type, {2}, {1}",
        "@7 = mul(@3,@3) -> float_type, {2}, {1}",
        "@8 = mul(@7,@3) -> float_type, {2}, {1}",
        "@9 = mul(@8,@4) -> float_type, {2}, {1}",
        "@10 = mul(@9,@5) -> float_type, {2}, {1}",
        "@11 = mul(@10,@6) -> float_type, {2}, {1}",
        "@12 = @return(@11)",
    ]
    assert dict(context.statistics) == {"instructions merged": 2, "instructions removed": 2}


def test_cse_keeps_programs_without_repeats_and_counts_nothing() -> None:
    program = parse_program(DEAD_CHAIN)
    context = PassContext()
    EliminateCommonSubexpression().apply(program, context)
    assert len(_lines(program)) == 8
    assert not context.statistics


TWO_IFS = """module: "main"
x = @param:x -> float_type, {2}, {1}
cond = @param:cond -> bool_type, {1}, {0}
@2 = if(cond), [A, B]
@3 = if(cond), [B, A]
@4 = if(cond), [A, B]
@5 = get_tuple_elem[index=0](@2)
@6 = get_tuple_elem[index=0](@3)
@7 = get_tuple_elem[index=0](@4)
@8 = add(@5,@6)
@9 = add(@8,@7)
@10 = @return(@9)

module: "A"
A:@0 = neg(x)
A:@1 = @return(A:@0)

module: "B"
B:@0 = exp(x)
B:@1 = @return(B:@0)
"""


def test_cse_compares_the_modules_an_instruction_calls() -> None:
    program = parse_program(TWO_IFS)
    context = PassContext()
    EliminateCommonSubexpression().apply(program, context)
    text = print_program(program)
    assert text.count("= if(cond), [A, B]") == 1
    assert text.count("= if(cond), [B, A]") == 1
    assert context.statistics["instructions merged"] == 2  # the second `if` and its get_tuple_elem


def _simplified(body: str) -> tuple[str, dict[str, int]]:
    """simplify_algebra on `main` with x (float {2, 3}) and `body`: the printed result and statistics."""
    program = parse_program('module: "main"\nx = @param:x -> float_type, {2, 3}, {3, 1}\n' + body)
    context = PassContext()
    SimplifyAlgebra().apply(program, context)
    verify(program)
    return print_program(program), {k: v for k, v in context.statistics.items() if k.endswith("applied")}


def _literal(value: str, dtype: str = "float_type") -> str:
    return f"@1 = @literal{{{value}}} -> {dtype}, {{1}}, {{0}}\n@2 = multibroadcast[out_lens={{2, 3}}](@1)\n"


# float32 numbers just off the value: MIGraphX's has_value(0, 0, 0) and has_value(2, 0, 1) say no
OFF_ZERO = "1e-08"
OFF_TWO = repr(float(np.nextafter(np.float32(2), np.float32(3))))


@pytest.mark.parametrize(
    "body",
    [
        _literal(OFF_ZERO) + "@3 = add(x,@2)\n@4 = @return(@3)\n",
        _literal(OFF_ZERO) + "@3 = add(@2,x)\n@4 = @return(@3)\n",
        _literal(OFF_ZERO) + "@3 = sub(x,@2)\n@4 = @return(@3)\n",
        _literal(OFF_ZERO) + "@3 = sub(@2,x)\n@4 = @return(@3)\n",
        _literal(OFF_ZERO) + "@3 = mul(x,@2)\n@4 = @return(@3)\n",
        _literal(OFF_ZERO) + "@3 = div(@2,x)\n@4 = @return(@3)\n",
        _literal(OFF_TWO) + "@3 = pow(x,@2)\n@4 = @return(@3)\n",
        _literal(OFF_ZERO) + "@3 = @literal{0.5} -> float_type, {1}, {0}\n@4 = multibroadcast[out_lens={2, 3}](@3)\n"
        "@5 = dequantizelinear(x,@4,@2)\n@6 = @return(@5)\n",
        "@1 = @literal{1} -> float_type, {1}, {0}\n@2 = multibroadcast[out_lens={2, 3}](@1)\n"
        "@3 = pow(x,@2)\n@4 = @return(@3)\n",
    ],
)
def test_values_just_off_zero_or_two_are_not_simplified(body: str) -> None:
    """A tolerance of 0 means one float step: 1e-8 is not 0 and the float after 2 is not 2."""
    _, statistics = _simplified(body)
    assert not {
        k
        for k in statistics
        if k.split()[0] in ("find_unit_ops", "find_neg_unit_ops", "find_zero_ops", "find_pow2", "eliminate_zero_point")
    }


@pytest.mark.parametrize(
    "body",
    [
        "y = @param:y -> float_type, {2, 3}, {3, 1}\n@2 = div(x,y)\n@3 = @return(@2)\n",
        "y = @param:y -> float_type, {2, 3}, {3, 1}\n@2 = sub(x,y)\n@3 = @return(@2)\n",
        "@1 = recip(x)\n@2 = @return(@1)\n",
        "@1 = sqrt(x)\n@2 = recip(@1)\n@3 = add(@1,@2)\n@4 = @return(@3)\n",
        "@1 = log(x)\n@2 = @return(@1)\n",
        "@1 = neg(x)\n@2 = recip(@1)\n@3 = @return(@2)\n",
        "@1 = exp(x)\n@2 = mul(@1,@1)\n@3 = log(@2)\n@4 = @return(@3)\n",
        "@1 = sin(x)\n@2 = log(@1)\n@3 = @return(@2)\n",
        "@1 = exp(x)\n@2 = div(@1,x)\n@3 = log(@2)\n@4 = @return(@3)\n",
        "@1 = exp(x)\n@2 = div(x,@1)\n@3 = log(@2)\n@4 = @return(@3)\n",
        "@1 = exp(x)\n@2 = div(@1,@1)\n@3 = log(@2)\n@4 = add(@2,@3)\n@5 = @return(@4)\n",
        "y = @param:y -> float_type, {3}, {1}\n@2 = exp(y)\n@3 = multibroadcast[out_lens={2, 3}](@2)\n@4 = exp(x)\n"
        "@5 = div(@4,@3)\n@6 = log(@5)\n@7 = @return(@6)\n",
        "@1 = exp(x)\n@2 = reduce_max[axes={1}](@1)\n@3 = multibroadcast[out_lens={2, 3}](@2)\n@4 = div(@1,@3)\n"
        "@5 = log(@4)\n@6 = @return(@5)\n",
        "@1 = @literal{3} -> float_type, {1}, {0}\n@2 = multibroadcast[out_lens={2, 3}](@1)\n@3 = pow(x,@2)\n"
        "@4 = @return(@3)\n",
        "@1 = @literal{0.5} -> float_type, {1}, {0}\n@2 = multibroadcast[out_lens={2, 3}](@1)\n"
        "@3 = quantizelinear(x,@2)\n@4 = @return(@3)\n",
        "@1 = @literal{0.5} -> float_type, {1}, {0}\n@2 = multibroadcast[out_lens={2, 3}](@1)\n"
        "@3 = @literal{1} -> int8_type, {1}, {0}\n@4 = multibroadcast[out_lens={2, 3}](@3)\n"
        "@5 = quantizelinear(x,@2,@4)\n@6 = @return(@5)\n",
        # find_log_div checks its own root: sin of a quotient of positives is no log
        "y = @param:y -> float_type, {2, 3}, {3, 1}\n@2 = exp(x)\n@3 = exp(y)\n@4 = div(@2,@3)\n@5 = sin(@4)\n"
        "@6 = @return(@5)\n",
        # find_split_transpose and find_split_reshape check their own root: an add of two slices of x, a neg of
        # each contiguous slice
        "@1 = slice[axes={0},starts={0},ends={1}](x)\n@2 = slice[axes={0},starts={1},ends={2}](x)\n@3 = add(@1,@2)\n"
        "@4 = @return(@3)\n",
        "@1 = slice[axes={0},starts={0},ends={1}](x)\n@2 = slice[axes={0},starts={1},ends={2}](x)\n"
        "@3 = contiguous(@1)\n@4 = contiguous(@2)\n@5 = neg(@3)\n@6 = neg(@4)\n@7 = @return(@5,@6)\n",
        # the linear rewrites check their own roots: a relu of a dot is no slice, a max of a broadcast and a
        # constant no convolution, a sub of two convolutions no add
        "y = @param:y -> float_type, {3, 2}, {2, 1}\n@2 = dot(x,y)\n@3 = relu(@2)\n@4 = @return(@3)\n",
        "y = @param:y -> float_type, {3}, {1}\n@2 = multibroadcast[out_lens={2, 3}](y)\n"
        "@3 = @literal{1, 2, 3, 4, 5, 6} -> float_type, {2, 3}, {3, 1}\n@4 = max(@2,@3)\n@5 = @return(@4)\n",
        "y = @param:y -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}\n"
        "z = @param:z -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}\n"
        "@3 = @literal{2} -> float_type, {1, 1, 1, 1}, {1, 1, 1, 1}\n"
        "@4 = @literal{3} -> float_type, {1, 1, 1, 1}, {1, 1, 1, 1}\n"
        "@5 = convolution(y,@3)\n@6 = convolution(z,@4)\n@7 = sub(@5,@6)\n@8 = @return(@7)\n",
        # the constant-add and multiply-add rewrites check their own root: a sub or a max is neither
        "y = @param:y -> float_type, {2, 3}, {3, 1}\n@2 = @literal{1} -> float_type, {1}, {0}\n"
        "@3 = multibroadcast[out_lens={2, 3}](@2)\n@4 = add(x,@3)\n@5 = add(y,@3)\n@6 = sub(@4,@5)\n@7 = @return(@6)\n",
        "@1 = @literal{1} -> float_type, {1}, {0}\n@2 = multibroadcast[out_lens={2, 3}](@1)\n@3 = add(x,@2)\n"
        "@4 = max(@3,@2)\n@5 = @return(@4)\n",
    ],
)
@pytest.mark.parametrize("by_root", [True, False])
def test_rewrites_that_do_not_match_report_nothing(body: str, by_root: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rewrite whose pattern is not there says so (False): no statistics, the program unchanged;
    also when every rewrite is tried on every instruction (each checks its own root)."""
    monkeypatch.setattr(simplify_algebra, "DISPATCH_BY_ROOT", by_root)
    program = parse_program('module: "main"\nx = @param:x -> float_type, {2, 3}, {3, 1}\n' + body)
    before = print_program(program)
    after, statistics = _simplified(body)
    assert statistics == {}
    assert after == before


def test_division_by_a_zero_constant_is_not_a_zero_product() -> None:
    _, statistics = _simplified(_literal("0") + "@3 = div(x,@2)\n@4 = @return(@3)\n")
    assert "find_zero_ops applied" not in statistics
    assert statistics["find_div_const applied"] == 1


def _float32_above_one(steps: int) -> str:
    return repr(float(np.float32(1) + np.float32(steps) * np.finfo(np.float32).eps))


@pytest.mark.parametrize(("op", "sign"), [("mul", ""), ("div", ""), ("mul", "-"), ("div", "-")])
def test_unit_values_within_twenty_float_steps(op: str, sign: str) -> None:
    """has_value(1) and has_value(-1) with MIGraphX's default 10 + 10 * |value| epsilons: 19 steps
    from 1 is 1, 20 steps is not."""
    rewrite = "find_unit_ops" if not sign else "find_neg_unit_ops"
    for steps, matches in ((19, True), (20, False)):
        body = _literal(sign + _float32_above_one(steps)) + f"@3 = {op}(x,@2)\n@4 = @return(@3)\n"
        _, statistics = _simplified(body)
        assert (f"{rewrite} applied" in statistics) == matches, (steps, statistics)


def test_cse_leaves_equal_literals_and_parameters_apart() -> None:
    """Instructions without arguments are distinct values, even two equal literals or `undefined`s."""
    program = parse_program(
        'module: "main"\nx = @param:x -> float_type, {1}, {0}\n@1 = @literal{2} -> float_type, {1}, {0}\n'
        "@2 = @literal{2} -> float_type, {1}, {0}\n@3 = add(@1,@2)\n@4 = add(@3,x)\n"
        "@5 = undefined\n@6 = undefined\n@7 = @return(@4,@5,@6)\n"
    )
    context = PassContext()
    EliminateCommonSubexpression().apply(program, context)
    assert print_program(program).count("@literal{2}") == 2
    assert print_program(program).count("= undefined") == 2
    assert not context.statistics


# a dead `if` whose branch T reads main's @2 and calls `if`s over E (shared with a live `if`) and
# U (named only in T, twice)
DEAD_BRANCHES = """module: "main"
x = @param:x -> float_type, {2}, {1}
c = @param:c -> bool_type, {1}, {0}
@2 = neg(x) -> float_type, {2}, {1}
@3 = if(c), [T, E] -> [float_type, {2}, {1}]
@4 = if(c), [E, E] -> [float_type, {2}, {1}]
@5 = get_tuple_elem[index=0](@4) -> float_type, {2}, {1}
@6 = @return(@5)

module: "T"
T:@0 = tanh(@2) -> float_type, {2}, {1}
T:@1 = if(c), [E, U] -> [float_type, {2}, {1}]
T:@2 = if(c), [U, U] -> [float_type, {2}, {1}]
T:@3 = @return(T:@0)

module: "E"
E:@0 = exp(x) -> float_type, {2}, {1}
E:@1 = @return(E:@0)

module: "U"
U:@0 = abs(x) -> float_type, {2}, {1}
U:@1 = @return(U:@0)
"""


def test_dce_drops_a_dead_ifs_branches_with_the_values_they_read_and_keeps_shared_ones() -> None:
    program = parse_text(DEAD_BRANCHES)
    verify(program)
    context = PassContext()
    assert eliminate_dead_code(program.main, context) == 2  # the dead `if`, then the neg only T read
    assert list(program.modules) == ["main", "E"]
    assert [ins.op.name for ins in program.main] == ["@param", "@param", "if", "get_tuple_elem", "@return"]
    assert context.statistics == {"instructions removed": 2, "modules removed": 2}
    verify(program)


def test_cse_goes_on_past_instructions_with_side_effects() -> None:
    program = parse_program(
        'module: "main"\nx = @param:x -> float_type, {2}, {1}\n'
        "@1 = capture[ins_index=0](x) -> float_type, {2}, {1}\n@2 = foo(x) -> float_type, {2}, {1}\n"
        "@3 = neg(x) -> float_type, {2}, {1}\n@4 = neg(x) -> float_type, {2}, {1}\n"
        "@5 = add(@3,@4) -> float_type, {2}, {1}\n@6 = @return(@5,@1,@2)\n"
    )
    context = PassContext()
    EliminateCommonSubexpression().apply(program, context)
    assert [i.op.name for i in program.main].count("neg") == 1
    assert context.statistics["instructions merged"] == 1


# -- simplify_algebra's broadcast and constant-add rewrites, whole pass: output text, statistics, results


CONV_Q = (
    "@4 = convolution[padding={0, 0, 0, 0},stride={1, 1},dilation={1, 1},group=1,padding_mode=0](q,@1)"
    " -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}"
)

KEPT_BROADCAST = {
    # the convolution is used elsewhere too
    "find_mul_add_leaves_a_convolution_used_twice": module(
        "@0 = @literal{1, 2, 3, 4, 5, 6, 7, 8, 9} -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
        "@1 = @literal{2} -> float_type, {1, 1, 1, 1}, {1, 1, 1, 1}",
        "p = @param:p -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
        "q = @param:q -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
        CONV_Q,
        "@5 = add(p,@4) -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
        "@6 = mul(@0,@5) -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
        "@7 = @return(@6,@4)",
    ),
    # b = y * c is neither constant nor a convolution
    "find_mul_add_leaves_a_sum_of_a_non_constant_product": module(
        "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
        "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
        "p = @param:p -> float_type, {2, 2}, {2, 1}",
        "q = @param:q -> float_type, {2, 2}, {2, 1}",
        "@4 = mul(q,@1) -> float_type, {2, 2}, {2, 1}",
        "@5 = add(p,@4) -> float_type, {2, 2}, {2, 1}",
        "@6 = mul(@0,@5) -> float_type, {2, 2}, {2, 1}",
        "@7 = @return(@6)",
    ),
    # layout of a broadcast matches and is left alone
    "find_inner_broadcast_leaves_layout": module(
        "x = @param:x -> float_type, {3}, {1}",
        "@1 = multibroadcast[out_lens={2, 3},out_dyn_dims={}](x) -> float_type, {2, 3}, {0, 1}",
        "@2 = layout[permutation={1, 0}](@1) -> float_type, {2, 3}, {1, 2}",
        "@3 = @return(@2)",
    ),
    # every axis is some input's own: matched, left alone
    "find_inner_broadcast_leaves_broadcasts_with_no_common_outer_axis": module(
        "a = @param:a -> float_type, {2, 1}, {1, 1}",
        "b = @param:b -> float_type, {1, 3}, {3, 1}",
        "@2 = multibroadcast[out_lens={2, 3},out_dyn_dims={}](a) -> float_type, {2, 3}, {1, 0}",
        "@3 = multibroadcast[out_lens={2, 3},out_dyn_dims={}](b) -> float_type, {2, 3}, {0, 1}",
        "@4 = add(@2,@3) -> float_type, {2, 3}, {3, 1}",
        "@5 = @return(@4)",
    ),
}


@pytest.mark.parametrize("name", KEPT_BROADCAST)
def test_broadcast_rewrites_keep(name: str) -> None:
    text = KEPT_BROADCAST[name]
    assert simplified(text) == (reprinted(text), {})


REWRITTEN_BROADCAST = {
    # a * (x + conv(y, w)) = a * x + a * conv(y, w) for constant a and w
    "find_mul_add_distributes_over_a_convolution_with_constant_weights": (
        module(
            "@0 = @literal{1, 2, 3, 4, 5, 6, 7, 8, 9} -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
            "@1 = @literal{2} -> float_type, {1, 1, 1, 1}, {1, 1, 1, 1}",
            "p = @param:p -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
            "q = @param:q -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
            CONV_Q,
            "@5 = add(p,@4) -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
            "@6 = mul(@0,@5) -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
            "@7 = @return(@6)",
        ),
        module(
            "@0 = @literal{1, 2, 3, 4, 5, 6, 7, 8, 9} -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
            "@1 = @literal{2} -> float_type, {1, 1, 1, 1}, {1, 1, 1, 1}",
            "p = @param:p -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
            "q = @param:q -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
            CONV_Q,
            "@5 = mul(@0,p) -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
            "@6 = mul(@0,@4) -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
            "@7 = add(@5,@6) -> float_type, {1, 1, 3, 3}, {9, 9, 3, 1}",
            "@8 = @return(@7)",
        ),
        {"find_mul_add": 1},
    ),
    "find_mul_add_takes_the_sum_as_either_argument": (
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            "p = @param:p -> float_type, {2, 2}, {2, 1}",
            "@3 = add(p,@1) -> float_type, {2, 2}, {2, 1}",
            "@4 = mul(@0,@3) -> float_type, {2, 2}, {2, 1}",
            "@5 = @return(@4)",
        ),
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            "p = @param:p -> float_type, {2, 2}, {2, 1}",
            "@3 = mul(@0,p) -> float_type, {2, 2}, {2, 1}",
            "@4 = mul(@0,@1) -> float_type, {2, 2}, {2, 1}",
            "@5 = add(@3,@4) -> float_type, {2, 2}, {2, 1}",
            "@6 = @return(@5)",
        ),
        {"find_mul_add": 1},
    ),
    # the first sum is of two constants: the second argument is the one distributed over
    "find_mul_add_skips_a_sum_of_constants_and_takes_the_other": (
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            "@2 = @literal{1, 3, 5, 7} -> float_type, {2, 2}, {2, 1}",
            "p = @param:p -> float_type, {2, 2}, {2, 1}",
            "@4 = add(@0,@1) -> float_type, {2, 2}, {2, 1}",
            "@5 = add(p,@2) -> float_type, {2, 2}, {2, 1}",
            "@6 = mul(@4,@5) -> float_type, {2, 2}, {2, 1}",
            "@7 = @return(@6)",
        ),
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            "@2 = @literal{1, 3, 5, 7} -> float_type, {2, 2}, {2, 1}",
            "p = @param:p -> float_type, {2, 2}, {2, 1}",
            "@4 = add(@0,@1) -> float_type, {2, 2}, {2, 1}",
            "@5 = mul(@4,p) -> float_type, {2, 2}, {2, 1}",
            "@6 = mul(@4,@2) -> float_type, {2, 2}, {2, 1}",
            "@7 = add(@5,@6) -> float_type, {2, 2}, {2, 1}",
            "@8 = @return(@7)",
        ),
        {"find_mul_add": 1},
    ),
    "find_add_lit_broadcast_takes_the_inner_sum_as_either_argument": (
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            "x = @param:x -> float_type, {2, 2}, {2, 1}",
            "@3 = add(x,@1) -> float_type, {2, 2}, {2, 1}",
            "@4 = add(@0,@3) -> float_type, {2, 2}, {2, 1}",
            "@5 = @return(@4)",
        ),
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            "x = @param:x -> float_type, {2, 2}, {2, 1}",
            "@3 = add(@1,@0) -> float_type, {2, 2}, {2, 1}",
            "@4 = add(x,@3) -> float_type, {2, 2}, {2, 1}",
            "@5 = @return(@4)",
        ),
        {"find_add_lit_broadcast": 1},
    ),
    "find_double_add_lit_broadcast_with_one_broadcast_adds_the_constants_as_they_are": (
        module(
            "@0 = @literal{1, 2} -> float_type, {2}, {1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            "x = @param:x -> float_type, {2, 2}, {2, 1}",
            "y = @param:y -> float_type, {2, 2}, {2, 1}",
            "@4 = broadcast[axis=0,out_lens={2, 2}](@0) -> float_type, {2, 2}, {1, 0}",
            "@5 = add(x,@4) -> float_type, {2, 2}, {2, 1}",
            "@6 = add(y,@1) -> float_type, {2, 2}, {2, 1}",
            "@7 = add(@5,@6) -> float_type, {2, 2}, {2, 1}",
            "@8 = @return(@7)",
        ),
        module(
            "@0 = @literal{1, 2} -> float_type, {2}, {1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            "x = @param:x -> float_type, {2, 2}, {2, 1}",
            "y = @param:y -> float_type, {2, 2}, {2, 1}",
            "@4 = broadcast[axis=0,out_lens={2, 2},out_dyn_dims={}](@0) -> float_type, {2, 2}, {1, 0}",
            "@5 = add(@4,@1) -> float_type, {2, 2}, {2, 1}",
            "@6 = add(x,y) -> float_type, {2, 2}, {2, 1}",
            "@7 = add(@6,@5) -> float_type, {2, 2}, {2, 1}",
            "@8 = @return(@7)",
        ),
        {"find_double_add_lit_broadcast": 1},
    ),
    # a broadcast counts as a literal broadcast though its input is not constant
    "find_add_lit_broadcast_takes_broadcasts_of_parameters": (
        module(
            "x = @param:x -> float_type, {2, 2}, {2, 1}",
            "p = @param:p -> float_type, {2}, {1}",
            "q = @param:q -> float_type, {2}, {1}",
            "@3 = broadcast[axis=0,out_lens={2, 2}](p) -> float_type, {2, 2}, {1, 0}",
            "@4 = broadcast[axis=0,out_lens={2, 2}](q) -> float_type, {2, 2}, {1, 0}",
            "@5 = add(x,@3) -> float_type, {2, 2}, {2, 1}",
            "@6 = add(@5,@4) -> float_type, {2, 2}, {2, 1}",
            "@7 = @return(@6)",
        ),
        module(
            "x = @param:x -> float_type, {2, 2}, {2, 1}",
            "p = @param:p -> float_type, {2}, {1}",
            "q = @param:q -> float_type, {2}, {1}",
            "@3 = add(p,q) -> float_type, {2}, {1}",
            "@4 = broadcast[axis=0,out_lens={2, 2},out_dyn_dims={}](@3) -> float_type, {2, 2}, {1, 0}",
            "@5 = add(x,@4) -> float_type, {2, 2}, {2, 1}",
            "@6 = @return(@5)",
        ),
        {"find_add_lit_broadcast": 1, "find_inner_broadcast": 1},
    ),
    "find_inner_broadcast_squeezes_a_single_element_input_of_another_rank": (
        module(
            "a = @param:a -> float_type, {1, 1}, {1, 1}",
            "b = @param:b -> float_type, {3, 4}, {4, 1}",
            "@2 = multibroadcast[out_lens={2, 3, 4},out_dyn_dims={}](a) -> float_type, {2, 3, 4}, {0, 0, 0}",
            "@3 = multibroadcast[out_lens={2, 3, 4},out_dyn_dims={}](b) -> float_type, {2, 3, 4}, {0, 4, 1}",
            "@4 = add(@2,@3) -> float_type, {2, 3, 4}, {12, 4, 1}",
            "@5 = @return(@4)",
        ),
        module(
            "a = @param:a -> float_type, {1, 1}, {1, 1}",
            "b = @param:b -> float_type, {3, 4}, {4, 1}",
            "@2 = squeeze[axes={}](a) -> float_type, {1}, {0}",
            "@3 = multibroadcast[out_lens={3, 4},out_dyn_dims={}](@2) -> float_type, {3, 4}, {0, 0}",
            "@4 = add(@3,b) -> float_type, {3, 4}, {4, 1}",
            "@5 = multibroadcast[out_lens={2, 3, 4},out_dyn_dims={}](@4) -> float_type, {2, 3, 4}, {0, 4, 1}",
            "@6 = @return(@5)",
        ),
        {"find_inner_broadcast": 1},
    ),
    "find_inner_broadcast_computes_different_broadcasts_on_the_inner_axis": (
        module(
            "a = @param:a -> float_type, {3}, {1}",
            "b = @param:b -> float_type, {3, 1}, {1, 1}",
            "@2 = broadcast[axis=1,out_lens={2, 3, 4}](a) -> float_type, {2, 3, 4}, {0, 1, 0}",
            "@3 = multibroadcast[out_lens={2, 3, 4},out_dyn_dims={}](b) -> float_type, {2, 3, 4}, {0, 1, 0}",
            "@4 = add(@2,@3) -> float_type, {2, 3, 4}, {12, 4, 1}",
            "@5 = @return(@4)",
        ),
        module(
            "a = @param:a -> float_type, {3}, {1}",
            "b = @param:b -> float_type, {3, 1}, {1, 1}",
            "@2 = squeeze[axes={1}](b) -> float_type, {3}, {1}",
            "@3 = add(a,@2) -> float_type, {3}, {1}",
            "@4 = broadcast[axis=1,out_lens={2, 3, 4},out_dyn_dims={}](@3) -> float_type, {2, 3, 4}, {0, 1, 0}",
            "@5 = @return(@4)",
        ),
        {"find_inner_broadcast": 1},
    ),
    "find_inner_broadcast_broadcasts_a_single_element_input_to_the_inner_axes": (
        module(
            "a = @param:a -> float_type, {1, 1}, {1, 1}",
            "b = @param:b -> float_type, {3, 1}, {1, 1}",
            "@2 = multibroadcast[out_lens={2, 3, 4},out_dyn_dims={}](a) -> float_type, {2, 3, 4}, {0, 0, 0}",
            "@3 = multibroadcast[out_lens={2, 3, 4},out_dyn_dims={}](b) -> float_type, {2, 3, 4}, {0, 1, 0}",
            "@4 = mul(@2,@3) -> float_type, {2, 3, 4}, {12, 4, 1}",
            "@5 = @return(@4)",
        ),
        module(
            "a = @param:a -> float_type, {1, 1}, {1, 1}",
            "b = @param:b -> float_type, {3, 1}, {1, 1}",
            "@2 = squeeze[axes={}](a) -> float_type, {1}, {0}",
            "@3 = multibroadcast[out_lens={3, 1},out_dyn_dims={}](@2) -> float_type, {3, 1}, {0, 0}",
            "@4 = mul(@3,b) -> float_type, {3, 1}, {1, 1}",
            "@5 = multibroadcast[out_lens={2, 3, 4},out_dyn_dims={}](@4) -> float_type, {2, 3, 4}, {0, 1, 0}",
            "@6 = @return(@5)",
        ),
        {"find_inner_broadcast": 1},
    ),
    "find_inner_broadcast_same_broadcasts_of_equal_inputs": (
        module(
            "a = @param:a -> float_type, {1, 4}, {4, 1}",
            "b = @param:b -> float_type, {1, 4}, {4, 1}",
            "@2 = multibroadcast[out_lens={3, 4},out_dyn_dims={}](a) -> float_type, {3, 4}, {0, 1}",
            "@3 = multibroadcast[out_lens={3, 4},out_dyn_dims={}](b) -> float_type, {3, 4}, {0, 1}",
            "@4 = add(@2,@3) -> float_type, {3, 4}, {4, 1}",
            "@5 = @return(@4)",
        ),
        module(
            "a = @param:a -> float_type, {1, 4}, {4, 1}",
            "b = @param:b -> float_type, {1, 4}, {4, 1}",
            "@2 = add(a,b) -> float_type, {1, 4}, {4, 1}",
            "@3 = multibroadcast[out_lens={3, 4},out_dyn_dims={}](@2) -> float_type, {3, 4}, {0, 1}",
            "@4 = @return(@3)",
        ),
        {"find_inner_broadcast": 1},
    ),
    "find_inner_broadcast_squeezes_a_single_element_input_of_different_broadcasts": (
        module(
            "a = @param:a -> float_type, {1, 1}, {1, 1}",
            "b = @param:b -> float_type, {3}, {1}",
            "@2 = broadcast[axis=1,out_lens={2, 3, 4}](b) -> float_type, {2, 3, 4}, {0, 1, 0}",
            "@3 = multibroadcast[out_lens={2, 3, 4},out_dyn_dims={}](a) -> float_type, {2, 3, 4}, {0, 0, 0}",
            "@4 = add(@2,@3) -> float_type, {2, 3, 4}, {12, 4, 1}",
            "@5 = @return(@4)",
        ),
        module(
            "a = @param:a -> float_type, {1, 1}, {1, 1}",
            "b = @param:b -> float_type, {3}, {1}",
            "@2 = squeeze[axes={}](a) -> float_type, {1}, {0}",
            "@3 = multibroadcast[out_lens={3},out_dyn_dims={}](@2) -> float_type, {3}, {0}",
            "@4 = add(b,@3) -> float_type, {3}, {1}",
            "@5 = broadcast[axis=1,out_lens={2, 3, 4},out_dyn_dims={}](@4) -> float_type, {2, 3, 4}, {0, 1, 0}",
            "@6 = @return(@5)",
        ),
        {"find_inner_broadcast": 1},
    ),
    "find_inner_broadcast_takes_a_one_element_vector_as_it_is": (
        module(
            "a = @param:a -> float_type, {1}, {1}",
            "b = @param:b -> float_type, {3}, {1}",
            "@2 = broadcast[axis=1,out_lens={2, 3, 4}](b) -> float_type, {2, 3, 4}, {0, 1, 0}",
            "@3 = multibroadcast[out_lens={2, 3, 4},out_dyn_dims={}](a) -> float_type, {2, 3, 4}, {0, 0, 0}",
            "@4 = add(@2,@3) -> float_type, {2, 3, 4}, {12, 4, 1}",
            "@5 = @return(@4)",
        ),
        module(
            "a = @param:a -> float_type, {1}, {1}",
            "b = @param:b -> float_type, {3}, {1}",
            "@2 = multibroadcast[out_lens={3},out_dyn_dims={}](a) -> float_type, {3}, {0}",
            "@3 = add(b,@2) -> float_type, {3}, {1}",
            "@4 = broadcast[axis=1,out_lens={2, 3, 4},out_dyn_dims={}](@3) -> float_type, {2, 3, 4}, {0, 1, 0}",
            "@5 = @return(@4)",
        ),
        {"find_inner_broadcast": 1},
    ),
}


@pytest.mark.parametrize("name", REWRITTEN_BROADCAST)
def test_broadcast_rewrites_rewrite(name: str) -> None:
    text, expected, applied = REWRITTEN_BROADCAST[name]
    assert simplified(text) == (reprinted(expected), applied)


def test_simplify_algebra_counts_the_dead_instructions_it_removes() -> None:
    """pow(x, 2) becomes x * x: the pow and its literal are removed, and counted."""
    program = parse_program(
        module(
            "@0 = @literal{2, 2} -> float_type, {2}, {1}",
            *params("x 2"),
            "@2 = pow(x,@0) -> float_type, {2}, {1}",
            "@3 = @return(@2)",
        )
    )
    context = PassContext()
    SimplifyAlgebra().apply(program, context)
    assert context.statistics["instructions removed"] == 2


LIT_TESTS = Path(__file__).resolve().parents[2] / "opt"
FUSION_LIT_FILES = ("fuse_pointwise.mgx", "fuse_reduce.mgx", "split_reduce.mgx")


FUSION_RUNS = [(name, *run) for name in FUSION_LIT_FILES for run in lit_runs(name)]


@pytest.mark.parametrize(("name", "pipeline", "prefixes"), FUSION_RUNS, ids=[f"{n}-{p}" for n, p, _ in FUSION_RUNS])
def test_fusion_lit_outputs_in_process(name: str, pipeline: str, prefixes: str, tmp_path: Path) -> None:
    """fuse_pointwise, fuse_reduce and split_reduce print, for every case of their lit files, the
    program MIGraphX's passes produce (the CHECK lines): mgx-opt's driver runs in this process and
    FileCheck reads its output (lit runs the same command in a subprocess)."""
    check_lit_in_process(name, pipeline, prefixes, tmp_path)


def lit_statistics(name: str, pipeline: str) -> list[dict[str, int]]:
    """What the pipeline counts (`--pass-statistics`) on each case of a lit file."""
    found = []
    for case in lit_cases(name):
        context = PassContext()
        program = parse_text(case)
        for p in parse_pipeline(pipeline):
            p.apply(program, context)
        found.append(dict(sorted(context.statistics.items())))
    return found


RECORDED_STATISTICS = Path(__file__).parents[1] / "data" / "fusion_lit_statistics.json"


def test_fusion_lit_statistics_recorded() -> None:
    """What fuse_pointwise, fuse_reduce and split_reduce count on each case of their lit files (the
    modules created, instructions fused and removed, ...) is what was recorded when the CHECK lines
    held: a count of a step that did not happen, or a lost count, shows here."""
    recorded = json.loads(RECORDED_STATISTICS.read_text())
    found = {
        f"{name} {pipeline} {index}": statistics
        for name, pipeline, _ in FUSION_RUNS
        for index, statistics in enumerate(lit_statistics(name, pipeline))
    }
    assert found == recorded
