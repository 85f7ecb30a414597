"""Attribute kinds: how each C++ attribute type of a MIGraphX operator is read and printed."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.format import (
    ShapeSyntaxError,
    format_float,
    format_float32_exact,
    read_dynamic_dimension,
    shape_from_value,
)
from mgxir.ir.shape import DynamicDimension, Shape, format_dynamic_dimension, format_int_list, format_shape
from mgxir.ir.values import Braces, Brackets, Seq, Value
from mgxir.records import FrozenRecord


class AttributeError_(ValueError):
    """A value that does not fit the attribute's kind."""


def _atom(v: Value, what: str) -> str:
    if isinstance(v, str):
        return v
    raise AttributeError_(f"expected {what}")


def list_items(v: Value, what: str) -> tuple:
    if isinstance(v, Braces):
        return v.items
    if v == "":
        return ()
    raise AttributeError_(f"expected {{...}} with {what}")


class Kind(abc.ABC):
    """Reads a value tree into a Python value, checks Python values, prints values."""

    description = "a value"

    @abc.abstractmethod
    def read(self, v: Value) -> Any: ...

    def coerce(self, x: Any) -> Any:
        """Normalises a Python value given by API users (lists to tuples, ints to bools...)."""
        return x

    @abc.abstractmethod
    def format(self, x: Any) -> str: ...

    def format_exact(self, x: Any) -> str:
        """The text that reads back as exactly `x` (the lossless text form); `format` where it does."""
        return self.format(x)


class IntKind(Kind):
    description = "an integer"

    def read(self, v: Value) -> int:
        text = _atom(v, self.description)
        try:
            return int(text)
        except ValueError:
            if text in ("true", "false"):
                return int(text == "true")
            raise AttributeError_(f"expected an integer, got '{text}'") from None

    def coerce(self, x: Any) -> int:
        return int(x)

    def format(self, x: int) -> str:
        return str(x)


class BoolKind(Kind):
    description = "0 or 1"

    def read(self, v: Value) -> bool:
        text = _atom(v, self.description)
        if text in ("1", "true"):
            return True
        if text in ("0", "false"):
            return False
        raise AttributeError_(f"expected 0 or 1, got '{text}'")

    def coerce(self, x: Any) -> bool:
        return bool(x)

    def format(self, x: bool) -> str:
        return "1" if x else "0"


def _float32(x: Any) -> float:
    """`x` rounded to float (MIGraphX's attributes are float): past its range, silently an infinity
    as in C++ (numpy's RuntimeWarning was a second line on standard error)."""
    with np.errstate(over="ignore"):
        return float(np.float32(x))


def _read_float(text: str) -> float:
    try:
        return _float32(float(text))
    except ValueError:
        raise AttributeError_(f"expected a number, got '{text}'") from None


class FloatKind(Kind):
    description = "a number"

    def read(self, v: Value) -> float:
        return _read_float(_atom(v, self.description))

    def coerce(self, x: Any) -> float:
        return _float32(x)

    def format(self, x: float) -> str:
        return format_float(x)

    def format_exact(self, x: float) -> str:
        return format_float32_exact(x)


class StringKind(Kind):
    description = "a word"

    def read(self, v: Value) -> str:
        return _atom(v, self.description)

    def coerce(self, x: Any) -> str:
        return str(x)

    def format(self, x: str) -> str:
        return x


class IntListKind(Kind):
    description = "integers"

    def read(self, v: Value) -> tuple[int, ...]:
        return tuple(IntKind().read(x) for x in list_items(v, self.description))

    def coerce(self, x: Any) -> tuple[int, ...]:
        return tuple(int(i) for i in x)

    def format(self, x: Sequence[int]) -> str:
        return format_int_list(x)


class FloatListKind(Kind):
    description = "numbers"

    def read(self, v: Value) -> tuple[float, ...]:
        return tuple(FloatKind().read(x) for x in list_items(v, self.description))

    def coerce(self, x: Any) -> tuple[float, ...]:
        return tuple(_float32(i) for i in x)

    def format(self, x: Sequence[float]) -> str:
        return "{" + ", ".join(format_float(f) for f in x) + "}"

    def format_exact(self, x: Sequence[float]) -> str:
        return "{" + ", ".join(format_float32_exact(f) for f in x) + "}"


class TypeKind(Kind):
    """`shape::type_t`: printed as its enum number; a type name is accepted too."""

    description = "a type number or type name"

    def read(self, v: Value) -> DType:
        text = _atom(v, self.description)
        try:
            return DType(int(text))
        except ValueError:
            try:
                return DType.from_name(text if text.endswith("_type") else text + "_type")
            except KeyError:
                raise AttributeError_(f"expected a type number or type name, got '{text}'") from None

    def coerce(self, x: Any) -> DType:
        if isinstance(x, str):
            return DType.from_name(x if x.endswith("_type") else x + "_type")
        return DType(int(x))

    def format(self, x: DType) -> str:
        return str(int(x))


class EnumKind(Kind, FrozenRecord):
    """A C++ enum: `words` in enum order; printed as a word when `print_words`, else a number."""

    words: tuple[str, ...]
    print_words: bool

    def __init__(self, words: tuple[str, ...], print_words: bool = False):
        object.__setattr__(self, "words", words)
        object.__setattr__(self, "print_words", print_words)

    @property
    def description(self) -> str:  # type: ignore[override]
        return "one of " + ", ".join(self.words)

    def read(self, v: Value) -> int:
        text = _atom(v, self.description)
        if text in self.words:
            return self.words.index(text)
        try:
            n = int(text)
        except ValueError:
            raise AttributeError_(f"expected {self.description}, got '{text}'") from None
        if not 0 <= n < len(self.words):
            raise AttributeError_(f"expected {self.description}, got {n}")
        return n

    def coerce(self, x: Any) -> int:
        return self.words.index(x) if isinstance(x, str) else int(x)

    def format(self, x: int) -> str:
        return self.words[x] if self.print_words else str(x)


class OptionalKind(Kind, FrozenRecord):
    inner: Kind

    def __init__(self, inner: Kind):
        object.__setattr__(self, "inner", inner)

    @property
    def description(self) -> str:  # type: ignore[override]
        return self.inner.description + " or nullopt"

    def read(self, v: Value) -> Any:
        if v == "nullopt":
            return None
        return self.inner.read(v)

    def coerce(self, x: Any) -> Any:
        return None if x is None else self.inner.coerce(x)

    def format(self, x: Any) -> str:
        return "nullopt" if x is None else self.inner.format(x)

    def format_exact(self, x: Any) -> str:
        return "nullopt" if x is None else self.inner.format_exact(x)


class ShapeKind(Kind):
    description = "a shape"

    def read(self, v: Value) -> Shape:
        try:
            return shape_from_value(v)
        except ShapeSyntaxError as e:
            raise AttributeError_(str(e)) from None

    def coerce(self, x: Any) -> Shape:
        if not isinstance(x, Shape):
            raise TypeError("expected a Shape")
        return x

    def format(self, x: Shape) -> str:
        return format_shape(x)


class DynamicDimsKind(Kind):
    description = "dynamic dimensions"

    def read(self, v: Value) -> tuple[DynamicDimension, ...]:
        try:
            return tuple(read_dynamic_dimension(d) for d in list_items(v, self.description))
        except ShapeSyntaxError as e:
            raise AttributeError_(str(e)) from None

    def coerce(self, x: Any) -> tuple[DynamicDimension, ...]:
        return tuple(d if isinstance(d, DynamicDimension) else DynamicDimension(*d) for d in x)

    def format(self, x: Sequence[DynamicDimension]) -> str:
        return "{" + ", ".join(format_dynamic_dimension(d) for d in x) + "}"


INT = IntKind()
BOOL = BoolKind()
FLOAT = FloatKind()
STRING = StringKind()
INTS = IntListKind()
FLOATS = FloatListKind()
TYPE = TypeKind()
SHAPE = ShapeKind()
DYN_DIMS = DynamicDimsKind()
PADDING_MODE = EnumKind(("default_", "same_lower", "same_upper", "valid"))
POOLING_MODE = EnumKind(("average", "max", "lpnorm"), print_words=True)
RNN_DIRECTION = EnumKind(("forward", "reverse", "bidirectional"), print_words=True)
PAD_MODE = EnumKind(("constant_pad", "reflect_pad", "edge_pad"))


class Attr(FrozenRecord):
    """One reflected attribute of an operator: its name, kind and default, in print order."""

    name: str
    kind: Kind
    default: Any

    def __init__(self, name: str, kind: Kind, default: Any = None):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "default", default)


__all__ = [
    "Attr",
    "AttributeError_",
    "Kind",
    "BOOL",
    "DYN_DIMS",
    "FLOAT",
    "FLOATS",
    "INT",
    "INTS",
    "PAD_MODE",
    "PADDING_MODE",
    "POOLING_MODE",
    "RNN_DIRECTION",
    "SHAPE",
    "STRING",
    "TYPE",
    "EnumKind",
    "OptionalKind",
    "Seq",
    "Brackets",
]
