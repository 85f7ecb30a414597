"""Elementwise operators: one table row each (name, reference compute, flags)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.shape import Shape
from mgxir.ops.attributes import FLOAT, TYPE, Attr
from mgxir.ops.common import elementwise_result, fail, require_static, same_dims, same_type, unary_result
from mgxir.ops.definition import OpDef, Operation
from mgxir.ops.registry import register

if TYPE_CHECKING:
    from mgxir.ir.module import Module


class Unary(OpDef):
    arity = (1, 1)
    pointwise = True
    fn: ClassVar[Callable[..., np.ndarray]]

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        return unary_result(inputs[0])


class Binary(OpDef):
    arity = (2, 2)
    pointwise = True
    fn: ClassVar[Callable[..., np.ndarray]]

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        same_type(self.name, inputs)
        same_dims(self.name, inputs)
        return elementwise_result(self.name, inputs[0], inputs[1])


def _define(base: type[OpDef], name: str, fn: Callable, **flags: object) -> None:
    register(type(name.title().replace("_", ""), (base,), {"name": name, "fn": staticmethod(fn), **flags}))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()


UNARY: dict[str, Callable] = {
    "abs": np.abs,
    "acos": np.arccos,
    "acosh": np.arccosh,
    "asin": np.arcsin,
    "asinh": np.arcsinh,
    "atan": np.arctan,
    "atanh": np.arctanh,
    "ceil": np.ceil,
    "cos": np.cos,
    "cosh": np.cosh,
    "erf": _erf,
    "exp": np.exp,
    "floor": np.floor,
    "isinf": np.isinf,
    "isnan": np.isnan,
    "log": np.log,
    "log2": np.log2,
    "nearbyint": np.rint,
    "neg": np.negative,
    "not": np.logical_not,
    "recip": np.reciprocal,
    "relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "sigmoid": _sigmoid,
    "sign": np.sign,
    "sin": np.sin,
    "sinh": np.sinh,
    "sqrt": np.sqrt,
    "tan": np.tan,
    "tanh": np.tanh,
}

BINARY: dict[str, tuple[Callable, bool]] = {
    # name: (compute, commutative)
    "add": (np.add, True),
    "sub": (np.subtract, False),
    "mul": (np.multiply, True),
    "div": (np.divide, False),
    "pow": (np.power, False),
    "max": (np.maximum, True),
    "min": (np.minimum, True),
    "mod": (np.mod, False),
    "fmod": (np.fmod, False),
    "sqdiff": (lambda a, b: (a - b) * (a - b), True),
    "prelu": (lambda x, s: np.where(x < 0, x * s, x), False),
    "equal": (np.equal, True),
    "greater": (np.greater, False),
    "less": (np.less, False),
    "logical_and": (np.logical_and, True),
    "logical_or": (np.logical_or, True),
    "logical_xor": (np.logical_xor, True),
    "bitwise_and": (np.bitwise_and, True),
}

for _name, _fn in UNARY.items():
    _define(Unary, _name, _fn)
for _name, (_fn, _comm) in BINARY.items():
    _define(Binary, _name, _fn, commutative=_comm)


@register
class LeakyRelu(Unary):
    name = "leaky_relu"
    attributes = (Attr("alpha", FLOAT, 0.01),)


@register
class Elu(Unary):
    name = "elu"
    attributes = (Attr("alpha", FLOAT, 1.0),)


@register
class Convert(Unary):
    name = "convert"
    attributes = (Attr("target_type", TYPE, DType.half),)

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        s = unary_result(inputs[0])
        return s.with_type(op["target_type"])


@register
class Clip(OpDef):
    name = "clip"
    arity = (3, 3)
    pointwise = True

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        same_type(self.name, inputs)
        same_dims(self.name, inputs)
        return inputs[0]


@register
class Where(OpDef):
    name = "where"
    arity = (3, 3)
    pointwise = True

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        cond, s1, s2 = inputs
        if not cond.is_dynamic and cond.elements == 1:
            same_dims(self.name, [s1, s2])
        else:
            same_dims(self.name, inputs)
        if s1.is_dynamic or s2.is_dynamic:
            if s1 == s2:
                return s1
            raise fail(self.name, "dynamic input shapes must be the same")
        require_static(self.name, s1, s2)
        if s1 == s2 and s1.packed:
            return s1
        if s1.packed != s2.packed:
            return s1 if s1.packed else s2
        if s1.broadcasted != s2.broadcasted:
            return s2.with_lens(s1.lens) if s1.broadcasted else s1.with_lens(s1.lens)
        return Shape.make(s1.dtype, s1.lens)
