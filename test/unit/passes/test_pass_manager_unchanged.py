"""The pass manager's test of whether a pass changed the IR (verification runs again only then):
each kind of edit the verifier would see counts as a change."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mgxir.ir.program import Program
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.passes.manager import _fingerprint, _unchanged
from mgxir.text.parser import parse_program

SOURCE = """module: "main"
x = @param:x -> float_type, {2, 3}, {3, 1}
@1 = neg(x) -> float_type, {2, 3}, {3, 1}
@2 = tanh(@1) -> float_type, {2, 3}, {3, 1}
@3 = @return(@2)
"""


def _neg(program: Program):
    return next(i for i in program.main if i.op.name == "neg")


EDITS: dict[str, Callable[[Program], None]] = {
    "a module added": lambda p: p.create_module("other"),
    "a module renamed": lambda p: setattr(p.main, "name", "renamed"),
    "an instruction added": lambda p: p.main.insert(p.main.last, make_op("neg"), [_neg(p)]),
    "an operation changed": lambda p: setattr(_neg(p), "op", make_op("abs")),
    "a shape changed": lambda p: setattr(_neg(p), "shape", Shape.make(_neg(p).shape.dtype, (3, 2))),
    "an argument changed": lambda p: _neg(p).users and next(iter(_neg(p).users)).replace_arg(_neg(p), p.main.first),
}


def test_nothing_done_is_unchanged() -> None:
    program = parse_program(SOURCE)
    assert _unchanged(program, _fingerprint(program))


@pytest.mark.parametrize("edit", EDITS, ids=list(EDITS))
def test_each_edit_is_a_change(edit: str) -> None:
    program = parse_program(SOURCE)
    before = _fingerprint(program)
    EDITS[edit](program)
    assert not _unchanged(program, before)
    assert _fingerprint(program) != before  # the same answer as comparing whole fingerprints
