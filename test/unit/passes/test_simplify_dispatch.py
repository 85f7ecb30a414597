"""simplify_algebra and simplify_reshapes try on each instruction only the rewrites whose root op
matches it (`roots` in mgxir/passes/rewrite.py); with that dispatch turned off (every rewrite on every
instruction) each lit case and random program must print the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from lit_cases import lit_cases
from test_pass_differential import random_program

import mgxir.passes.simplify_algebra as simplify_algebra
import mgxir.passes.simplify_reshapes as simplify_reshapes
from mgxir.diagnostics import MgxError
from mgxir.ir.program import Program
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.passes.rewrite import may_fire_on
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program

OPT_TESTS = Path(__file__).parents[2] / "opt"
CASE_FILES = sorted([*OPT_TESTS.glob("simplify_algebra*.mgx"), *OPT_TESTS.glob("simplify_reshapes*.mgx")])
# the pipelines of those files' RUN lines, plus both reshapes options at once
PIPELINES = (
    "simplify_algebra",
    "simplify_reshapes",
    "simplify_reshapes{enable_gather_rewrite=true}",
    "simplify_reshapes{enable_op_shape_transform_op=true}",
    "simplify_reshapes{enable_gather_rewrite=true enable_op_shape_transform_op=true}",
)


def _printed_after(make_program: object, pipeline: str, dispatch: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(simplify_algebra, "DISPATCH_BY_ROOT", dispatch)
    monkeypatch.setattr(simplify_reshapes, "DISPATCH_BY_ROOT", dispatch)
    try:
        program: Program = make_program()  # type: ignore[operator]
        for p in parse_pipeline(pipeline):
            p.apply(program, PassContext())
        return print_program(program)
    except (MgxError, ValueError) as error:
        return f"error: {type(error).__name__}: {error}"


def _assert_same(make_program: object, pipeline: str, monkeypatch: pytest.MonkeyPatch) -> None:
    every_rewrite = _printed_after(make_program, pipeline, False, monkeypatch)
    dispatched = _printed_after(make_program, pipeline, True, monkeypatch)
    assert dispatched == every_rewrite


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.name)
def test_lit_cases(path: Path, pipeline: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for text in lit_cases(path):
        if "module:" in text:
            _assert_same(lambda text=text: parse_program(text), pipeline, monkeypatch)


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_random_programs(pipeline: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for seed in range(200):
        _assert_same(lambda seed=seed: random_program(seed), pipeline, monkeypatch)


def test_roots_are_recorded() -> None:
    from mgxir.ir.registry import lookup

    rewrites = {r.__name__: r for r in (*simplify_algebra.REWRITES, *simplify_reshapes.REWRITES)}
    add, relu, reduce_sum, dot = (lookup(name) for name in ("add", "relu", "reduce_sum", "dot"))
    assert add is not None and relu is not None and reduce_sum is not None and dot is not None
    assert may_fire_on(rewrites["find_unit_ops"], add) and not may_fire_on(rewrites["find_unit_ops"], dot)
    assert may_fire_on(rewrites["find_inner_broadcast"], relu)
    assert not may_fire_on(rewrites["find_inner_broadcast"], reduce_sum)
    assert may_fire_on(rewrites["find_op_shape_transform_op"], reduce_sum)
    assert may_fire_on(rewrites["find_splits"], dot)  # unmarked: any op
    ordered = simplify_algebra.by_root(simplify_algebra.REWRITES)(add)
    assert list(ordered) == [r for r in simplify_algebra.REWRITES if r in ordered]
