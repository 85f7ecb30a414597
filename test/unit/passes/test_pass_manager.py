"""The pass manager: verification after each pass (skipped only when nothing changed) and
reproducers rebuilt by replaying the passes before the failing one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mgxir.diagnostics import MgxError
from mgxir.ir.module import Module
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.manager import Instrumentation, PassManager
from mgxir.passes.registry import parse_pipeline
from mgxir.text.parser import parse_program
from mgxir.verifier import verify

SOURCE = """module: "main"
x = @param:x -> float_type, {2, 3}, {3, 1}
@1 = neg(x) -> float_type, {2, 3}, {3, 1}
@2 = neg(@1) -> float_type, {2, 3}, {3, 1}
@3 = tanh(x) -> float_type, {2, 3}, {3, 1}
@4 = @return(@2)
"""


@dataclasses.dataclass
class WrongShape(ModulePass):
    """Changes nothing but one result shape, in place."""

    name = "wrong_shape"

    def apply_module(self, module: Module, context: PassContext) -> None:
        ins = next(i for i in module if i.op.name == "neg")
        ins.shape = Shape.make(ins.shape.dtype, (3, 2))


@dataclasses.dataclass
class Boom(ModulePass):
    name = "boom"

    def apply_module(self, module: Module, context: PassContext) -> None:
        raise MgxError("boom")


def _read() -> Program:
    program = parse_program(SOURCE, "t.mgx")
    verify(program)
    return program


def test_a_shape_changed_in_place_is_caught() -> None:
    manager = PassManager([*parse_pipeline("dce"), WrongShape()])
    with pytest.raises(MgxError, match="pass 'wrong_shape' left invalid IR: result shape"):
        manager.run(_read())


def test_reproducer_is_replayed_ir_before_the_failing_pass(tmp_path: Path) -> None:
    repro = tmp_path / "r.mgx"
    passes = [*parse_pipeline("dce"), Boom(), *parse_pipeline("cse")]
    manager = PassManager(passes, Instrumentation(reproducer=str(repro)))
    program = _read()
    with pytest.raises(MgxError, match="pass 'boom' failed: boom"):
        manager.run(program, replay=_read)
    text = repro.read_text()
    assert text.startswith("// mgx-opt -p 'boom,eliminate_common_subexpression'\n")
    assert "tanh" not in text  # dce ran before the snapshot
    assert "@2 = neg(@1)" in text


def test_reproducer_without_replay_is_the_printed_snapshot(tmp_path: Path) -> None:
    repro = tmp_path / "r.mgx"
    manager = PassManager([*parse_pipeline("dce"), Boom()], Instrumentation(reproducer=str(repro)))
    with pytest.raises(MgxError):
        manager.run(_read())
    assert "tanh" not in repro.read_text()
