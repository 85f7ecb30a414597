"""split_reduce: its dominator tree, the reductions it splits and which it leaves, and what the
split program computes."""

from __future__ import annotations

import numpy as np
from test_pass_differential import rms_ok

from mgxir.interp.interpreter import run_program
from mgxir.ir.program import Program
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.passes.split_reduce import immediate_dominators, reduce_size
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.verifier import verify

X = "{2, 3, 16}, {48, 16, 1}"
R = "{2, 3, 1}, {3, 1, 1}"


def apply(program: Program, pipeline: str) -> PassContext:
    context = PassContext()
    for p in parse_pipeline(pipeline):
        p.apply(program, context)
    verify(program)
    return context


def body_program(body: str, main: str | None = None, params: str = "x") -> Program:
    """`main` calls the fused_reduce body `r` (float {2, 3, 16} parameters `params`)."""
    names = params.split(",")
    main_params = "\n".join(f"{n} = @param:{n} -> float_type, {X}" for n in names)
    call = main or f"@9 = fused_reduce[axes={{2}}]({params}), [r] -> float_type, {R}\n@10 = @return(@9)"
    return parse_program(f'module: "main"\n{main_params}\n{call}\n\nmodule: "r"\n{body}')


def op_names(program: Program, module: str = "main") -> list[str]:
    return [ins.op.defn.name for ins in program.get_module(module) if not ins.is_param]


def test_immediate_dominators() -> None:
    program = parse_program(
        f"""module: "main"
x = @param:x -> float_type, {X}
@1 = abs(x) -> float_type, {X}
@2 = neg(@1) -> float_type, {X}
@3 = exp(@1) -> float_type, {X}
@4 = add(@2,@3) -> float_type, {X}
@5 = mul(@4,x) -> float_type, {X}
@6 = @return(@5)
"""
    )
    x, a, b, c, d, e, ret = program.main
    assert immediate_dominators(program.main) == {a: x, b: a, c: a, d: a, e: x, ret: e}


def test_reduce_size() -> None:
    partial = body_program(f"x = @param:x -> float_type, {X}\n@1 = reduce_sum[axes={{2}}](x) -> float_type, {R}")
    whole = body_program(
        f"x = @param:x -> float_type, {X}\n@1 = reduce_sum[axes={{0, 1, 2}}](x) -> float_type, {{1, 1, 1}}, {{1, 1, 1}}"
    )
    none = body_program(f"x = @param:x -> float_type, {X}\n@1 = neg(x) -> float_type, {X}")
    sizes = [reduce_size(p.get_module("r")) for p in (partial, whole, none)]
    assert sizes == [16, 96, 0] and all(type(s) is int for s in sizes)


def body(*lines: str, params: str = "x") -> str:
    declared = [f"{n} = @param:{n} -> float_type, {X}" for n in params.split(",")]
    return "\n".join([*declared, *lines, f"@99 = @return(@{len(lines)})"])


def inputs(program: Program) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {p.param_name: rng.uniform(0.5, 1.5, (2, 3, 16)).astype(np.float32) for p in program.main if p.is_param}


def split_keeps_results(program: Program, pipeline: str = "split_reduce{split_size=16},dce") -> PassContext:
    values = inputs(program)
    before = run_program(program, values)
    context = apply(program, pipeline)
    after = run_program(program, values)
    assert all(rms_ok(a, b) for a, b in zip(after, before, strict=True)), print_program(program)
    return context


def test_three_reductions_stay_fused() -> None:
    program = body_program(
        body(
            f"@1 = reduce_sum[axes={{2}}](x) -> float_type, {R}",
            f"@2 = exp(x) -> float_type, {X}",
            f"@3 = reduce_sum[axes={{2}}](@2) -> float_type, {R}",
            f"@4 = neg(x) -> float_type, {X}",
            f"@5 = reduce_sum[axes={{2}}](@4) -> float_type, {R}",
            f"@6 = add(@1,@3) -> float_type, {R}",
            f"@7 = add(@6,@5) -> float_type, {R}",
        )
    )
    assert split_keeps_results(program).statistics["reductions split"] == 0
    assert op_names(program) == ["fused_reduce", "@return"]


def test_parameters_bound_by_name() -> None:
    """The body declares x1 before x0; the split reduction still reads x0 - x1."""
    program = body_program(
        body(
            f"@1 = sub(x0,x1) -> float_type, {X}", f"@2 = reduce_sum[axes={{2}}](@1) -> float_type, {R}", params="x1,x0"
        ),
        params="x0,x1",
    )
    values = {"x0": np.ones((2, 3, 16), np.float32), "x1": np.zeros((2, 3, 16), np.float32)}
    apply(program, "split_reduce{split_size=16},dce")
    assert op_names(program)[0] == "split_fused_reduce"
    np.testing.assert_array_equal(run_program(program, values)[0], np.full((2, 3, 1), 16, np.float32))


SMALL = "@1 = reduce_sum[axes={1}](x) -> float_type, {2, 1, 16}, {16, 16, 1}"


def test_later_reductions_split_after_skipped_ones() -> None:
    """A fused_reduce too small, or reducing with max, is left; those after it are still split."""
    for first in (SMALL, f"@1 = reduce_max[axes={{2}}](x) -> float_type, {R}"):
        out = "{2, 1, 16}, {16, 16, 1}" if first == SMALL else R
        program = parse_program(
            f"""module: "main"
x = @param:x -> float_type, {X}
@1 = fused_reduce[axes={{2}}](x), [first] -> float_type, {out}
@2 = fused_reduce[axes={{2}}](x), [r] -> float_type, {R}
@3 = @return(@1,@2)

module: "first"
{body(first)}

module: "r"
{body(f"@1 = reduce_sum[axes={{2}}](x) -> float_type, {R}")}
"""
        )
        context = split_keeps_results(program)
        assert op_names(program) == ["fused_reduce", "split_fused_reduce", "@return"]
        assert context.statistics["reductions split"] == 1
        split_body = program.get_module("r_split")
        assert split_body.bypass is True and split_body.program is program


def test_a_body_is_split_once() -> None:
    """A second fused_reduce over a body already split, and split_fused_reduce itself, stay."""
    program = parse_program(
        f"""module: "main"
x = @param:x -> float_type, {X}
@1 = fused_reduce[axes={{2}}](x), [r] -> float_type, {R}
@2 = fused_reduce[axes={{2}}](x), [r] -> float_type, {R}
@3 = @return(@1,@2)

module: "r"
{body(f"@1 = reduce_sum[axes={{2}}](x) -> float_type, {R}")}
"""
    )
    split_keeps_results(program)
    assert op_names(program) == ["split_fused_reduce", "fused_reduce", "@return"]
    once = print_program(program)
    split_keeps_results(program)
    assert print_program(program) == once


def test_live_values_that_dominate_a_reduction_are_computed_first() -> None:
    """abs(x) feeds both reductions and the result: it is computed in main before the split;
    neg(x) is also live across them but feeds neither, so it is computed after."""
    program = body_program(
        body(
            f"@1 = neg(x) -> float_type, {X}",
            f"@2 = abs(x) -> float_type, {X}",
            f"@3 = reduce_sum[axes={{2}}](@2) -> float_type, {R}",
            f"@4 = mul(@2,@2) -> float_type, {X}",
            f"@5 = reduce_sum[axes={{2}}](@4) -> float_type, {R}",
            f"@6 = add(@3,@5) -> float_type, {R}",
            "@7 = multibroadcast[out_lens={2, 3, 16}](@6) -> float_type, {2, 3, 16}, {3, 1, 0}",
            f"@8 = add(@2,@7) -> float_type, {X}",
            f"@9 = add(@8,@1) -> float_type, {X}",
        ),
        main=f"@9 = fused_reduce[axes={{2}}](x), [r] -> float_type, {X}\n@10 = @return(@9)",
    )
    split_keeps_results(program)
    assert op_names(program) == [
        "abs",
        "split_fused_reduce",
        "get_tuple_elem",
        "get_tuple_elem",
        "neg",
        "add",
        "multibroadcast",
        "add",
        "add",
        "@return",
    ], print_program(program)


def test_live_values_that_dominate_reductions_through_others() -> None:
    """abs(x) reaches each reduction only through exp and sqrt; it still is computed first."""
    program = body_program(
        body(
            f"@1 = abs(x) -> float_type, {X}",
            f"@2 = exp(@1) -> float_type, {X}",
            f"@3 = reduce_sum[axes={{2}}](@2) -> float_type, {R}",
            f"@4 = sqrt(@1) -> float_type, {X}",
            f"@5 = reduce_sum[axes={{2}}](@4) -> float_type, {R}",
            f"@6 = add(@3,@5) -> float_type, {R}",
            "@7 = multibroadcast[out_lens={2, 3, 16}](@6) -> float_type, {2, 3, 16}, {3, 1, 0}",
            f"@8 = add(@1,@7) -> float_type, {X}",
        ),
        main=f"@9 = fused_reduce[axes={{2}}](x), [r] -> float_type, {X}\n@10 = @return(@9)",
    )
    split_keeps_results(program)
    assert op_names(program)[:2] == ["abs", "split_fused_reduce"], print_program(program)


def test_unused_body_parameter() -> None:
    program = body_program(body(f"@1 = reduce_sum[axes={{2}}](x) -> float_type, {R}", params="x,y"), params="x,y")
    split_keeps_results(program)
    assert op_names(program)[0] == "split_fused_reduce"
