"""Operators that change shapes and layouts: views (transpose, broadcast, slice, ...) and copies."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mgxir.ir.attributes import DYN_DIMS, INT, INTS, Attr
from mgxir.ir.dtype import DType
from mgxir.ir.operation import OpDef, Operation, RunModule
from mgxir.ir.registry import register
from mgxir.ir.shape import DynamicDimension, Shape, find_common_permutation, standard_strides
from mgxir.ir.traits import (
    Broadcasting,
    ConcatOperand,
    FoldsWithItsInput,
    NeverFolded,
    NopWhenShapeKept,
    Reshaper,
    ShapeTransform,
    ValueTransparent,
)
from mgxir.ops.common import fail, lens_text, normalize_axes, normalize_axis, require_static, same_type

if TYPE_CHECKING:
    from mgxir.ir.module import Module
    from mgxir.ops.scalar import Emitter

Shapes = Sequence[Shape]
Arrays = list[np.ndarray]
Modules = Sequence["Module"]


@register
class Contiguous(OpDef):
    name = "contiguous"
    traits = (NopWhenShapeKept, ValueTransparent, FoldsWithItsInput)
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        if s.is_dynamic:
            return s
        return Shape.make(s.dtype, s.lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        return np.array(inputs[0], order="C", copy=True)


@register
class Identity(OpDef):
    name = "identity"
    arity = (1, None)  # lowered programs list the instructions it must follow after its input
    is_view = True
    pointwise = True  # as MIGraphX marks it

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        return inputs[0]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        return inputs[0]

    def scalar(self, em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        """Each element is its input's (mgxir/ops/scalar.py)."""
        return args[0]


@register
class Undefined(OpDef):
    name = "undefined"
    traits = (NeverFolded,)
    arity = (0, 0)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        return Shape.make(DType.float, (), ())

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        return np.zeros((), np.float32)


@register
class Transpose(OpDef):
    name = "transpose"
    traits = (ShapeTransform, NopWhenShapeKept)
    attributes = (Attr("permutation", INTS, ()),)
    legacy_attributes = {"dims": "permutation"}
    arity = (1, 1)
    is_view = True

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        perm = op["permutation"]
        if len(perm) != s.ndim:
            raise fail(self.name, f"permutation {lens_text(perm)} has {len(perm)} axes, the input has rank {s.ndim}")
        if sorted(perm) != list(range(s.ndim)):
            raise fail(self.name, f"{lens_text(perm)} is not a permutation of the axes")
        if s.is_dynamic:
            return Shape.dynamic(s.dtype, [s.dyn_dims[p] for p in perm])
        return Shape.make(s.dtype, [s.lens[p] for p in perm], [s.strides[p] for p in perm])

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        return inputs[0].transpose(op["permutation"])


@register
class Broadcast(OpDef):
    name = "broadcast"
    traits = (Broadcasting, NopWhenShapeKept, ValueTransparent, ConcatOperand)
    attributes = (
        Attr("axis", INT, 0),
        Attr("out_lens", INTS, ()),
        Attr("out_dyn_dims", DYN_DIMS, ()),
    )
    legacy_attributes = {"dims": "out_lens", "broadcast_lens": "out_lens"}
    arity = (1, 2)
    is_view = True

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s0 = inputs[0]
        axis = op["axis"]
        if len(inputs) == 2:
            s1 = inputs[1]
            if s1.is_dynamic or s0.is_dynamic:
                return Shape.dynamic(s0.dtype, s1.dyn_dims) if s1.is_dynamic else Shape.make(s0.dtype, s1.lens)
            target = s1.lens
        else:
            require_static(self.name, s0)
            target = op["out_lens"]
        if not 0 <= axis < len(target):  # MIGraphX's axis is unsigned
            raise fail(self.name, f"axis {axis} is out of range for output rank {len(target)}")
        if len(target) - axis < len(s0.lens):
            raise fail(self.name, f"input rank {len(s0.lens)} does not fit output {lens_text(target)} from axis {axis}")
        for i, n in enumerate(s0.lens):
            if target[axis + i] != n:
                raise fail(
                    self.name,
                    f"input dimension {i} is {n} but output dimension {axis + i} is {target[axis + i]}",
                )
        strides = [0] * len(target)
        strides[axis : axis + len(s0.strides)] = s0.strides
        return Shape.make(s0.dtype, target, strides)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x = inputs[0]
        target = inputs[1].shape if len(inputs) == 2 else op["out_lens"]
        axis = op["axis"]
        strides = [0] * len(target)
        strides[axis : axis + x.ndim] = x.strides
        return as_strided(x, shape=tuple(target), strides=tuple(strides), writeable=False)


def broadcast_to(op_name: str, s0: Shape, target: Sequence[int]) -> Shape:
    if len(s0.lens) > len(target):
        raise fail(op_name, f"input rank {len(s0.lens)} is larger than output rank {len(target)}")
    offset = len(target) - len(s0.lens)
    strides = [0] * len(target)
    for i, n in enumerate(s0.lens):
        out = target[i + offset]
        if out != n and n != 1:
            raise fail(
                op_name,
                f"input shape {lens_text(s0.lens)} cannot be broadcast to {lens_text(target)} "
                f"(dimension {i + offset}: {n} vs {out})",
            )
        if out == n:
            strides[i + offset] = s0.strides[i]
    return Shape.make(s0.dtype, target, strides)


def common_lens(op_name: str, shapes: Shapes) -> tuple[int, ...]:
    rank = max(len(s.lens) for s in shapes)
    out = [1] * rank
    for s in shapes:
        off = rank - len(s.lens)
        for i, n in enumerate(s.lens):
            j = i + off
            if out[j] == 1:
                out[j] = n
            elif n != 1 and n != out[j]:
                raise fail(op_name, f"dimension {j} does not broadcast: {out[j]} vs {n}")
    return tuple(out)


@register
class Multibroadcast(OpDef):
    name = "multibroadcast"
    traits = (Broadcasting, NopWhenShapeKept, ValueTransparent, ConcatOperand)
    attributes = (Attr("out_lens", INTS, ()), Attr("out_dyn_dims", DYN_DIMS, ()))
    legacy_attributes = {"output_lens": "out_lens", "output_dyn_dims": "out_dyn_dims"}
    arity = (1, None)
    is_view = True

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s0 = inputs[0]
        if s0.ndim < 1:
            raise fail(self.name, "input rank must be at least 1")
        if len(inputs) == 1:
            require_static(self.name, s0)
            return broadcast_to(self.name, s0, op["out_lens"])
        if any(s.is_dynamic for s in inputs):
            if op["out_dyn_dims"]:
                return Shape.dynamic(s0.dtype, op["out_dyn_dims"])
            return Shape.dynamic(s0.dtype, common_dyn_dims(self.name, inputs))
        return broadcast_to(self.name, s0, common_lens(self.name, inputs))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x = inputs[0]
        target = np.broadcast_shapes(*(a.shape for a in inputs)) if len(inputs) > 1 else tuple(op["out_lens"])
        return np.broadcast_to(x, target)


def common_dyn_dims(op_name: str, shapes: Shapes) -> tuple[DynamicDimension, ...]:
    """MIGraphX's compute_common_dyn_dims (right-aligned): equal ranges, or the other where one is
    {1, 1}, else the intersection of the ranges (refused where they do not overlap). A range that
    holds 1 still broadcasts at run time where its size is 1 (compute_broadcasted_lens)."""
    dims = _as_dyn(shapes[0])
    for s in shapes[1:]:
        other = _as_dyn(s)
        shorter, longer = (dims, other) if len(dims) <= len(other) else (other, dims)
        out = list(longer)
        offset = len(longer) - len(shorter)
        for i, x in enumerate(shorter):
            y = longer[offset + i]
            if x == y or (y.min == 1 and y.max == 1):
                out[offset + i] = x
            elif x.min == 1 and x.max == 1:
                out[offset + i] = y
            else:
                lo, hi = max(x.min, y.min), min(x.max, y.max)
                if lo > hi:
                    raise fail(op_name, f"dynamic dimension {offset + i} does not broadcast")
                out[offset + i] = DynamicDimension(lo, hi)
        dims = tuple(out)
    return dims


def _as_dyn(s: Shape) -> tuple[DynamicDimension, ...]:
    return tuple(s.dyn_dims) if s.dyn_dims is not None else tuple(DynamicDimension(n, n) for n in s.lens)


def _end_dim(dims: Sequence[int], start: int, target: int) -> int | None:
    """The index where the running product of `dims[start:]` reaches `target` (None if it passes it)."""
    product = 1
    for k in range(start, len(dims)):
        product *= dims[k]
        if product >= target:
            return k if product == target else None
    return None


def _merged_stride(pairs: Sequence[tuple[int, int]]) -> int | None:
    """The stride of (len, stride) pairs merged into one axis, or None where they do not merge
    (transposed, broadcast over only some of them, or with gaps)."""
    inner_dim, inner_stride = pairs[-1]
    for outer_dim, outer_stride in reversed(pairs[:-1]):
        elements = outer_dim * inner_dim
        if inner_stride > outer_stride:
            return None
        if inner_stride == 0:
            if outer_stride != 0:
                return None
        elif outer_stride % inner_stride or (
            (outer_stride * outer_dim + inner_stride * inner_dim - outer_stride) // inner_stride != elements
        ):
            return None
        inner_dim = elements
    return inner_stride


def reshape_dims(s: Shape, lens: Sequence[int], lazy: bool) -> Shape | None:
    """MIGraphX's reshape_dims: `s` viewed as `lens`, its layout carried over where the axes allow.

    A standard input gives a standard result; a broadcast input gives one too unless `lazy` (a view
    must keep the strides); None where no strides exist (reshape then copies to a standard result,
    reshape_lazy refuses). A non-lazy result that is not packed is made packed in the input's axis
    order."""
    if s.standard or (not lazy and s.broadcasted):
        return Shape.make(s.dtype, lens)
    idims, istrides = s.lens, s.strides
    strides: list[int] = []
    i = r = 0
    while i < len(idims) and r < len(lens):
        idim, rdim = idims[i], lens[r]
        if rdim == idim:
            strides.append(istrides[i])
        elif rdim > idim:
            end = _end_dim(idims, i, rdim)
            if end is None or end == i:
                return None
            if lazy and _merged_stride(list(zip(idims[i : end + 1], istrides[i : end + 1]))) is None:
                return None
            i = end
            strides.append(istrides[i])
        else:
            end = _end_dim(lens, r, idim)
            if end is None or end == r:
                return None
            stride = istrides[i] * idim
            for dim in lens[r : end + 1]:
                stride //= dim
                strides.append(stride)
            r = end
        i += 1
        r += 1
    if strides and len(strides) < len(lens):
        if any(d != 1 for d in lens[len(strides) :]):
            return None
        strides += [strides[-1]] * (len(lens) - len(strides))
    if len(strides) != len(lens):
        return None
    result = Shape.make(s.dtype, lens, strides)
    return result if lazy or result.packed else result.with_lens(result.lens)


@register
class Reshape(OpDef):
    name = "reshape"
    traits = (ShapeTransform, Reshaper, NopWhenShapeKept, FoldsWithItsInput)
    attributes = (Attr("dims", INTS, ()),)
    arity = (1, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        dims = op["dims"]
        if list(dims).count(-1) > 1:
            raise fail(self.name, "at most one dimension may be -1")
        if len(inputs) == 2:
            # MIGraphX: the output is shaped like the second input (an allocated buffer)
            return inputs[1]
        if s.is_dynamic:
            raise fail(self.name, "dynamic input shapes need the two-input form here")
        copied = [i for i, d in enumerate(dims) if d == 0 and i >= s.ndim]
        if copied:
            raise fail(self.name, f"dimension {copied[0]} is 0 (the input's), but the input has rank {s.ndim}")
        lens = [s.lens[i] if d == 0 else (1 if d == -1 else d) for i, d in enumerate(dims)]
        if -1 in dims:
            known = math.prod(lens)
            if known == 0 or s.elements % known:
                raise fail(self.name, f"cannot infer the -1 dimension of {lens_text(dims)} from {s.elements} elements")
            lens[list(dims).index(-1)] = s.elements // known
        if math.prod(lens) != s.elements:
            raise fail(
                self.name,
                f"{lens_text(lens)} has {math.prod(lens)} elements but the input {lens_text(s.lens)} has {s.elements}",
            )
        return self.layout(s, lens)

    def layout(self, s: Shape, lens: list[int]) -> Shape:
        """The result shape of a static reshape (MIGraphX's reshape_dims, not lazy)."""
        found = reshape_dims(s, lens, lazy=False)
        return Shape.make(s.dtype, lens) if found is None else found

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x = inputs[0]
        if len(inputs) == 2:
            return x.reshape(inputs[1].shape)
        lens = [x.shape[i] if d == 0 else d for i, d in enumerate(op["dims"])]
        return x.reshape(lens)


@register
class Squeeze(OpDef):
    name = "squeeze"
    traits = (ShapeTransform, Reshaper, NopWhenShapeKept)
    axis_attributes = {"axes": "input"}
    attributes = (Attr("axes", INTS, ()),)
    arity = (1, 1)
    is_view = True

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        axes = normalize_axes(self.name, op["axes"], s.ndim)
        if s.is_dynamic:
            for a in axes:  # MIGraphX: the range must hold 1
                if not s.dyn_dims[a].min <= 1 <= s.dyn_dims[a].max:
                    raise fail(self.name, f"dynamic axis {a} ({lens_text(s.dyn_dims[a][:2])}) cannot have size 1")
            dims = [d for i, d in enumerate(s.dyn_dims) if (i not in axes if axes else not (d.min == d.max == 1))]
            return Shape.dynamic(s.dtype, dims)
        for a in axes:
            if s.lens[a] != 1:
                raise fail(self.name, f"axis {a} has size {s.lens[a]}, not 1")
        keep = [i for i in range(s.ndim) if (i not in axes if axes else s.lens[i] != 1)]
        lens = [s.lens[i] for i in keep]
        strides = [s.strides[i] for i in keep]
        if not lens:
            return Shape.make(s.dtype, (1,), (0,))  # MIGraphX: shape{type}, a scalar
        return Shape.make(s.dtype, lens, strides)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x = inputs[0]
        axes = tuple(normalize_axes(self.name, op["axes"], x.ndim)) or tuple(i for i, n in enumerate(x.shape) if n == 1)
        out = x.squeeze(axes)
        return out if out.ndim else out.reshape(1)


@register
class Unsqueeze(OpDef):
    name = "unsqueeze"
    traits = (ShapeTransform, Reshaper, NopWhenShapeKept)
    axis_attributes = {"axes": "output"}
    attributes = (Attr("axes", INTS, ()), Attr("steps", INTS, ()))
    arity = (1, 1)
    is_view = True

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        new_rank = s.ndim + len(op["axes"])
        axes = normalize_axes(self.name, op["axes"], new_rank)
        if len(set(axes)) != len(axes):
            raise fail(self.name, f"axes {lens_text(op['axes'])} name an axis twice")
        if s.is_dynamic:
            it = iter(s.dyn_dims)
            return Shape.dynamic(s.dtype, [DynamicDimension(1, 1) if i in axes else next(it) for i in range(new_rank)])
        is_scalar = s.scalar
        if is_scalar and s.lens == (1,):
            return Shape.make(s.dtype, s.lens)
        steps = op["steps"]
        if len(steps) > len(axes):
            raise fail(self.name, "steps given for axes that do not exist")
        old_lens = list(s.lens)
        lens = [0] * new_rank
        strides = [0] * new_rank
        p = 0
        for i in range(new_rank):
            if i in axes:
                j = axes.index(i)
                step = steps[j] if j < len(steps) else 1
                if step == 0:
                    raise fail(self.name, "a step must be non-zero")
                if is_scalar and step != 1:
                    raise fail(self.name, "a step must be 1 when the input is a scalar")
                lens[i] = step
                if p < len(old_lens):
                    if old_lens[p] % step:
                        raise fail(self.name, f"dimension {p} ({old_lens[p]}) is not divisible by step {step}")
                    old_lens[p] //= step
                    strides[i] = 1 if is_scalar else s.strides[p] * old_lens[p]
                else:
                    if step != 1:
                        raise fail(self.name, "a step must be 1 for an axis past the input's rank")
                    strides[i] = 1
            else:
                lens[i] = old_lens[p]
                strides[i] = s.strides[p]
                p += 1
        return Shape.make(s.dtype, lens, strides)

    def kernel(self, op: Operation, inputs: Shapes, modules: Modules, run_module: RunModule) -> Callable:
        if inputs[0].is_dynamic:  # the lens come from each run's input
            return super().kernel(op, inputs, modules, run_module)
        lens = self.shape(op, inputs, modules).lens
        if inputs[0].scalar:  # {1}, {0} becomes a standard {1}: no longer a stride-0 scalar (gather's index rule)
            return lambda x: np.array(x).reshape(lens)
        return lambda x: x.reshape(lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        return self.kernel(op, [_runtime_shape(x) for x in inputs], modules, run_module)(inputs[0])


@register
class Flatten(OpDef):
    name = "flatten"
    traits = (ShapeTransform, Reshaper, NopWhenShapeKept)
    attributes = (Attr("axis", INT, 1),)
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        require_static(self.name, s)
        axis = op["axis"]
        if not -s.ndim <= axis <= s.ndim:
            raise fail(self.name, f"axis {axis} is out of range for rank {s.ndim}")
        axis = axis + s.ndim if axis < 0 else axis
        return Shape.make(s.dtype, (math.prod(s.lens[:axis]), math.prod(s.lens[axis:])))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x = inputs[0]
        axis = op["axis"] + x.ndim if op["axis"] < 0 else op["axis"]
        return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


@register
class Slice(OpDef):
    name = "slice"
    traits = (NopWhenShapeKept,)
    axis_attributes = {"axes": "input"}
    attributes = (Attr("axes", INTS, ()), Attr("starts", INTS, ()), Attr("ends", INTS, ()))
    arity = (1, 4)
    is_view = True

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        axes, starts, ends = op["axes"], op["starts"], op["ends"]
        if len(inputs) > 1:
            return self._variable_shape(op, inputs)
        if not (len(axes) == len(starts) == len(ends)):
            raise fail(self.name, "axes, starts and ends must have the same length")
        axes = normalize_axes(self.name, axes, s.ndim)
        if s.is_dynamic:
            dims = list(s.dyn_dims)
            for a, b, e in zip(axes, starts, ends):
                d = dims[a]
                if not d.is_fixed:
                    raise fail(self.name, f"cannot slice non-fixed dynamic axis {a}")
                n = _slice_len(d.min, b, e)
                dims[a] = DynamicDimension(n, n)
            return Shape.dynamic(s.dtype, dims)
        lens = list(s.lens)
        for a, b, e in zip(axes, starts, ends):
            lens[a] = _slice_len(s.lens[a], b, e)
        return Shape.make(s.dtype, lens, s.strides)

    def normalize(self, op: Operation, inputs: Sequence[Shape]) -> Operation:
        """MIGraphX's normalize_axes for slice: besides the axes, each start and end is clipped to
        [-len, len] of its axis and a negative one counted from the end (static inputs)."""
        op = super().normalize(op, inputs)
        axes, starts, ends = op["axes"], op["starts"], op["ends"]
        if not inputs or inputs[0].is_dynamic or inputs[0].is_tuple or not len(axes) == len(starts) == len(ends):
            return op
        lens = inputs[0].lens
        if any(not 0 <= a < len(lens) for a in axes):
            return op

        def within(values: Sequence[int]) -> tuple[int, ...]:
            clipped = (min(max(v, -lens[a]), lens[a]) for v, a in zip(values, axes))
            return tuple(v + lens[a] if v < 0 else v for v, a in zip(clipped, axes))

        fixed_starts, fixed_ends = within(starts), within(ends)
        if fixed_starts == tuple(starts) and fixed_ends == tuple(ends):
            return op
        return op.replace(starts=fixed_starts, ends=fixed_ends)

    def _roles(self, op: Operation, count: int) -> tuple[str, ...]:
        """Which of starts, ends and axes the inputs after the data give, by the attributes set."""
        given = tuple(name for name in ("starts", "ends", "axes") if not op[name])
        if len(given) != count - 1:
            raise fail(self.name, f"Invalid {count} input and attributes configuration")
        return given

    def _variable_shape(self, op: Operation, inputs: Shapes) -> Shape:
        s = inputs[0]
        roles = self._roles(op, len(inputs))
        extra = inputs[1:]
        if any(x.is_dynamic or x.ndim != 1 for x in extra) or len({x.lens for x in extra}) != 1:
            raise fail(self.name, "inputs (starts, ends, and input_axes) must be static, 1-D and of one length")
        dims = list(s.dyn_dims) if s.dyn_dims is not None else [DynamicDimension(n, n) for n in s.lens]
        if "axes" in roles:
            return Shape.dynamic(s.dtype, [DynamicDimension(0, d.max) for d in dims])
        if extra[0].lens[0] != len(op["axes"]):
            raise fail(self.name, f"{len(inputs)} input and attributes mismatch")
        for a in normalize_axes(self.name, op["axes"], s.ndim):
            dims[a] = DynamicDimension(0, dims[a].max)
        return Shape.dynamic(s.dtype, dims)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x = inputs[0]
        values = {name: list(op[name]) for name in ("starts", "ends", "axes")}
        if len(inputs) > 1:
            for name, given in zip(self._roles(op, len(inputs)), inputs[1:]):
                values[name] = [int(v) for v in given.reshape(-1)]
        index = [slice(None)] * x.ndim
        for a, b, e in zip(normalize_axes(self.name, values["axes"], x.ndim), values["starts"], values["ends"]):
            n = x.shape[a]
            b = max(0, min(n, b + n if b < 0 else b))
            e = max(0, min(n, e + n if e < 0 else e))
            index[a] = slice(b, max(b, e))
        return x[tuple(index)]


def _slice_len(n: int, start: int, end: int) -> int:
    start = max(0, min(n, start + n if start < 0 else start))
    end = max(0, min(n, end + n if end < 0 else end))
    return max(0, end - start)


@register
class Concat(OpDef):
    name = "concat"
    traits = (NopWhenShapeKept,)
    axis_attributes = {"axis": "input"}
    attributes = (Attr("axis", INT, 0),)
    arity = (1, None)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        same_type(self.name, inputs)
        first = inputs[0]
        rank = first.ndim
        for i, s in enumerate(inputs):
            if s.ndim != rank:
                raise fail(self.name, f"input {i} has rank {s.ndim}, input 0 has rank {rank}")
        axis = normalize_axis(self.name, op["axis"], rank)
        if all(s.is_dynamic for s in inputs):
            dims = list(first.dyn_dims)
            low = sum(s.dyn_dims[axis].min for s in inputs)
            dims[axis] = DynamicDimension(low, sum(s.dyn_dims[axis].max for s in inputs))
            return Shape.dynamic(first.dtype, dims)
        require_static(self.name, *inputs)
        for i, s in enumerate(inputs):
            for d in range(rank):
                if d != axis and s.lens[d] != first.lens[d]:
                    message = f"input {i} has size {s.lens[d]} in dimension {d}, input 0 has {first.lens[d]}"
                    raise fail(self.name, message)
        lens = list(first.lens)
        lens[axis] = sum(s.lens[axis] for s in inputs)
        return Shape.from_permutation(first.dtype, lens, find_common_permutation(inputs))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        return np.concatenate(inputs, axis=op["axis"])


def _runtime_shape(x: np.ndarray) -> Shape:
    return Shape.make(DType.from_numpy(x.dtype), x.shape or (1,), [st // x.itemsize for st in x.strides] or (0,))


__all__ = ["broadcast_to", "common_lens", "standard_strides"]
