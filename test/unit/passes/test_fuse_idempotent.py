"""`fuse` is idempotent: fusing a fused program (in memory, or read back from its text, where the
bodies' `bypass` is not written) changes nothing; no `pointwise` ends up inside a fused body.

One limit is MIGraphX's: fuse_pointwise stops after `max_rounds` (8) rounds of reshape rewriting
and merging, and a program that needs more (onnx_gridsample_simple_test needs 9) is fused further
by a second run. Such a program is checked with the rounds unbounded."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_pass_differential import RANDOM_PROGRAMS, copy_of, golden_examples, random_program

from mgxir.ir.program import Program
from mgxir.ir.traits import FusedBody
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program

FUSION_PIPELINES = ("fuse", "fuse_pointwise", "fuse_reduce")
UNBOUNDED_FUSE = "fuse_pointwise{max_rounds=1000},fuse_reduce,dead_code_elimination"


def fused(program: Program, pipeline: str) -> Program:
    for p in parse_pipeline(pipeline):
        p.apply(program, PassContext())
    return program


def nested_fusions(program: Program) -> list[str]:
    """Fused instructions inside a `pointwise` body (which no back end compiles)."""
    bodies = [b for m in program for ins in m if ins.op.defn.name == "pointwise" for b in ins.module_args]
    return [f"{b.name}: {ins.op.name}" for b in bodies for ins in b if ins.op.defn.has(FusedBody)]


def check_idempotent(program: Program, pipeline: str) -> None:
    once = print_program(fused(program, pipeline))
    assert not nested_fusions(program)
    again_in_memory = print_program(fused(program, pipeline))
    assert again_in_memory == once
    again_from_text = fused(parse_program(once), pipeline)
    assert not nested_fusions(again_from_text)
    assert print_program(again_from_text) == once


@pytest.mark.parametrize("pipeline", FUSION_PIPELINES)
@pytest.mark.parametrize("seed", range(RANDOM_PROGRAMS))
def test_fusing_a_fused_random_program_changes_nothing(pipeline: str, seed: int) -> None:
    check_idempotent(copy_of(random_program(seed)), pipeline)


def converges_in_default_rounds(program: Program) -> bool:
    bounded = print_program(fused(copy_of(program), "fuse"))
    return bounded == print_program(fused(copy_of(program), UNBOUNDED_FUSE))


@pytest.mark.parametrize("path", golden_examples())
def test_fusing_a_fused_golden_program_changes_nothing(path: Path) -> None:
    program = parse_program(path.read_text(), str(path), base_dir=path.parent)
    check_idempotent(program, "fuse" if converges_in_default_rounds(program) else UNBOUNDED_FUSE)


def test_eight_rounds_leave_gridsample_unconverged() -> None:
    """The one golden program that needs the unbounded check (if fuse_pointwise stopped merging
    early, every program would converge and this would fail)."""
    paths = [param.values[0] for param in golden_examples() if param.values[0] is not None]
    if not paths:
        pytest.skip("MIGraphX's golden examples are not here")
    programs = {path.name: parse_program(path.read_text(), str(path), base_dir=path.parent) for path in paths}
    slow = [name for name, program in programs.items() if not converges_in_default_rounds(program)]
    assert slow == ["onnx_gridsample_simple_test.read.txt"]
