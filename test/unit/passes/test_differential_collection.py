"""The differential harness's example list is names only: nothing runs while pytest collects, and a
missing ../shared shows as one skip that says why."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_pass_differential as differential


def test_missing_examples_are_one_skip_with_a_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(differential, "EXAMPLES", tmp_path / "nowhere")
    (param,) = differential.golden_examples()
    (mark,) = param.marks
    assert mark.name == "skip" and "nowhere" in mark.kwargs["reason"]


def test_examples_are_listed_without_running_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "broken.txt").write_text("this is not a program")
    (tmp_path / "prog.cpp.txt").write_text("")
    monkeypatch.setattr(differential, "EXAMPLES", tmp_path)
    assert [p.id for p in differential.golden_examples()] == ["broken.txt"]


def test_random_programs_use_every_kind_of_step() -> None:
    names = set()
    for seed in range(differential.RANDOM_PROGRAMS):
        program = differential.random_program(seed)
        for module in program.modules.values():
            names.update(ins.op.defn.name for ins in module)
    wanted = {"div", "pow", "log", "dot", "concat", "slice", "gather", "pointwise", "if", "reduce_sum"}
    assert wanted <= names, sorted(wanted - names)
