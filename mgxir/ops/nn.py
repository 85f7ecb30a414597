"""Neural-network operators: dot, convolution, pooling, softmax, reductions, gathers, resize."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from mgxir.ir.attributes import (
    BOOL,
    FLOAT,
    FLOATS,
    INT,
    INTS,
    PADDING_MODE,
    POOLING_MODE,
    STRING,
    Attr,
)
from mgxir.ir.dtype import DType
from mgxir.ir.operation import ComputeError, OpDef, Operation, RunModule
from mgxir.ir.registry import register
from mgxir.ir.shape import DynamicDimension, Shape
from mgxir.ir.traits import ArgReduction, Contraction, HorizontallyFusable, NopWhenLensKept, PaddedWindow, Reduction
from mgxir.ops.common import SIZE_MAX, fail, lens_text, normalize_axes, normalize_axis, require_static, same_type

if TYPE_CHECKING:
    from mgxir.ir.module import Module

Shapes = Sequence[Shape]
Arrays = list[np.ndarray]
Modules = Sequence["Module"]


def _dims_of(s: Shape) -> tuple[DynamicDimension, ...]:
    return s.dyn_dims if s.is_dynamic else tuple(DynamicDimension(n, n) for n in s.lens)


def _intersection(x: DynamicDimension, y: DynamicDimension) -> DynamicDimension | None:
    low, high = max(x.min, y.min), min(x.max, y.max)
    return DynamicDimension(low, high) if low <= high else None


def _dynamic_dot_shape(op_name: str, a: Shape, b: Shape) -> Shape:
    """MIGraphX's dot of dynamic shapes: batch dimensions are the intersections of A's and B's, then
    A's rows and B's columns."""
    da, db = _dims_of(a), _dims_of(b)
    batch = [_intersection(x, y) for x, y in zip(da[:-2], db[:-2])]
    for i, d in enumerate(batch):
        if d is None:
            raise fail(op_name, f"batch dimension {i} of A and B are not compatible: {da[i]} vs {db[i]}")
    if _intersection(da[-1], db[-2]) is None:
        raise fail(op_name, f"inner dimensions are not compatible: {da[-1]} vs {db[-2]}")
    return Shape.dynamic(a.dtype, [*batch, da[-2], db[-1]])


@register
class Dot(OpDef):
    name = "dot"
    traits = (Contraction, HorizontallyFusable)
    arity = (2, 2)
    legacy_attributes = {"alpha": None, "beta": None}

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        same_type(self.name, inputs)
        a, b = inputs
        if a.ndim < 2 or b.ndim < 2:
            raise fail(self.name, "both inputs need rank 2 or more")
        if a.ndim != b.ndim:
            raise fail(self.name, f"inputs have ranks {a.ndim} and {b.ndim}")
        if a.is_dynamic or b.is_dynamic:
            return _dynamic_dot_shape(self.name, a, b)
        if a.lens[:-2] != b.lens[:-2]:
            raise fail(self.name, f"batch dimensions differ: {lens_text(a.lens)} x {lens_text(b.lens)}")
        if a.lens[-1] != b.lens[-2]:
            raise fail(
                self.name,
                f"inner dimensions differ: {lens_text(a.lens)} x {lens_text(b.lens)} "
                f"(dimension {a.ndim - 1} of A is {a.lens[-1]}, dimension {b.ndim - 2} of B is {b.lens[-2]})",
            )
        return Shape.make(a.dtype, (*a.lens[:-2], a.lens[-2], b.lens[-1]))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        a, b = inputs
        return np.matmul(a, b).astype(a.dtype)


def _window_out(
    op_name: str, n: int, pad: int, kernel: int, stride: int, dilation: int, ceil_mode: bool, dim: int
) -> int:
    dilated = 1 + dilation * (kernel - 1)
    span = n + pad - dilated
    if span < 0:
        raise fail(
            op_name, f"kernel size {kernel} (dilated {dilated}) is larger than padded input dimension {dim} ({n + pad})"
        )
    q = -(-span // stride) if ceil_mode else span // stride
    return q + 1


def check_strides(op_name: str, stride: Sequence[int]) -> None:
    """A stride of 0 divides by zero in MIGraphX's window formula (it cannot have printed one)."""
    if 0 in stride:
        raise fail(op_name, f"stride {lens_text(stride)} has a 0")


def _pad_total(padding: Sequence[int], i: int, k: int) -> int:
    if len(padding) == 2 * k:
        return padding[i] + padding[i + k]
    return 2 * padding[i]


class _Convolution(OpDef):
    arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        same_type(self.name, inputs)
        x, w = inputs
        if x.is_dynamic or w.is_dynamic:
            return self._dynamic_shape(op, x, w)
        if x.ndim < 3:
            raise fail(self.name, f"input rank must be at least 3, got {x.ndim}")
        if w.ndim != x.ndim:
            raise fail(self.name, f"weights have rank {w.ndim}, input has rank {x.ndim}")
        k = x.ndim - 2
        padding, stride, dilation = op["padding"], op["stride"], op["dilation"]
        if len(padding) not in (k, 2 * k):
            raise fail(self.name, f"padding {lens_text(padding)} does not fit {k} spatial dimensions")
        if len(stride) != k or len(dilation) != k:
            raise fail(self.name, f"stride and dilation need {k} values")
        check_strides(self.name, stride)
        group = op["group"]
        if x.lens[1] != w.lens[1] * group:
            raise fail(
                self.name,
                f"input has {x.lens[1]} channels (dimension 1) but weights expect {w.lens[1]} x group {group}",
            )
        lens = [x.lens[0], w.lens[0]]
        for i in range(k):
            lens.append(
                _window_out(
                    self.name,
                    x.lens[i + 2],
                    _pad_total(padding, i, k),
                    w.lens[i + 2],
                    stride[i],
                    dilation[i],
                    False,
                    i + 2,
                )
            )
        return x.with_lens(lens)

    def _dynamic_shape(self, op: Operation, x: Shape, w: Shape) -> Shape:
        """MIGraphX's dynamic_compute_shape: each spatial interval through the window formula
        (saturating at 0), or ceil(x / stride) with a SAME padding mode."""
        xd = x.dyn_dims if x.dyn_dims is not None else [DynamicDimension(n, n) for n in x.lens]
        wd = w.dyn_dims if w.dyn_dims is not None else [DynamicDimension(n, n) for n in w.lens]
        if len(xd) < 3 or len(wd) != len(xd):
            raise fail(self.name, f"input rank {len(xd)} and weights rank {len(wd)} do not fit a convolution")
        k = len(xd) - 2
        padding, stride, dilation = op["padding"], op["stride"], op["dilation"]
        if len(stride) != k or len(dilation) != k or len(padding) not in (k, 2 * k):
            raise fail(self.name, f"padding, stride and dilation do not fit {k} spatial dimensions")
        check_strides(self.name, stride)
        dims = [DynamicDimension(xd[0].min, xd[0].max), DynamicDimension(wd[0].min, wd[0].max)]
        for i in range(k):
            xi, wi, s = xd[i + 2], wd[i + 2], stride[i]
            if op["padding_mode"] != 0:
                dims.append(DynamicDimension(-(-xi.min // s), -(-xi.max // s)))
                continue
            if xi.max == 0 or wi.max == 0:
                dims.append(DynamicDimension(0, 0))
                continue
            pad = _pad_total(padding, i, k)
            lo_kernel = wi.min * dilation[i] - (dilation[i] - 1)
            hi_kernel = wi.max * dilation[i] - (dilation[i] - 1)
            lo = max(xi.min + pad - hi_kernel, 0) // s + 1
            hi = max(xi.max + pad - lo_kernel, 0) // s + 1
            if xi.is_fixed and wi.is_fixed and xi.min + pad < lo_kernel:
                lo = hi = 0
            dims.append(DynamicDimension(lo, hi))
        return Shape.dynamic(x.dtype, dims)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x, w = inputs
        out_dtype = self.shape(op, [_runtime_shape(x), _runtime_shape(w)], modules).dtype.numpy
        return convolve(x, w, op["padding"], op["stride"], op["dilation"], op["group"]).astype(out_dtype)


_CONV_ATTRS = (
    Attr("padding", INTS, (0, 0)),
    Attr("stride", INTS, (1, 1)),
    Attr("dilation", INTS, (1, 1)),
    Attr("group", INT, 1),
    Attr("padding_mode", PADDING_MODE, 0),
)
# quant_convolution and convolution_backwards declare padding_mode before group
CONV_ATTRS_MODE_FIRST = (*_CONV_ATTRS[:3], _CONV_ATTRS[4], _CONV_ATTRS[3])


@register
class Convolution(_Convolution):
    name = "convolution"
    traits = (PaddedWindow, HorizontallyFusable)
    padding_attributes = ("padding",)
    attributes = _CONV_ATTRS
    legacy_attributes = {"use_dynamic_same_auto_pad": None}


@register
class QuantConvolution(_Convolution):
    name = "quant_convolution"
    padding_attributes = ("padding",)
    attributes = CONV_ATTRS_MODE_FIRST

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = super().shape(op, inputs, modules)
        out = DType.float if inputs[0].dtype.is_fp8 else DType.int32
        return s.with_type(out)


@register
class Pooling(OpDef):
    name = "pooling"
    traits = (PaddedWindow,)
    padding_attributes = ("padding",)
    attributes = (
        Attr("mode", POOLING_MODE, 0),
        Attr("padding", INTS, (0, 0)),
        Attr("padding_mode", PADDING_MODE, 0),
        Attr("stride", INTS, (1, 1)),
        Attr("lengths", INTS, (1, 1)),
        Attr("dilations", INTS, (1, 1)),
        Attr("ceil_mode", BOOL, False),
        Attr("count_include_pad", BOOL, False),
        Attr("lp_order", INT, 2),
        Attr("dyn_global", BOOL, False),
    )
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        if x.ndim < 3:
            raise fail(self.name, f"input rank must be at least 3, got {x.ndim}")
        k = x.ndim - 2
        stride = op["stride"]
        if len(stride) != k:
            raise fail(self.name, f"stride {lens_text(stride)} does not fit {k} spatial dimensions")
        check_strides(self.name, stride)
        if x.is_dynamic:
            dims = list(x.dyn_dims[:2])
            if op["dyn_global"]:
                dims += [DynamicDimension(1, 1)] * k
                return Shape.dynamic(x.dtype, dims)
            lengths, dilations, padding = op["lengths"], op["dilations"], op["padding"]
            if len(lengths) != k or len(dilations) != k or len(padding) not in (k, 2 * k):
                raise fail(self.name, f"lengths, dilations and padding do not fit {k} spatial dimensions")
            for i in range(k):
                d = x.dyn_dims[i + 2]
                if op["padding_mode"] != 0:  # MIGraphX: ceil(x / stride)
                    dims.append(DynamicDimension(-(-d.min // stride[i]), -(-d.max // stride[i])))
                    continue
                pad, ceil = _pad_total(padding, i, k), op["ceil_mode"]
                ends = [_window_out(self.name, n, pad, lengths[i], stride[i], dilations[i], ceil, i + 2) for n in d[:2]]
                dims.append(DynamicDimension(*ends))
            return Shape.dynamic(x.dtype, dims)
        lens = list(x.lens[:2])
        if op["dyn_global"]:
            lens += [1] * k
        else:
            lengths, dilations, padding = op["lengths"], op["dilations"], op["padding"]
            if len(lengths) != k or len(dilations) != k:
                raise fail(self.name, f"lengths and dilations need {k} values")
            if len(padding) not in (k, 2 * k):
                raise fail(self.name, f"padding {lens_text(padding)} does not fit {k} spatial dimensions")
            for i in range(k):
                lens.append(
                    _window_out(
                        self.name,
                        x.lens[i + 2],
                        _pad_total(padding, i, k),
                        lengths[i],
                        stride[i],
                        dilations[i],
                        op["ceil_mode"],
                        i + 2,
                    )
                )
        return x.with_lens(lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        return pool(inputs[0], op)


class _AxisSoftmax(OpDef):
    attributes = (Attr("axis", INT, 1),)
    axis_attributes = {"axis": "input"}
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        normalize_axis(self.name, op["axis"], s.ndim)
        if s.packed or s.is_dynamic:
            return s
        return s.with_lens(s.lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x = inputs[0]
        axis = op["axis"]
        wide = x.astype(np.float64)
        shifted = wide - wide.max(axis=axis, keepdims=True)
        if self.name == "logsoftmax":
            out = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        else:
            e = np.exp(shifted)
            out = e / e.sum(axis=axis, keepdims=True)
        return out.astype(x.dtype)


@register
class Softmax(_AxisSoftmax):
    name = "softmax"


@register
class Logsoftmax(_AxisSoftmax):
    name = "logsoftmax"


class _Reduce(OpDef):
    attributes = (Attr("axes", INTS, ()),)
    axis_attributes = {"axes": "input"}
    arity = (1, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        if len(inputs) == 2:
            # axes given at run time: any axis may be reduced, so each dimension is in [1, max]
            if op["axes"]:
                raise fail(self.name, "takes an axes attribute or an axes input, not both")
            in_dims = s.dyn_dims if s.dyn_dims is not None else [DynamicDimension(n, n) for n in s.lens]
            return Shape.dynamic(s.dtype, [DynamicDimension(1, d.max) for d in in_dims])
        axes = normalize_axes(self.name, op["axes"], s.ndim)
        if s.is_dynamic:
            dims = [DynamicDimension(1, 1) if i in axes else d for i, d in enumerate(s.dyn_dims)]
            return Shape.dynamic(s.dtype, dims)
        lens = [1 if i in axes else n for i, n in enumerate(s.lens)]
        return Shape.make(s.dtype, lens)  # MIGraphX: reductions give a standard shape

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x = inputs[0]
        given = op["axes"] if len(inputs) == 1 else [int(a) for a in inputs[1].reshape(-1)]
        axes = tuple(normalize_axes(self.name, given, x.ndim))
        if not axes:
            return x.copy()
        wide = x.astype(np.float64) if x.dtype.kind == "f" or x.dtype.kind == "V" else x
        out = REDUCTIONS[self.name].numpy(wide, axis=axes, keepdims=True)
        return np.asarray(out).astype(x.dtype)


class Reducer(NamedTuple):
    """A reduce op's meaning: `numpy` is the reference's (floats in float64, integers in 64 bits);
    the rest is how generated kernels fold a row: `combine` ("sum", "product", "max" or "min", NaN
    propagating) two partials, starting from `identity` of the accumulator type, dividing the total
    by the row's length for a `mean`, and folding elements as 0/1 (`x != 0`) where `truthy`."""

    numpy: Callable[..., Any]
    combine: str
    identity: Callable[[DType], float | int]
    mean: bool = False
    truthy: bool = False


def _mean(x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
    """MIGraphX's mean: of integers (and bools) the 64-bit sum (wrapping) divided by the count,
    truncated toward zero as C++ divides; of floats numpy's (in the float64 `x` it is given)."""
    if x.dtype.kind == "f":
        return np.mean(x, axis=axis, keepdims=keepdims)
    wide = np.uint64 if x.dtype.kind in "ub" else np.int64
    with np.errstate(over="ignore"):
        total = np.sum(x, axis=axis, keepdims=keepdims, dtype=wide)
    count = wide(math.prod(x.shape[a] for a in axis))
    return (total - np.fmod(total, count)) // count


def _lowest(t: DType) -> float | int:
    return -math.inf if t.is_float else (0 if t is DType.bool else int(np.iinfo(t.numpy).min))


def _highest(t: DType) -> float | int:
    return math.inf if t.is_float else (1 if t is DType.bool else int(np.iinfo(t.numpy).max))


REDUCTIONS = {
    "reduce_sum": Reducer(np.sum, "sum", lambda t: 0),
    "reduce_mean": Reducer(_mean, "sum", lambda t: 0, mean=True),
    "reduce_max": Reducer(np.max, "max", _lowest),
    "reduce_min": Reducer(np.min, "min", _highest),
    "reduce_prod": Reducer(np.prod, "product", lambda t: 1),
    "reduce_any": Reducer(np.any, "max", lambda t: 0, truthy=True),
    "reduce_all": Reducer(np.all, "min", lambda t: 1, truthy=True),
}

# reduce_any and reduce_all are left out of MIGraphX's find_nop_reshapes
for _name, _traits in (
    ("reduce_sum", (Reduction, NopWhenLensKept)),
    ("reduce_mean", (Reduction, NopWhenLensKept)),
    ("reduce_max", (Reduction, NopWhenLensKept)),
    ("reduce_min", (Reduction, NopWhenLensKept)),
    ("reduce_prod", (Reduction, NopWhenLensKept)),
    ("reduce_any", (Reduction,)),
    ("reduce_all", (Reduction,)),
):
    register(type(_name.title().replace("_", ""), (_Reduce,), {"name": _name, "traits": _traits}))


class _ArgReduce(OpDef):
    traits = (ArgReduction,)
    attributes = (Attr("axis", INT, 0), Attr("select_last_index", BOOL, False))
    axis_attributes = {"axis": "input"}
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        axis = normalize_axis(self.name, op["axis"], s.ndim)
        if s.is_dynamic:  # MIGraphX: the input's ranges, the axis's {1, 1}
            dims = list(s.dyn_dims)
            dims[axis] = DynamicDimension(1, 1)
            return Shape.dynamic(DType.int64, dims)
        lens = list(s.lens)
        lens[axis] = 1
        return Shape.make(DType.int64, lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x = inputs[0]
        axis = normalize_axis(self.name, op["axis"], x.ndim)
        pick = np.argmax if self.name == "argmax" else np.argmin
        if op["select_last_index"]:
            flipped = np.flip(x, axis)
            index = x.shape[axis] - 1 - pick(flipped, axis=axis)
        else:
            index = pick(x, axis=axis)
        return np.expand_dims(index, axis).astype(np.int64)


@register
class Argmax(_ArgReduce):
    name = "argmax"


@register
class Argmin(_ArgReduce):
    name = "argmin"


@register
class Det(OpDef):
    """mgxir's addition (MIGraphX has no determinant), for ONNX's Det: the determinant of each
    square matrix of the last two dimensions (LU factorisation in double precision)."""

    name = "det"
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        require_static(self.name, x)
        if x.ndim < 2 or x.lens[-1] != x.lens[-2]:
            raise fail(self.name, f"needs square matrices in the last two dimensions, not {lens_text(x.lens)}")
        if not x.dtype.is_float:
            raise fail(self.name, f"takes floats, not {x.dtype.type_name}")
        return Shape.make(x.dtype, x.lens[:-2] or (1,))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x = inputs[0]
        out = np.linalg.det(x.astype(np.float64)).astype(x.dtype)
        return out.reshape(x.shape[:-2] or (1,))


@register
class Gathernd(OpDef):
    name = "gathernd"
    attributes = (Attr("batch_dims", INT, 0),)
    arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        data, indices = inputs
        require_static(self.name, data, indices)
        r, q = data.ndim, indices.ndim
        b = op["batch_dims"]
        if not q:
            raise fail(self.name, "the indices need rank 1 or more")
        k = indices.lens[-1]
        if k > r - b:
            raise fail(self.name, f"index depth {k} is larger than data rank {r} minus batch_dims {b}")
        lens = list(indices.lens[: q - 1]) + list(data.lens[b + k :])
        if not lens:
            lens = [1]
        return Shape.make(data.dtype, lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        data, indices = inputs
        b = op["batch_dims"]
        k = indices.shape[-1]
        batch = data.shape[:b]
        nb = math.prod(batch)
        flat_data = data.reshape(nb, *data.shape[b:])
        flat_index = indices.reshape(nb, -1, k).astype(np.int64)
        rows = []
        for i in range(nb):
            idx = flat_index[i]
            idx = np.where(idx < 0, idx + np.array(data.shape[b : b + k]), idx)
            rows.append(flat_data[i][tuple(idx.T)])
        out = np.stack(rows)
        lens = list(indices.shape[:-1]) + list(data.shape[b + k :])
        return out.reshape(lens or [1])


@register
class Gather(OpDef):
    name = "gather"
    axis_attributes = {"axis": "input"}
    attributes = (Attr("axis", INT, 0),)
    arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        data, indices = inputs
        axis = normalize_axis(self.name, op["axis"], data.ndim)
        if data.is_dynamic or indices.is_dynamic:  # MIGraphX: the result is dynamic
            scalar_index = not indices.is_dynamic and indices.scalar and indices.lens == (1,)
            dims = list(_dims_of(data))
            index_dims = [] if scalar_index else list(_dims_of(indices))
            return Shape.dynamic(data.dtype, dims[:axis] + index_dims + dims[axis + 1 :])
        idx = list(indices.lens)
        if indices.scalar and indices.lens == (1,):
            idx = []
        lens = list(data.lens[:axis]) + idx + list(data.lens[axis + 1 :])
        if not lens:
            return Shape.make(data.dtype, (1,), (0,))
        return Shape.make(data.dtype, lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        data, indices = inputs
        axis = normalize_axis(self.name, op["axis"], data.ndim)
        index = indices.astype(np.int64)
        index = np.where(index < 0, index + data.shape[axis], index)
        if indices.ndim == 1 and indices.strides == (0,) and indices.shape == (1,):
            index = index.reshape(())
        out = np.take(data, index, axis=axis)
        return out.reshape(1) if out.ndim == 0 else out


@register
class Resize(OpDef):
    name = "resize"
    attributes = (
        Attr("scales", FLOATS, ()),
        Attr("sizes", INTS, ()),
        Attr("nearest_mode", STRING, "floor"),
        Attr("mode", STRING, "nearest"),
        Attr("coordinate_transformation_mode", STRING, ""),
        Attr("cubic_coeff_a", FLOAT, -0.75),
    )
    arity = (1, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        if op["mode"] not in ("nearest", "linear", "cubic"):
            raise fail(self.name, "Only 'nearest', 'linear', and 'cubic' modes are supported")
        sizes, scales = op["sizes"], op["scales"]
        bad = next((f for f in scales if not math.isfinite(f) or f < 0), None)
        if bad is not None:  # a NaN's int() was a ValueError (fuzz/run.py, text reader)
            raise fail(self.name, f"scale {bad} is not a finite, non-negative number")
        if len(inputs) == 2:
            return self._runtime_shape(x, inputs[1], scales)
        require_static(self.name, x)
        if bool(sizes) == bool(scales):
            raise fail(self.name, "One and only one of sizes or scales attributes must be given")
        if sizes:
            if len(sizes) != x.ndim:
                raise fail(self.name, f"sizes {lens_text(sizes)} do not match input rank {x.ndim}")
            return Shape.make(x.dtype, sizes)
        if len(scales) != x.ndim:
            raise fail(self.name, f"{len(scales)} scales do not match input rank {x.ndim}")
        with np.errstate(over="ignore"):  # as MIGraphX, in float; past its range is refused below
            scaled = [np.float32(n) * np.float32(f) for n, f in zip(x.lens, scales)]
        if not all(math.isfinite(n) for n in scaled):  # int() of it was an OverflowError (fuzz/run.py, json)
            raise fail(self.name, f"scales {list(scales)} take a dimension past float's range")
        return x.with_lens([int(n) for n in scaled])

    @staticmethod
    def _runtime_shape(x: Shape, given: Shape, scales: Sequence[float]) -> Shape:
        """Sizes or scales as an input: each output dimension in [0, max] (scaled bounds where the
        scales attribute is also given), as MIGraphX's rule says."""
        if given.ndim != 1:
            raise fail("resize", "size/scale input must have rank 1")
        if given.is_dynamic:
            raise fail("resize", "size/scale input must have static shape")
        if x.ndim != given.lens[0]:
            raise fail("resize", "size/scale input's size must match rank of input X")
        in_dims = x.dyn_dims if x.dyn_dims is not None else [DynamicDimension(n, n) for n in x.lens]
        dims = [DynamicDimension(0, SIZE_MAX)] * x.ndim
        for i, f in enumerate(scales):
            d = in_dims[i]
            hi = SIZE_MAX if d.max == SIZE_MAX else int(d.max * np.float32(f))
            dims[i] = DynamicDimension(int(d.min * np.float32(f)), hi)
        return Shape.dynamic(x.dtype, dims)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> np.ndarray:
        x = inputs[0]
        if len(inputs) == 2:
            given = inputs[1].reshape(-1)
            if given.dtype.kind in "iu":
                out_lens = [int(n) for n in given]
                scales = [n / m if m else 1.0 for n, m in zip(out_lens, x.shape)]
            else:
                scales = [float(f) for f in given]
                out_lens = [int(f * n) for f, n in zip(scales, x.shape)]
        elif op["sizes"]:
            out_lens = list(op["sizes"])
            scales = [n / m if m else 1.0 for n, m in zip(out_lens, x.shape)]
        else:
            scales = list(op["scales"])
            out_lens = [int(np.float32(n) * np.float32(f)) for n, f in zip(x.shape, scales)]
        mode = op["mode"]
        if mode not in ("nearest", "linear", "cubic"):
            raise ComputeError(f"resize: mode '{mode}' has no reference implementation")
        coordinate = _RESIZE_COORDINATES.get(op["coordinate_transformation_mode"] or "half_pixel")
        if coordinate is None:
            raise ComputeError(
                f"resize: unknown coordinate_transformation_mode '{op['coordinate_transformation_mode']}'"
            )
        out = x.astype(np.float64)
        for axis, (n_in, n_out, scale) in enumerate(zip(x.shape, out_lens, scales)):
            if mode == "cubic":
                # MIGraphX keeps the scale as float and does not clamp the coordinate, only the taps
                source = coordinate(np.arange(n_out, dtype=np.float64), n_in, n_out, float(np.float32(scale)))
                out = _cubic_along(out, axis, source, n_in, float(op["cubic_coeff_a"]))
                continue
            if n_in == n_out and scale == 1.0:
                continue
            source = np.clip(coordinate(np.arange(n_out, dtype=np.float64), n_in, n_out, scale), 0, n_in - 1)
            if mode == "nearest":
                rounding = _RESIZE_NEAREST.get(op["nearest_mode"])
                if rounding is None:
                    raise ComputeError(f"resize: unknown nearest_mode '{op['nearest_mode']}'")
                out = np.take(out, rounding(source).astype(np.int64), axis=axis)
            else:
                low = np.floor(source).astype(np.int64)
                high = np.minimum(low + 1, n_in - 1)
                weight = (source - low).reshape([-1 if a == axis else 1 for a in range(x.ndim)])
                out = np.take(out, low, axis=axis) * (1 - weight) + np.take(out, high, axis=axis) * weight
        return out.astype(x.dtype)


def _cubic_kernel(distance: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution weight of a tap `distance` away from the sampled position."""
    d = np.abs(distance)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d < 1, near, np.where(d < 2, far, 0.0))


def _cubic_along(x: np.ndarray, axis: int, source: np.ndarray, n_in: int, a: float) -> np.ndarray:
    """x resampled along `axis` at positions `source` from the 4 taps around each, edges repeated."""
    if n_in == 0:
        return np.zeros(x.shape[:axis] + source.shape + x.shape[axis + 1 :], x.dtype)
    first_tap = np.floor(source) - 1
    weight_shape = [-1 if k == axis else 1 for k in range(x.ndim)]
    out = np.zeros(x.shape[:axis] + source.shape + x.shape[axis + 1 :], np.float64)
    for tap in range(4):
        position = first_tap + tap
        index = np.clip(position, 0, n_in - 1).astype(np.int64)
        weight = _cubic_kernel(source - position, a).reshape(weight_shape)
        out += np.take(x, index, axis=axis) * weight
    return out


# source coordinate of each output index: (index, input length, output length, scale) -> position
_RESIZE_COORDINATES = {
    "half_pixel": lambda i, n_in, n_out, s: (i + 0.5) / s - 0.5,
    "pytorch_half_pixel": lambda i, n_in, n_out, s: (i + 0.5) / s - 0.5 if n_out > 1 else 0.0 * i,
    "align_corners": lambda i, n_in, n_out, s: 0.0 * i if n_out == 1 else i * (n_in - 1.0) / (n_out - 1.0),
    "asymmetric": lambda i, n_in, n_out, s: i / s,
    "tf_half_pixel_for_nn": lambda i, n_in, n_out, s: (i + 0.5) / s,
}
_RESIZE_NEAREST = {
    "round_prefer_floor": lambda v: np.ceil(v - 0.5),
    "round_prefer_ceil": lambda v: np.floor(v + 0.5),
    "floor": np.floor,
    "ceil": np.ceil,
}


def resize_taps(
    op_values: Operation | Mapping[str, Any], n_in: int, n_out: int, scale: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """The input positions each output position of one axis reads and their weights ({n_out, taps}),
    as Resize.compute resamples that axis; None where the axis is not resampled. For the lowerings
    that write these tables into their code (MLIR, the GPU target's kernel); ValueError for a mode
    the reference does not know."""
    mode = op_values["mode"]
    coordinate = _RESIZE_COORDINATES.get(op_values["coordinate_transformation_mode"] or "half_pixel")
    if coordinate is None:
        raise ValueError(f"unknown coordinate_transformation_mode '{op_values['coordinate_transformation_mode']}'")
    positions = np.arange(n_out, dtype=np.float64)
    if mode == "cubic":
        source = coordinate(positions, n_in, n_out, float(np.float32(scale)))
        first = np.floor(source) - 1
        taps = first[:, None] + np.arange(4)
        weights = _cubic_kernel(source[:, None] - taps, float(op_values["cubic_coeff_a"]))
        return np.clip(taps, 0, n_in - 1).astype(np.int64), weights
    if n_in == n_out and scale == 1.0:
        return None
    source = np.clip(coordinate(positions, n_in, n_out, scale), 0, n_in - 1)
    if mode == "nearest":
        rounding = _RESIZE_NEAREST.get(op_values["nearest_mode"])
        if rounding is None:
            raise ValueError(f"unknown nearest_mode '{op_values['nearest_mode']}'")
        return rounding(source).astype(np.int64)[:, None], np.ones((n_out, 1))
    low = np.floor(source).astype(np.int64)
    high = np.minimum(low + 1, n_in - 1)
    weight = source - low
    return np.stack([low, high], axis=1), np.stack([1 - weight, weight], axis=1)


def _runtime_shape(x: np.ndarray) -> Shape:
    return Shape.make(DType.from_numpy(x.dtype), x.shape or (1,))


def _pads(padding: Sequence[int], k: int) -> list[tuple[int, int]]:
    """Begin/end padding per spatial axis from the symmetric (k) or begin..., end... (2k) form."""
    if len(padding) == 2 * k:
        return [(padding[i], padding[i + k]) for i in range(k)]
    return [(p, p) for p in padding]


def _windows(x: np.ndarray, lengths: Sequence[int], stride: Sequence[int], dilation: Sequence[int]) -> np.ndarray:
    """View of x (N, C, *spatial) as (N, C, *out, *kernel) sliding windows."""
    k = len(lengths)
    spans = [1 + d * (n - 1) for n, d in zip(lengths, dilation)]
    view = np.lib.stride_tricks.sliding_window_view(x, spans, axis=tuple(range(2, 2 + k)))
    view = view[(Ellipsis, *[slice(None, None, d) for d in dilation])]
    return view[(slice(None), slice(None), *[slice(None, None, s) for s in stride])]


def convolve(
    x: np.ndarray, w: np.ndarray, padding: Sequence[int], stride: Sequence[int], dilation: Sequence[int], group: int
) -> np.ndarray:
    k = x.ndim - 2
    wide = np.int64 if x.dtype.kind in "iu" else np.float64
    padded = np.pad(x.astype(wide), [(0, 0), (0, 0), *_pads(padding, k)])
    windows = _windows(padded, w.shape[2:], stride, dilation)
    cin = x.shape[1] // group
    cout = w.shape[0] // group
    letters = "defghijk"[:k]
    kern = "pqrstuvw"[:k]
    parts = []
    for g in range(group):
        xs = windows[:, g * cin : (g + 1) * cin]
        ws = w[g * cout : (g + 1) * cout].astype(wide)
        parts.append(np.einsum(f"nc{letters}{kern},oc{kern}->no{letters}", xs, ws))
    return np.concatenate(parts, axis=1)


def pool(x: np.ndarray, op: Operation) -> np.ndarray:
    k = x.ndim - 2
    mode = op["mode"]
    if op["dyn_global"]:
        lengths = list(x.shape[2:])
        stride = [1] * k
        dilation = [1] * k
        pads = [(0, 0)] * k
    else:
        lengths, stride, dilation = op["lengths"], op["stride"], op["dilations"]
        pads = _pads(op["padding"], k)
    out_lens = []
    extra = []
    for i in range(k):
        span = 1 + dilation[i] * (lengths[i] - 1)
        total = x.shape[2 + i] + pads[i][0] + pads[i][1] - span
        n = (-(-total // stride[i]) if op["ceil_mode"] else total // stride[i]) + 1
        out_lens.append(n)
        extra.append(max(0, (n - 1) * stride[i] + span - (x.shape[2 + i] + pads[i][0] + pads[i][1])))
    full = [(0, 0), (0, 0), *[(b, e + x_) for (b, e), x_ in zip(pads, extra)]]
    wide = x.astype(np.float64)
    inside = np.pad(np.ones(x.shape[2:]), full[2:])
    in_bounds = _windows(inside[None, None], lengths, stride, dilation)
    axes = tuple(range(-k, 0))
    if mode == 1:  # max
        windows = _windows(np.pad(wide, full, constant_values=-np.inf), lengths, stride, dilation)
        out = windows.max(axis=axes)
    elif mode == 2:  # lpnorm
        p = op["lp_order"]
        windows = _windows(np.pad(np.abs(wide) ** p, full), lengths, stride, dilation)
        out = windows.sum(axis=axes) ** (1.0 / p)
    else:
        windows = _windows(np.pad(wide, full), lengths, stride, dilation)
        total = windows.sum(axis=axes)
        if op["count_include_pad"]:
            # the padding counts; what ceil_mode adds past it does not (MIGraphX's pooling)
            declared = np.pad(np.ones(x.shape[2:]), pads, constant_values=1)
            declared = np.pad(declared, [(0, e) for e in extra])
            count = _windows(declared[None, None], lengths, stride, dilation).sum(axis=axes)
        else:
            count = in_bounds.sum(axis=axes)
        out = total / np.maximum(count, 1)
    return out.astype(x.dtype)
