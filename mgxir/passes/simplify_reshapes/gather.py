"""simplify_reshapes rewrites of gather: find_gather_scalar (a gather by a scalar index becomes a
gather by a one-element index, reshaped back) and find_gather (a gather by constant indices that
walk the flattened data in a regular, strided pattern becomes views of the data: reshapes,
transposes, broadcasts and slices)."""

from __future__ import annotations

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ops.registry import make_op
from mgxir.passes.rewrite import replace_instruction
from mgxir.passes.simplify_reshapes.nested import insert_auto_reshape


def _can_eval(ins: Instruction) -> bool:
    """MIGraphX's `can_eval`: only literals and side-effect free ops of such inputs; stops at the
    first input that cannot be evaluated."""
    seen: set[Instruction] = set()
    pending = [ins]
    while pending:
        top = pending.pop()
        if top in seen or top.is_literal:
            continue
        seen.add(top)
        defn = top.op.defn
        if top.is_param or not top.args or top.module_args or defn.has_side_effects or defn.is_opaque:
            return False
        pending.extend(top.args)
    return True


def find_gather_scalar(module: Module, ins: Instruction) -> bool:
    if ins.op.defn.name != "gather" or len(ins.args) != 2 or ins.shape.is_dynamic:
        return False
    data, indices = ins.args
    shape = indices.shape
    if shape.is_dynamic or not shape.scalar or shape.ndim != 1 or shape.elements != 1 or _can_eval(ins):
        return False
    new_indices = module.insert(ins, make_op("unsqueeze", axes=(0,)), [indices])
    new_gather = module.insert(ins, ins.op, [data, new_indices])
    reshaped = insert_auto_reshape(module, ins, ins.shape.lens, new_gather)
    if ins.shape.scalar and ins.shape.ndim == 1:
        reshaped = module.insert(ins, make_op("squeeze", axes=(0,)), [reshaped])
    replace_instruction(module, ins, reshaped)
    return True


REWRITES = (find_gather_scalar,)
