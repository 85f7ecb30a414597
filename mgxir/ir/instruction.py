"""Instructions: an operation applied to argument instructions, with its result shape and users."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from mgxir.ir.operation import Operation

if TYPE_CHECKING:
    from mgxir.ir.literal import Literal
    from mgxir.ir.module import Module
    from mgxir.ir.shape import Shape


class Instruction:
    """One node of a module. Use lists are kept right by the module's editing methods."""

    __slots__ = (
        "__weakref__",
        "args",
        "line",
        "module_args",
        "next",
        "op",
        "parent",
        "prev",
        "shape",
        "symbols",
        "target_id",
        "users",
    )

    op: Operation
    shape: Shape
    args: list[Instruction]
    module_args: list[Module]
    users: dict[Instruction, None]  # an ordered set
    parent: Module | None
    prev: Instruction | None
    next: Instruction | None
    line: int  # the source line it was read from, 0 if none
    target_id: int
    symbols: tuple[str, ...]

    def __init__(
        self,
        op: Operation,
        args: Sequence[Instruction] = (),
        shape: Shape | None = None,
        module_args: Sequence[Module] = (),
    ):
        self.op = op
        self.shape = shape  # type: ignore[assignment]
        self.args = list(args)
        self.module_args = list(module_args)
        self.users = {}
        self.parent = None
        self.prev = None
        self.next = None
        self.line = 0
        self.target_id = 0
        self.symbols = ()

    # -- what it is -------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The operator's name: `add`, `@param`, `@literal`, `@return`..."""
        return self.op.defn.name

    @property
    def is_param(self) -> bool:
        return self.op.defn.name == "@param"

    @property
    def is_literal(self) -> bool:
        return self.op.defn.name == "@literal"

    @property
    def is_return(self) -> bool:
        return self.op.defn.name == "@return"

    @property
    def literal(self) -> Literal:
        return self.op.values[0]

    @property
    def param_name(self) -> str:
        return self.op.values[0]

    # -- use lists --------------------------------------------------------------------------

    def _link_args(self) -> None:
        for a in self.args:
            a.users[self] = None

    def _unlink_args(self) -> None:
        for a in self.args:
            a.users.pop(self, None)

    def set_args(self, args: Iterable[Instruction], module_args: Sequence[Module] | None = None) -> None:
        """Replaces the arguments (and module arguments), keeping every use list right."""
        for a in self.args:
            a.users.pop(self, None)
        self.args = args = list(args)
        if module_args is not None:
            self.module_args = list(module_args)
        for a in args:
            a.users[self] = None

    def replace_arg(self, old: Instruction, new: Instruction) -> None:
        if old is new:
            return
        self.args = [new if a is old else a for a in self.args]
        old.users.pop(self, None)
        new.users[self] = None

    def replace_all_uses_with(self, new: Instruction) -> None:
        """Every user of this instruction uses `new` instead."""
        if new is self:
            return
        for u in list(self.users):
            u.replace_arg(self, new)

    def __repr__(self) -> str:
        return f"<Instruction {self.op.text} at line {self.line}>" if self.line else f"<Instruction {self.op.text}>"
