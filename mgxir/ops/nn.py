"""Neural-network operators: dot, convolution, pooling, softmax, reductions, gathers, resize."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mgxir.ir.dtype import DType
from mgxir.ir.shape import DynamicDimension, Shape
from mgxir.ops.attributes import (
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
from mgxir.ops.common import fail, lens_text, normalize_axes, normalize_axis, require_static, same_type
from mgxir.ops.definition import OpDef, Operation
from mgxir.ops.registry import register

if TYPE_CHECKING:
    from mgxir.ir.module import Module

Shapes = Sequence[Shape]
Modules = Sequence["Module"]


@register
class Dot(OpDef):
    name = "dot"
    arity = (2, 2)
    legacy_attributes = {"alpha": None, "beta": None}

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        same_type(self.name, inputs)
        a, b = inputs
        require_static(self.name, a, b)
        if a.ndim < 2 or b.ndim < 2:
            raise fail(self.name, "both inputs need rank 2 or more")
        if a.ndim != b.ndim:
            raise fail(self.name, f"inputs have ranks {a.ndim} and {b.ndim}")
        if a.lens[:-2] != b.lens[:-2]:
            raise fail(self.name, f"batch dimensions differ: {lens_text(a.lens)} x {lens_text(b.lens)}")
        if a.lens[-1] != b.lens[-2]:
            raise fail(
                self.name,
                f"inner dimensions differ: {lens_text(a.lens)} x {lens_text(b.lens)} "
                f"(dimension {a.ndim - 1} of A is {a.lens[-1]}, dimension {b.ndim - 2} of B is {b.lens[-2]})",
            )
        return Shape.make(a.dtype, (*a.lens[:-2], a.lens[-2], b.lens[-1]))


def _window_out(op_name: str, n: int, pad: int, kernel: int, stride: int, dilation: int, ceil_mode: bool, dim: int) -> int:
    dilated = 1 + dilation * (kernel - 1)
    span = n + pad - dilated
    if span < 0:
        raise fail(op_name, f"kernel size {kernel} (dilated {dilated}) is larger than padded input dimension {dim} ({n + pad})")
    q = -(-span // stride) if ceil_mode else span // stride
    return q + 1


def _pad_total(padding: Sequence[int], i: int, k: int) -> int:
    if len(padding) == 2 * k:
        return padding[i] + padding[i + k]
    return 2 * padding[i]


class _Convolution(OpDef):
    arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        same_type(self.name, inputs)
        x, w = inputs
        require_static(self.name, x, w)
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
        group = op["group"]
        if x.lens[1] != w.lens[1] * group:
            raise fail(
                self.name,
                f"input has {x.lens[1]} channels (dimension 1) but weights expect {w.lens[1]} x group {group}",
            )
        lens = [x.lens[0], w.lens[0]]
        for i in range(k):
            lens.append(
                _window_out(self.name, x.lens[i + 2], _pad_total(padding, i, k), w.lens[i + 2], stride[i], dilation[i], False, i + 2)
            )
        return x.with_lens(lens)


_CONV_ATTRS = (
    Attr("padding", INTS, (0, 0)),
    Attr("stride", INTS, (1, 1)),
    Attr("dilation", INTS, (1, 1)),
    Attr("group", INT, 1),
    Attr("padding_mode", PADDING_MODE, 0),
)


@register
class Convolution(_Convolution):
    name = "convolution"
    attributes = _CONV_ATTRS
    legacy_attributes = {"use_dynamic_same_auto_pad": None}


@register
class QuantConvolution(_Convolution):
    name = "quant_convolution"
    attributes = (
        Attr("padding", INTS, (0, 0)),
        Attr("stride", INTS, (1, 1)),
        Attr("dilation", INTS, (1, 1)),
        Attr("padding_mode", PADDING_MODE, 0),
        Attr("group", INT, 1),
    )

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = super().shape(op, inputs, modules)
        out = DType.float if inputs[0].dtype.is_fp8 else DType.int32
        return s.with_type(out)


@register
class Pooling(OpDef):
    name = "pooling"
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
        if x.is_dynamic:
            dims = list(x.dyn_dims[:2])
            if op["dyn_global"]:
                dims += [DynamicDimension(1, 1)] * k
                return Shape.dynamic(x.dtype, dims)
            raise fail(self.name, "dynamic spatial dimensions are only supported with dyn_global")
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
                        self.name, x.lens[i + 2], _pad_total(padding, i, k), lengths[i], stride[i], dilations[i], op["ceil_mode"], i + 2
                    )
                )
        return x.with_lens(lens)


class _AxisSoftmax(OpDef):
    attributes = (Attr("axis", INT, 1),)
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        normalize_axis(self.name, op["axis"], s.ndim)
        if s.packed or s.is_dynamic:
            return s
        return s.with_lens(s.lens)


@register
class Softmax(_AxisSoftmax):
    name = "softmax"


@register
class Logsoftmax(_AxisSoftmax):
    name = "logsoftmax"


class _Reduce(OpDef):
    attributes = (Attr("axes", INTS, ()),)
    arity = (1, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        if len(inputs) == 2:
            raise fail(self.name, "the variable-axes form has no static shape rule here")
        axes = normalize_axes(self.name, op["axes"], s.ndim)
        if s.is_dynamic:
            dims = [DynamicDimension(1, 1) if i in axes else d for i, d in enumerate(s.dyn_dims)]
            return Shape.dynamic(s.dtype, dims)
        lens = [1 if i in axes else n for i, n in enumerate(s.lens)]
        return s.with_lens(lens)


for _name in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any", "reduce_all"):
    register(type(_name.title().replace("_", ""), (_Reduce,), {"name": _name}))


class _ArgReduce(OpDef):
    attributes = (Attr("axis", INT, 0), Attr("select_last_index", BOOL, False))
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        require_static(self.name, s)
        axis = normalize_axis(self.name, op["axis"], s.ndim)
        lens = list(s.lens)
        lens[axis] = 1
        return Shape.make(DType.int64, lens)


@register
class Argmax(_ArgReduce):
    name = "argmax"


@register
class Argmin(_ArgReduce):
    name = "argmin"


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
        k = indices.lens[-1]
        if k > r - b:
            raise fail(self.name, f"index depth {k} is larger than data rank {r} minus batch_dims {b}")
        lens = list(indices.lens[: q - 1]) + list(data.lens[b + k :])
        if not lens:
            lens = [1]
        return Shape.make(data.dtype, lens)


@register
class Gather(OpDef):
    name = "gather"
    attributes = (Attr("axis", INT, 0),)
    arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        data, indices = inputs
        require_static(self.name, data, indices)
        axis = normalize_axis(self.name, op["axis"], data.ndim)
        idx = list(indices.lens)
        if indices.scalar and indices.lens == (1,):
            idx = []
        lens = list(data.lens[:axis]) + idx + list(data.lens[axis + 1 :])
        if not lens:
            return Shape.make(data.dtype, (1,), (0,))
        return Shape.make(data.dtype, lens)


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
        require_static(self.name, x)
        if len(inputs) == 2:
            raise fail(self.name, "the two-input form has no static shape rule here")
        sizes, scales = op["sizes"], op["scales"]
        if sizes:
            if len(sizes) != x.ndim:
                raise fail(self.name, f"sizes {lens_text(sizes)} do not match input rank {x.ndim}")
            return Shape.make(x.dtype, sizes)
        if len(scales) != x.ndim:
            raise fail(self.name, f"{len(scales)} scales do not match input rank {x.ndim}")
        import numpy as np

        lens = [int(np.float32(n) * np.float32(f)) for n, f in zip(x.lens, scales)]
        return Shape.make(x.dtype, lens)
