"""Modules: an ordered list of instructions with O(1) insertion, removal and moves."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from mgxir.ir.builtin import make_literal, make_param, make_return
from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import Operation, ShapeError
from mgxir.ir.registry import make_op

if TYPE_CHECKING:
    from mgxir.ir.literal import Literal
    from mgxir.ir.program import Program
    from mgxir.ir.shape import Shape


class Module:
    """A named list of instructions (a doubly linked list around a sentinel)."""

    def __init__(self, name: str, program: Program | None = None):
        self.name = name
        self.program = program
        self.bypass = False
        self._head = Instruction.__new__(Instruction)
        self._head.prev = self._head.next = self._head
        self._size = 0

    # -- iteration --------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Instruction]:
        head = self._head
        ins = head.next
        while ins is not head:
            nxt = ins.next  # allows removing the current instruction while iterating
            yield ins
            ins = nxt

    def __reversed__(self) -> Iterator[Instruction]:
        head = self._head
        ins = head.prev
        while ins is not head:
            prv = ins.prev
            yield ins
            ins = prv

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"<Module {self.name!r} with {self._size} instructions>"

    @property
    def first(self) -> Instruction | None:
        return None if self._size == 0 else self._head.next

    @property
    def last(self) -> Instruction | None:
        return None if self._size == 0 else self._head.prev

    # -- low-level list editing -------------------------------------------------------------

    def _link_before(self, ins: Instruction, pos: Instruction | None) -> None:
        after = self._head if pos is None else pos
        before = after.prev
        ins.prev = before
        ins.next = after
        before.next = ins
        after.prev = ins
        ins.parent = self
        self._size += 1

    def _unlink(self, ins: Instruction) -> None:
        ins.prev.next = ins.next
        ins.next.prev = ins.prev
        ins.prev = ins.next = None
        ins.parent = None
        self._size -= 1

    # -- building ---------------------------------------------------------------------------

    def insert(
        self,
        pos: Instruction | None,
        op: Operation,
        args: Sequence[Instruction] = (),
        module_args: Sequence[Module] = (),
        shape: Shape | None = None,
    ) -> Instruction:
        """Inserts a new instruction before `pos` (at the end when `pos` is None).

        The shape comes from the op's shape rule; pass `shape` only for ops without one.
        """
        if shape is None:
            shape = compute_shape(op, args, module_args)
        ins = Instruction(op, args, shape, module_args)
        self._link_before(ins, pos)
        for a in ins.args:
            a.users[ins] = None
        return ins

    def add_instruction(
        self, op: Operation | str, args: Sequence[Instruction] = (), module_args: Sequence[Module] = (), **attributes
    ) -> Instruction:
        """Appends `op(args)`; `op` may be a name, with attributes as keywords."""
        if isinstance(op, str):
            op = make_op(op, **attributes)
        return self.insert(None, op, args, module_args)

    def add_parameter(self, name: str, shape: Shape) -> Instruction:
        """A parameter, inserted at the front as MIGraphX does."""
        return self.insert(self.first, make_param(name), (), (), shape)

    def add_literal(self, literal: Literal) -> Instruction:
        """A literal, inserted at the front as MIGraphX does."""
        return self.insert(self.first, make_literal(literal), (), (), literal.shape)

    def add_return(self, args: Sequence[Instruction]) -> Instruction:
        return self.insert(None, make_return(), args)

    def append_parsed(self, ins: Instruction) -> None:
        """Appends an instruction built elsewhere (the parser), linking its uses."""
        self._link_before(ins, None)
        ins._link_args()

    # -- editing ----------------------------------------------------------------------------

    def remove(self, ins: Instruction) -> None:
        """Removes an instruction that nothing uses any more."""
        if ins.users:
            raise ValueError(f"cannot remove {ins.op.text}: it still has {len(ins.users)} users")
        ins._unlink_args()
        self._unlink(ins)

    def replace(
        self,
        ins: Instruction,
        op: Operation,
        args: Sequence[Instruction] | None = None,
        module_args: Sequence[Module] | None = None,
    ) -> Instruction:
        """Changes `ins` in place to `op(args)`; its users keep using it. Shape is recomputed."""
        args = ins.args if args is None else args
        module_args = ins.module_args if module_args is None else module_args
        shape = compute_shape(op, args, module_args)
        ins.op = op
        ins.set_args(list(args), module_args)
        ins.shape = shape
        return ins

    def adopt(self, ins: Instruction, pos: Instruction | None) -> None:
        """Moves `ins` out of its module to before `pos` of this one (to the end when None)."""
        assert ins.parent is not None
        ins.parent._unlink(ins)
        self._link_before(ins, pos)

    def replace_all_uses(self, old: Instruction, new: Instruction) -> None:
        old.replace_all_uses_with(new)

    def move_before(self, ins: Instruction, pos: Instruction | None) -> None:
        """Moves `ins` (of this module) before `pos` (to the end when None)."""
        if ins is pos:
            return
        self._unlink(ins)
        self._link_before(ins, pos)

    # -- queries ----------------------------------------------------------------------------

    def parameters(self) -> list[Instruction]:
        return [i for i in self if i.is_param]

    def parameter_names(self) -> list[str]:
        return [i.param_name for i in self if i.is_param]

    def get_parameter(self, name: str) -> Instruction | None:
        for i in self:
            if i.is_param and i.param_name == name:
                return i
        return None

    @property
    def return_instruction(self) -> Instruction | None:
        last = self.last
        return last if last is not None and last.is_return else None

    def output_shapes(self) -> list[Shape]:
        """The shapes a module returns: its @return's arguments, else its last instruction."""
        ret = self.return_instruction
        if ret is not None:
            return [a.shape for a in ret.args]
        last = self.last
        return [] if last is None else [last.shape]

    def reachable_modules(self) -> list[Module]:
        """This module, then every module its instructions reach through module arguments
        (breadth first, each once)."""
        order: list[Module] = [self]
        seen = {id(self)}
        i = 0
        while i < len(order):
            for sub in order[i].submodules():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    order.append(sub)
            i += 1
        return order

    def submodules(self) -> list[Module]:
        seen: dict[int, Module] = {}
        for i in self:
            for m in i.module_args:
                seen.setdefault(id(m), m)
        return list(seen.values())


def compute_shape(op: Operation, args: Sequence[Instruction], module_args: Sequence[Module]) -> Shape:
    problem = op.defn.check_arity(len(args), len(module_args))
    if problem:
        raise ShapeError(problem)
    shape = op.defn.shape(op, [a.shape for a in args], module_args)
    if shape is None:
        raise ShapeError(f"'{op.name}' has no shape rule: give the result shape")
    return shape
