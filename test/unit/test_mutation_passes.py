"""dead_code_elimination and eliminate_common_subexpression, result and statistics exactly (written
against the mutants scripts/mutation.py found surviving the lit cases and the differential runs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from filecheck.matcher import Matcher
from filecheck.options import parse_argv_options
from lit_cases import lit_cases

from mgxir.drivers.opt import OptOptions, opt_main
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


LIT_TESTS = Path(__file__).resolve().parents[1] / "opt"
FUSION_LIT_FILES = ("fuse_pointwise.mgx", "fuse_reduce.mgx", "split_reduce.mgx")


def _lit_runs(name: str) -> list[tuple[str, str]]:
    """(pipeline, FileCheck prefixes) of each `mgx-opt ... | filecheck` RUN line of a lit file."""
    runs = []
    for line in (LIT_TESTS / name).read_text().splitlines():
        if line.startswith("// RUN:"):
            pipeline = re.search(r"-p (\"[^\"]*\"|'[^']*'|\S+)", line).group(1).strip("'\"")
            prefixes = re.search(r"--check-prefix(?:es)?=(\S+)", line)
            runs.append((pipeline, prefixes.group(1) if prefixes else "CHECK"))
    return runs


FUSION_RUNS = [(name, *run) for name in FUSION_LIT_FILES for run in _lit_runs(name)]


@pytest.mark.parametrize(("name", "pipeline", "prefixes"), FUSION_RUNS, ids=[f"{n}-{p}" for n, p, _ in FUSION_RUNS])
def test_fusion_lit_outputs_in_process(name: str, pipeline: str, prefixes: str, tmp_path: Path) -> None:
    """fuse_pointwise, fuse_reduce and split_reduce print, for every case of their lit files, the
    program MIGraphX's passes produce (the CHECK lines): mgx-opt's driver runs in this process and
    FileCheck reads its output (lit runs the same command in a subprocess)."""
    output = tmp_path / "out.mgx"
    options = OptOptions(input=str(LIT_TESTS / name), output=str(output), pipeline=pipeline, split=True)
    assert opt_main(options) == 0
    argv = ["filecheck", str(LIT_TESTS / name), "--input-file", str(output), f"--check-prefixes={prefixes}"]
    assert Matcher.from_opts(parse_argv_options(argv)).run() == 0, output.read_text()


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


RECORDED_STATISTICS = Path(__file__).with_name("data") / "fusion_lit_statistics.json"


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
