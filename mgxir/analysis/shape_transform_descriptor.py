"""MIGraphX's shape_transform_descriptor: a chain of reshape, squeeze, unsqueeze, flatten, transpose,
broadcast and multibroadcast described as dimension groups, simplified, and turned back into the fewest
ops.

The descriptor holds one `Dimension` per output axis; each is a list of `Sub` (sub-dimensions), and
each sub records the input axis it came from (`axis`: the input axis, then one index per split), or
none for a broadcast dimension, or a `hidden_axis` for an input axis of size 1 that was broadcast. For
input `[x, y, z]` the descriptor starts as `[[x:0]], [[y:1]], [[z:2]]`; a reshape to `[x*y, z]` makes
it `[[x:0], [y:1]], [[z:2]]`, a reshape to `[2, x/2, y, z]` makes it `[[2:0x0]], [[x/2:0x1]], ...`.

Public API (as MIGraphX names it):
- `ShapeTransformDescriptor.create(dims, ops)`: record `ops` on input lens `dims` and simplify; an
  empty descriptor (`.empty()`) when some op cannot be described.
- `.generate(input_dims=(), no_broadcast=False)`: the minimal ops (in the order reshape/unsqueeze,
  transpose, broadcast, reshape/squeeze, broadcast) doing the recorded transformation.
- `.rebase(dims, broadcast=False)`: the same transformation applied to other input lens.
- `.common_dims()`, `.common_rank()`, `.to_common_from_src()`, `.to_common_from_dst()`,
  `.to_src_from_common()`, `.to_dst_from_common()`, `.common_axes_map_from_src()`,
  `.common_axes_map_from_dst()`, `.get_dst_axes_from_src(axis)`, `.find_broadcasted_axes()`,
  `.has_broadcast()`, `.flatten_broadcast()`, `.lens()`, `.elements()`.
- `optimize_shape_transforms(dims, ops)`: `create(dims, ops).generate()`, or `ops` when not describable.
- `compute_common_dims(dims1, dims2)`: MIGraphX's common_dims::compute.

Not ported: generate_shape_transforms_for (strided views).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Sequence

from mgxir.ir.dtype import DType
from mgxir.ir.operation import Operation
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.ir.traits import Reshaper

_LAST_AXIS_SPLIT = 2**64 - 1


@dataclasses.dataclass
class Sub:
    """A sub-dimension: its length, its input axis (then split indices), or a hidden axis when it is a
    broadcast of an input axis of size 1."""

    len: int
    axis: list[int] = dataclasses.field(default_factory=list)
    hidden_axis: list[int] = dataclasses.field(default_factory=list)

    def origin_axis(self) -> list[int]:
        return self.hidden_axis if not self.axis else self.axis

    def has_hidden_axis(self) -> bool:
        return not self.axis and bool(self.hidden_axis)

    def add_split_axis(self, i: int) -> None:
        if self.axis:
            self.axis.append(i)
        if self.hidden_axis:
            self.hidden_axis.append(i)

    def expose(self) -> None:
        if self.has_hidden_axis():
            self.axis = self.hidden_axis
            self.hidden_axis = []

    def hide(self) -> None:
        if not self.has_hidden_axis():
            self.hidden_axis = self.axis
            self.axis = []

    def __str__(self) -> str:
        text = f"{self.len}:{'x'.join(map(str, self.axis))}"
        if self.hidden_axis:
            text += "$" + "x".join(map(str, self.hidden_axis))
        return text


def _set_origin_axis(sub: Sub, axis: list[int]) -> None:
    if sub.has_hidden_axis():
        sub.hidden_axis = list(axis)
    else:
        sub.axis = list(axis)


def _copy_sub(sub: Sub) -> Sub:
    return Sub(sub.len, list(sub.axis), list(sub.hidden_axis))


@dataclasses.dataclass
class Dimension:
    """One output axis: the product of its sub-dimensions."""

    subdimensions: list[Sub] = dataclasses.field(default_factory=list)

    def len(self) -> int:
        return math.prod(s.len for s in self.subdimensions)

    def simplify(self) -> None:
        if len(self.subdimensions) < 2:
            return
        _remove_1_sub_dims(self.subdimensions)
        # merge adjacent subs that are consecutive splits of one axis
        for d1, d2 in itertools.pairwise(self.subdimensions):
            a1, a2 = d1.origin_axis(), d2.origin_axis()
            if len(a1) < 2 or len(a2) < 2 or d1.has_hidden_axis() != d2.has_hidden_axis():
                continue
            if a1[:-1] != a2[:-1] or a2[-1] <= a1[-1] or a2[-1] - a1[-1] != 1:
                continue
            d2.len = d1.len * d2.len
            d1.len = 1
        _remove_1_sub_dims(self.subdimensions)

    def __str__(self) -> str:
        return "[" + ", ".join(map(str, self.subdimensions)) + "]"


def _remove_1_sub_dims(subs: list[Sub]) -> None:
    subs[:] = [s for s in subs if s.len != 1]
    if not subs:
        subs.append(Sub(1))


def _remove_empty_sub_dims(subs: list[Sub]) -> None:
    subs[:] = [s for s in subs if not (s.len == 1 and not s.origin_axis())]
    if not subs:
        subs.append(Sub(1))


def _all_subs(dimensions: Iterable[Dimension]) -> list[Sub]:
    return [s for d in dimensions for s in d.subdimensions]


AxesMap = dict[int, list[Sub]]


def _group_axes(subs: Iterable[Sub]) -> AxesMap:
    """Input axis -> the subs that come from it, ordered by axis."""
    axes_map: AxesMap = {}
    for s in subs:
        origin = s.origin_axis()
        if origin:
            axes_map.setdefault(origin[0], []).append(s)
    return dict(sorted(axes_map.items()))


def _renumber_axes(axes_map: AxesMap) -> None:
    for axis, subs in axes_map.items():
        if len(subs) == 1:
            _set_origin_axis(subs[0], [axis])
        else:
            subs.sort(key=lambda s: s.origin_axis())
            for i, s in enumerate(subs):
                _set_origin_axis(s, [axis, i])


def _renumber_dimension_axes(dimensions: list[Dimension]) -> None:
    _renumber_axes(_group_axes(_all_subs(dimensions)))


def _subs_len(subs: Sequence[Sub]) -> int:
    return math.prod(s.len for s in subs)


def _visible_len(subs: Sequence[Sub]) -> int:
    return math.prod(1 if s.has_hidden_axis() else s.len for s in subs)


def compute_dims(op: Operation, dims: Sequence[int]) -> list[int]:
    """The lens `op` gives for a standard float input of lens `dims`."""
    result = op.defn.shape(op, [Shape.make(DType.float, dims)], [])
    assert result is not None
    return list(result.lens)


def _compute_end_dim(lens: Sequence[int], start: int, dim: int) -> int:
    """The index from `start` where the running product of `lens` reaches `dim`, else `start`."""
    x = 1
    for i in range(start, len(lens)):
        x *= lens[i]
        if x == dim:
            return i
    return start


def _reorder(values: Sequence, permutation: Sequence[int]) -> list:
    return [values[p] for p in permutation]


def invert_permutation(permutation: Sequence[int]) -> list[int]:
    result = [0] * len(permutation)
    for i, p in enumerate(permutation):
        result[p] = i
    return result


class ShapeTransformDescriptor:
    """A chain of shape transforms as dimension groups (see the module docstring)."""

    def __init__(self, dims: Sequence[int] | None = None):
        self.dimensions: list[Dimension] = []
        self.rank = 0
        if dims is not None:
            self.rank = len(dims)
            self.dimensions = [Dimension([Sub(d, [a])]) for a, d in enumerate(dims)]

    @classmethod
    def create(cls, dims: Sequence[int], ops: Sequence[Operation]) -> ShapeTransformDescriptor:
        result = cls(dims)
        if not result.apply(ops):
            return cls()
        result.simplify()
        return result

    def copy(self) -> ShapeTransformDescriptor:
        return copy.deepcopy(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ShapeTransformDescriptor):
            return NotImplemented
        return self.dimensions == other.dimensions and self.rank == other.rank

    def __str__(self) -> str:
        return "{" + ", ".join(map(str, self.dimensions)) + "}"

    __repr__ = __str__

    def empty(self) -> bool:
        return not self.dimensions

    def lens(self) -> list[int]:
        return [d.len() for d in self.dimensions]

    def elements(self) -> int:
        return math.prod(self.lens())

    # -- recording ----------------------------------------------------------------------------

    def apply(self, ops: Sequence[Operation]) -> bool:
        dims = self.lens()
        for op in ops:
            name = op.name
            if op.defn.has(Reshaper):
                dims = compute_dims(op, dims)
                if not self.apply_reshape(dims):
                    return False
            elif name == "transpose":
                dims = compute_dims(op, dims)
                if not self.apply_transpose(op["permutation"]):
                    return False
            elif name == "multibroadcast":
                dims = compute_dims(op, dims)
                self.apply_broadcast(dims)
            elif name == "broadcast":
                dims = compute_dims(op, dims)
                self.apply_broadcast(dims, op["axis"])
            elif name != "contiguous":
                return False
        return True

    def apply_reshape(self, rdims: Sequence[int]) -> bool:
        idims = [s.len for s in _all_subs(self.dimensions)]
        cdims = compute_common_dims(idims, rdims).dims
        if cdims and not self.apply_reshape_impl(cdims):
            return False
        return self.apply_reshape_impl(rdims)

    def apply_reshape_impl(self, rdims: Sequence[int]) -> bool:
        if self.lens() == list(rdims):
            return True
        new_dims: list[Dimension] = []
        subs = _all_subs(self.dimensions)
        lens = [s.len for s in subs]
        i = r = 0
        while i < len(subs) and r < len(rdims):
            sub = subs[i]
            idim, rdim = sub.len, rdims[r]
            if idim == rdim:
                new_dims.append(Dimension([_copy_sub(sub)]))
            elif rdim > idim:
                end = _compute_end_dim(lens, i, rdim)
                if end == i:
                    return False
                new_dims.append(Dimension([_copy_sub(s) for s in subs[i : end + 1]]))
                i = end
            else:
                end = _compute_end_dim(rdims, r, idim)
                if end == r:
                    return False
                for j in range(end - r + 1):
                    new_sub = _copy_sub(sub)
                    new_sub.add_split_axis(j)
                    new_sub.len = rdims[r + j]
                    new_dims.append(Dimension([new_sub]))
                r = end
            r += 1
            i += 1
        if len(new_dims) < len(rdims) and new_dims:
            last = new_dims[-1].subdimensions[-1] if new_dims[-1].subdimensions else None
            axis = list(last.axis) if last is not None else []
            trailing = rdims[len(new_dims) :]
            if any(d != 1 for d in trailing):
                return False
            if len(trailing) > 1 and last is not None:
                last.add_split_axis(0)
            for j in range(len(trailing)):
                s = Sub(1, list(axis))
                s.add_split_axis(j + 1)
                new_dims.append(Dimension([s]))
        if len(rdims) != len(new_dims):
            return False
        self.dimensions = new_dims
        return True

    def apply_transpose(self, permutation: Sequence[int]) -> bool:
        if len(permutation) != len(self.dimensions):
            return False
        self.dimensions = _reorder(self.dimensions, permutation)
        return True

    def apply_broadcast(self, out_lens: Sequence[int], axis: int | None = None) -> bool:
        offset = len(out_lens) - len(self.dimensions) if axis is None else axis
        new_dims = [Dimension([Sub(n)]) for n in out_lens[:offset]]
        for dim, n in zip(self.dimensions, out_lens[offset:]):
            if n == dim.len():
                new_dims.append(dim)
                continue
            if dim.len() != 1:
                raise ValueError("Wrong out_lens for broadcast")
            new_subs = [_copy_sub(s) for s in dim.subdimensions]
            if new_subs:
                new_subs[0].len = n
            for s in new_subs:
                s.hide()
            new_dims.append(Dimension(new_subs))
        new_dims.extend(Dimension([Sub(n)]) for n in out_lens[offset + len(self.dimensions) :])
        self.dimensions = new_dims
        return True

    # -- simplification -----------------------------------------------------------------------

    def simplify(self) -> None:
        for d in self.dimensions:
            d.simplify()
        _remove_scalar_axis(self.dimensions)
        axes_map = _group_axes(_all_subs(self.dimensions))
        if not axes_map:
            _insert_empty_1s(self.dimensions, self.rank)
            return
        _remove_split_hidden_axes(axes_map)
        _fill_split_hidden_axes(axes_map, self.dimensions, self.rank)
        axes_map = dict(sorted(axes_map.items()))
        _renumber_axes(axes_map)
        last_axis = list(axes_map[max(axes_map)][-1].origin_axis())
        missing_axes = _find_missing_axes(axes_map, self.rank)
        broadcast_dims_map = _find_broadcasted_dims(self.dimensions, self.rank)

        # Reinsert removed axes of 1 next to an adjacent axis, or as a broadcast axis, to keep
        # transposition minimal.
        for missing_axis, next_axis in missing_axes.items():
            missing_sub = Sub(1, [missing_axis])
            if next_axis == self.rank:
                subs, at, _ = self._find_subdimension_with_prev(
                    lambda s, last_axis=last_axis: s.origin_axis() == last_axis
                )
                bdims = broadcast_dims_map.get(self.rank)
                if bdims:
                    _set_broadcast_dim(self.dimensions[bdims.pop(0)], missing_axis)
                else:
                    pos = len(subs)
                    for k in range(at + 1, len(subs)):
                        s = subs[k]
                        if s.len != 1 or not s.axis or s.axis[0] > missing_axis:
                            pos = k
                            break
                    subs.insert(pos, missing_sub)
                if missing_axis > last_axis[0]:
                    last_axis = [missing_axis]
            else:

                def is_next(s: Sub, next_axis: int = next_axis) -> bool:
                    origin = s.origin_axis()
                    if not origin or origin[0] != next_axis:
                        return False
                    return len(origin) == 1 or origin[-1] == 0

                subs, at, prev = self._find_subdimension_with_prev(is_next)
                in_order = prev is not None and bool(prev.origin_axis()) and prev.origin_axis()[0] == missing_axis - 1
                bdims = None
                if not in_order:
                    later = [k for k in broadcast_dims_map if k > missing_axis]
                    if later:
                        bdims = broadcast_dims_map[min(later)]
                if bdims:
                    _set_broadcast_dim(self.dimensions[bdims.pop(0)], missing_axis)
                else:
                    subs.insert(at, missing_sub)
        _collapse_1_dims(self.dimensions)

    def _find_subdimension_with_prev(self, pred: Callable[[Sub], bool]) -> tuple[list[Sub], int, Sub | None]:
        prev_dim: Dimension | None = None
        for d in self.dimensions:
            for k, s in enumerate(d.subdimensions):
                if pred(s):
                    if k > 0:
                        prev = d.subdimensions[k - 1]
                    elif prev_dim is not None and prev_dim.subdimensions:
                        prev = prev_dim.subdimensions[-1]
                    else:
                        prev = None
                    return d.subdimensions, k, prev
            prev_dim = d
        raise ValueError("Searching for non-existent subdimension")

    # -- rebase -------------------------------------------------------------------------------

    def rebase(self, dims: Sequence[int], broadcast: bool = False) -> ShapeTransformDescriptor:
        """This transformation applied to input lens `dims`; empty when it cannot be."""
        result = self.copy()
        axes_map = _RebaseAmbiguityResolver(result, dims).resolve()
        if axes_map is None:
            return ShapeTransformDescriptor()
        for axis, subs in axes_map.items():
            if axis >= len(dims):
                return ShapeTransformDescriptor()
            dim = dims[axis]
            if dim == _subs_len(subs):
                if not broadcast:
                    for s in subs:
                        s.expose()
            elif dim == 1:
                for s in subs:
                    if not s.has_hidden_axis():
                        s.len = 1
            elif len(subs) == 1:
                subs[0].len = dim
                if broadcast:
                    subs[0].hide()
                else:
                    subs[0].expose()
            elif dim == _visible_len(subs):
                for s in subs:
                    if s.has_hidden_axis():
                        s.expose()
                        s.len = 1
            else:
                return ShapeTransformDescriptor()
        for d in result.dimensions:
            _remove_empty_sub_dims(d.subdimensions)
        if broadcast and not _is_broadcast_only(self.dimensions, result.dimensions):
            return ShapeTransformDescriptor()
        return result

    # -- generation ---------------------------------------------------------------------------

    def generate(self, input_dims: Sequence[int] = (), no_broadcast: bool = False) -> list[Operation]:
        """The ops, first to last, that do this transformation (on `input_dims` if given)."""
        result: list[Operation] = []  # built last op first
        new_dims = copy.deepcopy(self.dimensions) if not input_dims else self.rebase(input_dims).dimensions
        if no_broadcast:
            for s in _all_subs(new_dims):
                _flatten_broadcasted_dim(s)
        else:
            if any(_is_broadcast_dim(d) for d in new_dims):
                out_lens = [d.len() for d in new_dims]
                startb = next((k for k, d in enumerate(new_dims) if not _has_no_axes(d)), len(new_dims))
                trailb = next((k for k in range(startb, len(new_dims)) if not _has_axes(new_dims[k])), len(new_dims))
                axis = startb
                extra_dims = axis + len(new_dims) - trailb
                if all(_has_no_axes(d) for d in new_dims[trailb:]) and extra_dims > 0 and axis < len(new_dims):
                    result.append(make_op("broadcast", axis=axis, out_lens=out_lens))
                    new_dims = new_dims[axis:trailb]
                else:
                    result.append(make_op("multibroadcast", out_lens=out_lens))
            if all(_has_no_axes(d) for d in new_dims):
                new_dims = []
            for d in new_dims:
                if len(d.subdimensions) == 1:
                    _flatten_broadcasted_dim(d.subdimensions[0])
        if any(len(d.subdimensions) != 1 or _is_broadcast_dim(d) for d in new_dims):
            result.append(_make_reshape_squeeze(new_dims))

        subs = _all_subs(new_dims)
        if any(not s.axis and s.len != 1 for s in subs):
            result.append(make_op("multibroadcast", out_lens=[s.len for s in subs]))
        for s in subs:
            _flatten_broadcasted_dim(s)

        permutation = _find_permutation(_attach_empty_axis(subs))
        if permutation != sorted(permutation):
            result.append(make_op("transpose", permutation=invert_permutation(permutation)))
            subs = _reorder(subs, permutation)
        if any(len(s.axis) != 1 for s in subs):
            result.append(_make_reshape_unsqueeze(subs))
        result.reverse()
        return result

    # -- queries ------------------------------------------------------------------------------

    def find_broadcasted_axes(self) -> set[int]:
        return {s.hidden_axis[0] for s in _all_subs(self.dimensions) if s.has_hidden_axis()}

    def has_broadcast(self) -> bool:
        return any(not s.axis and s.len != 1 for s in _all_subs(self.dimensions))

    def flatten_broadcast(self) -> None:
        for s in _all_subs(self.dimensions):
            _flatten_broadcasted_dim(s)

    def common_dims(self, input_dims: Sequence[int] = ()) -> list[int]:
        result = [_get_len(s, input_dims) for s in _all_subs(self.dimensions)]
        return result if result else [1] * self.rank

    def common_rank(self) -> int:
        return sum(len(d.subdimensions) for d in self.dimensions)

    def to_common_from_src(self) -> ShapeTransformDescriptor:
        result = ShapeTransformDescriptor()
        result.dimensions = [Dimension([_copy_sub(s)]) for s in _all_subs(self.dimensions)]
        result.rank = self.rank
        result.simplify()
        return result

    def to_common_from_dst(self) -> ShapeTransformDescriptor:
        result = ShapeTransformDescriptor()
        result.rank = len(self.dimensions)
        subs: list[Sub] = []
        for i, d in enumerate(self.dimensions):
            hidden = [s.has_hidden_axis() for s in d.subdimensions]
            mixed_visibility = any(hidden) and not all(hidden)
            for j, original in enumerate(d.subdimensions):
                s = _copy_sub(original)
                _set_origin_axis(s, [i])
                s.add_split_axis(j)
                if not mixed_visibility:
                    s.expose()
                subs.append(s)
        if len(self.dimensions) == 1 and not subs:
            subs = [Sub(1, [0, i]) for i in range(self.rank)]
        result.dimensions = [Dimension([s]) for s in subs]
        _renumber_dimension_axes(result.dimensions)
        return result

    def to_dst_from_common(self) -> ShapeTransformDescriptor:
        result = self.copy()
        result.rank = result.common_rank()
        if result.rank == 0:
            result.rank = 1
            result.dimensions.append(Dimension([Sub(1, [i]) for i in range(self.rank)]))
        else:
            for i, s in enumerate(_all_subs(result.dimensions)):
                _set_origin_axis(s, [i])
                s.expose()
            result.simplify()
        return result

    def to_src_from_common(self) -> ShapeTransformDescriptor:
        result = ShapeTransformDescriptor()
        subs = _all_subs(self.dimensions)
        result.rank = len(subs)
        positions = {id(s): i for i, s in enumerate(subs)}
        for group in _group_axes(subs).values():
            new_subs = []
            # Not in MIGraphX, which keeps the common order: the parts of a split axis in split order,
            # else a source axis whose parts were transposed is rebuilt in the wrong order.
            for s in sorted(group, key=lambda s: s.origin_axis()):
                moved = _copy_sub(s)
                _set_origin_axis(moved, [positions[id(s)]])
                moved.expose()
                new_subs.append(moved)
            result.dimensions.append(Dimension(new_subs))
        result.simplify()
        return result

    def common_axes_map_from_src(self) -> list[list[int]]:
        subs = _all_subs(self.dimensions)
        positions = {id(s): i for i, s in enumerate(subs)}
        axes_map: dict[int, list[Sub]] = {}
        for s in subs:
            if s.origin_axis():
                axes_map.setdefault(s.origin_axis()[0], []).append(s)
        if not axes_map and len(self.dimensions) == 1:
            return [[i] for i in range(self.rank)]
        result: list[list[int]] = [[] for _ in range(max(axes_map) + 1)] if axes_map else []
        for axis, group in axes_map.items():
            group.sort(key=lambda s: s.axis)
            result[axis] = [positions[id(s)] for s in group]
        return result

    def common_axes_map_from_dst(self) -> list[list[int]]:
        result = []
        start = 0
        for d in self.dimensions:
            n = len(d.subdimensions)
            result.append(list(range(start, start + n)))
            start += n
        if len(result) == 1 and not result[0]:
            result[0] = list(range(self.rank))
        return result

    def get_dst_axes_from_src(self, axis: int) -> list[int]:
        result = []
        for i, d in enumerate(self.dimensions):
            found = next((s for s in d.subdimensions if s.axis and s.axis[0] == axis), None)
            if found is None:
                continue
            if d.len() != found.len:
                return []
            result.append(i)
        return result


def optimize_shape_transforms(dims: Sequence[int], ops: Sequence[Operation]) -> list[Operation]:
    """The fewest ops doing what `ops` do to input lens `dims` (`ops` itself when not describable)."""
    desc = ShapeTransformDescriptor.create(dims, ops)
    if desc.empty():
        return list(ops)
    return desc.generate()


# -- simplify helpers -------------------------------------------------------------------------


def _is_broadcast_only(src_dims: Sequence[Dimension], dst_dims: Sequence[Dimension]) -> bool:
    if len(src_dims) != len(dst_dims):
        return False

    def match(src: Sub, dst: Sub) -> bool:
        return src.len == 1 or src.len == dst.len

    for src_dim, dst_dim in zip(src_dims, dst_dims):
        src, dst = src_dim.subdimensions, dst_dim.subdimensions
        if len(src) != len(dst):
            return False
        mismatch = next((k for k in range(len(src)) if not match(src[k], dst[k])), None)
        if mismatch is None:
            continue
        if src_dim.len() != dst_dim.len():
            return False
        if not all(match(a, b) for a, b in zip(src[mismatch + 1 :], dst[mismatch + 1 :])):
            return False
    return True


def _is_broadcast_dim(d: Dimension) -> bool:
    if d.len() == 1 or len(d.subdimensions) != 1:
        return False
    return not d.subdimensions[0].axis


def _missing_leading_axis(d: Dimension) -> bool:
    return not d.subdimensions or not d.subdimensions[0].origin_axis()


def _set_broadcast_dim(d: Dimension, axis: int) -> None:
    if not d.subdimensions:
        d.subdimensions.append(Sub(1, [axis]))
    else:
        d.subdimensions[0].hidden_axis = [axis]


def _remove_split_hidden_axes(axes_map: AxesMap) -> None:
    """Where an axis is split and only some parts are hidden, forget the hidden parts' axis."""
    for axis in list(axes_map):
        subs = axes_map[axis]
        if all(s.has_hidden_axis() for s in subs):
            continue
        for s in subs:
            if s.has_hidden_axis():
                s.hidden_axis = []
        subs[:] = [s for s in subs if s.axis or s.hidden_axis]
        if not subs:
            del axes_map[axis]


def _fill_split_hidden_axes(axes_map: AxesMap, dimensions: list[Dimension], rank: int) -> None:
    """Give the parts of a split hidden axis the missing axes that follow it."""
    positions = {id(s): i for i, s in enumerate(_all_subs(dimensions))}
    for axis in sorted(axes_map):
        subs = sorted(axes_map[axis], key=lambda s: s.origin_axis())
        if len(subs) < 2 or not all(s.has_hidden_axis() for s in subs):
            continue
        if any(positions[id(a)] + 1 != positions[id(b)] for a, b in itertools.pairwise(subs)):
            continue
        needed = []
        for a in range(axis + 1, axis + len(subs)):
            if a >= rank or a in axes_map:
                break
            needed.append(a)
        for a, s in zip(reversed(needed), reversed(subs)):
            s.hidden_axis = [a]
            axes_map.setdefault(a, []).append(s)
        axes_map[axis] = [s for s in axes_map[axis] if s.origin_axis()[0] == axis]


def _remove_scalar_axis(dimensions: list[Dimension]) -> None:
    found: Sub | None = None
    for d in dimensions:
        with_axis = [s for s in d.subdimensions if s.origin_axis()]
        if not with_axis:
            continue
        if found is not None or len(with_axis) > 1:
            return
        found = with_axis[0]
    if found is not None:
        if found.has_hidden_axis():
            found.hidden_axis = []
        if found.len == 1:
            found.axis = []


def _collapse_1_dims(dimensions: list[Dimension]) -> None:
    for d1, d2 in itertools.pairwise(dimensions):
        if len(d1.subdimensions) < 2 or not d2.subdimensions or d2.len() != 1:
            continue
        sub1, sub2 = d1.subdimensions[-1], d2.subdimensions[0]
        if len(sub1.axis) != 1 or len(sub2.axis) < 2 or sub1.len != 1 or sub2.len != 1:
            continue
        sub2.axis = list(sub1.axis)
        d1.subdimensions.pop()
    _renumber_dimension_axes(dimensions)


def _insert_empty_1s(dimensions: list[Dimension], rank: int) -> None:
    if not dimensions:
        return
    for i, d in enumerate(dimensions):
        s = Sub(d.len(), [i])
        if s.len > 1:
            s.hide()
        dimensions[i] = Dimension([s])
    dimensions[-1].subdimensions.extend(Sub(1, [i]) for i in range(len(dimensions), rank))


def _find_missing_axes(axes_map: AxesMap, rank: int) -> dict[int, int]:
    """Each input axis no sub comes from -> the next axis that some sub does come from (or rank)."""
    keys = sorted(axes_map)
    missing = {}
    for axis in range(rank):
        if axis in axes_map:
            continue
        missing[axis] = next((k for k in keys if k > axis), rank)
    return missing


def _find_broadcasted_dims(dimensions: list[Dimension], rank: int) -> dict[int, list[int]]:
    """The next input axis -> the indices of the runs of dimensions before it that have no axis."""
    result: dict[int, list[int]] = {}
    k = 0
    n = len(dimensions)
    while k < n:
        if not _missing_leading_axis(dimensions[k]):
            k += 1
            continue
        start = k
        while k < n and _missing_leading_axis(dimensions[k]):
            k += 1
        axis = rank if k == n else dimensions[k].subdimensions[0].origin_axis()[0]
        result[axis] = list(range(start, k))
    return result


# -- rebase ---------------------------------------------------------------------------------


def _check_div(x: int, y: int) -> int:
    if y == 0 or x % y != 0:
        return 0
    return x // y


class _RebaseAmbiguityResolver:
    """Fixes the axis assignment a reshape with 1s left ambiguous (e.g. [4, 1, 4] -> [4, 1, 1, 4]
    may split either axis 1 or axis 2), so the descriptor matches the lens it is rebased on."""

    def __init__(self, desc: ShapeTransformDescriptor, dims: Sequence[int]):
        self.desc = desc
        self.dims = list(dims)
        self.shortage_axes: list[tuple[int, int]] = []  # (shortage, axis), a multimap by shortage
        self.initial_shortage_count = 0
        self.moved_axes: set[int] = set()

    def resolve(self) -> AxesMap | None:
        axes_map = _group_axes(_all_subs(self.desc.dimensions))
        if any(axis >= len(self.dims) for axis in axes_map):
            return None
        self._find_shortage_axes(axes_map)
        if not self.shortage_axes:
            return axes_map
        if self._try_trivial_direct_mapping():
            return self._regroup_axes()
        subs_to_insert: list[tuple[Sub, int]] = []
        self._process_axis_groups(axes_map, subs_to_insert)
        if len(self.shortage_axes) == self.initial_shortage_count:
            return axes_map
        self._insert_moved_axes(subs_to_insert)
        self._swap_closer_axes()
        self._sort_hidden_axes_groups()
        self._sort_moved_axes_groups()
        return self._regroup_axes()

    def _regroup_axes(self) -> AxesMap:
        result = _group_axes(_all_subs(self.desc.dimensions))
        _renumber_axes(result)
        return result

    def _find_shortage_axes(self, axes_map: AxesMap) -> None:
        for axis, subs in axes_map.items():
            shortage = _check_div(self.dims[axis], _subs_len(subs))
            if shortage >= 2:
                self._add_shortage(shortage, axis)
        self.initial_shortage_count = len(self.shortage_axes)

    def _add_shortage(self, shortage: int, axis: int) -> None:
        at = len(self.shortage_axes)
        while at > 0 and self.shortage_axes[at - 1][0] > shortage:
            at -= 1
        self.shortage_axes.insert(at, (shortage, axis))

    def _try_trivial_direct_mapping(self) -> bool:
        if self.desc.lens() != self.dims:
            return False

        def bad_sub(s: Sub) -> bool:
            origin = s.origin_axis()
            if not origin:
                return False
            if len(origin) != 1:
                return True
            if s.len == 1 or s.has_hidden_axis():
                return False
            return self.dims[origin[0]] != s.len

        for d in self.desc.dimensions:
            if not d.subdimensions:
                return False
            if d.len() == 1:
                continue
            if any(bad_sub(s) for s in d.subdimensions):
                return False
            if len(d.subdimensions) == 1:
                continue
            if sum(1 for s in d.subdimensions if s.len == 1) + 1 != len(d.subdimensions):
                return False
        axes = [s.origin_axis()[0] for s in _all_subs(self.desc.dimensions) if s.origin_axis()]
        if axes != sorted(axes):
            return False
        for i, d in enumerate(self.desc.dimensions):
            if not d.subdimensions:
                continue
            keep = next((s for s in d.subdimensions if s.len != 1), d.subdimensions[0])
            keep.expose()
            keep.axis = [i]
            for s in d.subdimensions:
                if s is not keep:
                    s.axis = []
                    s.hidden_axis = []
                    s.len = 1
        self.shortage_axes.clear()
        return True

    def _process_axis_groups(self, axes_map: AxesMap, subs_to_insert: list[tuple[Sub, int]]) -> None:
        def process(axis: int, subs: list[Sub], excess: int, base_dim: int) -> None:
            candidates = [k for k, (shortage, _) in enumerate(self.shortage_axes) if shortage == excess]
            if not candidates:
                return
            nearest = min(candidates, key=lambda k: abs(self.shortage_axes[k][1] - axis))
            saxis = self.shortage_axes[nearest][1]
            if self._try_swap_axis(subs, saxis, excess):
                del self.shortage_axes[nearest]
                return
            if len(subs) != 1:
                return
            if self._move_shortage_to_excess(subs, saxis, excess, base_dim, axis, subs_to_insert):
                del self.shortage_axes[nearest]

        for axis, subs in axes_map.items():
            dim = self.dims[axis]
            excess = _check_div(_subs_len(subs), dim)
            if excess >= 2:
                process(axis, subs, excess, dim)
        for s in _all_subs(self.desc.dimensions):
            if s.origin_axis() or s.len < 2:
                continue
            process(len(self.dims), [s], s.len, 1)

    @staticmethod
    def _try_swap_axis(subs: list[Sub], saxis: int, excess: int) -> bool:
        for s in subs:
            if not s.has_hidden_axis() and s.origin_axis():
                continue
            if s.len == excess:
                s.hidden_axis = [saxis, _LAST_AXIS_SPLIT]
                return True
        return False

    def _move_shortage_to_excess(
        self,
        subs: list[Sub],
        saxis: int,
        excess: int,
        base_dim: int,
        axis: int,
        subs_to_insert: list[tuple[Sub, int]],
    ) -> bool:
        for d in self.desc.dimensions:
            sub = next((s for s in d.subdimensions if len(s.axis) == 1 and s.axis[0] == saxis), None)
            if sub is None:
                continue
            if sub.len != 1 or len(d.subdimensions) == 1:
                return False
            subs_to_insert.append((Sub(excess, [], [saxis]), axis))
            sub.axis = []
            subs[0].len = base_dim
            return True
        return False

    def _insert_moved_axes(self, subs_to_insert: list[tuple[Sub, int]]) -> None:
        for sub, pos_axis in subs_to_insert:
            for d in self.desc.dimensions:
                at = next(
                    (k for k, s in enumerate(d.subdimensions) if s.origin_axis() and s.origin_axis()[0] == pos_axis),
                    None,
                )
                if at is not None:
                    d.subdimensions.insert(at + 1, _copy_sub(sub))
                    self.moved_axes.add(sub.origin_axis()[0])
                    break

    def _swap_closer_axes(self) -> None:
        subs = _all_subs(self.desc.dimensions)
        for group in _runs(subs, Sub.has_hidden_axis):
            if len(group) < 2:
                continue
            for s1, s2 in itertools.pairwise(group):
                if not s1.hidden_axis or not s2.hidden_axis:
                    continue
                valid = [s for s in group if s.len == s2.len and s.hidden_axis > s1.hidden_axis]
                if not valid:
                    continue
                next_sub = min(valid, key=lambda s: s.hidden_axis)
                if not next_sub.hidden_axis or next_sub is s2 or next_sub.len != s2.len:
                    continue
                for field in ("len", "axis", "hidden_axis"):
                    a, b = getattr(s2, field), getattr(next_sub, field)
                    setattr(s2, field, b)
                    setattr(next_sub, field, a)

    def _sort_hidden_axes_groups(self) -> None:
        def group_key(s: Sub) -> int:
            return s.hidden_axis[0] if s.hidden_axis else _LAST_AXIS_SPLIT

        for group in _unique_runs(_all_subs(self.desc.dimensions), group_key):
            if len(group) >= 2 and group[0].hidden_axis:
                _sort_hidden_axes(group)

    def _sort_moved_axes_groups(self) -> None:
        def is_moved(s: Sub) -> bool:
            return bool(s.origin_axis()) and s.origin_axis()[0] in self.moved_axes

        for d in self.desc.dimensions:
            for group in _unique_runs(d.subdimensions, is_moved):
                if len(group) >= 2 and is_moved(group[0]):
                    _sort_hidden_axes(group)


def _sort_hidden_axes(group: list[Sub]) -> None:
    for s, hidden in zip(group, sorted(s.hidden_axis for s in group)):
        s.hidden_axis = hidden


def _runs(items: list[Sub], pred: Callable[[Sub], bool]) -> list[list[Sub]]:
    """The maximal runs of consecutive items satisfying `pred` (MIGraphX's group_find)."""
    runs: list[list[Sub]] = []
    current: list[Sub] = []
    for x in items:
        if pred(x):
            current.append(x)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def _unique_runs(items: list[Sub], key: Callable[[Sub], object]) -> list[list[Sub]]:
    """The runs of consecutive items with the key of the run's first (MIGraphX's group_unique)."""
    runs: list[list[Sub]] = []
    for x in items:
        if runs and key(runs[-1][0]) == key(x):
            runs[-1].append(x)
        else:
            runs.append([x])
    return runs


# -- generate helpers -----------------------------------------------------------------------


def _get_len(s: Sub, input_dims: Sequence[int]) -> int:
    if not input_dims or not s.axis:
        return s.len
    dim = input_dims[s.axis[0]]
    if dim == 0:
        return s.len
    if dim == 1:
        return 1
    if len(s.axis) == 1:
        return dim
    return s.len


def _make_reshape_squeeze(new_dims: list[Dimension]) -> Operation:
    def squeezable(d: Dimension) -> bool:
        if len(d.subdimensions) < 2:
            return True
        return sum(1 for s in d.subdimensions if s.len == 1) >= len(d.subdimensions) - 1

    if all(squeezable(d) for d in new_dims):
        axes: list[int] = []
        base = 0
        for d in new_dims:
            if len(d.subdimensions) >= 2:
                squeezed = [base + k for k, s in enumerate(d.subdimensions) if s.len == 1]
                if len(squeezed) == len(d.subdimensions):
                    squeezed.pop()
                axes.extend(squeezed)
            base += max(1, len(d.subdimensions))
        return make_op("squeeze", axes=axes)
    return make_op("reshape", dims=[1 if _is_broadcast_dim(d) else d.len() for d in new_dims])


def _flatten_broadcasted_dim(s: Sub) -> None:
    if not s.axis:
        s.len = 1
        s.expose()


def _make_reshape_unsqueeze(subs: list[Sub]) -> Operation:
    use_reshape = False
    all_1s: set[int] = set()
    if any(len(s.axis) > 1 for s in subs):
        groups: dict[int, list[Sub]] = {}
        for s in subs:
            groups.setdefault(s.axis[0] if s.axis else -1, []).append(s)
        for key, group in groups.items():
            n = len(group)
            if n < 2:
                continue
            n1 = sum(1 for s in group if s.len == 1)
            if n == n1 and key != -1:
                all_1s.add(key)
            if n - n1 - 1 > 0:
                use_reshape = True
                break
    if use_reshape:
        return make_op("reshape", dims=[1 if not s.axis else s.len for s in subs])
    axes = []
    for i, s in enumerate(subs):
        if len(s.axis) == 1:
            continue
        if s.len != 1 and s.axis:
            continue
        if s.axis and s.axis[0] in all_1s and s.axis[-1] == 0:
            continue
        axes.append(i)
    return make_op("unsqueeze", axes=axes)


def _has_no_axes(d: Dimension) -> bool:
    return all(not s.axis and not s.hidden_axis for s in d.subdimensions)


def _has_axes(d: Dimension) -> bool:
    return any(s.axis for s in d.subdimensions)


def _attach_empty_axis(subs: list[Sub]) -> list[Sub]:
    """A copy of `subs` where each run without an axis takes the axis before it, split further, so
    the transpose permutation keeps it in place."""
    result = [_copy_sub(s) for s in subs]
    k = 0
    while k < len(result):
        if result[k].axis:
            k += 1
            continue
        start = k
        while k < len(result) and not result[k].axis:
            k += 1
        if start == 0:
            continue
        axis = [*result[start - 1].axis, 0]
        for s in result[start:k]:
            s.axis = list(axis)
            axis[-1] += 1
    return result


def _find_permutation(subs: list[Sub]) -> list[int]:
    return sorted(range(len(subs)), key=lambda i: subs[i].axis)


# -- common dims ----------------------------------------------------------------------------


@dataclasses.dataclass
class CommonDims:
    """A finer lens that both `dims1` and `dims2` reshape to; axes_map1/2 map each of their axes to
    the common axes (MIGraphX's common_dims). Empty `dims` where there is none."""

    dims: list[int] = dataclasses.field(default_factory=list)
    axes_map1: list[list[int]] = dataclasses.field(default_factory=list)
    axes_map2: list[list[int]] = dataclasses.field(default_factory=list)


class _CommonDimState:
    def __init__(self, dims: Sequence[int], axes_map: list[list[int]]):
        self.dims = dims
        self.axes_map = axes_map
        self.at = 0
        self.rem = 1

    def get(self) -> int:
        return self.dims[self.at] // self.rem

    def is_end(self) -> bool:
        return self.at >= len(self.dims)

    def dims_for(self, d: int) -> list[int]:
        x = 1
        end = len(self.dims)
        for k in range(self.at, len(self.dims)):
            x *= self.dims[k]
            if x > d:
                end = k
                break
        if x < d:
            end = self.at
        return list(self.dims[self.at : end])

    def compute_axes(self, naxes: int, start: int) -> list[int]:
        if self.rem != 1:
            naxes += 1
            start -= 1
        return list(range(start, start + naxes))

    def add_axes(self, naxes: int, start: int) -> None:
        self.axes_map.append(self.compute_axes(naxes, start))

    def add_multi_axes(self, naxes: int, start: int) -> None:
        self.axes_map.extend([a] for a in self.compute_axes(naxes, start))


def _compute_common_dim(cd_dims: list[int], state1: _CommonDimState, state2: _CommonDimState) -> bool:
    d2 = state2.get()
    dims = state1.dims_for(d2)
    naxes = len(dims)
    if naxes == 0:
        return False
    has_remainder = state1.rem != 1
    n = math.prod(dims)
    if has_remainder:
        n = n // dims[0] * (dims[0] // state1.rem)
    # n is 0 when the remainder exceeds the first dimension (MIGraphX's `d2 % n` divides by zero there)
    if n == 0 or d2 % n != 0:
        return False
    rem = d2 // n
    start_pos = len(cd_dims)
    if has_remainder:
        state1.add_axes(naxes, start_pos)
        state2.add_axes(naxes if rem == 1 else naxes + 1, start_pos - 1)
        cd_dims.append(dims[0] // state1.rem)
        cd_dims.extend(dims[1:])
    else:
        state1.add_multi_axes(naxes, start_pos)
        state2.add_axes(naxes if rem == 1 else naxes + 1, start_pos)
        cd_dims.extend(dims)
    if rem != 1:
        cd_dims.append(rem)
    state1.rem = rem
    state2.rem = 1
    state1.at += naxes
    state2.at += 1
    return True


def compute_common_dims(dims1: Sequence[int], dims2: Sequence[int]) -> CommonDims:
    """MIGraphX's common_dims::compute."""
    cd = CommonDims()
    state1 = _CommonDimState(dims1, cd.axes_map1)
    state2 = _CommonDimState(dims2, cd.axes_map2)
    while not state1.is_end() and not state2.is_end():
        d1, d2 = state1.get(), state2.get()
        if d1 == d2:
            state1.add_axes(1, len(cd.dims))
            state2.add_axes(1, len(cd.dims))
            state1.rem = state2.rem = 1
            cd.dims.append(d1)
            state1.at += 1
            state2.at += 1
        elif d1 < d2:
            if not _compute_common_dim(cd.dims, state1, state2):
                return CommonDims()
        elif not _compute_common_dim(cd.dims, state2, state1):
            return CommonDims()
    for state in (state1, state2):
        if not state.is_end() and state.rem != 1 and state.get() == 1:
            state.axes_map.append([len(cd.dims) - 1])
            state.at += 1
    return cd
