"""ref_lowering: operators become their `ref::` reference-target forms, as MIGraphX's ref target
lowering does. Builtins, operators mgxir does not know and operators with submodules (`if`,
`loop`) stay as they are."""

from __future__ import annotations

import dataclasses

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.registry import lookup
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.rewrite import Rewriter


def lowered(ins: Instruction) -> Operation | None:
    defn = ins.op.defn
    if defn.is_builtin or defn.is_opaque or ins.module_args or defn.name.startswith("ref::"):
        return None
    target = lookup("ref::" + defn.name)
    if target is None:
        return None
    return Operation(target, ins.op.values)


@dataclasses.dataclass
class RefLowering(ModulePass):
    name = "ref_lowering"
    description = "Lower operators to the reference target's ref:: operators."

    def apply_module(self, module: Module, context: PassContext) -> None:
        for ins in module:
            op = lowered(ins)
            if op is not None:
                Rewriter(module).replace(ins, op)
                context.count("lowered to ref::")
