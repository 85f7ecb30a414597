"""Helpers shared by the shape rules of several op families."""

from __future__ import annotations

from collections.abc import Sequence

from mgxir.ir.dtype import DType
from mgxir.ir.operation import ShapeError
from mgxir.ir.shape import DynamicDimension, Shape, find_common_permutation


def fail(op: str, message: str) -> ShapeError:
    return ShapeError(f"{op}: {message}")


def normalize_axis(op: str, axis: int, ndim: int, what: str = "axis") -> int:
    """A possibly negative axis as an index in [0, ndim); a clear error when out of range."""
    if not -ndim <= axis < ndim:
        raise fail(op, f"{what} {axis} is out of range for rank {ndim}")
    return axis + ndim if axis < 0 else axis


def normalize_axes(op: str, axes: Sequence[int], ndim: int) -> list[int]:
    return [normalize_axis(op, a, ndim) for a in axes]


def require_static(op: str, *shapes: Shape) -> None:
    for s in shapes:
        if s.is_dynamic:
            raise fail(op, "dynamic input shapes are not supported by this operator's shape rule here")
        if s.is_tuple:
            raise fail(op, "a tuple cannot be an input")


def same_type(op: str, shapes: Sequence[Shape]) -> None:
    t = shapes[0].dtype
    for i, s in enumerate(shapes[1:], 1):
        if s.dtype != t:
            raise fail(op, f"input {i} has type {s.dtype.type_name}, input 0 has {t.type_name}")


def same_dims(op: str, shapes: Sequence[Shape]) -> None:
    first = shapes[0]
    for i, s in enumerate(shapes[1:], 1):
        if s.is_dynamic or first.is_dynamic:
            if s.dyn_dims != first.dyn_dims and s != first:
                raise fail(op, f"input {i} has dimensions different from input 0")
            continue
        if s.lens != first.lens:
            if len(s.lens) != len(first.lens):
                raise fail(op, f"input {i} has rank {len(s.lens)}, input 0 has rank {len(first.lens)}")
            d = next(k for k in range(len(s.lens)) if s.lens[k] != first.lens[k])
            raise fail(
                op,
                f"input {i} has lens {{{', '.join(map(str, s.lens))}}}, input 0 has "
                f"{{{', '.join(map(str, first.lens))}}} (dimension {d}: {s.lens[d]} vs {first.lens[d]})",
            )


def elementwise_result(op: str, s0: Shape, s1: Shape) -> Shape:
    """MIGraphX's binary rule: which layout the result of two same-lens inputs takes."""
    if s0.is_dynamic or s1.is_dynamic:
        if s0 == s1:
            return s0
        raise fail(op, "dynamic inputs must have identical shapes")
    if s0 == s1 and s0.packed:
        return s0
    if s0.packed != s1.packed:
        return s0 if s0.packed else s1
    if s0.broadcasted != s1.broadcasted:
        return s1.with_lens(s0.lens) if s0.broadcasted else s0.with_lens(s0.lens)
    return Shape.from_permutation(s0.dtype, s0.lens, find_common_permutation([s0, s1]))


def unary_result(s: Shape) -> Shape:
    """MIGraphX's unary rule."""
    if s.is_dynamic or s.scalar:
        return s
    if s.broadcasted:
        return Shape.make(s.dtype, s.lens)
    return s.with_lens(s.lens)


def lens_text(lens: Sequence[int]) -> str:
    return "{" + ", ".join(map(str, lens)) + "}"


# std::numeric_limits<std::size_t>::max(): MIGraphX's unbounded dimension
SIZE_MAX = (1 << 64) - 1


# Where a rank is read from an input's length (allocate's dims, broadcast_with_dims), a rank past
# this is refused: MIGraphX would build the list of 2^40 dimensions and fail to allocate it (mgxir
# raised MemoryError or OverflowError; found by fuzz/run.py on --from-py). numpy holds 64 at most.
MAX_RANK_FROM_INPUT = 4096


def unknown_dims(op: str, dtype: DType, rank: int, limit: int = SIZE_MAX) -> Shape:
    """A dynamic shape of `rank` dimensions each in [0, limit]: a size only known at run time."""
    if rank > MAX_RANK_FROM_INPUT:
        raise fail(op, f"{rank} output dimensions are more than mgxir holds ({MAX_RANK_FROM_INPUT})")
    return Shape.dynamic(dtype, [DynamicDimension(0, limit)] * rank)
