"""Quantization ONNX operators: QuantizeLinear, DequantizeLinear and the QLinear family."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError, common_type, onnx_type
from mgxir.translate.onnx.parsers.nn import add_dot
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


_DQ_TYPES = (DType.float, DType.half)
_INT8_TYPES = (DType.uint8, DType.int8)


def is_symmetric_zero_point(info: NodeInfo, zp: Instruction) -> bool:
    """A constant zero point of 0 (128 for uint8, which the int8 shift makes 0)."""
    value = info.eval(zp)
    if value is None:
        return False
    check = 128.0 if zp.shape.dtype is DType.uint8 else 0.0
    return bool(np.all(np.asarray(value, np.float64) == check))


def _scale_arg(args: Args, mat: Instruction, index: int) -> Instruction:
    scale = args[index]
    s = scale.shape
    if s.dtype not in _DQ_TYPES:
        raise ParseError("PARSE_QUANT_DOT_SCALED: Scales must be float or half_type")
    if s.lens[0] != mat.shape.lens[-1] and not s.scalar:
        raise ParseError("PARSE_QUANT_DOT_SCALED: Scale must have same dim as matrix column")
    if s.ndim > 1 and not s.scalar:
        raise ParseError("PARSE_QUANT_DOT_SCALED: Scales shape must be scalar or 1-D tensor")
    return scale


def _zero_point_arg(info: NodeInfo, name: str, args: Args, index: int, data: Instruction) -> tuple[Instruction, bool]:
    """(zero point, whether it is one to subtract); the data itself where there is none."""
    if len(args) <= index:
        return data, False
    zp = args[index]
    if zp.shape.dtype is not data.shape.dtype:
        raise ParseError(f"{name}: zero point must be the same type as data")
    if is_symmetric_zero_point(info, zp):
        return data, False
    return zp, True


def _bias_uint8(
    info: NodeInfo, data: Instruction, bias: Instruction, has_bias: bool
) -> tuple[Instruction, Instruction]:
    """MIGraphX's bias_uint8 builder: uint8 data (and its zero point) shifted to int8 by -128; the
    zero point subtracted where there is one."""
    if data.shape.dtype is DType.uint8:
        offset = info.add_literal(-128, DType.half)

        def shift(ins: Instruction) -> Instruction:
            half = info.add("convert", ins, target_type=DType.half)
            return info.add("convert", info.add_common_op("add", half, offset), target_type=DType.int8)

        data = shift(data)
        bias = shift(bias) if has_bias else data
    if has_bias:
        bias = info.add_common_op("sub", data, bias)
    return data, bias


def _dequantized(info: NodeInfo, data: Instruction, scale: Instruction, zp: Instruction) -> Instruction:
    dq_args = [data, scale] if zp is data else [data, scale, zp]
    lens = list(data.shape.lens)
    scale_len = scale.shape.lens[0]
    axis = len(lens) - 1 - lens[::-1].index(scale_len) if scale_len in lens else 1
    return add_dequantizelinear(info, dq_args, axis)


@onnx_op("MatMulInteger", "MatMulIntegerToFloat")
def parse_matmul_integer(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    scaled = info.op_type == "MatMulIntegerToFloat"
    name = "quant_dot_scaled" if scaled else "quant_dot"
    a0, a1 = args[0], args[1]
    prepended, appended = a0.shape.ndim == 1, a1.shape.ndim == 1
    if prepended:
        a0 = info.add("unsqueeze", args[0], axes=[0])
    if appended:
        a1 = info.add("unsqueeze", args[1], axes=[1])
    if args[0].shape.is_dynamic or args[1].shape.is_dynamic:
        raise ParseError(f"{name}: dynamic inputs not supported")
    zp_index = (4, 5) if scaled else (2, 3)
    if scaled:
        scale0, scale1 = _scale_arg(args, a0, 2), _scale_arg(args, a1, 3)
        if scale0.shape.dtype is not scale1.shape.dtype:
            raise ParseError(f"{name}: Scales must be the same type")
    ba0, has0 = _zero_point_arg(info, name, args, zp_index[0], a0)
    ba1, has1 = _zero_point_arg(info, name, args, zp_index[1], a1)
    scaled_bias, has_scaled_bias = a1, False
    if scaled and len(args) > 6:
        scaled_bias = args[6]
        if scaled_bias.shape.dtype not in _DQ_TYPES:
            raise ParseError("PARSE_QUANT_DOT_SCALED: Bias must be float or half_type")
        if scaled_bias.shape.dtype is not scale1.shape.dtype:
            raise ParseError("PARSE_QUANT_DOT_SCALED: Bias must be the same type as scales")
        if scaled_bias.shape.lens[0] != a1.shape.lens[-1]:
            raise ParseError("PARSE_QUANT_DOT_SCALED: Bias have same dim as matrix B column")
        has_scaled_bias = True
    if a0.shape.dtype not in _INT8_TYPES or a1.shape.dtype not in _INT8_TYPES:
        raise ParseError(f"{name}: Unsupported type")
    if not scaled and DType.uint8 in (a0.shape.dtype, a1.shape.dtype):
        a0, ba0 = _bias_uint8(info, a0, ba0, has0)
        a1, ba1 = _bias_uint8(info, a1, ba1, has1)
    if scaled:
        dq0 = _dequantized(info, a0, scale0, ba0)
        dq1 = _dequantized(info, a1, scale1, ba1)
        out = add_dot(info, "dot", dq0, dq1)
        if has_scaled_bias:
            out = info.add_common_op("sub", out, scaled_bias)
    else:
        out = add_dot(info, "quant_dot", a0, a1, ba0, ba1)
    ndim = out.shape.ndim
    if prepended:
        out = info.add("squeeze", out, axes=[ndim - 2])
        ndim -= 1
    if appended:
        out = info.add("squeeze", out, axes=[ndim - 1])
    return out


@onnx_op("DynamicQuantizeLinear")
def parse_dynamicquantizelinear(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    """uint8 quantization with a scale and zero point computed from x's range (widened to hold 0)."""
    x = args[0]
    if x.shape.is_dynamic:
        raise ParseError("DYNAMICQUANTIZELINEAR: dynamic shapes are not supported")
    dtype = x.shape.dtype
    zero = info.add_literal(0, dtype)
    axes = list(range(x.shape.ndim))
    max_x = info.add_common_op("max", zero, info.add("reduce_max", x, axes=axes))
    min_x = info.add_common_op("min", zero, info.add("reduce_min", x, axes=axes))
    lens = list(max_x.shape.lens)
    uint8 = np.iinfo(np.uint8)
    q_range = info.add_literal(int(uint8.max) - int(uint8.min), dtype, lens)
    q_min = info.add_literal(int(uint8.min), dtype, lens)
    q_max = info.add_literal(int(uint8.max), dtype, lens)
    y_scale = info.add_common_op("div", info.add_common_op("sub", max_x, min_x), q_range)
    zero_point = info.add_common_op("sub", q_min, info.add_common_op("div", min_x, y_scale))
    zero_point = info.add("clip", zero_point, q_min, q_max)
    zero_point = info.add("convert", info.add("nearbyint", zero_point), target_type=DType.uint8)
    lens = list(x.shape.lens)
    quantized = info.add(
        "quantizelinear",
        x,
        info.add("multibroadcast", y_scale, out_lens=lens),
        info.add("multibroadcast", zero_point, out_lens=lens),
    )
    return [quantized, y_scale, zero_point]


def _required(info: NodeInfo, name: str) -> None:
    if not info.has(name):
        raise ParseError(f"{info.op_type}: attribute '{name}' is required")


def _mx_block_scales(info: NodeInfo, x: Instruction, axis: int) -> tuple[Instruction, list[int], list[int]]:
    """MX block scales over blocks of 32 along `axis` (a runt block padded):
    2^floor(log2(max |x| of the block)) / 4, the largest power of two of fp4e2m1. Returns the scales
    (the block axis kept as 1), the padded lens and the lens with the axis split into blocks."""
    block_size = 32
    lens = list(x.shape.lens)
    padding = -lens[axis] % block_size
    padded = x
    if padding:
        pads = [0] * (2 * len(lens))
        pads[axis + len(lens)] = padding
        padded = info.add("pad", x, pads=pads)
    padded_lens = list(padded.shape.lens)
    blocks = list(padded_lens)
    blocks[axis] = block_size
    blocks.insert(axis, padded_lens[axis] // block_size)
    magnitude = info.add("abs", info.add("reshape", padded, dims=blocks))
    block_max = info.add("reduce_max", magnitude, axes=[axis + 1])
    exponent = info.add("floor", info.add("log2", block_max))
    max_lens = list(block_max.shape.lens)
    two = info.add("multibroadcast", info.add_literal(np.float32(2.0)), out_lens=max_lens)
    power = info.add("pow", two, exponent)
    four = info.add("multibroadcast", info.add_literal(np.float32(4.0)), out_lens=max_lens)
    return info.add("div", power, four), padded_lens, blocks


@onnx_op("DynamicScale")
def parse_dynamicscale(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """Brevitas' DynamicScale: the MXFP4 block scales of the input."""
    if len(args) != 1:
        raise ParseError("DynamicScale: must have only 1 input")
    for name in ("group_dim", "group_size", "output_dtype", "scale_selection_method"):
        _required(info, name)
    axis = tune_axis(args[0].shape.ndim, info.attr_int("group_dim") or 0, "DynamicScale")
    if info.attr_int("group_size") != 32:
        raise ParseError("DynamicScale: only group_size of 32 is supported")
    if onnx_type(info.attr_int("output_dtype") or 0) is not DType.fp4x2:
        raise ParseError("DynamicScale: only support MXFP4 type")
    if info.attr_str("scale_selection_method") != "floor":
        raise ParseError("DynamicScale: only support floor scale selection")
    if info.attr_str("zero_point_selection_method", "None") != "None":
        raise ParseError("DynamicScale: zero_point not supported")
    scales, _, _ = _mx_block_scales(info, args[0], axis)
    return info.add("squeeze", scales, axes=[axis + 1])


@onnx_op("MXQuantizeDequantize", "MXFixNeuron")
def parse_mxquantizedequantize(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """x rounded to MXFP4 (block scales of 32 along `axis`, fp4e2m1 elements) and back to float."""
    x = args[0]
    if len(args) != 1:
        raise ParseError("MXQuantizeDequantize: must have only 1 input")
    for name in ("axis", "block_size", "element_dtype", "rounding_mode"):
        _required(info, name)
    axis = tune_axis(x.shape.ndim, info.attr_int("axis") or 0, "MXQuantizeDequantize")
    if info.attr_int("block_size") != 32:
        raise ParseError("MXQuantizeDequantize: only block_size of 32 is supported")
    if info.attr_str("element_dtype") != "fp4_e2m1":
        raise ParseError("MXQuantizeDequantize: only support MXFP4 type")
    if info.attr_int("rounding_mode") != 2:
        raise ParseError("MXQuantizeDequantize: only round ties to even is supported")
    scales, padded_lens, blocks = _mx_block_scales(info, x, axis)
    scales = info.add("multibroadcast", scales, out_lens=blocks)
    scales = info.add("reshape", scales, dims=padded_lens)
    lens = list(x.shape.lens)
    if padded_lens != lens:
        scales = info.add("slice", scales, axes=[axis], starts=[0], ends=[lens[axis]])
    return info.add("dequantizelinear", _quantize_fp4(info, [x, scales]), scales)
