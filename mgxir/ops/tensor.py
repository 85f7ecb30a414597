"""Tensor operators outside the other families: padding, reversal, top-k, scans, lrn, layouts."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from mgxir.ir.attributes import BOOL, FLOAT, INT, INTS, PAD_MODE, SHAPE, Attr
from mgxir.ir.dtype import DType
from mgxir.ir.operation import OpDef, Operation, RunModule, RuntimeValue
from mgxir.ir.registry import register
from mgxir.ir.shape import DynamicDimension, Shape
from mgxir.ir.traits import Contraction, HorizontallyFusable, NopWhenShapeKept
from mgxir.ops.common import fail, lens_text, normalize_axes, normalize_axis, require_static, same_type

if TYPE_CHECKING:
    from mgxir.ir.module import Module
    from mgxir.ops.scalar import Emitter

Shapes = Sequence[Shape]
Modules = Sequence["Module"]
Arrays = list[np.ndarray]


@register
class Pad(OpDef):
    name = "pad"
    traits = (NopWhenShapeKept,)
    attributes = (Attr("mode", PAD_MODE, 0), Attr("pads", INTS, ()), Attr("value", FLOAT, 0.0))
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        pads = op["pads"]
        if len(pads) != 2 * x.ndim:
            raise fail(self.name, f"pads {lens_text(pads)} need {2 * x.ndim} values for rank {x.ndim}")
        added = [pads[i] + pads[i + x.ndim] for i in range(x.ndim)]
        if x.is_dynamic:  # MIGraphX: each range (and optimal size) grows by the axis's padding
            dims = [
                DynamicDimension(d.min + p, d.max + p, tuple(o + p for o in d.optimals))
                for d, p in zip(x.dyn_dims, added)
            ]
            for i, d in enumerate(dims):
                if d.min < 0:
                    raise fail(self.name, f"dimension {i} would have negative size {d.min}")
            return Shape.dynamic(x.dtype, dims)
        lens = [n + p for n, p in zip(x.lens, added)]
        for i, n in enumerate(lens):
            if n < 0:
                raise fail(self.name, f"dimension {i} would have negative size {n}")
        return Shape.make(x.dtype, lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x = inputs[0]
        pads = op["pads"]
        r = x.ndim
        widths = [(max(pads[i], 0), max(pads[i + r], 0)) for i in range(r)]
        mode = ("constant", "reflect", "edge")[op["mode"]]
        if mode == "constant":
            out = np.pad(x, widths, mode="constant", constant_values=np.asarray(op["value"]).astype(x.dtype))
        else:
            out = np.pad(x, widths, mode=mode)
        crop = tuple(slice(-min(pads[i], 0), out.shape[i] + min(pads[i + r], 0)) for i in range(r))
        return out[crop]


@register
class Reverse(OpDef):
    name = "reverse"
    attributes = (Attr("axes", INTS, ()),)
    arity = (1, 1)
    axis_attributes = {"axes": "input"}

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        require_static(self.name, inputs[0])  # MIGraphX's reverse takes no dynamic shape
        normalize_axes(self.name, op["axes"], inputs[0].ndim)
        return inputs[0].with_lens(inputs[0].lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x = inputs[0]
        return np.flip(x, tuple(normalize_axes(self.name, op["axes"], x.ndim))).copy()


@register
class Topk(OpDef):
    name = "topk"
    attributes = (Attr("k", INT, 1), Attr("axis", INT, 0), Attr("largest", BOOL, True))
    arity = (1, 2)
    axis_attributes = {"axis": "input"}

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        require_static(self.name, x)
        axis = normalize_axis(self.name, op["axis"], x.ndim)
        if op["k"] > x.lens[axis]:
            raise fail(self.name, f"k={op['k']} is larger than dimension {axis} ({x.lens[axis]})")
        lens = list(x.lens)
        lens[axis] = op["k"]
        return Shape.tuple_of([Shape.make(x.dtype, lens), Shape.make(DType.int64, lens)])

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x = inputs[0]
        axis = normalize_axis(self.name, op["axis"], x.ndim)
        key = -x.astype(np.float64) if op["largest"] else x.astype(np.float64)
        order = np.argsort(key, axis=axis, kind="stable")
        index = np.take(order, np.arange(op["k"]), axis=axis)
        return np.take_along_axis(x, index, axis=axis), index.astype(np.int64)


class _PrefixScan(OpDef):
    """MIGraphX's prefix_scan_op: `accumulate` along `axis`; exclusive starts from `identity`."""

    accumulate: ClassVar[Callable[..., np.ndarray]]
    identity: ClassVar[int]
    attributes = (Attr("axis", INT, 0), Attr("exclusive", BOOL, False), Attr("reverse", BOOL, False))
    arity = (1, 1)
    axis_attributes = {"axis": "input"}

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        normalize_axis(self.name, op["axis"], inputs[0].ndim)
        return inputs[0]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x = inputs[0]
        axis = normalize_axis(self.name, op["axis"], x.ndim)
        data = np.flip(x, axis) if op["reverse"] else x
        out = self.accumulate(data, axis=axis, dtype=x.dtype)
        if op["exclusive"]:
            first = np.full_like(np.take(out, [0], axis=axis), self.identity)
            out = np.concatenate([first, np.delete(out, -1, axis=axis)], axis=axis)
        return np.flip(out, axis).copy() if op["reverse"] else out


@register
class PrefixScanSum(_PrefixScan):
    name = "prefix_scan_sum"
    accumulate = staticmethod(np.cumsum)
    identity = 0


@register
class PrefixScanProd(_PrefixScan):
    """mgxir's addition (MIGraphX has no prefix product), for ONNX's CumProd."""

    name = "prefix_scan_prod"
    accumulate = staticmethod(np.cumprod)
    identity = 1


@register
class Lrn(OpDef):
    name = "lrn"
    attributes = (
        Attr("alpha", FLOAT, 0.0001),
        Attr("beta", FLOAT, 0.75),
        Attr("bias", FLOAT, 1.0),
        Attr("size", INT, 1),
    )
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        return inputs[0]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x = inputs[0]
        wide = x.astype(np.float64)
        size = op["size"]
        channels = x.shape[1]
        before = (size - 1) // 2
        after = size - 1 - before
        squares = np.pad(wide**2, [(0, 0), (before, after)] + [(0, 0)] * (x.ndim - 2))
        window = sum(squares[:, c : c + channels] for c in range(size))
        scale = op["bias"] + op["alpha"] / size * window
        return (wide / scale ** op["beta"]).astype(x.dtype)


@register
class Step(OpDef):
    name = "step"
    traits = (NopWhenShapeKept,)
    is_view = True  # MIGraphX's output_alias: every step-th element of its input, in place
    attributes = (Attr("axes", INTS, ()), Attr("steps", INTS, ()))
    arity = (1, 1)
    axis_attributes = {"axes": "input"}

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        require_static(self.name, x)
        if len(op["axes"]) != len(op["steps"]):
            raise fail(self.name, "axes and steps must have the same length")
        lens = list(x.lens)
        strides = list(x.strides)
        if 0 in op["steps"]:
            raise fail(self.name, f"steps {lens_text(op['steps'])} have a 0")
        for a, s in zip(normalize_axes(self.name, op["axes"], x.ndim), op["steps"]):
            lens[a] = (lens[a] + s - 1) // s
            strides[a] *= s
        return Shape.make(x.dtype, lens, strides)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x = inputs[0]
        index = [slice(None)] * x.ndim
        for a, s in zip(normalize_axes(self.name, op["axes"], x.ndim), op["steps"]):
            index[a] = slice(None, None, s)
        return x[tuple(index)]


@register
class Layout(OpDef):
    """Same values, memory laid out in `permutation` order."""

    name = "layout"
    attributes = (Attr("permutation", INTS, ()),)
    arity = (1, 1)
    pointwise = True

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        perm = op["permutation"]
        if sorted(perm) != list(range(x.ndim)):
            raise fail(self.name, f"{lens_text(perm)} is not a permutation of {x.ndim} axes")
        return Shape.from_permutation(x.dtype, x.lens, perm)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        perm = op["permutation"]
        stored = np.ascontiguousarray(inputs[0].transpose(perm))
        return stored.transpose(np.argsort(perm))

    def scalar(self, em: Emitter[Any], op: Operation, args: Sequence[Any], out: DType) -> Any:
        """Each element is its input's (mgxir/ops/scalar.py)."""
        return args[0]


@register
class AsShape(OpDef):
    name = "as_shape"
    traits = (NopWhenShapeKept,)
    attributes = (Attr("shape", SHAPE, None),)
    arity = (1, 1)
    is_view = True

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = op["shape"]
        if s is None:
            raise fail(self.name, "needs a shape attribute")
        if s.bytes > inputs[0].bytes:
            raise fail(self.name, f"{s.bytes} bytes do not fit the input's {inputs[0].bytes}")
        return s

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        s = op["shape"]
        flat = np.ascontiguousarray(inputs[0]).reshape(-1).view(np.uint8)[: s.bytes].view(s.dtype.numpy)
        item = s.dtype.itemsize
        return np.lib.stride_tricks.as_strided(flat, shape=s.lens, strides=[st * item for st in s.strides])


@register
class Scalar(OpDef):
    name = "scalar"
    attributes = (Attr("scalar_bcst_dims", INTS, ()),)
    arity = (1, 1)
    is_view = True

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        if inputs[0].elements != 1:
            raise fail(self.name, f"the input has {inputs[0].elements} elements, not 1")
        dims = op["scalar_bcst_dims"]
        return Shape.make(inputs[0].dtype, dims, [0] * len(dims))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        return np.broadcast_to(inputs[0].reshape(()), tuple(op["scalar_bcst_dims"]))


@register
class QuantDot(OpDef):
    name = "quant_dot"
    traits = (Contraction, HorizontallyFusable)
    arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        same_type(self.name, inputs)
        a, b = inputs
        require_static(self.name, a, b)
        if a.ndim < 2 or a.ndim != b.ndim or a.lens[:-2] != b.lens[:-2] or a.lens[-1] != b.lens[-2]:
            raise fail(self.name, f"cannot multiply {lens_text(a.lens)} by {lens_text(b.lens)}")
        out = DType.float if a.dtype.is_fp8 else DType.int32
        return Shape.make(out, (*a.lens[:-1], b.lens[-1]))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        a, b = inputs
        if a.dtype.kind in "iu":
            return np.matmul(a.astype(np.int32), b.astype(np.int32))
        return np.matmul(a.astype(np.float32), b.astype(np.float32))


@register
class Nonzero(OpDef):
    name = "nonzero"
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        require_static(self.name, x)
        return Shape.make(DType.int64, (x.ndim, x.elements))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x = inputs[0]
        found = np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)
        out = np.zeros((x.ndim, math.prod(x.shape)), np.int64)
        out[:, : found.shape[1]] = found
        return out
