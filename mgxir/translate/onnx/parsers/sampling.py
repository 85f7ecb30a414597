"""Sampling ONNX operators: GridSample (nearest, linear, cubic) and Resize/Upsample."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import reduce

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError
from mgxir.translate.onnx.registry import onnx_op

Args = list[Instruction]


class _GridSampler:
    """The coordinates every GridSample mode starts from: the grid unnormalised to pixel
    positions, reflected or clipped by the padding mode."""

    def __init__(self, info: NodeInfo, x: Instruction, grid: Instruction, align: bool, padding: str):
        self.info, self.input, self.grid = info, x, grid
        self.align, self.padding = align, padding
        self.grid_type = grid.shape.dtype
        self.batch, self.channel, self.in_height, self.in_width = x.shape.lens
        _, self.out_height, self.out_width, _ = grid.shape.lens
        gt = self.grid_type
        self.zero = info.add_literal(0.0, gt)
        self.one = info.add_literal(1.0, gt)
        self.two = info.add_literal(2, DType.int64)
        self.minus_half = info.add_literal(-0.5, gt)
        self.width_max = info.add_literal(self.in_width - 1, gt)
        self.width = info.add_literal(self.in_width, gt)
        self.height_max = info.add_literal(self.in_height - 1, gt)
        self.height = info.add_literal(self.in_height, gt)
        x_coords = info.add("slice", grid, axes=[3], starts=[0], ends=[1])
        y_coords = info.add("slice", grid, axes=[3], starts=[1], ends=[2])
        x_coords = info.add("squeeze", x_coords, axes=[3])
        y_coords = info.add("squeeze", y_coords, axes=[3])
        self.unnorm_x = self.unnormalize(x_coords, self.in_width)
        self.unnorm_y = self.unnormalize(y_coords, self.in_height)
        if padding == "reflection":
            start = self.zero if align else self.minus_half
            self.unnorm_x = self.reflect(self.unnorm_x, self.width_max if align else self.width, start)
            self.unnorm_y = self.reflect(self.unnorm_y, self.height_max if align else self.height, start)
            self.unnorm_x = info.add_common_op("clip", self.unnorm_x, self.zero, self.width_max)
            self.unnorm_y = info.add_common_op("clip", self.unnorm_y, self.zero, self.height_max)
        if padding == "border":
            self.unnorm_x = info.add_common_op("clip", self.unnorm_x, self.zero, self.width_max)
            self.unnorm_y = info.add_common_op("clip", self.unnorm_y, self.zero, self.height_max)

    def op(self, name: str, *args: Instruction) -> Instruction:
        return self.info.add_common_op(name, *args)

    def reflect(self, coords: Instruction, size: Instruction, start: Instruction) -> Instruction:
        index = self.op("abs", self.op("sub", start, coords))
        times = self.op("floor", self.op("div", self.op("floor", index), size))
        cond = self.op("equal", self.op("mod", times, self.two), self.zero)
        extra = self.op("sub", index, self.op("mul", times, size))
        when_even = self.op("add", extra, start)
        when_odd = self.op("add", self.op("sub", size, extra), start)
        return self.op("where", cond, when_even, when_odd)

    def unnormalize(self, coords: Instruction, size: int) -> Instruction:
        unnorm = self.op("add", coords, self.one)
        scale = np.float32(size - 1) / 2 if self.align else np.float32(size) / 2
        unnorm = self.op("mul", unnorm, self.info.add_literal(scale, coords.shape.dtype))
        return unnorm if self.align else self.op("add", unnorm, self.minus_half)

    def concat_all(self, parts: Sequence[Instruction], axis: int = 0) -> Instruction:
        return reduce(lambda acc, ins: self.info.add("concat", acc, ins, axis=axis), parts[1:], parts[0])

    def column(self, ins: Instruction) -> Instruction:
        return self.info.add("reshape", ins, dims=[ins.shape.elements, 1])

    def clip_valid(self, ins: Instruction, top: Instruction) -> tuple[Instruction, Instruction]:
        clipped = self.op("clip", ins, self.zero, top)
        return clipped, self.op("equal", ins, clipped)

    def finish(self, samples: Instruction) -> Instruction:
        info = self.info
        samples = info.add("reshape", samples, dims=[self.batch, self.out_height, self.out_width, self.channel])
        samples = info.add("transpose", samples, permutation=[0, 3, 1, 2])
        return info.add("convert", samples, target_type=self.input.shape.dtype)

    def nhw(self) -> Sequence[tuple[int, int, int]]:
        return list(itertools.product(range(self.batch), range(self.out_height), range(self.out_width)))


class _NearestSampler(_GridSampler):
    def sample(self) -> Instruction:
        info = self.info
        round_x = self.op("nearbyint", self.unnorm_x)
        round_y = self.op("nearbyint", self.unnorm_y)
        hw_indices: list[Instruction] = []
        nc_values: list[Instruction] = []
        for n, h, w in self.nhw():
            nhw = info.add_literal([[n, h, w]], DType.int64, [1, 3])
            for c in range(self.channel):
                hw_indices.append(nhw)
                nc_values.append(info.add_literal([[n, c]], self.grid_type, [1, 2]))
        hw_t = self.concat_all(hw_indices)
        h_samples = info.add("gathernd", round_y, hw_t)
        w_samples = info.add("gathernd", round_x, hw_t)
        validate = self.padding != "border"
        if validate:
            h_clip, h_valid = self.clip_valid(h_samples, self.height_max)
            w_clip, w_valid = self.clip_valid(w_samples, self.width_max)
            validation = self.op("logical_and", h_valid, w_valid)
            h_samples, w_samples = h_clip, w_clip
        nc = self.concat_all(nc_values)
        h_samples, w_samples = self.column(h_samples), self.column(w_samples)
        indices = info.add("concat", h_samples, w_samples, axis=1)
        indices = info.add("concat", nc, indices, axis=1)
        samples = info.add("gathernd", self.input, indices)
        if validate:
            samples = self.op("where", validation, samples, self.zero)
        return self.finish(samples)


class _LinearSampler(_GridSampler):
    def sample(self) -> Instruction:
        info = self.info
        floor_x = self.op("floor", self.unnorm_x)
        floor_y = self.op("floor", self.unnorm_y)
        ceil_x = self.op("add", floor_x, self.one)
        ceil_y = self.op("add", floor_y, self.one)
        fract_x = self.op("sub", self.unnorm_x, floor_x)
        fract_y = self.op("sub", self.unnorm_y, floor_y)
        rest_x = self.op("sub", self.one, fract_x)
        rest_y = self.op("sub", self.one, fract_y)
        weights = [
            self.op("mul", rest_y, rest_x),
            self.op("mul", rest_y, fract_x),
            self.op("mul", fract_y, rest_x),
            self.op("mul", fract_y, fract_x),
        ]
        nhwc = list(
            itertools.product(range(self.batch), range(self.out_height), range(self.out_width), range(self.channel))
        )
        count = len(nhwc)
        nhw_data = [[n, h, w] for n, h, w, _ in nhwc]
        xy_indices = info.add_literal(nhw_data, self.grid_type, [count, 3])
        weight_indices = info.add_literal(nhw_data, self.grid_type, [count, 3])
        nc = info.add_literal([[n, c] for n, _, _, c in nhwc], self.grid_type, [count, 2])
        y0 = info.add("gathernd", floor_y, xy_indices)
        x0 = info.add("gathernd", floor_x, xy_indices)
        y1 = info.add("gathernd", ceil_y, xy_indices)
        x1 = info.add("gathernd", ceil_x, xy_indices)
        y0, y0_valid = self.clip_valid(y0, self.height_max)
        x0, x0_valid = self.clip_valid(x0, self.width_max)
        y1, y1_valid = self.clip_valid(y1, self.height_max)
        x1, x1_valid = self.clip_valid(x1, self.width_max)
        y0, x0, y1, x1 = self.column(y0), self.column(x0), self.column(y1), self.column(x1)

        def corner(x: Instruction, y: Instruction) -> Instruction:
            return info.add("concat", nc, info.add("concat", y, x, axis=1), axis=1)

        corners = [corner(x0, y0), corner(x1, y0), corner(x0, y1), corner(x1, y1)]
        valid = [
            self.op("logical_and", x0_valid, y0_valid),
            self.op("logical_and", x1_valid, y0_valid),
            self.op("logical_and", x0_valid, y1_valid),
            self.op("logical_and", x1_valid, y1_valid),
        ]
        samples = [
            self.op("where", v, info.add("gathernd", self.input, idx), self.zero) for idx, v in zip(corners, valid)
        ]
        samples = [info.add("mul", s, info.add("gathernd", w, weight_indices)) for s, w in zip(samples, weights)]
        total = reduce(lambda acc, s: info.add("add", acc, s), samples[1:], samples[0])
        return self.finish(total)


class _CubicSampler(_GridSampler):
    def __init__(self, info: NodeInfo, x: Instruction, grid: Instruction, align: bool, padding: str):
        super().__init__(info, x, grid, align, padding)
        gt = self.grid_type
        self.a = info.add_literal(-0.75, gt)
        self.a_plus_2 = info.add_literal(1.25, gt)
        self.a_plus_3 = info.add_literal(2.25, gt)
        self.a4 = info.add_literal(-3.0, gt)
        self.a5 = info.add_literal(-3.75, gt)
        self.a8 = info.add_literal(-6.0, gt)
        floor_x = self.op("floor", self.unnorm_x)
        floor_y = self.op("floor", self.unnorm_y)
        fract_x = self.op("sub", self.unnorm_x, floor_x)
        fract_y = self.op("sub", self.unnorm_y, floor_y)
        self.x_weights = self.weights(fract_x)
        self.y_weights = self.weights(fract_y)
        self.x_corners = self.corners(floor_x, self.width_max, self.width)
        self.y_corners = self.corners(floor_y, self.height_max, self.height)

    def weights(self, fract: Instruction) -> list[Instruction]:
        return [
            self.weight_far(self.op("add", fract, self.one)),
            self.weight_near(fract),
            self.weight_near(self.op("sub", self.one, fract)),
            self.weight_far(self.op("sub", self.two, fract)),
        ]

    def corners(self, floor: Instruction, top: Instruction, size: Instruction) -> list[Instruction]:
        found = [
            self.op("sub", floor, self.one),
            floor,
            self.op("add", floor, self.one),
            self.op("add", floor, self.two),
        ]
        if self.padding == "reflection":
            start = self.zero if self.align else self.minus_half
            extent = top if self.align else size
            found = [self.op("clip", self.reflect(c, extent, start), self.zero, top) for c in found]
        if self.padding == "border":
            found = [self.op("clip", c, self.zero, top) for c in found]
        return found

    def weight_near(self, t: Instruction) -> Instruction:
        """((A + 2) * t - (A + 3)) * t * t + 1"""
        out = self.op("sub", self.op("mul", self.a_plus_2, t), self.a_plus_3)
        return self.op("add", self.op("mul", self.op("mul", out, t), t), self.one)

    def weight_far(self, t: Instruction) -> Instruction:
        """((A * t - 5A) * t + 8A) * t - 4A"""
        out = self.op("sub", self.op("mul", self.a, t), self.a5)
        out = self.op("add", self.op("mul", out, t), self.a8)
        return self.op("sub", self.op("mul", out, t), self.a4)

    def compute_weights(
        self, indices: Sequence[Instruction], weights: Sequence[Instruction], out_lens: Sequence[int]
    ) -> Instruction:
        info = self.info
        index_t = self.concat_all(indices)
        index_t = info.add("reshape", index_t, dims=[index_t.shape.elements // 3, 3])
        gathered = [self.column(info.add("gathernd", w, index_t)) for w in weights]
        return info.add("reshape", self.concat_all(gathered, 1), dims=list(out_lens))

    def sample(self) -> Instruction:
        info = self.info
        x_weight_indices: list[Instruction] = []
        y_weight_indices: list[Instruction] = []
        nc_values: list[Instruction] = []
        inner: list[Instruction] = []
        for n, h, w in self.nhw():
            nhw = info.add_literal([n, h, w], DType.int64, [3])
            x_weight_indices += [nhw] * 4
            y_weight_indices.append(nhw)
            for c in range(self.channel):
                for _ in range(4):
                    inner.append(nhw)
                    nc = info.add_literal([[n, c]], self.grid_type, [1, 2])
                    nc_values += [nc] * 4
        inner_t = self.concat_all(inner)
        inner_t = info.add("reshape", inner_t, dims=[inner_t.shape.elements // 3, 3])
        inner_y = self.concat_all([self.column(info.add("gathernd", c, inner_t)) for c in self.y_corners], 1)
        elements = inner_y.shape.elements
        inner_y = info.add("reshape", inner_y, dims=[elements // 16, 4, 4])
        inner_y = info.add("transpose", inner_y, permutation=[0, 2, 1])
        inner_y = info.add("reshape", inner_y, dims=[elements])
        inner_x = self.concat_all([self.column(info.add("gathernd", c, inner_t)) for c in self.x_corners], 1)
        inner_x = info.add("reshape", inner_x, dims=[inner_x.shape.elements])
        inner_y, y_valid = self.clip_valid(inner_y, self.height_max)
        inner_x, x_valid = self.clip_valid(inner_x, self.width_max)
        inner_y, inner_x = self.column(inner_y), self.column(inner_x)
        nc_t = self.concat_all(nc_values)
        indices = info.add("concat", inner_y, inner_x, axis=1)
        indices = info.add("concat", nc_t, indices, axis=1)
        samples = info.add("gathernd", self.input, indices)
        valid = self.op("logical_and", y_valid, x_valid)
        samples = self.op("where", valid, samples, self.zero)
        x_weights = self.compute_weights(x_weight_indices, self.x_weights, samples.shape.lens)
        weighted = self.op("mul", samples, x_weights)
        weighted = info.add("reshape", weighted, dims=[weighted.shape.elements // 4, 4])
        coefficients = info.add("squeeze", info.add("reduce_sum", weighted, axes=[1]), axes=[1])
        y_weights = self.compute_weights(y_weight_indices, self.y_weights, coefficients.shape.lens)
        weighted = self.op("mul", coefficients, y_weights)
        weighted = info.add("reshape", weighted, dims=[weighted.shape.elements // 4, 4])
        return self.finish(info.add("reduce_sum", weighted, axes=[1]))


@onnx_op("GridSample")
def parse_gridsample(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    align = bool(info.attr_int("align_corners", 0))
    mode = info.attr_str("mode", "linear") or "linear"
    padding = info.attr_str("padding_mode", "zeros") or "zeros"
    x, grid = args[0], args[1]
    if not grid.shape.dtype.is_float:
        raise ParseError("PARSE_GRID_SAMPLE: grid input must have floating type")
    if grid.shape.ndim != x.shape.ndim:
        raise ParseError("PARSE_GRID_SAMPLE: x and grid inputs must have same number of dimensions")
    if x.shape.ndim != 4:
        raise ParseError("PARSE_GRID_SAMPLE: only 4-D inputs are supported")
    if "nearest" in mode:
        sampler: type[_GridSampler] = _NearestSampler
    elif "linear" in mode:
        sampler = _LinearSampler
    else:
        sampler = _CubicSampler
    return sampler(info, x, grid, align, padding).sample()  # type: ignore[attr-defined]


_RESIZE_MODES = ("nearest", "linear", "cubic")


def _over_all_axes(value: np.ndarray, axes: list[int], in_lens: list[int]) -> np.ndarray:
    """Sizes or scales given for `axes` (opset 18), made one per axis of the input: the other axes
    keep their size (scale 1). mgxir's addition: MIGraphX's parser refuses `axes`."""
    rank = len(in_lens)
    if any(not -rank <= a < rank for a in axes):
        raise ParseError(f"PARSE_RESIZE: axes {axes} out of range for rank {rank}")
    full = np.array(in_lens if value.dtype.kind in "iu" else [1.0] * rank, value.dtype)
    full[[a % rank for a in axes]] = value.reshape(-1)
    return full


def _resize_sizes_or_scales(
    info: NodeInfo, args: Args, in_lens: list[int], axes: list[int] | None = None
) -> tuple[Instruction, list[float], list[int], bool]:
    """The scales/sizes input MIGraphX's Resize takes: the first defined, non-empty input after x
    (and roi); its constant value where it has one. Returns (input, scales, output lens, sizes given)."""
    chosen = args[0]
    scales: list[float] = []
    out_lens = [0] * len(in_lens)
    by_sizes = False
    for arg in args[2 if len(args) > 2 else 1 :]:
        if arg.op.name == "undefined" or not arg.shape.lens:
            continue
        chosen = arg
        value = info.eval(arg)
        if value is None or value.size == 0:
            break
        given = arg.shape.lens[0]
        if axes and axes != list(range(len(in_lens))) and value.size == len(axes):
            value = _over_all_axes(value, axes, in_lens)
            given = value.size
        dtype = arg.shape.dtype
        if dtype is DType.int64:
            by_sizes = True
            out_lens = [int(n) for n in value.reshape(-1)]
            if len(out_lens) != len(in_lens):
                raise ParseError("PARSE_RESIZE: specified output size's rank does not match input size")
            scales = [float(np.float32(1.0 * o / i)) if i else float("inf") for i, o in zip(in_lens, out_lens)]
        elif dtype is DType.float:
            if given == len(in_lens):
                scales = [float(f) for f in value.reshape(-1)]
        else:
            raise ParseError("PARSE_RESIZE: invalid shape type ")
        break
    if scales:
        if len(scales) != len(in_lens):
            raise ParseError("PARSE_RESIZE: ranks of input and scale are different!")
        if all(o == 0 for o in out_lens):
            out_lens = [int(np.float32(n) * np.float32(f)) for n, f in zip(in_lens, scales)]
    return chosen, scales, out_lens, by_sizes


@onnx_op("Resize", "Upsample")
def parse_resize(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    x = args[0]
    in_shape = x.shape
    in_lens = (
        [d.min if d.min == d.max else 1 for d in in_shape.dyn_dims]
        if in_shape.dyn_dims is not None
        else list(in_shape.lens)
    )
    mode = info.attr_str("mode", "nearest") or "nearest"
    if info.has("mode") and mode not in _RESIZE_MODES:
        raise ParseError("PARSE_RESIZE: only nearest, linear, and cubic modes are supported!")
    coord_mode = "half_pixel"
    nearest_mode = "round_prefer_floor"
    cubic_coeff = -0.75
    by_sizes = False
    if info.op_type == "Upsample":
        attr_scales = info.attr_floats("scales", []) or []
        if attr_scales:
            scales = attr_scales
            out_lens = [int(np.float32(n) * np.float32(f)) for n, f in zip(in_lens, scales)]
            chosen = info.add_literal(np.array(scales, np.float32), DType.float, [len(scales)])
        else:
            chosen, scales, out_lens, by_sizes = _resize_sizes_or_scales(info, args, in_lens)
    else:
        if info.has("coordinate_transformation_mode"):
            coord_mode = info.attr_str("coordinate_transformation_mode") or ""
            if coord_mode == "tf_crop_and_resize":
                raise ParseError('PARSE_RESIZE: "tf_crop_and_resize" mode is not supported!')
        if info.has("cubic_coeff_a"):
            cubic_coeff = info.attr_float("cubic_coeff_a") or 0.0
        axes = info.attr_ints("axes", []) or []
        if info.has("exclude_outside") and info.attr_int("exclude_outside") == 1:
            raise ParseError("PARSE_RESIZE exclude_outside 1 is not supported!")
        policy = info.attr_str("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            last = args[-1].shape
            if last.dtype is DType.int64 and (last.elements == in_shape.ndim or (axes and last.elements == len(axes))):
                raise ParseError(
                    f'PARSE_RESIZE: keep_aspect_ratio_policy="{policy}" is not supported (only "stretch" is accepted)'
                )
        nearest_mode = info.attr_str("nearest_mode", nearest_mode) or ""
        chosen, scales, out_lens, by_sizes = _resize_sizes_or_scales(info, args, in_lens, axes)
    attrs: dict = {"coordinate_transformation_mode": coord_mode}
    if mode == "nearest":
        attrs["nearest_mode"] = nearest_mode
    else:
        attrs["mode"] = mode
    if mode == "cubic":
        attrs["cubic_coeff_a"] = cubic_coeff
    if scales and not in_shape.is_dynamic:
        if by_sizes:
            return info.add("resize", x, sizes=out_lens, **attrs)
        return info.add("resize", x, scales=scales, **attrs)
    return info.add("resize", x, chosen, **attrs)
