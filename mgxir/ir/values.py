"""The generic value trees that the grammar's second layer produces.

Every attribute value, shape and literal body MIGraphX prints is one of these:
an atom (`str`), a `Seq` (`a, b, c`), `Braces` (`{...}`), `Brackets` (`[...]`),
a struct (`dict`, from `{k=v,...}`) or an `OpNode` (`name[k=v,...]`).
"""

from __future__ import annotations


class _Items:
    """A value holding a tuple of items; equal when of the same kind with equal items. (Plain
    classes rather than frozen dataclasses: the parser makes many, and dataclasses cost at import.)"""

    __slots__ = ("items",)

    def __init__(self, items: tuple):
        self.items = items

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.items == other.items  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.__class__.__name__, self.items))

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(items={self.items!r})"


class Seq(_Items):
    """`a, b, c`"""

    __slots__ = ()


class Braces(_Items):
    """`{...}`"""

    __slots__ = ()


class Brackets(_Items):
    """`[...]`"""

    __slots__ = ()


class OpNode:
    """`name[k=v,...]`"""

    __slots__ = ("attributes", "name")

    def __init__(self, name: str, attributes: tuple):
        self.name = name
        self.attributes = attributes  # ((key, value), ...)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not OpNode:
            return NotImplemented
        return self.name == other.name and self.attributes == other.attributes  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.name, self.attributes))

    def __repr__(self) -> str:
        return f"OpNode(name={self.name!r}, attributes={self.attributes!r})"


Value = str | Seq | Braces | Brackets | OpNode | dict


def atoms_of(v: Value) -> tuple:
    """The items of a `{...}` / `[...]` value, or of a sequence."""
    if isinstance(v, (Braces, Brackets, Seq)):
        return v.items
    return (v,)
