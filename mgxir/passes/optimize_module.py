"""optimize_module: MIGraphX's target-independent clean-up loop, run on each module:

    repeat (at most 2 times, while anything changes):
        repeat (at most 4 times, while anything changes):
            simplify_reshapes, eliminate_convert, dead_code_elimination, simplify_algebra
        eliminate_common_subexpression, dead_code_elimination,
        propagate_constant, dead_code_elimination

A pass has changed the module when it counted something in its statistics."""

from __future__ import annotations

import dataclasses

from mgxir.ir.module import Module
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.dead_code_elimination import DeadCodeElimination
from mgxir.passes.eliminate_common_subexpression import EliminateCommonSubexpression
from mgxir.passes.eliminate_convert import EliminateConvert
from mgxir.passes.propagate_constant import PropagateConstant
from mgxir.passes.simplify_algebra import SimplifyAlgebra
from mgxir.passes.simplify_reshapes import SimplifyReshapes


def run_and_report_change(passes: list[ModulePass], module: Module, context: PassContext) -> bool:
    changed = False
    for p in passes:
        inner = PassContext(main_only=context.main_only)
        p.apply_module(module, inner)
        for what, n in inner.statistics.items():
            context.count(f"{p.name}: {what}", n)
        changed = changed or bool(inner.statistics)
    return changed


@dataclasses.dataclass
class OptimizeModule(ModulePass):
    name = "optimize_module"
    description = "Repeat simplify_reshapes, eliminate_convert, simplify_algebra, cse and propagate_constant."
    propagate_constant_skip_ops: str = ""

    def apply_module(self, module: Module, context: PassContext) -> None:
        inner_loop: list[ModulePass] = [
            SimplifyReshapes(),
            EliminateConvert(),
            DeadCodeElimination(),
            SimplifyAlgebra(),
        ]
        outer_tail: list[ModulePass] = [
            EliminateCommonSubexpression(),
            DeadCodeElimination(),
            PropagateConstant(skip_ops=self.propagate_constant_skip_ops),
            DeadCodeElimination(),
        ]
        for _ in range(2):
            changed = False
            for _ in range(4):
                if not run_and_report_change(inner_loop, module, context):
                    break
                changed = True
            changed = run_and_report_change(outer_tail, module, context) or changed
            if not changed:
                break
