"""Small value classes written by hand instead of as dataclasses, for a tool's start-up path.

A dataclass compiles its `__init__`, `__repr__` and `__eq__` from generated source when its module
is imported (about half a millisecond each, and a tool's start-up defined a dozen). A `Record`
writes its `__init__` by hand, and its parameters are its fields: it gets the repr, `==` and
(unhashable) of a dataclass; a `FrozenRecord`, those of a frozen dataclass (hash, and
`dataclasses.FrozenInstanceError` on assignment), its `__init__` setting fields with
`object.__setattr__`.
"""

from __future__ import annotations

from typing import Any, NoReturn


def fields(cls: type) -> tuple[str, ...]:
    """The names of `cls.__init__`'s parameters (after `self`): the record's fields, in order."""
    found = cls.__dict__.get("_fields")
    if found is None:
        code = cls.__init__.__code__  # type: ignore[misc]
        found = code.co_varnames[1 : code.co_argcount + code.co_kwonlyargcount]
        type.__setattr__(cls, "_fields", found)
    return found


class Record:
    __slots__ = ()

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in fields(type(self)))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in fields(type(self)))
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]


class FrozenRecord(Record):
    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:
        return hash(self._values())

    def __reduce__(self) -> tuple:
        return (type(self), self._values())
