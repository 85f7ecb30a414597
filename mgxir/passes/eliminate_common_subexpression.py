"""eliminate_common_subexpression: one forward walk with a table of (operator, arguments)."""

from __future__ import annotations

import dataclasses

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.dead_code_elimination import eliminate_dead_code


@dataclasses.dataclass
class EliminateCommonSubexpression(ModulePass):
    name = "eliminate_common_subexpression"
    description = "Replace an instruction equal to an earlier one (same operator, arguments and modules)."

    def apply_module(self, module: Module, context: PassContext) -> None:
        seen: dict[tuple, Instruction] = {}
        merged = 0
        for ins in module:
            # instructions without arguments (@param, @literal) are distinct values
            args = ins.args
            if not args:
                continue
            op = ins.op
            defn = op.defn
            if defn.name == "@return" or defn.has_side_effects or defn.is_opaque:
                continue
            # arguments and module arguments are live objects, so their ids cannot be confused
            key = (op, *map(id, args), *map(id, ins.module_args))
            earlier = seen.get(key)
            if earlier is None:
                seen[key] = ins
            elif earlier.shape == ins.shape:
                ins.replace_all_uses_with(earlier)
                merged += 1
        if merged:
            context.count("instructions merged", merged)
            eliminate_dead_code(module, context)
