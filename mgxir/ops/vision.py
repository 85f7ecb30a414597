"""Vision operators: transposed convolution, im2col, RoiAlign, non-max suppression."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from mgxir.ir.attributes import BOOL, FLOAT, INT, INTS, PADDING_MODE, POOLING_MODE, STRING, Attr
from mgxir.ir.dtype import DType
from mgxir.ir.operation import OpDef, Operation, RunModule, RuntimeValue
from mgxir.ir.registry import register
from mgxir.ir.shape import Shape
from mgxir.ir.traits import PaddedWindow
from mgxir.ops.common import fail, lens_text, require_static, same_type
from mgxir.ops.nn import CONV_ATTRS_MODE_FIRST, check_strides

if TYPE_CHECKING:
    from mgxir.ir.module import Module

Shapes = Sequence[Shape]
Modules = Sequence["Module"]
Arrays = list[np.ndarray]


def _begin_end(padding: Sequence[int], k: int) -> list[tuple[int, int]]:
    if len(padding) == 2 * k:
        return [(padding[i], padding[i + k]) for i in range(k)]
    return [(p, p) for p in padding]


@register
class ConvolutionBackwards(OpDef):
    """ONNX ConvTranspose: weights {C_in, C_out / group, k...}."""

    name = "convolution_backwards"
    aliases = ("deconvolution",)
    attributes = CONV_ATTRS_MODE_FIRST
    arity = (2, 2)
    padding_attributes = ("padding",)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        same_type(self.name, inputs)
        x, w = inputs
        require_static(self.name, x, w)
        k = x.ndim - 2
        if x.ndim < 3 or w.ndim != x.ndim:
            raise fail(self.name, f"input {lens_text(x.lens)} and weights {lens_text(w.lens)} need one rank >= 3")
        if len(op["stride"]) != k or len(op["dilation"]) != k or len(op["padding"]) not in (k, 2 * k):
            raise fail(self.name, f"padding, stride and dilation do not fit {k} spatial dimensions")
        if x.lens[1] != w.lens[0]:
            raise fail(self.name, f"input has {x.lens[1]} channels (dimension 1), weights have {w.lens[0]}")
        lens = [x.lens[0], w.lens[1] * op["group"]]
        for i, (begin, end) in enumerate(_begin_end(op["padding"], k)):
            n = op["stride"][i] * (x.lens[i + 2] - 1) + op["dilation"][i] * (w.lens[i + 2] - 1) + 1 - begin - end
            if n <= 0:
                raise fail(self.name, f"spatial dimension {i + 2} would have size {n}")
            lens.append(n)
        return Shape.make(x.dtype, lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x, w = inputs
        k = x.ndim - 2
        group = op["group"]
        stride, dilation = op["stride"], op["dilation"]
        n, c_in = x.shape[:2]
        c_out_per_group = w.shape[1]
        full = [stride[i] * (x.shape[i + 2] - 1) + dilation[i] * (w.shape[i + 2] - 1) + 1 for i in range(k)]
        out = np.zeros((n, c_out_per_group * group, *full), np.float64)
        per_group = c_in // group
        for g in range(group):
            xg = x[:, g * per_group : (g + 1) * per_group].astype(np.float64)
            wg = w[g * per_group : (g + 1) * per_group].astype(np.float64)
            for offset in itertools.product(*(range(s) for s in w.shape[2:])):
                contribution = np.einsum("nc...,co->no...", xg, wg[(slice(None), slice(None), *offset)])
                where = tuple(
                    slice(
                        offset[i] * dilation[i],
                        offset[i] * dilation[i] + stride[i] * (x.shape[i + 2] - 1) + 1,
                        stride[i],
                    )
                    for i in range(k)
                )
                out[(slice(None), slice(g * c_out_per_group, (g + 1) * c_out_per_group), *where)] += contribution
        crop = tuple(slice(b, full[i] - e) for i, (b, e) in enumerate(_begin_end(op["padding"], k)))
        return out[(slice(None), slice(None), *crop)].astype(x.dtype)


@register
class Im2col(OpDef):
    """Inputs (image {N, C, H, W}, weights {K, C, kh, kw}): one row per output position, C*kh*kw columns."""

    name = "im2col"
    traits = (PaddedWindow,)
    attributes = (
        Attr("padding", INTS, (0, 0)),
        Attr("stride", INTS, (1, 1)),
        Attr("dilation", INTS, (1, 1)),
        Attr("padding_mode", PADDING_MODE, 0),
    )
    arity = (2, 2)
    padding_attributes = ("padding",)

    def _out_spatial(self, op: Operation, image: Sequence[int], kernel: Sequence[int]) -> list[int]:
        if len(op["stride"]) < 2 or len(op["dilation"]) < 2 or len(op["padding"]) not in (2, 4):
            raise fail(self.name, "padding, stride and dilation need 2 values (padding 2 or 4)")
        check_strides(self.name, op["stride"])
        out = []
        for i, (begin, end) in enumerate(_begin_end(op["padding"], 2)):
            span = image[i] + begin + end - op["dilation"][i] * (kernel[i] - 1) - 1
            if span < 0:
                raise fail(self.name, f"kernel dimension {i + 2} does not fit the padded image")
            out.append(span // op["stride"][i] + 1)
        return out

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x, w = inputs
        require_static(self.name, x, w)
        if x.ndim != 4 or w.ndim != 4:
            raise fail(self.name, f"needs rank-4 image and weights, got {lens_text(x.lens)} and {lens_text(w.lens)}")
        oh, ow = self._out_spatial(op, x.lens[2:], w.lens[2:])
        return Shape.make(x.dtype, (oh * ow, x.lens[1] * w.lens[2] * w.lens[3]))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x, w = inputs
        kh, kw = w.shape[2:]
        oh, ow = self._out_spatial(op, x.shape[2:], w.shape[2:])
        (pt, pb), (pl, pr) = _begin_end(op["padding"], 2)
        padded = np.pad(x[0], [(0, 0), (pt, pb), (pl, pr)])
        (sh, sw), (dh, dw) = op["stride"], op["dilation"]
        rows = []
        for i in range(oh):
            for j in range(ow):
                patch = padded[:, i * sh : i * sh + dh * (kh - 1) + 1 : dh, j * sw : j * sw + dw * (kw - 1) + 1 : dw]
                rows.append(patch.reshape(-1))
        return np.array(rows, dtype=x.dtype).reshape(oh * ow, -1)


@register
class Roialign(OpDef):
    """ONNX RoiAlign: inputs (X {N, C, H, W}, rois {R, 4} as x1 y1 x2 y2, batch_indices {R})."""

    name = "roialign"
    attributes = (
        Attr("coordinate_transformation_mode", STRING, "half_pixel"),
        Attr("mode", POOLING_MODE, 0),
        Attr("output_height", INT, 1),
        Attr("output_width", INT, 1),
        Attr("sampling_ratio", INT, 0),
        Attr("spatial_scale", FLOAT, 1.0),
    )
    arity = (3, 3)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x, rois, index = inputs
        require_static(self.name, x, rois, index)
        if x.ndim != 4:
            raise fail(self.name, f"X must have rank 4, got {lens_text(x.lens)}")
        if rois.ndim != 2 or rois.lens[1] != 4:
            raise fail(self.name, f"rois must be {{num_rois, 4}}, got {lens_text(rois.lens)}")
        if index.lens != rois.lens[:1]:
            raise fail(self.name, f"batch_indices {lens_text(index.lens)} do not match {rois.lens[0]} rois")
        return Shape.make(x.dtype, (rois.lens[0], x.lens[1], op["output_height"], op["output_width"]))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x, rois, batch_index = inputs
        height, width = x.shape[2:]
        oh, ow = op["output_height"], op["output_width"]
        half_pixel = op["coordinate_transformation_mode"] == "half_pixel"
        use_max = op["mode"] == 1
        out = np.zeros((rois.shape[0], x.shape[1], oh, ow), np.float64)
        for r, roi in enumerate(rois.astype(np.float64)):
            image = x[int(batch_index[r])].astype(np.float64)
            offset = 0.5 if half_pixel else 0.0
            x1, y1, x2, y2 = roi * op["spatial_scale"] - offset
            roi_w, roi_h = x2 - x1, y2 - y1
            if not half_pixel:
                roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
            bin_h, bin_w = roi_h / oh, roi_w / ow
            grid_h = op["sampling_ratio"] or math.ceil(roi_h / oh)
            grid_w = op["sampling_ratio"] or math.ceil(roi_w / ow)
            for ph in range(oh):
                for pw in range(ow):
                    samples = []
                    for iy in range(grid_h):
                        yy = y1 + ph * bin_h + (iy + 0.5) * bin_h / grid_h
                        for ix in range(grid_w):
                            xx = x1 + pw * bin_w + (ix + 0.5) * bin_w / grid_w
                            samples.append(_bilinear_corners(image, yy, xx, height, width))
                    if use_max:
                        out[r, :, ph, pw] = np.max([np.max(s, axis=0) for s in samples], axis=0)
                    else:
                        out[r, :, ph, pw] = np.sum([np.sum(s, axis=0) for s in samples], axis=0) / max(len(samples), 1)
        return out.astype(x.dtype)


def _bilinear_corners(image: np.ndarray, y: float, x: float, height: int, width: int) -> np.ndarray:
    """The four weighted corner values {4, C} of one sample (zeros outside the image)."""
    channels = image.shape[0]
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return np.zeros((4, channels))
    y, x = max(y, 0.0), max(x, 0.0)
    y_low, x_low = int(y), int(x)
    if y_low >= height - 1:
        y_low = y_high = height - 1
        y = float(y_low)
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_low = x_high = width - 1
        x = float(x_low)
    else:
        x_high = x_low + 1
    ly, lx = y - y_low, x - x_low
    hy, hx = 1 - ly, 1 - lx
    return np.stack(
        [
            hy * hx * image[:, y_low, x_low],
            hy * lx * image[:, y_low, x_high],
            ly * hx * image[:, y_high, x_low],
            ly * lx * image[:, y_high, x_high],
        ]
    )


@register
class Nonmaxsuppression(OpDef):
    """ONNX NonMaxSuppression; rows past the selected ones are zero unless `use_dyn_output`."""

    name = "nonmaxsuppression"
    attributes = (Attr("center_point_box", BOOL, False), Attr("use_dyn_output", BOOL, False))
    arity = (2, 5)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        boxes, scores = inputs[:2]
        if boxes.ndim != 3 or scores.ndim != 3:
            raise fail(
                self.name, f"boxes and scores need rank 3, got {lens_text(boxes.lens)} and {lens_text(scores.lens)}"
            )
        most = boxes.lens[0] * scores.lens[1] * boxes.lens[1]
        if op["use_dyn_output"] or boxes.is_dynamic or scores.is_dynamic:
            return Shape.dynamic(DType.int64, [(0, most), (3, 3)])
        if boxes.lens[1] != scores.lens[2]:
            raise fail(
                self.name, f"boxes have {boxes.lens[1]} boxes (dimension 1), scores {scores.lens[2]} (dimension 2)"
            )
        if boxes.lens[0] != scores.lens[0]:
            raise fail(self.name, f"boxes have {boxes.lens[0]} batches, scores {scores.lens[0]}")
        return Shape.make(DType.int64, (most, 3))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        boxes, scores = inputs[0].astype(np.float64), inputs[1].astype(np.float64)

        def scalar(i: int, default: float) -> float:
            return float(inputs[i].reshape(-1)[0]) if len(inputs) > i and inputs[i].size else default

        per_class = int(scalar(2, 0))
        iou_threshold = scalar(3, 0.0)
        score_threshold = scalar(4, -math.inf)
        if op["center_point_box"]:
            cx, cy, w, h = np.moveaxis(boxes, -1, 0)
            y1, x1, y2, x2 = cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2
        else:
            a, b, c, d = np.moveaxis(boxes, -1, 0)
            y1, x1, y2, x2 = np.minimum(a, c), np.minimum(b, d), np.maximum(a, c), np.maximum(b, d)
        area = (y2 - y1) * (x2 - x1)
        selected: list[tuple[int, int, int]] = []
        for batch in range(scores.shape[0]):
            for cls in range(scores.shape[1]):
                s = scores[batch, cls]
                order = [int(i) for i in np.argsort(-s, kind="stable") if s[i] > score_threshold]
                kept: list[int] = []
                for i in order:
                    if len(kept) >= per_class:
                        break
                    ok = True
                    for j in kept:
                        ih = min(y2[batch, i], y2[batch, j]) - max(y1[batch, i], y1[batch, j])
                        iw = min(x2[batch, i], x2[batch, j]) - max(x1[batch, i], x1[batch, j])
                        inter = max(ih, 0.0) * max(iw, 0.0)
                        union = area[batch, i] + area[batch, j] - inter
                        if union > 0 and inter / union > iou_threshold:
                            ok = False
                            break
                    if ok:
                        kept.append(i)
                selected += [(batch, cls, i) for i in kept]
        if op["use_dyn_output"]:
            return np.array(selected, np.int64).reshape(-1, 3)
        out = np.zeros((boxes.shape[0] * scores.shape[1] * boxes.shape[1], 3), np.int64)
        if selected:
            out[: len(selected)] = selected
        return out
