"""Editing helpers that behave as MIGraphX's module methods do, so pass output matches its text:
after an argument changes, users' shapes are recomputed, and so on downstream while they change
(pointwise results take their strides from their inputs)."""

from __future__ import annotations

from collections.abc import Sequence

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ops.definition import Operation
from mgxir.ops.registry import make_op


class _MatchedUnchanged:
    """What a rewrite returns when its pattern matched but it left the module as it was: as in
    MIGraphX's find_matches, the later rewrites are then not tried on that instruction."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "MATCHED_UNCHANGED"


MATCHED_UNCHANGED = _MatchedUnchanged()


def replace_instruction(module: Module, ins: Instruction, replacement: Instruction) -> Instruction:
    """Users of `ins` use `replacement`; the last instruction instead becomes `identity(replacement)`
    in place, since moving `replacement` to the end could break its earlier users."""
    if ins is module.last:
        return replace_op(module, ins, make_op("identity"), [replacement])
    users = [u for u in ins.users if u is not replacement]
    for user in users:
        user.replace_arg(ins, replacement)
    recompute_shapes(users)
    return replacement


def replace_op(
    module: Module, ins: Instruction, op: Operation, args: Sequence[Instruction] | None = None
) -> Instruction:
    """`ins` becomes `op(args)` in place; if its shape changes, its users' shapes follow."""
    old_shape = ins.shape
    module.replace(ins, op, args)
    if ins.shape != old_shape:
        recompute_shapes(list(ins.users))
    return ins


def recompute_shapes(start: list[Instruction]) -> None:
    pending = list(start)
    while pending:
        ins = pending.pop()
        if ins.op.defn.is_opaque:
            continue
        shape = ins.op.defn.shape(ins.op, [a.shape for a in ins.args], ins.module_args)
        if shape is not None and shape != ins.shape:
            ins.shape = shape
            pending.extend(ins.users)
