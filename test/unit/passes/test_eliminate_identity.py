"""eliminate_identity on the interpreter's terms and MIGraphX's: users of identity(x) use x, the
identity goes, except as the module's last instruction (it is what the module returns)."""

from __future__ import annotations

from mgxir.passes.base import PassContext
from mgxir.passes.eliminate_identity import EliminateIdentity
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program

PROGRAM = """module: "main"
x = @param:x -> float_type, {2}, {1}
@1 = neg(x) -> float_type, {2}, {1}
@2 = identity(@1) -> float_type, {2}, {1}
@3 = identity(@2) -> float_type, {2}, {1}
@4 = add(@3,@2) -> float_type, {2}, {1}
@5 = identity(@4) -> float_type, {2}, {1}
"""


def test_identities_go_but_the_last_instruction_stays() -> None:
    program = parse_program(PROGRAM)
    context = PassContext()
    EliminateIdentity().apply(program, context)
    assert print_program(program).strip().splitlines() == [
        'module: "main"',
        "x = @param:x -> float_type, {2}, {1}",
        "@1 = neg(x) -> float_type, {2}, {1}",
        "@2 = add(@1,@1) -> float_type, {2}, {1}",
        "@3 = identity(@2) -> float_type, {2}, {1}",
    ]
    assert dict(context.statistics) == {"identities removed": 2}
