"""normalize_ops: axes become non-negative and symmetric padding becomes begin/end padding, by each
operator's normalisation metadata (`OpDef.normalize`), as MIGraphX's normalize_ops does."""

from __future__ import annotations

import dataclasses

from mgxir.ir.module import Module
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.rewrite import Rewriter


@dataclasses.dataclass
class NormalizeOps(ModulePass):
    name = "normalize_ops"
    description = "Make axes non-negative and padding begin/end, by each operator's normalisation metadata."

    def apply_module(self, module: Module, context: PassContext) -> None:
        for ins in module:
            if not ins.args or ins.is_return or ins.op.defn.is_opaque:
                continue
            normalized = ins.op.defn.normalize(ins.op, [a.shape for a in ins.args])
            if normalized != ins.op:
                Rewriter(module).replace(ins, normalized)
                context.count(f"{ins.op.defn.name} normalized")
