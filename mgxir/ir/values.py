"""The generic value trees that the grammar's second layer produces.

Every attribute value, shape and literal body MIGraphX prints is one of these:
an atom (`str`), a `Seq` (`a, b, c`), `Braces` (`{...}`), `Brackets` (`[...]`),
a struct (`dict`, from `{k=v,...}`) or an `OpNode` (`name[k=v,...]`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Seq:
    items: tuple


@dataclass(frozen=True, slots=True)
class Braces:
    items: tuple


@dataclass(frozen=True, slots=True)
class Brackets:
    items: tuple


@dataclass(frozen=True, slots=True)
class OpNode:
    name: str
    attributes: tuple  # ((key, value), ...)


Value = str | Seq | Braces | Brackets | OpNode | dict


def atoms_of(v: Value) -> tuple:
    """The items of a `{...}` / `[...]` value, or of a sequence."""
    if isinstance(v, (Braces, Brackets, Seq)):
        return v.items
    return (v,)
