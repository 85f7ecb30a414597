"""The one table of operators, and the definitions made on demand for names outside it.

Definitions are registered explicitly: the builtins (`mgxir.ir.builtin`) when the IR is imported, the
catalogue by `mgxir.ops.register_all_ops()` (as MLIR's `registerAllDialects`), which `import mgxir`,
the parser and the tools call. A name not registered reads as an opaque operator (`OpaqueDef`);
`ref::X` wraps the definition of X (`RefLoweredDef`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mgxir.ir.attributes import AttributeError_, Kind, list_items
from mgxir.ir.operation import OpDef, Operation, RunModule, UnknownAttribute
from mgxir.ir.values import OpNode, Value

if TYPE_CHECKING:
    from mgxir.ir.module import Module
    from mgxir.ir.shape import Shape

_REGISTRY: dict[str, OpDef] = {}
_ALIASES: dict[str, str] = {}


def register(cls: type[OpDef]) -> type[OpDef]:
    """Class decorator: instantiates the definition and files it under its name."""
    register_instance(cls())
    return cls


def register_instance(defn: OpDef) -> None:
    if defn.name in _REGISTRY:
        raise ValueError(f"operator '{defn.name}' is defined twice")
    _REGISTRY[defn.name] = defn
    for alias in getattr(defn, "aliases", ()):
        _ALIASES[alias] = defn.name
    lookup.cache_clear()


def all_ops() -> dict[str, OpDef]:
    """Every registered definition by name (the catalogue's after `mgxir.ops.register_all_ops()`)."""
    return dict(_REGISTRY)


@functools.cache
def lookup(name: str) -> OpDef | None:
    """The definition for a printed operator name (`ref::X` wraps the definition of X)."""
    found = _REGISTRY.get(name) or _REGISTRY.get(_ALIASES.get(name, ""))
    if found is not None:
        return found
    if name.startswith("unknown:"):
        return _REGISTRY.get("unknown:")
    if name.startswith("ref::"):
        inner = lookup(name[5:])
        if inner is not None and not inner.is_opaque:
            return ref_lowered(inner)
    return None


def make_op(name: str, **attributes: Any) -> Operation:
    """`make_op("convolution", padding=(1, 1))`: an operation with defaults for the rest."""
    defn = lookup(name)
    if defn is None:
        hint = "" if len(_REGISTRY) > 3 else " (the catalogue is not registered: call mgxir.ops.register_all_ops())"
        raise KeyError(f"unknown operator '{name}'{hint}")
    return defn.make(**attributes)


def operation_from_node(node: OpNode, raw_attributes: str = "") -> Operation:
    """An operation from its parsed text; unknown ops and attributes give an opaque operation."""
    defn = lookup(node.name)
    if defn is not None and not defn.is_builtin:
        try:
            return defn.from_node(node, raw_attributes)
        except UnknownAttribute:
            pass
    return opaque(node.name).make_raw(raw_attributes)


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


class OperationListKind(Kind):
    """`std::vector<operation>` such as rnn's `actv_func={sigmoid, tanh}`."""

    description = "operators"

    def read(self, v: Value) -> tuple:
        out = []
        for item in list_items(v, self.description):
            if isinstance(item, str):
                item = OpNode(item, ())
            if not isinstance(item, OpNode):
                raise AttributeError_("expected an operator name")
            out.append(operation_from_node(item))
        return tuple(out)

    def coerce(self, x: Any) -> tuple:
        return tuple(make_op(o) if isinstance(o, str) else o for o in x)

    def format(self, x: Sequence[Any]) -> str:
        return "{" + ", ".join(o.text for o in x) + "}"


OPERATIONS = OperationListKind()
