"""Editing helpers that behave as MIGraphX's module methods do, so pass output matches its text."""

from __future__ import annotations

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ops.registry import make_op


def replace_instruction(module: Module, ins: Instruction, replacement: Instruction) -> Instruction:
    """Users of `ins` use `replacement`; the last instruction instead becomes `identity(replacement)`
    in place, since moving `replacement` to the end could break its earlier users."""
    if ins is module.last:
        return module.replace(ins, make_op("identity"), [replacement])
    for user in list(ins.users):
        if user is not replacement:
            user.replace_arg(ins, replacement)
    return replacement
