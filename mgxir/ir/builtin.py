"""The builtin instructions every program has: @param, @literal and @return."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mgxir.ir.attributes import STRING, Attr
from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import OpDef, Operation, ShapeError
from mgxir.ir.registry import opaque, register_instance
from mgxir.ir.shape import Shape

if TYPE_CHECKING:
    from mgxir.ir.literal import Literal
    from mgxir.ir.module import Module


class Param(OpDef):
    name = "@param"
    attributes = (Attr("parameter", STRING, ""),)
    arity = (0, 0)
    is_builtin = True

    def format(self, op: Operation) -> str:
        return "@param:" + op.values[0]


class LiteralOp(OpDef):
    """`@literal{...}`: the printer writes the values; the op carries the `Literal`."""

    name = "@literal"
    arity = (0, 0)
    is_builtin = True

    def format(self, op: Operation) -> str:
        return "@literal"

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        if not op.values:  # `@literal` written without its values (IndexError; fuzz/run.py, text)
            raise ShapeError("@literal: a literal needs its values: '@literal{...} -> shape'")
        return op.values[0].shape


class Return(OpDef):
    name = "@return"
    is_builtin = True
    has_side_effects = True

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        if len(inputs) == 1:
            return inputs[0]
        return Shape.tuple_of(inputs)


PARAM = Param()
LITERAL = LiteralOp()
RETURN = Return()


def make_param(name: str) -> Operation:
    return Operation(PARAM, (name,))


def make_literal(literal: Literal) -> Operation:
    return Operation(LITERAL, (literal,))


def make_return() -> Operation:
    return RETURN.make()


def undefined_value(name: str = "") -> Instruction:
    """A value used but defined nowhere: `?` in MIGraphX's pass traces, or a name from outside a
    pasted excerpt (read with allow_undefined). It belongs to no module, its shape is unknown, and
    arguments that use it print as `name` (`?` when it has none)."""
    return Instruction(opaque("?").make_raw(name), (), None)


for _definition in (PARAM, LITERAL, RETURN):
    register_instance(_definition)
