"""Transformer ONNX operators (most from onnxruntime's contrib domain): the Gelu family."""

from __future__ import annotations

import math

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError
from mgxir.translate.onnx.registry import onnx_op

Args = list[Instruction]


def gelu_erf(info: NodeInfo, x: Instruction) -> Instruction:
    """0.5 x (1 + erf(x / sqrt 2))"""
    dtype = x.shape.dtype
    half = info.add_literal(np.float32(0.5), dtype)
    one = info.add_literal(np.float32(1.0), dtype)
    sqrt2 = info.add_literal(np.float32(math.sqrt(2)), dtype)
    mul_half = info.add_common_op("mul", x, half)
    erf = info.add("erf", info.add_common_op("div", x, sqrt2))
    return info.add_common_op("mul", mul_half, info.add_common_op("add", erf, one))


def gelu_tanh(info: NodeInfo, x: Instruction, fast: bool) -> Instruction:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + c x^3)))"""
    dtype = x.shape.dtype
    fit = info.add_literal(np.float64(0.035677 if fast else 0.044715), dtype)
    sqrt_2_rpi = info.add_literal(np.float64(0.797885 if fast else math.sqrt(2 / math.pi)), dtype)
    one = info.add_literal(np.float32(1.0), dtype)
    half = info.add_literal(np.float32(0.5), dtype)
    three = info.add_literal(np.float32(3.0), dtype)
    cubed = info.add_common_op("mul", info.add_common_op("pow", x, three), fit)
    if fast:
        tanh_in = info.add_common_op("add", cubed, info.add_common_op("mul", sqrt_2_rpi, x))
    else:
        tanh_in = info.add_common_op("mul", info.add_common_op("add", cubed, x), sqrt_2_rpi)
    tanh = info.add_common_op("tanh", tanh_in)
    return info.add_common_op("mul", info.add_common_op("add", tanh, one), info.add_common_op("mul", x, half))


@onnx_op("Gelu", "FastGelu", "BiasGelu", "BiasSplitGelu", "QuickGelu")
def parse_gelu(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    x = args[0]
    dtype = x.shape.dtype
    if not dtype.is_float:
        raise ParseError("PARSE_GELU: input tensor is not a floating type")
    approximate = info.attr_str("approximate", "none")
    if info.op_type == "QuickGelu":
        if not info.has("alpha"):
            raise ParseError("PARSE_GELU: QuickGelu needs its alpha attribute")
        alpha = info.add_literal(np.float32(info.attr_float("alpha")), dtype)
        sigmoid = info.add("sigmoid", info.add_common_op("mul", alpha, x))
        return info.add_common_op("mul", x, sigmoid)
    fast = info.op_type == "FastGelu"
    if fast:
        if dtype is DType.double:
            raise ParseError("PARSE_GELU: FastGelu can't accept input with double precision")
        approximate = "tanh"
    if len(args) > 1 and args[1].op.name != "undefined":
        if args[1].shape.dtype is not dtype:
            raise ParseError("PARSE_GELU: mismatching input tensor types")
        x = info.add_common_op("add", x, args[1])
    if info.op_type == "BiasSplitGelu":
        last = x.shape.lens[-1]
        if last < 2 or last % 2:
            raise ParseError("gelu_split op_builder: BiasSplitGelu must have even last dimension which is >= 2")
        left = info.add("slice", x, axes=[-1], starts=[0], ends=[last // 2])
        right = info.add("slice", x, axes=[-1], starts=[last // 2], ends=[last])
        return info.add_common_op("mul", left, gelu_erf(info, right))
    if approximate == "tanh":
        return gelu_tanh(info, x, fast)
    return gelu_erf(info, x)
