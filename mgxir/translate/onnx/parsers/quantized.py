"""Quantization ONNX operators: QuantizeLinear, DequantizeLinear and the QLinear family."""

from __future__ import annotations

import math
from collections.abc import Sequence

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError, common_type, onnx_type
from mgxir.translate.onnx.parsers.tensor import tune_axis
from mgxir.translate.onnx.registry import onnx_op

Args = list[Instruction]


def lens_text(lens: Sequence[int]) -> str:
    return ", ".join(str(n) for n in lens)


def qdq_inputs(info: NodeInfo, op_name: str, block_size: int, axis: int, args: Args) -> Args:
    """Scale and zero point broadcast to x: per tensor, per axis, or per block (runt blocks sliced)."""
    x_lens = list(args[0].shape.lens)
    rank = len(x_lens)
    scale_lens = list(args[1].shape.lens)
    out = list(args)
    if args[1].shape.elements == 1:
        return [out[0]] + [info.add("multibroadcast", a, out_lens=x_lens) for a in out[1:]]
    if len(scale_lens) == 1:
        axis = tune_axis(rank, axis, op_name)
        if x_lens[axis] != scale_lens[0]:
            raise ParseError(
                f"{op_name}: For per axis granularity the length of y_scale (actual: {scale_lens[0]}) must be "
                f"equal to size of x on axis {axis}(actual: {x_lens[axis]})"
            )
        others = [i for i in range(rank) if i != axis]
        return [out[0]] + [
            info.add("multibroadcast", info.add("unsqueeze", a, axes=others), out_lens=x_lens) for a in out[1:]
        ]
    axis = tune_axis(rank, axis, op_name)
    if rank != len(scale_lens):
        raise ParseError(
            f"{op_name}: x(rank: {rank}) and y_scale(rank: {len(scale_lens)}) must be of same rank for block "
            "granularity"
        )
    for i, (x, s) in enumerate(zip(x_lens, scale_lens)):
        if x != s and i != axis:
            raise ParseError(
                f"{op_name}: x(shape: {lens_text(x_lens)}) and y_scale(shape: {lens_text(scale_lens)}) shapes may "
                f"only differ along provided axis({axis})"
            )
    di, si = float(x_lens[axis]), float(scale_lens[axis])
    if si <= 1.0:
        raise ParseError(
            f"{op_name}: y_scale(shape: {lens_text(scale_lens)}) must have size > 1 along provided axis({axis}) "
            "for block granularity"
        )
    lo, hi = math.ceil(di / si), math.ceil(di / (si - 1)) - 1
    if block_size == 0:
        block_size = lo
    if block_size < lo or block_size > hi:
        raise ParseError(f"{op_name}: Block size(actual: {block_size}) must be within range [{lo}, {hi}]")
    if block_size == 1:
        return out
    result = [out[0]]
    for a in out[1:]:
        a = info.add("unsqueeze", a, axes=[axis + 1])
        bc_lens = list(a.shape.lens)
        bc_lens[axis + 1] = block_size
        a = info.add("multibroadcast", a, out_lens=bc_lens)
        reshape_lens = list(x_lens)
        reshape_lens[axis] = a.shape.lens[axis] * block_size
        a = info.add("reshape", a, dims=reshape_lens)
        if x_lens[axis] < reshape_lens[axis]:
            a = info.add("slice", a, axes=[axis], starts=[0], ends=[x_lens[axis]])
        result.append(a)
    return result


def add_quantizelinear(
    info: NodeInfo, args: Args, axis: int = 1, block_size: int = 0, output_type: DType | None = None
) -> Instruction:
    """MIGraphX's quantizelinear builder."""
    args = qdq_inputs(info, "quantizelinear", block_size, axis, args)
    if output_type is DType.fp4x2:
        return _quantize_fp4(info, args)
    target = common_type([args[0].shape.dtype, args[1].shape.dtype])
    args = [info.add("convert", a, target_type=target) if a.shape.dtype is not target else a for a in args[:2]] + args[
        2:
    ]
    if output_type is not None:
        return info.add("quantizelinear", *args, out_type=output_type)
    return info.add("quantizelinear", *args)


def _quantize_fp4(info: NodeInfo, args: Args) -> Instruction:
    q = info.add("quantizelinear", *args, out_type=DType.float)
    shape = q.shape
    strides = list(shape.strides)
    if not strides:
        raise ParseError("QuantizeLinear: MX type quantized_shape has no strides")
    fast_axis = strides.index(min(strides))
    odd = shape.lens[fast_axis] % 2 == 1
    if odd:
        pads = [0] * (2 * shape.ndim)
        pads[fast_axis * 2 + 1] = 1
        q = info.add("pad", q, pads=pads)
    out = info.add("unpack_fp4", info.add("pack_fp4", q, axis=fast_axis), axis=fast_axis)
    if odd:
        out = info.add("slice", out, axes=[fast_axis], starts=[0], ends=[shape.lens[fast_axis]])
    return out


def add_dequantizelinear(info: NodeInfo, args: Args, axis: int = 1, block_size: int = 0) -> Instruction:
    """MIGraphX's dequantizelinear builder."""
    return info.add("dequantizelinear", *qdq_inputs(info, "dequantizelinear", block_size, axis, args))


@onnx_op("QuantizeLinear")
def parse_quantizelinear(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if not 2 <= len(args) <= 3:
        raise ParseError(f"QuantizeLinear: must have either 2 or 3 inputs, {len(args)} input(s) provided")
    if parser.opset_version >= 19 and args[0].shape.dtype is not args[1].shape.dtype:
        raise ParseError("QuantizeLinear: x and y_scale must be of same type")
    if len(args) == 3 and args[1].shape.lens != args[2].shape.lens:
        raise ParseError(
            "QuantizeLinear: y_scale and y_zero_point shapes must be equal. Provided y_scale shape: "
            f"{lens_text(args[1].shape.lens)}, provided y_zero_point shape: {lens_text(args[2].shape.lens)}"
        )
    output_type = onnx_type(info.attr_int("output_dtype", 0)) if info.has("output_dtype") else None
    if output_type is not None and len(args) == 3 and output_type is not args[2].shape.dtype:
        raise ParseError(
            f"QuantizeLinear: output_type and y_zero_point type must match. output_type: {output_type.type_name}, "
            f"y_zero_point type: {args[2].shape.dtype.type_name}"
        )
    return add_quantizelinear(
        info, args, info.attr_int("axis", 1) or 0, info.attr_int("block_size", 0) or 0, output_type
    )


@onnx_op("DequantizeLinear")
def parse_dequantizelinear(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if not 2 <= len(args) <= 3:
        raise ParseError(f"DequantizeLinear: must have either 2 or 3 inputs, {len(args)} inputs provided")
    if len(args) == 3:
        if args[0].shape.dtype is not args[2].shape.dtype:
            raise ParseError("DequantizeLinear: x and y_zero_point must be of same type")
        if args[1].shape.lens != args[2].shape.lens:
            raise ParseError(
                "DequantizeLinear: y_scale and y_zero_point shape mismatch. Provided y_scale shape: "
                f"{lens_text(args[1].shape.lens)}, provided y_zero_point shape: {lens_text(args[2].shape.lens)}"
            )
    return add_dequantizelinear(info, args, info.attr_int("axis", 1) or 0, info.attr_int("block_size", 0) or 0)
