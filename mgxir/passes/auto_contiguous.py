"""auto_contiguous: every used result whose layout is not standard is followed by a `contiguous`
that its users read instead, as MIGraphX's auto_contiguous does before lowering to the reference
target. Results of one element, dynamic and tuple shapes are left alone."""

from __future__ import annotations

import dataclasses

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.registry import make_op
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.rewrite import Rewriter


def needs_contiguous(ins: Instruction) -> bool:
    shape = ins.shape
    if shape.is_dynamic or shape.is_tuple or shape.elements <= 1:
        return False
    return not shape.standard


@dataclasses.dataclass
class AutoContiguous(ModulePass):
    name = "auto_contiguous"
    description = "Insert a contiguous after every used result whose layout is not standard."

    def apply_module(self, module: Module, context: PassContext) -> None:
        last = module.last
        for ins in list(module):
            if ins.is_return or ins.op.defn.name == "layout":
                continue
            if not ins.users and ins is not last:
                continue
            if not needs_contiguous(ins):
                continue
            copy = module.insert(ins.next, make_op("contiguous"), [ins])
            if ins is not last:
                Rewriter(module).replace_all_uses(ins, copy)
            context.count("contiguous inserted")
