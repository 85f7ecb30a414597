"""eliminate_contiguous: a `contiguous` (or the op named by `op_name`) is bypassed wherever its user
computes a shape from the uncopied input that is standard, unchanged, or that the user's own users
accept in turn, as MIGraphX's eliminate_contiguous does. A copy that must stay and copies a constant
becomes a literal. Slices of an input that other instructions also use (splits) are tried last."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from mgxir.interp.interpreter import Interpreter
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.shape import Shape
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.propagate_constant import ConstantAnalysis, evaluate_constant
from mgxir.passes.rewrite import Rewriter


def accepts(ins: Instruction, inputs: Sequence[Shape]) -> bool:
    """Whether `ins` and, while its shape changes and is not standard, its users, accept `inputs`."""
    pending: list[tuple[Instruction, Sequence[Shape]]] = [(ins, inputs)]
    while pending:
        user, shapes = pending.pop()
        if user.is_return or user.op.defn.is_opaque:
            return False
        try:
            shape = user.op.defn.shape(user.op, shapes, user.module_args)
        except (ValueError, IndexError, KeyError, TypeError):
            return False
        if shape is None or shape.is_dynamic:
            return False
        if shape.standard or shape == user.shape:
            continue
        if not user.users:
            return False
        for next_user in user.users:
            pending.append((next_user, [shape if a is user else a.shape for a in next_user.args]))
    return True


@dataclasses.dataclass
class EliminateContiguous(ModulePass):
    name = "eliminate_contiguous"
    description = "Bypass contiguous copies whose users accept the uncopied layout."
    op_name: str = "contiguous"

    def apply_module(self, module: Module, context: PassContext) -> None:
        def not_split_slice(ins: Instruction) -> bool:
            return ins.op.defn.name != "slice" or len(ins.args[0].users) == 1

        self._remove(module, context, not_split_slice)
        self._remove(module, context, lambda ins: True)

    def _remove(self, module: Module, context: PassContext, wanted: Callable[[Instruction], bool]) -> None:
        constant = ConstantAnalysis()
        kept_constant: list[Instruction] = []
        last = module.last
        for ins in module:
            if ins.is_return or (ins is not last and not ins.users) or not wanted(ins):
                continue
            for copy in dict.fromkeys(ins.args):
                if copy.op.defn.name != self.op_name or copy not in ins.args:
                    continue
                source = copy.args[0]
                inputs = [source.shape if a is copy else a.shape for a in ins.args]
                if accepts(ins, inputs):
                    Rewriter(module).replace_arg(ins, copy, source)
                    context.count("contiguous bypassed")
                elif constant(source):
                    kept_constant.append(copy)
        if not kept_constant:
            return
        assert module.program is not None
        interpreter = Interpreter(module.program)
        values: dict[Instruction, np.ndarray] = {}
        for copy in dict.fromkeys(kept_constant):
            value = evaluate_constant(copy.args[0], values, interpreter)
            literal = module.add_literal(Literal(copy.shape.as_standard(), np.ascontiguousarray(value)))
            Rewriter(module).replace_all_uses(copy, literal)
            context.count("contiguous of a constant folded")
