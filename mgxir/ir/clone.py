"""Copying a program without printing it: `clone_program` (what `Program.clone()` calls).

The copy shares what is immutable — operations, shapes and literal data (literals are constants,
as MIGraphX's are: a pass that changes one makes a new literal) — and copies the rest: modules,
instructions, argument and use lists (uses in their original order), source lines, target ids and
symbols. Values defined outside the program (`?` placeholders of a pasted excerpt) stay shared.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

from mgxir.ir.instruction import Instruction

if TYPE_CHECKING:
    from mgxir.ir.module import Module
    from mgxir.ir.program import Program


def clone_program(program: Program) -> Program:
    collecting = gc.isenabled()
    gc.disable()  # the copy makes only new, acyclic-until-linked objects: nothing to collect yet
    try:
        return _clone(program)
    finally:
        if collecting:
            gc.enable()


def _clone(program: Program) -> Program:
    copy = type(program)()
    new_module: dict[int, Module] = {}
    new_ins: dict[Instruction, Instruction] = {}
    for module in program.modules.values():
        twin = copy.create_module(module.name)
        twin.bypass = module.bypass
        new_module[id(module)] = twin
        for ins in module:
            made = Instruction(ins.op, (), ins.shape)
            made.line = ins.line
            made.target_id = ins.target_id
            made.symbols = ins.symbols
            twin._link_before(made, None)
            new_ins[ins] = made
    for old, made in new_ins.items():
        made.args = [new_ins.get(a, a) for a in old.args]
        made.module_args = [new_module.get(id(m), m) for m in old.module_args]
        made.users = {new_ins[u]: None for u in old.users if u in new_ins}
        for a in made.args:
            if a.parent is None:  # a `?` value defined outside the program
                a.users[made] = None
    return copy
