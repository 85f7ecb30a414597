"""The names the printer gives instructions, found without printing.

In a program printed whole, the first module's instructions are named plainly and every later
module's are prefixed with `<module>:`; a parameter is named by its parameter name, every other
instruction `@N` for its position N in its module. An instruction listed twice (a module used by
two instructions is printed twice) keeps the name it got first. `mgxir.text.printer` names by
these rules too, so the names here are the printed ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mgxir.ir.instruction import Instruction
    from mgxir.ir.module import Module
    from mgxir.ir.program import Program


def module_prefix(module: Module, first: bool) -> str:
    """`<module>:`, except for the first module printed (and a module without a name)."""
    return "" if first or not module.name else f"{module.name}:"


def local_names(module: Module, prefix: str = "") -> list[str]:
    """The name of each instruction of `module`, in order, with `prefix` in front."""
    return [
        prefix + ins.op.values[0] if ins.op.defn.name == "@param" else f"{prefix}@{position}"
        for position, ins in enumerate(module)
    ]


def instruction_names(program: Program) -> dict[Instruction, str]:
    """Every instruction's name as `print_program` prints it."""
    names: dict[Instruction, str] = {}
    for module in program.print_order():
        for ins, name in zip(module, local_names(module, module_prefix(module, not names))):
            names.setdefault(ins, name)
    return names
