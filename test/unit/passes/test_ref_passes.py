"""The reference target's passes at their edges: auto_contiguous (what gets a copy, what is skipped),
ref_lowering and normalize_ops statistics."""

from __future__ import annotations

from mgxir.ir.program import Program
from mgxir.passes.auto_contiguous import AutoContiguous
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.normalize_ops import NormalizeOps
from mgxir.passes.ref_lowering import RefLowering
from mgxir.text.parser import parse_program
from mgxir.verifier import verify

X = 'module: "main"\nx = @param:x -> float_type, {2, 3}, {3, 1}\ns = @param:s -> float_type, {1}, {0}\n'
TRANSPOSE = "transpose[permutation={1, 0}](x) -> float_type, {3, 2}, {1, 3}"


def _run(pass_: ModulePass, body: str) -> tuple[Program, list[str], dict[str, int]]:
    program = parse_program(X + body)
    context = PassContext()
    pass_.apply(program, context)
    verify(program)
    return program, [i.op.name for i in program.main][2:], dict(context.statistics)


def test_a_two_element_broadcast_is_copied_and_a_one_element_one_not() -> None:
    body = "@2 = multibroadcast[out_lens={2},out_dyn_dims={}](s) -> float_type, {2}, {0}\n"
    body += "@3 = multibroadcast[out_lens={1, 1},out_dyn_dims={}](s) -> float_type, {1, 1}, {0, 0}\n"
    body += "@4 = @return(@2,@3)\n"
    _, names, statistics = _run(AutoContiguous(), body)
    assert names == ["multibroadcast", "contiguous", "multibroadcast", "@return"]
    assert statistics == {"contiguous inserted": 1}


def test_the_last_instruction_gets_its_copy_after_it() -> None:
    program, names, statistics = _run(AutoContiguous(), f"@2 = {TRANSPOSE}\n")
    assert names == ["transpose", "contiguous"] and statistics == {"contiguous inserted": 1}
    assert program.main.last is not None and program.main.last.args[0].op.name == "transpose"


def test_layout_and_dead_results_are_skipped_and_later_ones_copied() -> None:
    body = "@2 = layout[permutation={1, 0}](x) -> float_type, {2, 3}, {1, 2}\n"
    body += f"@3 = {TRANSPOSE}\n"
    body += f"@4 = {TRANSPOSE}\n"
    body += "@5 = neg(@4) -> float_type, {3, 2}, {1, 3}\n@6 = @return(@2,@5)\n"
    _, names, statistics = _run(AutoContiguous(), body)
    assert names == ["layout", "transpose", "transpose", "contiguous", "neg", "@return"]
    assert statistics == {"contiguous inserted": 1}


def test_ref_lowering_counts_what_it_lowers() -> None:
    program = parse_program(
        'module: "main"\na = @param:a -> float_type, {2, 3}, {3, 1}\nb = @param:b -> float_type, {3, 2}, {2, 1}\n'
        "@2 = dot(a,b) -> float_type, {2, 2}, {2, 1}\n@3 = neg(@2) -> float_type, {2, 2}, {2, 1}\n@4 = @return(@3)\n"
    )
    context = PassContext()
    RefLowering().apply(program, context)
    names = [i.op.name for i in program.main]
    lowered = [n for n in names if n.startswith("ref::")]
    assert lowered and dict(context.statistics) == {"lowered to ref::": len(lowered)}


def test_normalize_ops_counts_by_operator() -> None:
    body = "@2 = reduce_sum[axes={-1}](x) -> float_type, {2, 1}, {1, 1}\n@3 = @return(@2)\n"
    program, names, statistics = _run(NormalizeOps(), body)
    assert statistics == {"reduce_sum normalized": 1}
    assert next(i for i in program.main if i.op.name == "reduce_sum").op["axes"] == (1,)
    assert names == ["reduce_sum", "@return"]
