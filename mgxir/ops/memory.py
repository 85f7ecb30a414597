"""Memory planning operators: `allocate` and `load` (a view into a scratch buffer)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mgxir.ir.attributes import INT, SHAPE, TYPE, Attr, AttributeError_, OptionalKind
from mgxir.ir.operation import OpDef, Operation, RunModule
from mgxir.ir.registry import register
from mgxir.ir.shape import Shape
from mgxir.ir.values import OpNode
from mgxir.ops.common import fail, unknown_dims

if TYPE_CHECKING:
    from mgxir.ir.module import Module

Arrays = list[np.ndarray]
Modules = Sequence["Module"]


@register
class Allocate(OpDef):
    name = "allocate"
    attributes = (Attr("shape", OptionalKind(SHAPE), None), Attr("buf_type", OptionalKind(TYPE), None))
    arity = (0, 1)

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        s, buf_type = op["shape"], op["buf_type"]
        if s is not None:
            if buf_type is not None:
                raise fail(self.name, "shape and buf_type attributes both set")
            return s
        if buf_type is None:
            raise fail(self.name, "shape and buf_type attributes both not set")
        if len(inputs) != 1 or inputs[0].ndim != 1 or inputs[0].is_dynamic:
            raise fail(self.name, "without a shape it takes one static 1-D input: the output dimensions")
        return unknown_dims(self.name, buf_type, inputs[0].lens[0])

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        s = op["shape"]
        if s is None:
            return np.zeros([int(d) for d in inputs[0].reshape(-1)], op["buf_type"].numpy)
        return np.zeros(s.lens, s.dtype.numpy)


@register
class Load(OpDef):
    """Printed as `load[offset=O,end=E]`: the shape is the instruction's own, `end` is derived."""

    name = "load"
    attributes = (Attr("shape", OptionalKind(SHAPE), None), Attr("offset", INT, 0))
    arity = (1, 1)
    is_view = True

    def from_node(self, node: OpNode, raw_attributes: str) -> Operation:
        values = dict(node.attributes)
        offset = INT.read(values.pop("offset", "0"))
        end = INT.read(values["end"]) if "end" in values else None
        values.pop("end", None)
        shape = SHAPE.read(values.pop("shape")) if "shape" in values else None
        if values:
            raise AttributeError_(f"load has no attribute '{next(iter(values))}'")
        return _PendingLoad(self, (shape, offset), end)

    def complete(self, op: Operation, declared: Shape | None) -> Operation:
        shape = op.values[0] if op.values[0] is not None else declared
        end = getattr(op, "end", None)
        if shape is not None and end is not None and end != op.values[1] + shape.bytes:
            raise AttributeError_(
                f"load end={end} is not offset {op.values[1]} plus the {shape.bytes} bytes of its shape"
            )
        return Operation(self, (shape, op.values[1]))

    def format(self, op: Operation) -> str:
        shape, offset = op.values
        end = offset + (shape.bytes if shape is not None else 0)
        return f"load[offset={offset},end={end}]"

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        shape, offset = op.values
        if shape is None:
            raise fail(self.name, "needs a shape")
        if inputs[0].bytes < offset + shape.bytes:
            message = f"bytes {offset}..{offset + shape.bytes} are outside the {inputs[0].bytes}-byte buffer"
            raise fail(self.name, message)
        return shape

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        shape, offset = op.values
        buffer = np.ascontiguousarray(inputs[0]).reshape(-1).view(np.uint8)
        data = buffer[offset : offset + shape.bytes].view(shape.dtype.numpy)
        itemsize = shape.dtype.itemsize
        return as_strided(data, shape=shape.lens, strides=[st * itemsize for st in shape.strides])


class _PendingLoad(Operation):
    __slots__ = ("end",)

    def __init__(self, defn: OpDef, values: tuple, end: int | None):
        super().__init__(defn, values)
        self.end = end
