"""simplify_reshapes' concat and gather rewrites keep what programs compute: every case of the lit
tests for them runs on the reference interpreter before and after the pass (rms rule), and each
rewrite changes at least one of those programs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from lit_cases import lit_cases
from test_pass_differential import copy_of, fill_elided_literals, parameter_values, rms_ok

from mgxir.interp.interpreter import run_program
from mgxir.ir.dtype import DType
from mgxir.ir.literal import Literal
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.passes.simplify_reshapes import concat, gather
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.verifier import verify

LIT_TESTS = Path(__file__).resolve().parents[1] / "opt"
LIT_FILES = ("simplify_reshapes_concat.mgx", "simplify_reshapes_gather.mgx")


def _pipeline(name: str) -> str:
    """The pipeline the file's RUN line passes to mgx-opt."""
    run_line = (LIT_TESTS / name).read_text().splitlines()[0]
    return re.search(r"-p (\S+)", run_line).group(1).strip("'")


PIPELINES = {name: _pipeline(name) for name in LIT_FILES}
GATHER_PIPELINE = "simplify_reshapes{enable_gather_rewrite=true}"


CASES = [(name, index, case) for name in LIT_FILES for index, case in enumerate(lit_cases(name))]


def _run(program: Program, pipeline: str) -> tuple[Program, PassContext]:
    transformed = copy_of(program)
    context = PassContext()
    for p in parse_pipeline(pipeline):
        p.apply(transformed, context)
    return transformed, context


SIZE_LIMIT = 1 << 20  # cases with larger values (MIGraphX's LLM-sized ones) are only checked by lit


def check_values(program: Program, pipeline: str, seed: int) -> None:
    """Outputs agree before and after by the rms rule, and after the pass have their declared lens.
    Values are compared flattened: the interpreter gives a gather by a literal scalar index (shape
    {1}, strides {0}) an extra axis, which the rewritten program no longer has."""
    fill_elided_literals(program)
    params = parameter_values(program, seed)
    before = run_program(copy_of(program), params)
    transformed, _ = _run(program, pipeline)
    verify(transformed)
    after = run_program(transformed, params)
    declared = transformed.main.output_shapes()
    assert len(before) == len(after) == len(declared)
    for b, a, shape in zip(before, after, declared):
        assert np.asarray(a).shape == tuple(shape.lens) or (np.asarray(a).ndim == 0 and shape.elements == 1)
        assert rms_ok(np.ravel(a), np.ravel(b)), print_program(transformed)


@pytest.mark.parametrize(("name", "index", "text"), CASES, ids=[f"{n}-{i}" for n, i, _ in CASES])
def test_lit_cases_keep_values(name: str, index: int, text: str) -> None:
    program = parse_program(text)
    if any(ins.shape.elements > SIZE_LIMIT for ins in program.main if not ins.is_return):
        pytest.skip("values too large for the interpreter in a unit test")
    check_values(program, PIPELINES[name], seed=index)


def test_each_rewrite_changes_some_program() -> None:
    changed_by: set[str] = set()
    for name, _, text in CASES:
        program = parse_program(text)
        fill_elided_literals(program)
        transformed, context = _run(program, PIPELINES[name])
        if print_program(transformed) == print_program(program):
            continue
        changed_by.update(key.removesuffix(" applied") for key in context.statistics)
    wanted = {rewrite.__name__ for rewrite in (*concat.REWRITES, *gather.REWRITES)}
    assert wanted <= changed_by


def _gather_program(data_lens: tuple[int, ...], axis: int, indices: np.ndarray) -> Program:
    program = Program()
    main = program.create_module("main")
    data = main.add_parameter("data", Shape.make(DType.float, data_lens))
    literal = main.add_literal(Literal(Shape.make(DType.int32, indices.shape or (1,)), indices.reshape(-1)))
    gathered = main.add_instruction("gather", [data, literal], axis=axis)
    main.add_return([main.add_instruction("neg", [gathered])])
    return program


@pytest.mark.parametrize("seed", range(40))
def test_random_constant_gathers(seed: int) -> None:
    """Gathers by constant indices of regular patterns (strided runs, repeats, tiles) and random ones."""
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 4))
    lens = tuple(int(n) for n in rng.integers(1, 7, size=rank))
    axis = int(rng.integers(0, rank))
    n = lens[axis]
    start = int(rng.integers(0, n))
    stride = int(rng.integers(0, 3))
    count = max(1, min(int(rng.integers(1, 5)), (n - 1 - start) // stride + 1 if stride else 4))
    run = start + stride * np.arange(count)
    pattern = [run, np.tile(run, 2), np.repeat(run, 2), rng.integers(-n, n, size=count)][seed % 4]
    shape = [(pattern.size,), (1, pattern.size), (pattern.size, 1)][seed % 3]
    check_values(_gather_program(lens, axis, pattern.reshape(shape).astype(np.int32)), GATHER_PIPELINE, seed)


def test_concats_no_rewrite_changes_count_nothing() -> None:
    """A concat with a slice on its axis that takes back no input, and a dynamic concat: the concat
    rewrites look at both and change nothing, so no `... applied` statistic is counted (a rewrite
    that said it changed something here would also make the pass loop again)."""
    program = parse_program("""module: "main"
x = @param:x -> float_type, {4, 3}, {3, 1}
y = @param:y -> float_type, {4, 3}, {3, 1}
d = @param:d -> dynamic, float_type, {[1..4], 3}
@3 = concat[axis=1](x,y) -> float_type, {4, 6}, {6, 1}
@4 = slice[axes={1},starts={1},ends={4}](@3) -> float_type, {4, 3}, {6, 1}
@5 = concat[axis=1](d,d) -> dynamic, float_type, {[1..4], 6}
@6 = @return(@4,@5)
""")
    transformed, context = _run(program, "simplify_reshapes")
    assert print_program(transformed) == print_program(program)
    assert not context.statistics
