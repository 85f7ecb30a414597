"""dead_code_elimination: removes instructions nothing uses, then modules nothing reaches."""

from __future__ import annotations

import dataclasses
from collections import Counter

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.program import Program
from mgxir.passes.base import ModulePass, PassContext


def eliminate_dead_code(module: Module, context: PassContext | None = None) -> int:
    """One backward walk (users come after their arguments); the last instruction always stays.

    A removed instruction's module arguments (the branches of a dead `if`, a dead pointwise's
    body) leave the program once no instruction names them, with the modules only they name: a
    branch that reads values of this module would otherwise keep them alive and fail
    verification, since nothing encloses it any more. The values it read die in the same walk."""
    last = module.last
    removed = 0
    module_uses = _ModuleUses(module.program)
    for ins in reversed(module):
        # never removed: parameters, the last instruction (`@return`), operators with side effects
        if ins.users or ins is last or ins.op.defn.name == "@param" or ins.op.defn.has_side_effects:
            continue
        module.remove(ins)
        removed += 1
        if ins.module_args:
            module_uses.release(ins, keep=module)
    if context is not None and removed:
        context.count("instructions removed", removed)
    if context is not None and module_uses.removed:
        context.count("modules removed", module_uses.removed)
    return removed


class _ModuleUses:
    """How many instructions of the program name each module, counted when first needed."""

    def __init__(self, program: Program | None) -> None:
        self.program = program
        self.counts: Counter[int] | None = None
        self.removed = 0

    def release(self, ins: Instruction, keep: Module) -> None:
        """`ins` is gone: drops each module it named that nothing names now, then theirs."""
        program = self.program
        if program is None:
            return
        if self.counts is None:
            self.counts = Counter(id(m) for owner in program for i in owner for m in dict.fromkeys(i.module_args))
            self.counts.update(id(m) for m in dict.fromkeys(ins.module_args))  # ins is already out
        pending = list(dict.fromkeys(ins.module_args))
        for m in pending:
            self.counts[id(m)] -= 1
        while pending:
            sub = pending.pop()
            if self.counts[id(sub)] > 0 or sub is keep or program.modules.get(sub.name) is not sub:
                continue
            for i in sub:
                for m in dict.fromkeys(i.module_args):
                    self.counts[id(m)] -= 1
                    pending.append(m)
            program.remove_module(sub.name)
            self.removed += 1


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
