"""eliminate_identity: uses of `identity(x)` use `x` instead."""

from __future__ import annotations

import dataclasses

from mgxir.ir.module import Module
from mgxir.passes.base import ModulePass, PassContext


@dataclasses.dataclass
class EliminateIdentity(ModulePass):
    name = "eliminate_identity"
    description = "Remove identity instructions, forwarding their argument to their users."

    def apply_module(self, module: Module, context: PassContext) -> None:
        last = module.last
        for ins in module:
            if ins.op.defn.name != "identity" or not ins.args:
                continue
            ins.replace_all_uses_with(ins.args[0])
            if ins is not last:
                module.remove(ins)
                context.count("identities removed")
