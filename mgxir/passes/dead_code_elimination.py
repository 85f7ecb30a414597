"""dead_code_elimination: removes instructions nothing uses, then modules nothing reaches."""

from __future__ import annotations

import dataclasses

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.program import Program
from mgxir.passes.base import ModulePass, PassContext


def is_removable(ins: Instruction) -> bool:
    """Never removed: parameters, `@return`, and operators with side effects."""
    defn = ins.op.defn
    return not ins.users and not ins.is_param and not defn.has_side_effects


def eliminate_dead_code(module: Module, context: PassContext | None = None) -> int:
    """One backward walk (users come after their arguments); the last instruction always stays."""
    last = module.last
    removed = 0
    for ins in reversed(module):
        # is_removable, inlined: this loop runs after every pass
        if ins.users or ins is last or ins.op.defn.name == "@param" or ins.op.defn.has_side_effects:
            continue
        module.remove(ins)
        removed += 1
    if context is not None and removed:
        context.count("instructions removed", removed)
    return removed


def remove_unused_modules(program: Program, context: PassContext | None = None) -> int:
    reachable = {id(m) for m in program.reachable_modules()}
    unused = [name for name, m in program.modules.items() if id(m) not in reachable]
    for name in unused:
        program.remove_module(name)
    if context is not None and unused:
        context.count("modules removed", len(unused))
    return len(unused)


@dataclasses.dataclass
class DeadCodeElimination(ModulePass):
    name = "dead_code_elimination"
    description = "Remove instructions whose results are unused, then modules nothing reaches."

    def apply(self, program: Program, context: PassContext) -> None:
        super().apply(program, context)
        remove_unused_modules(program, context)

    def apply_module(self, module: Module, context: PassContext) -> None:
        eliminate_dead_code(module, context)
