"""inline_module: an `if` whose condition is a compile-time constant is replaced by a copy of the
branch it takes, inserted before it; its `get_tuple_elem` users read the copied branch's results,
as MIGraphX's inline_module does. The `if` is left for dead-code elimination."""

from __future__ import annotations

import dataclasses

import numpy as np

from mgxir.interp.interpreter import Interpreter
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.propagate_constant import ConstantAnalysis, evaluate_constant
from mgxir.passes.rewrite import Rewriter


def inline_before(module: Module, pos: Instruction, branch: Module) -> list[Instruction]:
    """Copies `branch`'s instructions before `pos`; returns the copies of its returned values."""
    copies: dict[Instruction, Instruction] = {}
    outputs: list[Instruction] = []
    for ins in branch:
        args = [copies.get(a, a) for a in ins.args]
        if ins.is_return:
            outputs = args
            break
        copies[ins] = module.insert(pos, ins.op, args, ins.module_args, ins.shape)
    return outputs


@dataclasses.dataclass
class InlineModule(ModulePass):
    name = "inline_module"
    description = "Inline the branch an `if` with a constant condition takes."

    def apply_module(self, module: Module, context: PassContext) -> None:
        constant = ConstantAnalysis()
        values: dict[Instruction, np.ndarray] = {}
        interpreter: Interpreter | None = None
        for ins in list(module):
            if ins.op.defn.name != "if" or not ins.args or len(ins.module_args) != 2:
                continue
            condition = ins.args[0]
            if not constant(condition) or condition.shape.elements == 0:
                continue
            if any(u.op.defn.name != "get_tuple_elem" for u in ins.users):
                continue
            if interpreter is None:
                assert module.program is not None
                interpreter = Interpreter(module.program)
            taken = bool(np.asarray(evaluate_constant(condition, values, interpreter)).ravel()[0])
            branch = ins.module_args[0] if taken else ins.module_args[1]
            outputs = inline_before(module, ins, branch)
            for user in list(ins.users):
                Rewriter(module).replace_all_uses(user, outputs[user.op["index"]])
            context.count("if inlined")
