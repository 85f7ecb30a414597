"""Builtin instructions (@param, @literal, @return), opaque operators and `ref::` lowered ops."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from mgxir.ir.instruction import Instruction
from mgxir.ir.shape import Shape
from mgxir.ops.attributes import STRING, Attr
from mgxir.ops.definition import OpDef, Operation, RunModule
from mgxir.ops.registry import register

if TYPE_CHECKING:
    from mgxir.ir.literal import Literal
    from mgxir.ir.module import Module


@register
class Param(OpDef):
    name = "@param"
    attributes = (Attr("parameter", STRING, ""),)
    arity = (0, 0)
    is_builtin = True

    def format(self, op: Operation) -> str:
        return "@param:" + op.values[0]


@register
class LiteralOp(OpDef):
    """`@literal{...}`: the printer writes the values; the op carries the `Literal`."""

    name = "@literal"
    arity = (0, 0)
    is_builtin = True

    def format(self, op: Operation) -> str:
        return "@literal"

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        return op.values[0].shape


@register
class Return(OpDef):
    name = "@return"
    is_builtin = True
    has_side_effects = True

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        if len(inputs) == 1:
            return inputs[0]
        return Shape.tuple_of(inputs)


def _builtin(name: str) -> OpDef:
    from mgxir.ops.registry import lookup

    defn = lookup(name)
    assert defn is not None
    return defn


def make_param(name: str) -> Operation:
    return Operation(_builtin("@param"), (name,))


def make_literal(literal: Literal) -> Operation:
    return Operation(_builtin("@literal"), (literal,))


def make_return() -> Operation:
    return _builtin("@return").make()


class OpaqueDef(OpDef):
    """An operator mgxir does not know: kept with its attribute text, printed back unchanged."""

    is_opaque = True

    def __init__(self, name: str):
        self.name = name  # type: ignore[misc]
        super().__init__()

    def make_raw(self, raw_attributes: str) -> Operation:
        return Operation(self, (raw_attributes,))

    def format(self, op: Operation) -> str:
        return self.name + op.values[0]


@functools.cache
def opaque(name: str) -> OpaqueDef:
    return OpaqueDef(name)


def undefined_value(name: str = "") -> Instruction:
    """A value used but defined nowhere: `?` in MIGraphX's pass traces, or a name from outside a
    pasted excerpt (read with allow_undefined). It belongs to no module, its shape is unknown, and
    arguments that use it print as `name` (`?` when it has none)."""
    return Instruction(opaque("?").make_raw(name), (), None)


class RefLoweredDef(OpDef):
    """`ref::X`: op X lowered to MIGraphX's reference target; same attributes and shape rule."""

    def __init__(self, inner: OpDef):
        self.inner = inner
        self.name = "ref::" + inner.name  # type: ignore[misc]
        self.attributes = inner.attributes  # type: ignore[misc]
        self.legacy_attributes = inner.legacy_attributes  # type: ignore[misc]
        self.arity = inner.arity  # type: ignore[misc]
        self.module_arity = inner.module_arity  # type: ignore[misc]
        self.is_view = inner.is_view  # type: ignore[misc]
        self.has_side_effects = inner.has_side_effects  # type: ignore[misc]
        self.pointwise = inner.pointwise  # type: ignore[misc]
        self.commutative = inner.commutative  # type: ignore[misc]
        self.axis_attributes = inner.axis_attributes  # type: ignore[misc]
        self.padding_attributes = inner.padding_attributes  # type: ignore[misc]
        super().__init__()

    def _inner_op(self, op: Operation) -> Operation:
        return Operation(self.inner, op.values)

    def format(self, op: Operation) -> str:
        return "ref::" + self.inner.format(self._inner_op(op))

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape | None:
        return self.inner.shape(self._inner_op(op), inputs, modules)

    def compute(self, op: Operation, inputs: list[np.ndarray], modules: Sequence[Module], run_module: RunModule):
        return self.inner.compute(self._inner_op(op), inputs, modules, run_module)

    def kernel(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module], run_module: RunModule):
        return self.inner.kernel(self._inner_op(op), inputs, modules, run_module)

    @property
    def has_compute(self) -> bool:
        return self.inner.has_compute

    def normalize(self, op: Operation, inputs: Sequence[Shape]) -> Operation:
        return Operation(self, self.inner.normalize(self._inner_op(op), inputs).values)

    def complete(self, op: Operation, declared: Shape | None) -> Operation:
        done = self.inner.complete(self._inner_op(op), declared)
        return Operation(self, done.values)

    def __getattr__(self, item: str):
        return getattr(self.inner, item)


@functools.cache
def ref_lowered(inner: OpDef) -> RefLoweredDef:
    return RefLoweredDef(inner)
