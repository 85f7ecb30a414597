"""The QLinear ONNX operators (onnxruntime's contrib ops and ONNX's QLinearConv/QLinearMatMul): each
input dequantized, the float op applied, the result quantized again, as MIGraphX's parsers build them."""

from __future__ import annotations

from collections.abc import Callable

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError
from mgxir.translate.onnx.parsers.elementwise import loaded_op
from mgxir.translate.onnx.parsers.nn import calc_auto_padding, check_attr_size, check_padding_mode, pooling
from mgxir.translate.onnx.registry import onnx_op, onnx_ops

Args = list[Instruction]
Parser = Callable[[OnnxParser, NodeInfo, Args], Instruction]

_INT8_TYPES = (DType.int8, DType.uint8)


def bcast_qdq(
    op_name: str, x: Instruction, scale: Instruction, zero_point: Instruction, info: NodeInfo, axis: int = 0
) -> Instruction:
    """MIGraphX's bcast_qdq_instr: scale and zero point broadcast to x (a vector of more than one
    element along `axis`, anything else to every element), then `op_name(x, scale, zero_point)`."""
    lens = list(x.shape.lens)

    def spread(arg: Instruction) -> Instruction:
        if arg.shape.ndim == 1 and arg.shape.elements > 1:
            return info.add("broadcast", arg, axis=axis, out_lens=lens)
        return info.add("multibroadcast", arg, out_lens=lens)

    return info.add(op_name, x, spread(scale), spread(zero_point))


def requantized(info: NodeInfo, y: Instruction, args: Args, scale_index: int) -> Instruction:
    """The float result quantized with the output's scale and, where given, its zero point."""
    if len(args) == scale_index + 2:
        return bcast_qdq("quantizelinear", y, args[scale_index], args[scale_index + 1], info)
    scale = info.add("multibroadcast", args[scale_index], out_lens=list(y.shape.lens))
    return info.add("quantizelinear", y, scale)


def _check_int8(dtype: DType, message: str) -> None:
    if dtype not in _INT8_TYPES:
        raise ParseError(message)


QLINEAR_BINARY = {"QLinearAdd": "add", "QLinearMul": "mul"}


def _binary(name: str) -> Parser:
    def parse(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
        onnx_name = info.op_type
        if len(args) < 7:
            raise ParseError(f"{onnx_name}: missing inputs")
        type_a, type_b = args[0].shape.dtype, args[3].shape.dtype
        _check_int8(type_a, f"{onnx_name}: unsupported input type")
        _check_int8(type_b, f"{onnx_name}: unsupported input type")
        if type_a is not type_b:
            raise ParseError(f"{onnx_name}: mismatched input types")
        a = bcast_qdq("dequantizelinear", args[0], args[1], args[2], info)
        b = bcast_qdq("dequantizelinear", args[3], args[4], args[5], info)
        return requantized(info, info.add_common_op(name, a, b), args, 6)

    return parse


onnx_ops(QLINEAR_BINARY, _binary)


QLINEAR_UNARY = {"QLinearSigmoid": "sigmoid", "QLinearLeakyRelu": "leaky_relu"}


def _unary(name: str) -> Parser:
    def parse(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
        if len(args) < 4:
            raise ParseError(f"{name}: missing inputs")
        _check_int8(args[0].shape.dtype, f"{name}: unsupported input type")
        x = bcast_qdq("dequantizelinear", args[0], args[1], args[2], info)
        y = info.add(loaded_op(name, info), x)  # type: ignore[arg-type]
        return requantized(info, y, args, 3)

    return parse


onnx_ops(QLINEAR_UNARY, _unary)


@onnx_op("QLinearConcat")
def parse_qlinearconcat(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if len(args) < 5 or (len(args) - 2) % 3 != 0:
        raise ParseError("QLINEARCONCAT: missing inputs")
    _check_int8(args[1].shape.dtype, "QLINEARCONCAT: unsupported output type")
    first = args[2].shape.dtype
    _check_int8(first, "QLINEARCONCAT: unsupported input type")
    for i in range(2, len(args), 3):
        if args[i].shape.dtype is not first or args[i + 2].shape.dtype is not first:
            raise ParseError("QLINEARCONCAT: mismatching input types")
    if not info.has("axis"):
        raise ParseError("QLINEARCONCAT: missing axis attribute")
    parts = [bcast_qdq("dequantizelinear", args[i], args[i + 1], args[i + 2], info) for i in range(2, len(args), 3)]
    y = info.add("concat", *parts, axis=info.attr_int("axis"))
    return bcast_qdq("quantizelinear", y, args[0], args[1], info)


QLINEAR_POOLING = {"QLinearAveragePool": "average", "QLinearGlobalAveragePool": "average"}


def _pooling(mode: str) -> Parser:
    def parse(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
        onnx_name = info.op_type
        # MIGraphX looks for `channel_last` but reads `channels_last`
        if info.has("channel_last") and (info.attr_int("channels_last", 0) or 0) != 0:
            raise ParseError(f"{onnx_name}: channels_last (N x D1..Dn x C) is not supported")
        x = args[0]
        if x.shape.ndim <= 2:
            raise ParseError(f"{onnx_name}: input dimensions too small")
        _check_int8(x.shape.dtype, f"{onnx_name}: unsupported input type")
        if x.shape.dtype is not args[2].shape.dtype:
            raise ParseError(f"{onnx_name}: mismatched type: input zero point")
        if len(args) == 5 and x.shape.dtype is not args[4].shape.dtype:
            raise ParseError(f"{onnx_name}: mismatched type: output zero point")
        dq = bcast_qdq("dequantizelinear", x, args[1], args[2], info)
        return requantized(info, pooling(info, dq, mode), args, 3)

    return parse


onnx_ops(QLINEAR_POOLING, _pooling)


def _qlinearconv_attributes(info: NodeInfo, x: Instruction, w: Instruction) -> dict:
    kdims = x.shape.ndim - 2
    check_padding_mode(info)
    values: dict = {
        "stride": [1] * kdims,
        "dilation": [1] * kdims,
        "padding": [0] * kdims,
        "group": info.attr_int("group", 1),
    }
    for attr, key in (("strides", "stride"), ("dilations", "dilation")):
        if info.has(attr):
            values[key] = info.attr_ints(attr)
            check_attr_size(kdims, len(values[key]), f"QLINEARCONV: inconsistent {attr}")
    if info.has("pads"):
        values["padding"] = info.attr_ints("pads")
        check_attr_size(kdims, len(values["padding"]) // 2, "QLINEARCONV: inconsistent padding")
    elif info.has("auto_pad"):
        found = calc_auto_padding(
            info.attr_str("auto_pad") or "", values["stride"], w.shape.lens[2:], values["dilation"], x.shape.lens
        )
        if found is not None:
            values["padding"] = found
    if len(values["padding"]) not in (kdims, 2 * kdims):
        values["padding"] = [0] * kdims
    return values


@onnx_op("QLinearConv")
def parse_qlinearconv(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if len(args) < 8:
        raise ParseError("QLINEARCONV: missing inputs")
    x, w = args[0], args[3]
    _check_int8(x.shape.dtype, "QLINEARCONV: unsupported input type")
    _check_int8(w.shape.dtype, "QLINEARCONV: unsupported weight type")
    for index, message in (
        (1, "QLINEARCONV x scale type should be float"),
        (4, "QLINEARCONV: wt scale type should be float"),
        (6, "QLINEARCONV: y scale type should be float"),
    ):
        if args[index].shape.dtype is not DType.float:
            raise ParseError(message)
    if len(args) > 8 and args[8].shape.dtype is not DType.int32:
        raise ParseError("QLINEARCONV y bias should be int32")
    values = _qlinearconv_attributes(info, x, w)
    dq_x = bcast_qdq("dequantizelinear", x, args[1], args[2], info)
    dq_w = bcast_qdq("dequantizelinear", w, args[4], args[5], info)
    conv = info.add("convolution", dq_x, dq_w, **values)
    if len(args) > 8:
        scale_x = info.add("multibroadcast", args[1], out_lens=list(args[4].shape.lens))
        bias_scale = info.add("mul", scale_x, args[4])
        bias = info.add("dequantizelinear", args[8], bias_scale)
        bias = info.add("broadcast", bias, axis=1, out_lens=list(conv.shape.lens))
        bias = info.add("convert", bias, target_type=conv.shape.dtype)
        conv = info.add("add", conv, bias)
    return bcast_qdq("quantizelinear", conv, args[6], args[7], info)


def _check_qlinearmatmul(args: Args) -> None:
    if len(args) < 8:
        raise ParseError("QLINEARMATMUL: missing inputs")
    a, b = args[0].shape, args[3].shape
    _check_int8(a.dtype, "QLINEARMATMUL: unsupported input type")
    _check_int8(b.dtype, "QLINEARMATMUL: unsupported input type")
    lens_a, lens_b = list(a.lens), list(b.lens)  # never empty: an ONNX scalar is a {1} parameter
    if len(lens_a) == 1:
        lens_a.insert(0, 1)
    if len(lens_b) == 1:
        lens_b.append(1)
    if len(lens_a) != len(lens_b) or lens_a[-1] != lens_b[-2] or lens_a[:-2] != lens_b[:-2]:
        raise ParseError("QLINEARMATMUL: mismatched input dimensions")


@onnx_op("QLinearMatMul")
def parse_qlinearmatmul(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    _check_qlinearmatmul(args)
    a, b = args[0], args[3]
    rank_a, rank_b = a.shape.ndim, b.shape.ndim
    dq_a = bcast_qdq("dequantizelinear", a, args[1], args[2], info, rank_a - 2 if rank_a >= 2 else 0)
    dq_b = bcast_qdq("dequantizelinear", b, args[4], args[5], info, rank_b - 1)
    if rank_a == 1:
        dq_a = info.add("unsqueeze", dq_a, axes=[0])
    if rank_b == 1:
        dq_b = info.add("unsqueeze", dq_b, axes=[1])
    y = info.add("dot", dq_a, dq_b)
    # squeezed once at most, as MIGraphX does
    if rank_a == 1:
        y = info.add("squeeze", y, axes=[0])
    elif rank_b == 1:
        y = info.add("squeeze", y, axes=[1])
    return bcast_qdq("quantizelinear", y, args[6], args[7], info)
