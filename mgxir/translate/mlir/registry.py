"""The lowering registry: one rule per operator definition, keyed by the definition's class (found
through `lookup`, so a misspelt name fails at import), with a note of what it lowers to.

Two kinds of rule:
- a tensor rule lowers an instruction on tensors (`main` and other whole-tensor modules);
- the scalar rule lowers a pointwise op on scalars: every operator with a scalar meaning
  (mgxir/ops/scalar.py) has it, and no operator has another. It is the body of the
  `linalg.generic` that a pointwise op without a tensor rule becomes, and of `pointwise` modules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from iree.compiler import ir

from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import OpDef
from mgxir.ir.registry import lookup
from mgxir.ir.shape import Shape
from mgxir.ops import register_all_ops
from mgxir.ops.scalar import has_scalar_meaning
from mgxir.translate.mlir.arith_emitter import lower_meaning

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

# a rule gets its arguments' values (a tuple's elements as a list) and returns its instruction's
TensorRule = Callable[["Lowering", Instruction, list], "ir.Value | list[ir.Value]"]


@dataclass(frozen=True)
class Rule:
    lower: Callable
    to: str | Callable[[str], str]  # what the op becomes, for the docs table (given the op's name)
    takes_tuples: bool = False  # whether it takes tuple arguments (their elements, as a list)
    dynamic: bool = False  # whether it lowers dynamic dimensions (`?` sizes)

    def describe(self, name: str) -> str:
        return self.to if isinstance(self.to, str) else self.to(name)


register_all_ops()  # the rule tables are keyed by the catalogue's definitions
TENSOR_RULES: dict[type[OpDef], Rule] = {}
SCALAR_MEANING = Rule(lower_meaning, "arith/math from its scalar meaning")


def _definition(name: str) -> type[OpDef]:
    defn = lookup(name)
    if defn is None:
        raise KeyError(f"lowering registered for unknown operator '{name}'")
    return type(defn)


def lowers(
    *names: str, to: str | Callable[[str], str], takes_tuples: bool = False, dynamic: bool = False
) -> Callable[[TensorRule], TensorRule]:
    """Registers a tensor rule for the named operators."""

    def register(fn: TensorRule) -> TensorRule:
        for name in names:
            cls = _definition(name)
            if cls in TENSOR_RULES:
                raise ValueError(f"two tensor lowerings for '{name}'")
            TENSOR_RULES[cls] = Rule(fn, to, takes_tuples, dynamic)
        return fn

    return register


def sizes(shape: Shape) -> list[int | None]:
    """The dimensions of a shape, None for a dynamic one (a `?` in its tensor type)."""
    if shape.is_dynamic:
        return [d.min if d.is_fixed else None for d in shape.dyn_dims]
    return list(shape.lens)


def tensor_rule(defn: OpDef) -> Rule | None:
    return TENSOR_RULES.get(type(defn))


def scalar_rule(defn: OpDef) -> Rule | None:
    return SCALAR_MEANING if has_scalar_meaning(defn) else None


def _pointwise_as_generic(lowering: Lowering, ins: Instruction, args: list[ir.Value]) -> ir.Value:
    """A pointwise op without a tensor rule: a `linalg.generic` around its scalar meaning."""
    rule = scalar_rule(ins.op.defn)
    assert rule is not None
    types = [a.shape.dtype for a in ins.args]
    out = ins.shape.dtype
    inputs = [(v, sizes(a.shape)) for v, a in zip(args, ins.args)]
    n = len(args)

    def body(scalars: list[ir.Value]) -> list[ir.Value]:
        return [rule.lower(lowering.scalars, ins.op, scalars[:n], types, out)]

    return lowering.emitter.elementwise(inputs, out, sizes(ins.shape), body)


POINTWISE_AS_GENERIC = Rule(_pointwise_as_generic, "linalg.generic { scalar meaning }", dynamic=True)
