"""propagate_constant: instructions computable at compile time become literals.

As MIGraphX does, only the constant instructions that a non-constant instruction uses (or the last
instruction, when it is constant) are folded; the rest of the constant graph dies with DCE. Results
that are broadcast views over less memory than they cover (and views, contiguous, reshape and
dequantizelinear of such) stay as they are, so folding never inflates a literal.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mgxir.interp.interpreter import Interpreter
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.program import Program
from mgxir.ir.traits import FoldsWithItsInput, NeverFolded
from mgxir.passes.base import ModulePass, PassContext, modules_to_run
from mgxir.passes.rewrite import Rewriter


class ConstantAnalysis:
    """MIGraphX's `can_eval`, memoised: literals, and ops with no side effects whose inputs all
    can be evaluated. With `need_values` (folding), elided literals, ops without a reference
    compute and dynamic shapes do not count; matchers that only ask "is this constant" pass False."""

    def __init__(self, need_values: bool = True) -> None:
        self.known: dict[Instruction, bool] = {}
        self.need_values = need_values

    def __call__(self, ins: Instruction) -> bool:
        known = self.known
        found = known.get(ins)
        if found is not None:
            return found
        need_values = self.need_values
        stack = [ins]
        while stack:
            top = stack[-1]
            if top in known:
                stack.pop()
                continue
            defn = top.op.defn
            args = top.args
            if defn.is_builtin:
                value = defn.name == "@literal" and not (need_values and top.literal.elided)
            elif not args or top.module_args or defn.has_side_effects or defn.is_opaque:
                value = False
            elif need_values and (not defn.has_compute or top.shape.is_dynamic):
                value = False
            else:
                pending = [a for a in args if a not in known]
                if pending:
                    stack.extend(pending)
                    continue
                value = True
                for a in args:
                    if not known[a]:
                        value = False
                        break
            known[top] = value
            stack.pop()
        return known[ins]


def _skipped(ins: Instruction) -> bool:
    """MIGraphX's `skip_propagate`: folding this would turn a cheap view into a large literal."""
    while True:
        defn = ins.op.defn
        if defn.has(FoldsWithItsInput) or (defn.is_view and ins.args):
            if not (ins.shape.broadcasted and ins.shape.element_space < ins.shape.elements):
                ins = ins.args[0]
                continue
            return True
        if defn.has(NeverFolded):
            return True
        s = ins.shape
        return s.is_tuple or (s.broadcasted and s.element_space < s.elements)


@dataclasses.dataclass
class PropagateConstant(ModulePass):
    name = "propagate_constant"
    description = "Fold instructions whose inputs are all literals into literals (reference compute)."
    skip_ops: str = ""  # comma-separated operator names never folded

    def apply(self, program: Program, context: PassContext) -> None:
        interpreter = Interpreter(program)
        for module in modules_to_run(program, context.main_only):
            self._fold(module, interpreter, context)

    def apply_module(self, module: Module, context: PassContext) -> None:
        assert module.program is not None
        self._fold(module, Interpreter(module.program), context)

    def _fold(self, module: Module, interpreter: Interpreter, context: PassContext) -> None:
        skip = frozenset(n for n in self.skip_ops.split(",") if n)
        constant = ConstantAnalysis()

        def foldable(ins: Instruction) -> bool:
            return constant(ins) and ins.op.defn.name not in skip and not _skipped(ins)

        last = module.last
        targets: dict[Instruction, None] = {}
        for ins in module:
            if foldable(ins):
                if ins is last:
                    targets[ins] = None
                continue
            for a in ins.args:
                if not a.is_literal and foldable(a):
                    targets[a] = None
        if not targets:
            return
        values: dict[Instruction, np.ndarray] = {}
        for target in targets:
            value = evaluate_constant(target, values, interpreter)
            shape = target.shape if target.shape.packed else target.shape.as_standard()
            literal_ins = module.add_literal(Literal(shape, np.ascontiguousarray(value)))
            Rewriter(module).replace_all_uses(target, literal_ins)
            context.count("instructions folded")


def evaluate_constant(root: Instruction, values: dict[Instruction, np.ndarray], interpreter: Interpreter) -> np.ndarray:
    """The value of a constant instruction, evaluating its constant inputs first (iteratively)."""
    stack = [root]
    while stack:
        ins = stack[-1]
        if ins in values:
            stack.pop()
            continue
        if ins.is_literal:
            values[ins] = ins.literal.data  # type: ignore[assignment]
            stack.pop()
            continue
        pending = [a for a in ins.args if a not in values]
        if pending:
            stack.extend(pending)
            continue
        kernel = ins.op.defn.kernel(ins.op, [a.shape for a in ins.args], ins.module_args, interpreter.run_module)
        values[ins] = np.asarray(kernel(*[values[a] for a in ins.args]))
        stack.pop()
    return values[root]
