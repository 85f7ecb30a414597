"""`mgxir.ir.names`: every instruction's printed name, found without printing; the printer names by
it, and nothing outside `mgxir/text/` splits printed text to find names or keys."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_pass_differential import random_program

from mgxir.ir.names import instruction_names
from mgxir.ir.program import Program
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.text.parser import parse_program
from mgxir.text.printer import instruction_lines, print_program
from mgxir.verifier import verify

EXAMPLES = Path(__file__).resolve().parents[4] / "shared" / "reference" / "migraphx-examples"
REPO = Path(__file__).resolve().parents[3]


def printed_names(program: Program) -> dict[object, str]:
    """Each instruction's name split out of the printed program: what callers used to do."""
    return {ins: line.split(" = ")[0] for ins, line in instruction_lines(program).items()}


def programs() -> list:
    files = sorted(EXAMPLES.glob("*.txt")) + sorted((REPO / "examples").glob("*.mgx"))
    return [pytest.param(path, id=path.name) for path in files if not path.name.endswith(".cpp.txt")]


def fused_example() -> Program:
    program = parse_program((REPO / "examples" / "fuse.mgx").read_text())
    verify(program)
    for p in parse_pipeline("fuse"):
        p.apply(program, PassContext())
    return program


@pytest.mark.parametrize("path", programs())
def test_names_are_the_printed_names(path: Path) -> None:
    """The printer's names, and the names in the file where MIGraphX printed it (the examples of
    this repository are written by hand, without result shapes)."""
    text = path.read_text()
    program = parse_program(text, str(path), base_dir=path.parent)
    names = instruction_names(program)
    assert names == printed_names(program)
    if path.parent == EXAMPLES:
        in_the_file = [line.split(" = ")[0] for line in text.splitlines() if " = " in line]
        assert [names[ins] for module in program.print_order() for ins in module] == in_the_file


@pytest.mark.parametrize("seed", range(6))
def test_names_of_fused_random_programs(seed: int) -> None:
    """Fused programs: submodule names prefixed, a module used twice named where printed first."""
    program = random_program(seed)
    for p in parse_pipeline("fuse"):
        p.apply(program, PassContext())
    names = instruction_names(program)
    assert names == printed_names(program)
    assert any(":" in name for name in names.values())


def test_instruction_lines_are_the_printed_lines() -> None:
    program = fused_example()
    lines = instruction_lines(program)
    printed = [line for line in print_program(program).splitlines() if " = " in line]
    assert list(lines.values()) == printed


SPLITTING_PRINTED_TEXT = re.compile(r"print_(program|module)\([^)]*\)(\.splitlines\(\)|\.split\()")


def test_nothing_outside_text_splits_printed_text_or_copies_through_it() -> None:
    offenders = []
    for path in sorted((REPO / "mgxir").rglob("*.py")):
        if path.parent.name == "text":
            continue
        source = path.read_text()
        if SPLITTING_PRINTED_TEXT.search(source) or re.search(r"parse_program\(print_program\(", source):
            offenders.append(str(path.relative_to(REPO)))
    assert offenders == []
