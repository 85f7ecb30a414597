"""The one table of operators. Every op family module registers its definitions here."""

from __future__ import annotations

import functools
from typing import Any

from mgxir.ops.definition import OpDef, Operation, UnknownAttribute
from mgxir.text.values import OpNode

_REGISTRY: dict[str, OpDef] = {}
_ALIASES: dict[str, str] = {}


def register(cls: type[OpDef]) -> type[OpDef]:
    """Class decorator: instantiates the definition and files it under its name."""
    if cls.name in _REGISTRY:
        raise ValueError(f"operator '{cls.name}' is defined twice")
    _REGISTRY[cls.name] = cls()
    for alias in getattr(cls, "aliases", ()):
        _ALIASES[alias] = cls.name
    return cls


@functools.cache
def _load_catalogue() -> None:
    import mgxir.ops.catalog  # noqa: F401  (registers every family)


def all_ops() -> dict[str, OpDef]:
    _load_catalogue()
    return dict(_REGISTRY)


@functools.cache
def lookup(name: str) -> OpDef | None:
    """The definition for a printed operator name (`ref::X` wraps the definition of X)."""
    _load_catalogue()
    found = _REGISTRY.get(name) or _REGISTRY.get(_ALIASES.get(name, ""))
    if found is not None:
        return found
    if name.startswith("unknown:"):
        return _REGISTRY.get("unknown:")
    if name.startswith("ref::"):
        inner = lookup(name[5:])
        if inner is not None and not inner.is_opaque:
            from mgxir.ops.builtin import ref_lowered

            return ref_lowered(inner)
    return None


def make_op(name: str, **attributes: Any) -> Operation:
    """`make_op("convolution", padding=(1, 1))`: an operation with defaults for the rest."""
    defn = lookup(name)
    if defn is None:
        raise KeyError(f"unknown operator '{name}'")
    return defn.make(**attributes)


def operation_from_node(node: OpNode, raw_attributes: str = "") -> Operation:
    """An operation from its parsed text; unknown ops and attributes give an opaque operation."""
    defn = lookup(node.name)
    if defn is not None and not defn.is_builtin:
        try:
            return defn.from_node(node, raw_attributes)
        except UnknownAttribute:
            pass
    from mgxir.ops.builtin import opaque

    return opaque(node.name).make_raw(raw_attributes)
