"""fuse_pointwise and fuse_reduce keep meaning: every case of their lit tests, and random chains of
pointwise ops, broadcasts and reductions, give the same outputs (MIGraphX's rms rule) on the
reference interpreter before and after `fuse_pointwise,fuse_reduce,dce` (and with
fuse_pointwise's rewrite_broadcasts on)."""

from __future__ import annotations

import numpy as np
import pytest
from lit_cases import lit_cases
from test_pass_differential import check_pipeline, copy_of, parameter_values, rms_ok

from mgxir.interp.interpreter import run_program
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.text.parser import parse_program
from mgxir.verifier import verify

PIPELINE = "fuse_pointwise,fuse_reduce,dce"
PIPELINES = (PIPELINE, "fuse_pointwise{enable_rewrite_broadcasts=true},fuse_reduce,dce")


CASES = [
    (name, i, text)
    for name in ("fuse_reduce.mgx", "fuse_pointwise.mgx")
    for i, text in enumerate(c for c in lit_cases(name) if c.strip())
]


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize(("name", "index", "text"), CASES, ids=[f"{n}-{i}" for n, i, _ in CASES])
def test_lit_cases_keep_meaning(name: str, index: int, text: str, pipeline: str) -> None:
    check_pipeline(parse_program(text), pipeline, index)


def reduction_chain(seed: int, size: int = 12) -> Program:
    """Random pointwise ops, reductions over the last axis and broadcasts back, on {3, 4}."""
    rng = np.random.default_rng(seed)
    program = Program()
    main = program.create_module("main")
    full = Shape.make(DType.float, (3, 4))
    values: list[Instruction] = [main.add_parameter("x", full), main.add_parameter("y", full)]
    for _ in range(size):
        a = values[int(rng.integers(len(values)))]
        b = values[int(rng.integers(len(values)))]
        choice = rng.random()
        if choice < 0.35:
            new = main.add_instruction(str(rng.choice(("add", "mul", "sub", "max"))), [a, b])
        elif choice < 0.5:
            new = main.add_instruction(str(rng.choice(("tanh", "relu", "neg"))), [a])
        elif choice < 0.8:
            reduced = main.add_instruction(str(rng.choice(("reduce_sum", "reduce_max", "reduce_mean"))), [a], axes=[1])
            new = main.add_instruction("multibroadcast", [reduced], out_lens=[3, 4])
            if rng.random() < 0.3:
                new = main.add_instruction("contiguous", [new])
        else:
            new = main.add_instruction("reduce_sum", [a], axes=[1])
            new = main.add_instruction("multibroadcast", [new], out_lens=[3, 4])
            new = main.add_instruction("add", [new, b])
        values.append(new)
    main.add_return([values[-1]])
    return program


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("seed", range(30))
def test_random_reduction_chains_keep_meaning(seed: int, pipeline: str) -> None:
    check_pipeline(reduction_chain(seed), pipeline, seed)


def test_random_reduction_chains_fuse() -> None:
    """Across the random chains, every matcher fires at least once."""
    statistics: dict[str, int] = {}
    for seed in range(30):
        context = PassContext()
        program = reduction_chain(seed)
        for p in parse_pipeline(PIPELINE):
            p.apply(program, context)
        for key, n in context.statistics.items():
            statistics[key] = statistics.get(key, 0) + n
    for counter in ("pointwise producers fused", "pointwise consumers fused", "reductions merged"):
        assert statistics.get(counter, 0) > 0, statistics


SHARED_MODULE_PROGRAM = """module: "main"
x = @param:x -> float_type, {2, 3}, {3, 1}
y = @param:y -> float_type, {2, 3}, {3, 1}
@2 = pointwise(x), [m0] -> float_type, {2, 3}, {3, 1}
@3 = pointwise(@2), [m1] -> float_type, {2, 3}, {3, 1}
@4 = pointwise(y), [m1] -> float_type, {2, 3}, {3, 1}
@5 = @return(@3,@4)

module: "m0"
m0:x0 = @param:x0 -> float_type, {1}, {0}
m0:@1 = neg(m0:x0) -> float_type, {1}, {0}
m0:@2 = @return(m0:@1)

module: "m1"
m1:x0 = @param:x0 -> float_type, {1}, {0}
m1:@1 = exp(m1:x0) -> float_type, {1}, {0}
m1:@2 = @return(m1:@1)
"""


def test_merge_keeps_a_module_another_instruction_uses() -> None:
    """The consumer's module is copied, not moved, when another pointwise uses it too."""
    program = parse_program(SHARED_MODULE_PROGRAM)
    for name in ("m0", "m1"):
        program.modules[name].bypass = True
    params = parameter_values(program, 0)
    before = run_program(copy_of(program), params)
    parse_pipeline("fuse_pointwise")[0].apply(program, PassContext())
    verify(program)
    after = run_program(program, params)
    assert [ins.op.defn.name for ins in program.modules["m1"]] == ["@param", "exp", "@return"]
    assert all(rms_ok(a, b) for a, b in zip(after, before))
