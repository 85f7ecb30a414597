"""Shapes as MIGraphX defines them: element type, lens and strides, dynamic dimensions, tuples.

Shapes are immutable and hashable. `Shape.make` interns them so that equal shapes are usually the
same object, which makes the verifier's comparisons and the printer's caches cheap.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from mgxir.ir.dtype import DType


class DynamicDimension(NamedTuple):
    """One dimension of a dynamic shape: an interval [min, max] and optional optimal sizes."""

    min: int
    max: int
    optimals: tuple[int, ...] = ()

    @property
    def is_fixed(self) -> bool:
        return self.min == self.max


def standard_strides(lens: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides (MIGraphX's compute_strides: the last stride is 1, zeros propagate)."""
    n = len(lens)
    if n == 0:
        return ()
    strides = [1] * n
    acc = 1
    for i in range(n - 1, 0, -1):
        acc *= lens[i]
        strides[i - 1] = acc
    return tuple(strides)


class Shape:
    """A tensor shape: static (lens + strides), dynamic (intervals per dimension) or a tuple."""

    __slots__ = (
        "_hash",
        "_key",
        "_standard",
        "dtype",
        "dyn_dims",
        "lens",
        "strides",
        "sub_shapes",
        "text",
    )

    dtype: DType
    lens: tuple[int, ...]
    strides: tuple[int, ...]
    dyn_dims: tuple[DynamicDimension, ...] | None
    sub_shapes: tuple[Shape, ...] | None
    text: str | None  # the printed form, filled in lazily by the printer

    _interned: dict[tuple, Shape] = {}

    def __init__(self, dtype: DType, lens: Iterable[int] = (1,), strides: Iterable[int] | None = None):
        lens = tuple(lens)
        self.dtype = dtype
        self.lens = lens
        self.strides = standard_strides(lens) if strides is None else tuple(strides)
        if len(self.strides) != len(lens):
            raise ValueError(f"shape has {len(lens)} lens but {len(self.strides)} strides")
        self.dyn_dims = None
        self.sub_shapes = None
        self._finish((dtype, lens, self.strides))

    def _finish(self, key: tuple) -> None:
        self._key = key
        self._hash = hash(key)
        self._standard = None
        self.text = None

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def make(cls, dtype: DType, lens: Iterable[int], strides: Iterable[int] | None = None) -> Shape:
        """An interned static shape; strides default to the standard (row-major) ones."""
        lens = tuple(lens)
        strides = standard_strides(lens) if strides is None else tuple(strides)
        key = (dtype, lens, strides)
        found = cls._interned.get(key)
        if found is None:
            found = cls._interned[key] = cls(dtype, lens, strides)
        return found

    @classmethod
    def scalar_of(cls, dtype: DType) -> Shape:
        """MIGraphX's scalar shape: lens {1}, strides {0}."""
        return cls.make(dtype, (1,), (0,))

    @classmethod
    def dynamic(cls, dtype: DType, dims: Iterable[DynamicDimension | tuple[int, int]]) -> Shape:
        dd = tuple(d if isinstance(d, DynamicDimension) else DynamicDimension(*d) for d in dims)
        key = (dtype, "dyn", dd)
        found = cls._interned.get(key)
        if found is None:
            found = object.__new__(cls)
            found.dtype = dtype
            found.lens = tuple(d.max for d in dd)
            found.strides = standard_strides(found.lens)
            found.dyn_dims = dd
            found.sub_shapes = None
            found._finish(key)
            cls._interned[key] = found
        return found

    @classmethod
    def tuple_of(cls, sub_shapes: Iterable[Shape]) -> Shape:
        subs = tuple(sub_shapes)
        key = (DType.tuple, "tuple", subs)
        found = cls._interned.get(key)
        if found is None:
            found = object.__new__(cls)
            found.dtype = DType.tuple
            found.lens = ()
            found.strides = ()
            found.dyn_dims = None
            found.sub_shapes = subs
            found._finish(key)
            cls._interned[key] = found
        return found

    # -- identity -----------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Shape):
            return NotImplemented
        return self._hash == other._hash and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Shape({format_shape(self)})"

    # -- kinds --------------------------------------------------------------------------------

    @property
    def is_dynamic(self) -> bool:
        return self.dyn_dims is not None

    @property
    def is_tuple(self) -> bool:
        return self.sub_shapes is not None

    @property
    def ndim(self) -> int:
        return len(self.dyn_dims) if self.dyn_dims is not None else len(self.lens)

    @property
    def type_name(self) -> str:
        return self.dtype.type_name

    # -- sizes --------------------------------------------------------------------------------

    @property
    def elements(self) -> int:
        if self.sub_shapes is not None:
            return 0
        return math.prod(self.lens) if self.lens else 0

    @property
    def element_space(self) -> int:
        """One past the largest offset any element reaches (0 for a rank-0 shape)."""
        if not self.lens:
            return 0
        return sum((n - 1) * s for n, s in zip(self.lens, self.strides)) + 1

    @property
    def bytes(self) -> int:
        if self.sub_shapes is not None:
            return sum(s.bytes for s in self.sub_shapes)
        return self.dtype.itemsize * self.element_space

    # -- layout predicates (MIGraphX's definitions) -------------------------------------------

    @property
    def skips(self) -> bool:
        if self.elements == 1:
            return False
        return 1 not in self.strides

    @property
    def packed(self) -> bool:
        if self.dyn_dims is not None or self.sub_shapes is not None:
            return False
        return not self.skips and self.elements == self.element_space

    @property
    def broadcasted(self) -> bool:
        if self.dyn_dims is not None or self.sub_shapes is not None:
            return False
        return 0 in self.strides

    @property
    def transposed(self) -> bool:
        if self.dyn_dims is not None or self.sub_shapes is not None:
            return False
        strides = [s for s in self.strides if s != 0] if self.broadcasted else list(self.strides)
        return strides != sorted(strides, reverse=True)

    @property
    def scalar(self) -> bool:
        if self.dyn_dims is not None or self.sub_shapes is not None:
            return False
        return sum(self.strides) == 0

    @property
    def standard(self) -> bool:
        """Packed, no skips and strides descending (ignoring size-1 axes), as MIGraphX says."""
        if self._standard is None:
            if self.dyn_dims is not None or self.sub_shapes is not None:
                self._standard = False
            else:
                filtered = [s for n, s in zip(self.lens, self.strides) if n != 1]
                self._standard = (
                    self.elements == self.element_space
                    and not self.skips
                    and filtered == sorted(filtered, reverse=True)
                )
        return self._standard

    # -- derived shapes -----------------------------------------------------------------------

    def as_standard(self) -> Shape:
        if self.dyn_dims is not None or self.sub_shapes is not None:
            return self
        return Shape.make(self.dtype, self.lens)

    def with_type(self, dtype: DType) -> Shape:
        if self.dyn_dims is not None:
            return Shape.dynamic(dtype, self.dyn_dims)
        return Shape.make(dtype, self.lens, self.strides)

    def with_lens(self, lens: Sequence[int], dtype: DType | None = None) -> Shape:
        """A standard shape of these lens laid out in this shape's axis order."""
        return Shape.from_permutation(self.dtype if dtype is None else dtype, lens, find_permutation(self))

    @staticmethod
    def from_permutation(dtype: DType, lens: Sequence[int], perm: Sequence[int]) -> Shape:
        """Lens `lens` whose memory order is `perm` (outermost first)."""
        reordered = [lens[p] for p in perm]
        strides_reordered = standard_strides(reordered)
        strides = [0] * len(lens)
        for i, p in enumerate(perm):
            strides[p] = strides_reordered[i]
        return Shape.make(dtype, lens, strides)


def find_permutation(shape: Shape) -> tuple[int, ...]:
    """The axis order from outermost to innermost in memory (stable, by stride then len)."""
    idx = list(range(len(shape.lens)))
    idx.sort(key=lambda i: (shape.strides[i], shape.lens[i]), reverse=True)
    # list.sort with reverse=True keeps equal keys in original order, as std::stable_sort does
    return tuple(idx)


def find_common_permutation(shapes: Sequence[Shape]) -> tuple[int, ...]:
    """The most common permutation of the non-broadcast shapes (ties: smallest permutation)."""
    counts: dict[tuple[int, ...], int] = {}
    for s in shapes:
        if s.broadcasted:
            continue
        p = find_permutation(s)
        counts[p] = counts.get(p, 0) + 1
    if not counts:
        return tuple(range(shapes[0].ndim)) if shapes else ()
    best = max(counts.values())
    return min(p for p, c in counts.items() if c == best)


# -- how MIGraphX prints shapes ----------------------------------------------------------------


def format_int_list(values: Sequence[int]) -> str:
    return "{" + ", ".join(map(str, values)) + "}"


def format_dynamic_dimension(d: DynamicDimension, keep_optimals: bool = False) -> str:
    if keep_optimals and d.optimals:
        return f"[ {d.min}, {d.max}, {format_int_list(d.optimals)} ]"
    if d.min == d.max:
        return str(d.min)
    return f"[{d.min}..{d.max}]"


def format_shape(shape: Shape) -> str:
    """`float_type, {2, 3}, {3, 1}`, `dynamic, float_type, {[1..4], 3}` or `[s1, s2]`."""
    text = shape.text
    if text is None:
        if shape.sub_shapes is not None:
            text = "[" + ", ".join(format_shape(s) for s in shape.sub_shapes) + "]"
        elif shape.dyn_dims is not None:
            dims = ", ".join(format_dynamic_dimension(d) for d in shape.dyn_dims)
            text = f"dynamic, {shape.dtype.type_name}, {{{dims}}}"
        else:
            text = f"{shape.dtype.type_name}, {format_int_list(shape.lens)}, {format_int_list(shape.strides)}"
        shape.text = text
    return text
