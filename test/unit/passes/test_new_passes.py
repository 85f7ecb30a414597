"""eliminate_concat, split_reduce and schedule keep what programs compute.

eliminate_concat works on lowered programs, whose ops write into their last argument, so those
programs run on a small evaluator with memory: `allocate` is a buffer, views are numpy views, and
the test target's ops (`test::fill`, `test::concat`, `test::copy`) write their results in place."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_pass_differential import rms_ok

from mgxir.interp.interpreter import run_program
from mgxir.ir.program import Program
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.verifier import verify

TEST_TARGET = "eliminate_concat{concat=test::concat copy=test::copy non_packed_output=test::fill},dce"


def attribute(raw: str, key: str) -> int:
    pairs = dict(item.split("=") for item in raw.strip("[]").split(",") if item)
    return int(pairs[key])


def run_in_place(program: Program) -> np.ndarray:
    """Evaluates `main` with buffers that lowered ops write into; returns what it returns."""
    values: dict = {}
    returned = None
    for ins in program.main:
        args = [values[a] for a in ins.args]
        name = ins.op.defn.name
        if ins.is_return:
            returned = args[0]
        elif ins.is_param or ins.is_literal:
            raise AssertionError("these programs have no inputs")
        elif name == "allocate":
            values[ins] = np.zeros(ins.shape.lens, np.float32)
        elif name == "test::fill":
            out = args[-1]
            out[...] = attribute(ins.op.values[0], "value") + np.arange(out.size).reshape(out.shape)
            values[ins] = out
        elif name == "test::concat":
            axis = attribute(ins.op.values[0], "axis")
            args[-1][...] = np.concatenate(args[:-1], axis)
            values[ins] = args[-1]
        elif name == "test::copy":
            args[-1][...] = args[0]
            values[ins] = args[-1]
        else:
            values[ins] = ins.op.defn.compute(ins.op, args, ins.module_args, None)
    return np.array(returned)


def apply(program: Program, pipeline: str) -> None:
    context = PassContext()
    for p in parse_pipeline(pipeline):
        p.apply(program, context)
    verify(program)


LOWERED_CONCATS = {
    "two_inputs": """
@0 = allocate[shape=float_type, {1, 3}, {3, 1}] -> float_type, {1, 3}, {3, 1}
@1 = test::fill[value=1](@0) -> float_type, {1, 3}, {3, 1}
@2 = allocate[shape=float_type, {2, 3}, {3, 1}] -> float_type, {2, 3}, {3, 1}
@3 = test::fill[value=10](@2) -> float_type, {2, 3}, {3, 1}
@4 = allocate[shape=float_type, {3, 3}, {3, 1}] -> float_type, {3, 3}, {3, 1}
@5 = test::concat[axis=0](@3,@1,@4) -> float_type, {3, 3}, {3, 1}
@6 = @return(@5)
""",
    "last_axis_copies": """
@0 = allocate[shape=float_type, {2, 2}, {2, 1}] -> float_type, {2, 2}, {2, 1}
@1 = test::fill[value=1](@0) -> float_type, {2, 2}, {2, 1}
@2 = allocate[shape=float_type, {2, 3}, {3, 1}] -> float_type, {2, 3}, {3, 1}
@3 = test::fill[value=7](@2) -> float_type, {2, 3}, {3, 1}
@4 = allocate[shape=float_type, {2, 5}, {5, 1}] -> float_type, {2, 5}, {5, 1}
@5 = test::concat[axis=-1](@1,@3,@4) -> float_type, {2, 5}, {5, 1}
@6 = @return(@5)
""",
    "nested": """
@0 = allocate[shape=float_type, {1}, {1}] -> float_type, {1}, {1}
@1 = test::fill[value=1](@0) -> float_type, {1}, {1}
@2 = allocate[shape=float_type, {2}, {1}] -> float_type, {2}, {1}
@3 = test::fill[value=2](@2) -> float_type, {2}, {1}
@4 = allocate[shape=float_type, {3}, {1}] -> float_type, {3}, {1}
@5 = test::concat[axis=0](@1,@3,@4) -> float_type, {3}, {1}
@6 = allocate[shape=float_type, {2}, {1}] -> float_type, {2}, {1}
@7 = test::fill[value=5](@6) -> float_type, {2}, {1}
@8 = allocate[shape=float_type, {5}, {1}] -> float_type, {5}, {1}
@9 = test::concat[axis=0](@7,@5,@8) -> float_type, {5}, {1}
@10 = @return(@9)
""",
    "broadcast_copied": """
@0 = allocate[shape=float_type, {4, 3}, {3, 1}] -> float_type, {4, 3}, {3, 1}
@1 = test::fill[value=1](@0) -> float_type, {4, 3}, {3, 1}
@2 = allocate[shape=float_type, {2, 1}, {1, 1}] -> float_type, {2, 1}, {1, 1}
@3 = test::fill[value=9](@2) -> float_type, {2, 1}, {1, 1}
@4 = multibroadcast[out_lens={2, 3}](@3) -> float_type, {2, 3}, {1, 0}
@5 = allocate[shape=float_type, {6, 3}, {3, 1}] -> float_type, {6, 3}, {3, 1}
@6 = test::concat[axis=0](@1,@4,@5) -> float_type, {6, 3}, {3, 1}
@7 = @return(@6)
""",
    "input_used_elsewhere": """
@0 = allocate[shape=float_type, {2, 3}, {3, 1}] -> float_type, {2, 3}, {3, 1}
@1 = test::fill[value=2](@0) -> float_type, {2, 3}, {3, 1}
@2 = mul(@1,@1) -> float_type, {2, 3}, {3, 1}
@3 = allocate[shape=float_type, {2, 6}, {6, 1}] -> float_type, {2, 6}, {6, 1}
@4 = test::concat[axis=1](@1,@2,@3) -> float_type, {2, 6}, {6, 1}
@5 = @return(@4)
""",
}


@pytest.mark.parametrize("name", sorted(LOWERED_CONCATS))
def test_eliminate_concat_keeps_results(name: str) -> None:
    program = parse_program('module: "main"' + LOWERED_CONCATS[name])
    before = run_in_place(program)
    apply(program, TEST_TARGET)
    text = print_program(program)
    assert "test::concat" not in text, text
    after = run_in_place(program)
    assert before.shape == after.shape and rms_ok(after, before), text


REDUCTIONS = {
    "single": """
x = @param:x -> float_type, {2, 3, 16}, {48, 16, 1}
@1 = reduce_sum[axes={2}](x) -> float_type, {2, 3, 1}, {3, 1, 1}
@2 = @return(@1)
""",
    "fused": """
x = @param:x -> float_type, {2, 3, 16}, {48, 16, 1}
@1 = reduce_sum[axes={2}](x) -> float_type, {2, 3, 1}, {3, 1, 1}
@2 = multibroadcast[out_lens={2, 3, 16}](@1) -> float_type, {2, 3, 16}, {3, 1, 0}
@3 = add(x,@2) -> float_type, {2, 3, 16}, {48, 16, 1}
@4 = @return(@3)
""",
    "live_across": """
x = @param:x -> float_type, {2, 3, 16}, {48, 16, 1}
@1 = abs(x) -> float_type, {2, 3, 16}, {48, 16, 1}
@2 = sqrt(@1) -> float_type, {2, 3, 16}, {48, 16, 1}
@3 = reduce_sum[axes={2}](@2) -> float_type, {2, 3, 1}, {3, 1, 1}
@4 = multibroadcast[out_lens={2, 3, 16}](@3) -> float_type, {2, 3, 16}, {3, 1, 0}
@5 = mul(@2,@4) -> float_type, {2, 3, 16}, {48, 16, 1}
@6 = @return(@5)
""",
    "parallel": """
x = @param:x -> float_type, {2, 3, 16}, {48, 16, 1}
@1 = mul(x,x) -> float_type, {2, 3, 16}, {48, 16, 1}
@2 = reduce_sum[axes={2}](x) -> float_type, {2, 3, 1}, {3, 1, 1}
@3 = reduce_sum[axes={2}](@1) -> float_type, {2, 3, 1}, {3, 1, 1}
@4 = sub(@2,@3) -> float_type, {2, 3, 1}, {3, 1, 1}
@5 = @return(@4)
""",
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_split_reduce_keeps_results(name: str) -> None:
    program = parse_program('module: "main"' + REDUCTIONS[name])
    apply(program, "fuse_pointwise,fuse_reduce,dce")
    x = np.random.default_rng(7).uniform(-1.0, 1.0, (2, 3, 16)).astype(np.float32)
    before = run_program(program, {"x": x})[0]
    apply(program, "split_reduce{split_size=16},dce")
    text = print_program(program)
    assert "split_fused_reduce" in text and "fused_reduce[" not in text.replace("split_fused_reduce[", ""), text
    after = run_program(program, {"x": x})[0]
    assert rms_ok(after, before), text


def test_split_reduce_double_split_live() -> None:
    """MIGraphX's double_split_live body, at a size the interpreter runs quickly."""
    source = (Path(__file__).parents[2] / "opt" / "split_reduce.mgx").read_text().split("// -----")
    case = next(c for c in source if "fuse_reduce0" in c)
    text = "\n".join(line for line in case.splitlines() if not line.startswith("//"))
    text = text.replace("327680}, {983040, 327680, 1}", "64}, {192, 64, 1}").replace("327680", "64")
    program = parse_program(text)
    x = np.random.default_rng(3).uniform(0.0, 1.0, (2, 3, 64)).astype(np.float32)
    before = run_program(program, {"x": x})[0]
    apply(program, "split_reduce{split_size=64},dce")
    assert "split_fused_reduce" in print_program(program)
    assert rms_ok(run_program(program, {"x": x})[0], before)
