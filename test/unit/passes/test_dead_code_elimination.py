"""dead_code_elimination inside a pass: a removed `if` takes the modules only it named along."""

from __future__ import annotations

from mgxir import DType, Program, Shape, verify
from mgxir.ir.module import Module
from mgxir.passes.base import PassContext
from mgxir.passes.dead_code_elimination import eliminate_dead_code

FLOAT = Shape.make(DType.float, (2,))


def _branch(program: Program, name: str, op: str, value) -> Module:
    body = program.create_module(name)
    body.add_return([body.add_instruction(op, [value])])
    return body


def _dead_if_program(live_ifs: int) -> tuple[Program, Module, Module]:
    """main: a dead `if` over two branches reading main's tanh(x), and `live_ifs` returned `if`s
    naming the same branches; one unrelated module nothing names."""
    program = Program()
    main = program.main
    x = main.add_parameter("x", FLOAT)
    c = main.add_parameter("c", Shape.make(DType.bool, (1,)))
    t = main.add_instruction("tanh", [x])
    then_module, else_module = _branch(program, "then", "neg", t), _branch(program, "else", "exp", t)
    spare = program.create_module("spare")
    spare.add_return([spare.add_instruction("sin", [spare.add_parameter("p", FLOAT)])])
    dead = main.add_instruction("if", [c], module_args=[then_module, else_module])
    main.add_instruction("get_tuple_elem", [dead], index=0)
    live = [
        main.add_instruction(
            "get_tuple_elem",
            [main.add_instruction("if", [c], module_args=[then_module, else_module])],
            index=0,
        )
        for _ in range(live_ifs)
    ]
    main.add_return([main.add_instruction("neg", [x]), *live])
    return program, then_module, t


def test_dead_if_takes_its_branches_and_what_only_they_read() -> None:
    program, _, tanh = _dead_if_program(live_ifs=0)
    context = PassContext()
    eliminate_dead_code(program.main, context)
    assert list(program.modules) == ["main", "spare"]
    assert tanh.parent is None and [i.name for i in program.main] == ["@param", "@param", "neg", "@return"]
    assert context.statistics == {"instructions removed": 3, "modules removed": 2}
    verify(program)


def test_branches_stay_while_a_live_if_names_them() -> None:
    program, then_module, tanh = _dead_if_program(live_ifs=1)
    context = PassContext()
    eliminate_dead_code(program.main, context)
    assert list(program.modules) == ["main", "then", "else", "spare"]
    assert program.modules["then"] is then_module and tanh.parent is program.main
    assert context.statistics == {"instructions removed": 2}
    verify(program)


def test_removed_module_stops_using_values_of_main() -> None:
    program, then_module, tanh = _dead_if_program(live_ifs=0)
    reader = then_module.first
    assert reader in tanh.users
    program.remove_module("then")
    assert reader not in tanh.users and "then" not in program.modules
