"""Neural-network ONNX operators: convolution, pooling, matrix products, softmax, reductions, norms."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.registry import make_op
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError, broadcast_lens
from mgxir.translate.onnx.parsers.elementwise import loaded_op
from mgxir.translate.onnx.registry import onnx_op, onnx_ops

Args = list[Instruction]


def calc_auto_padding(
    auto_pad: str,
    strides: Sequence[int],
    k_lens: Sequence[int],
    dilations: Sequence[int],
    in_lens: Sequence[int],
) -> list[int] | None:
    """MIGraphX's calc_auto_padding: begin/end pads for SAME_UPPER / SAME_LOWER, else None."""
    auto_pad = auto_pad.upper()
    if "SAME" not in auto_pad:
        return None
    kdims = len(in_lens) - 2
    pads = [0] * (2 * kdims)
    for i in range(kdims):
        size, stride = in_lens[i + 2], strides[i]
        out = (size + stride - 1) // stride
        kernel = k_lens[i] + (k_lens[i] - 1) * (dilations[i] - 1)
        pad = max(0, (out - 1) * stride + kernel - size)
        if "SAME_UPPER" in auto_pad:
            pads[i], pads[i + kdims] = pad // 2, pad - pad // 2
        else:
            pads[i + kdims], pads[i] = pad // 2, pad - pad // 2
    return pads


def check_padding_mode(info: NodeInfo) -> None:
    if info.has("pads") and info.has("auto_pad") and (info.attr_str("auto_pad") or "").upper() != "NOTSET":
        raise ParseError(f"PARSE_{info.op_type.upper()}: auto_pad and padding cannot be specified simultaneously")


def _spatial_dynamic(ins: Instruction) -> bool:
    s = ins.shape
    return s.is_dynamic and any(d.min != d.max for d in s.dyn_dims[2:])  # type: ignore[index]


def _max_lens(ins: Instruction) -> tuple[int, ...]:
    s = ins.shape
    return tuple(d.max for d in s.dyn_dims) if s.dyn_dims is not None else s.lens


def conv_attributes(info: NodeInfo, x: Instruction, w: Instruction) -> dict:
    """convolution_base of MIGraphX's op builder: defaults, size checks, SAME padding."""
    kdims = len(_max_lens(x)) - 2
    strides = info.attr_ints("strides", []) or [1] * kdims
    dilations = info.attr_ints("dilations", []) or [1] * kdims
    pads = info.attr_ints("pads", []) or [0] * kdims
    if len(strides) != kdims:
        raise ParseError(f"Inconsistent strides size, is: {len(strides)}, should be: {kdims}")
    if len(dilations) != kdims:
        raise ParseError(f"Inconsistent dilations size, is: {len(dilations)}, should be: {kdims}")
    if len(pads) not in (kdims, 2 * kdims):
        raise ParseError(f"Inconsistent paddings size, is: {len(pads)}, should be: {kdims} or: {2 * kdims}")
    auto_pad = (info.attr_str("auto_pad") or "NOTSET").upper()
    padding_mode = 0
    if "SAME" in auto_pad:
        if _spatial_dynamic(x) or _spatial_dynamic(w):
            padding_mode = 1 if "SAME_UPPER" in auto_pad else 2
        else:
            pads = calc_auto_padding(auto_pad, strides, _max_lens(w)[2:], dilations, _max_lens(x)) or pads
    return {
        "stride": strides,
        "dilation": dilations,
        "padding": pads,
        "group": info.attr_int("group", 1),
        "padding_mode": padding_mode,
    }


def _nhwc(info: NodeInfo, ins: Instruction, invert: bool) -> Instruction:
    n = ins.shape.ndim
    perm = [0, *range(2, n), 1]
    if invert:
        inverse = [0] * n
        for i, p in enumerate(perm):
            inverse[p] = i
        perm = inverse
    return info.add("transpose", ins, permutation=perm)


@onnx_op("Conv", "NhwcConv")
def parse_conv(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if info.op_type == "NhwcConv":
        args = [_nhwc(info, args[0], True), _nhwc(info, args[1], True), *args[2:]]
    check_padding_mode(info)
    x, w = args[0], args[1]
    conv = info.add("convolution", x, w, **conv_attributes(info, x, w))
    out = info.add_bias(args, conv, 1)
    return _nhwc(info, out, False) if info.op_type == "NhwcConv" else out


@onnx_op("ConvInteger")
def parse_conv_integer(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    check_padding_mode(info)
    x, w = args[0], args[1]
    op = make_op("quant_convolution", **conv_attributes(info, x, w))

    def symmetric_value(ins: Instruction) -> float:
        return 128.0 if ins.shape.dtype is DType.uint8 else 0.0

    def is_symmetric(zp: Instruction) -> bool:
        value = info.eval(zp)
        return value is not None and bool(np.all(np.asarray(value, np.float64) == symmetric_value(zp)))

    def symmetric_literal(ins: Instruction) -> Instruction:
        return info.add_literal(symmetric_value(ins), ins.shape.dtype)

    def zero_point(ins: Instruction, index: int) -> Instruction:
        if len(args) > index:
            if ins.shape.dtype is not args[index].shape.dtype:
                raise ParseError("PARSE:Conv Data and Data Zero Point must have same type")
            zp = args[index]
            return symmetric_literal(zp) if is_symmetric(zp) else zp
        return symmetric_literal(ins)

    x_zp, w_zp = zero_point(x, 2), zero_point(w, 3)
    offset = None
    if x.shape.dtype is DType.uint8 or w.shape.dtype is DType.uint8:
        offset = info.add_literal(-128, DType.half)

    def shift(ins: Instruction) -> Instruction:
        half = info.add("convert", ins, target_type=DType.half)
        return info.add("convert", info.add_common_op("add", half, offset), target_type=DType.int8)

    if x.shape.dtype is DType.uint8:
        x_has_bias = not is_symmetric(x_zp)
        x = shift(x)
        if x_has_bias:
            x_zp = shift(x_zp)
    if w.shape.dtype is DType.uint8:
        w_has_bias = not is_symmetric(w_zp)
        w = shift(w)
        if w_has_bias:
            w_zp = shift(w_zp)
    conv = info.add(op, x, w)
    ret = conv
    x_bc = make_op("multibroadcast", out_lens=x.shape.lens)
    w_bc = (
        make_op("multibroadcast", out_lens=w.shape.lens)
        if w_zp.shape.elements == 1
        else make_op("broadcast", out_lens=w.shape.lens, axis=0)
    )
    x_sym, w_sym = is_symmetric(x_zp), is_symmetric(w_zp)
    if not x_sym:
        ret = info.add_common_op("sub", ret, info.add(op, info.add(x_bc, x_zp), w))
    if not w_sym:
        ret = info.add_common_op("sub", ret, info.add(op, x, info.add(w_bc, w_zp)))
    if not x_sym and not w_sym:
        ret = info.add_common_op("add", ret, info.add(op, info.add(x_bc, x_zp), info.add(w_bc, w_zp)))
    return ret


POOLING = {
    "AveragePool": "average",
    "GlobalAveragePool": "average",
    "GlobalMaxPool": "max",
    "MaxPool": "max",
    "LpPool": "lpnorm",
    "GlobalLpPool": "lpnorm",
}


def check_attr_size(kdims: int, size: int, message: str) -> None:
    if kdims != size:
        raise ParseError(f"{message} k-dims: {kdims} attribute size: {size}")


def pooling(info: NodeInfo, x: Instruction, mode: str) -> Instruction:
    """MIGraphX's add_pooling_op."""
    shape = x.shape
    kdims = shape.ndim - 2
    values: dict = {"mode": mode}
    if info.op_type.startswith(("Global", "QLinearGlobal")):
        if _spatial_dynamic(x):
            values["dyn_global"] = True
            values["lengths"] = []
        else:
            values["lengths"] = list(_max_lens(x)[2:])
    if info.has("ceil_mode"):
        values["ceil_mode"] = bool(info.attributes["ceil_mode"].i)
    if info.has("strides"):
        values["stride"] = info.attr_ints("strides")
        check_attr_size(kdims, len(values["stride"]), "PARSE_POOLING: inconsistent strides")
    if info.has("kernel_shape"):
        values["lengths"] = info.attr_ints("kernel_shape")
        check_attr_size(kdims, len(values["lengths"]), "PARSE_POOLING: inconsistent lengths")
    if info.has("dilations"):
        values["dilations"] = info.attr_ints("dilations")
        check_attr_size(kdims, len(values["dilations"]), "PARSE_POOLING: inconsistent dilations")
    if info.has("p"):
        values["lp_order"] = info.attributes["p"].i
    check_padding_mode(info)
    count_include_pad = 0
    if info.has("count_include_pad"):
        if shape.is_dynamic:
            raise ParseError("PARSE_POOLING: count_include_pad attribute is not supported for dynamic input shape")
        count_include_pad = info.attributes["count_include_pad"].i
    pad_value = float(np.finfo(np.float32).min) if mode == "max" else 0.0
    paddings: list[int] = []
    if info.has("pads"):
        paddings = info.attr_ints("pads") or []
        check_attr_size(kdims, len(paddings) // 2, "PARSE_POOLING: inconsistent explicit paddings")
    if len(paddings) != 2 * kdims:
        paddings = [0] * (2 * kdims)
    values.setdefault("stride", [1] * kdims)
    if len(values["stride"]) != kdims:
        values["stride"] = [1] * kdims
    values.setdefault("dilations", [1] * kdims)
    if len(values["dilations"]) != kdims:
        values["dilations"] = [1] * kdims
    values.setdefault("lengths", [1] * kdims)
    original = list(paddings)
    # the padding the op would have before asymmetric pads are made symmetric
    values["padding"] = [0] * kdims
    auto_pad = (info.attr_str("auto_pad") or "NOTSET").upper()
    if info.has("auto_pad") and auto_pad != "NOTSET":
        if shape.is_dynamic:
            values["padding_mode"] = 1 if "SAME_UPPER" in auto_pad else 2
        else:
            found = calc_auto_padding(auto_pad, values["stride"], values["lengths"], values["dilations"], shape.lens)
            if found is not None:
                paddings = found
            values["padding"] = list(paddings)
            values["padding_mode"] = 0
    slice_start: list[int] = []
    asymmetric = any(paddings[i] != paddings[i + kdims] for i in range(kdims))
    if mode != "max" and count_include_pad != 1 and asymmetric:
        for i in range(kdims):
            left, right, stride = paddings[i], paddings[i + kdims], values["stride"][i]
            start = 0
            if left > right:
                right = left
            elif left < right:
                start = (right - left + stride - 1) // stride
                left = left + start * stride
                right = left
            paddings[i], paddings[i + kdims] = left, right
            slice_start.append(start)
    slice_end: list[int] = []
    if slice_start:
        if shape.is_dynamic:
            raise ParseError("PARSE_POOLING: asymmetric padding not supported for dynamic input shape")
        padded = make_op("pad", pads=[0, 0, *original[:kdims], 0, 0, *original[kdims:]])
        padded_shape = padded.defn.shape(padded, [shape], ())
        probe = make_op("pooling", **values)
        out_lens = probe.defn.shape(probe, [padded_shape], ()).lens  # type: ignore[union-attr]
        slice_end = [n + s for n, s in zip(out_lens[2:], slice_start)]
    values["padding"] = paddings
    if count_include_pad == 1:
        pads = [0, 0, *paddings[:kdims], 0, 0, *paddings[kdims:]]
        x = info.add("pad", x, pads=pads, value=pad_value)
        values["padding"] = [0] * (2 * kdims)
    out = info.add("pooling", x, **values)
    if slice_start:
        out = info.add("slice", out, axes=list(range(2, 2 + kdims)), starts=slice_start, ends=slice_end)
    return out


def _pooling(mode: str) -> Callable[[OnnxParser, NodeInfo, Args], Instruction]:
    def parse(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
        return pooling(info, args[0], mode)

    return parse


onnx_ops(POOLING, _pooling)


@onnx_op("Gemm")
def parse_gemm(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    alpha = info.attr_float("alpha", 1.0)
    beta = info.attr_float("beta", 1.0)
    trans_a = bool(info.attr_int("transA", 0))
    trans_b = bool(info.attr_int("transB", 0))
    a, b = args[0], args[1]
    if a.shape.ndim != 2 or b.shape.ndim != 2:
        raise ParseError(
            f"gemm op_builder: A and B should be rank 2, A is rank {a.shape.ndim}, B is rank {b.shape.ndim}"
        )
    dot_type = a.shape.dtype
    if np.float32(alpha) != np.float32(1.0):
        a = info.add_common_op("mul", info.add_literal(np.float32(alpha)), a)
        if a.shape.dtype is not dot_type:
            a = info.add("convert", a, target_type=dot_type)
    if trans_a:
        a = info.add("transpose", a, permutation=[1, 0])
    if trans_b:
        b = info.add("transpose", args[1], permutation=[1, 0])
    dot = info.add("dot", a, b)
    if len(args) == 3 and np.float32(beta) != np.float32(0.0):
        c = args[2]
        if dot.shape.is_dynamic:
            c = info.add("multibroadcast", args[2], dot)
        else:
            out_lens = (*a.shape.lens[:-1], b.shape.lens[-1])
            if tuple(c.shape.lens) != out_lens:
                c = info.add("multibroadcast", args[2], out_lens=out_lens)
        if np.float32(beta) != np.float32(1.0):
            c = info.add_common_op("mul", c, info.add_literal(np.float32(beta)))
            if c.shape.dtype is not dot_type:
                c = info.add("convert", c, target_type=dot_type)
        return info.add("add", dot, c)
    return dot


def broadcast_for_dot(info: NodeInfo, a0: Instruction, a1: Instruction, ba0: Instruction, ba1: Instruction):
    """MIGraphX's op::builder::broadcast_dimensions."""
    if a0.shape.is_dynamic or a1.shape.is_dynamic:
        d0 = a0.shape.dyn_dims if a0.shape.is_dynamic else None
        d1 = a1.shape.dyn_dims if a1.shape.is_dynamic else None
        l0 = list(d0) if d0 is not None else [(n, n) for n in a0.shape.lens]
        l1 = list(d1) if d1 is not None else [(n, n) for n in a1.shape.lens]
        if [tuple(x[:2]) for x in l0[:-2]] != [tuple(x[:2]) for x in l1[:-2]]:
            return info.add("broadcast_for_dot", a0, a1), info.add("broadcast_for_dot", a1, a0)
        return ba0, ba1
    s0, s1 = a0.shape.lens, a1.shape.lens
    if s0[:-2] == s1[:-2]:
        return ba0, ba1
    out = broadcast_lens(s0[:-2], s1[:-2])
    l0, l1 = (*out, *s0[-2:]), (*out, *s1[-2:])
    if s0 != l0:
        ba0 = info.add("multibroadcast", a0, out_lens=l0)
    if s1 != l1:
        ba1 = info.add("multibroadcast", a1, out_lens=l1)
    return ba0, ba1


def add_dot(
    info: NodeInfo,
    name: str,
    a0: Instruction,
    a1: Instruction,
    ba0: Instruction | None = None,
    ba1: Instruction | None = None,
) -> Instruction:
    b0, b1 = broadcast_for_dot(info, a0, a1, ba0 or a0, ba1 or a1)
    return info.add(name, b0, b1)


@onnx_op("MatMul")
def parse_matmul(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    a0, a1 = args[0], args[1]
    prepended = a0.shape.ndim == 1
    appended = a1.shape.ndim == 1
    if prepended:
        a0 = info.add("unsqueeze", args[0], axes=[0])
    if appended:
        a1 = info.add("unsqueeze", args[1], axes=[1])
    if not (args[0].shape.is_dynamic or args[1].shape.is_dynamic) and len(args) > 2:
        raise ParseError("dot: Bias Args not supported")
    out = add_dot(info, "dot", a0, a1)
    ndim = out.shape.ndim
    if prepended:
        out = info.add("squeeze", out, axes=[ndim - 2])
        ndim -= 1
    if appended:
        out = info.add("squeeze", out, axes=[ndim - 1])
    return out


@onnx_op("Softmax", "LogSoftmax")
def parse_softmax(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    axis = -1 if parser.opset_version >= 13 else 1
    axis = info.attr_int("axis", axis)
    return info.add("softmax" if info.op_type == "Softmax" else "logsoftmax", *args, axis=axis)


def reduce(info: NodeInfo, name: str, args: Args) -> Instruction:
    """MIGraphX's reduce_parser::parse_reduce_oper."""
    axes: list[int] | None
    if len(args) == 2:
        value = info.eval(args[1])
        axes = None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]
    else:
        axes = info.attr_ints("axes", []) if info.has("axes") else []
    noop = info.attr_int("noop_with_empty_axes", 0)
    keep = info.attr_int("keepdims", 1)
    all_axes = list(range(args[0].shape.ndim))
    if axes is not None:
        if noop and not axes:
            return args[0]
        if not axes:
            axes = all_axes
        out = info.add(name, args[0], axes=axes)
        return out if keep else info.add("squeeze", out, axes=axes)
    if not keep:
        raise ParseError("Keepdims not supported with runtime provided axes")
    op = make_op(name, axes=[])
    if noop:
        return info.add(op, *args)
    if args[1].shape.is_dynamic:
        by_input = info.add(op, *args)
        all_lit = info.add_literal(all_axes, DType.int64, [len(all_axes)])
        by_all = info.add(op, args[0], all_lit)
        zero = info.add_literal(0, DType.int64)
        size = info.add("dimensions_of", args[1], end=1)
        return info.add("where", info.add("equal", size, zero), by_all, by_input)
    if args[1].shape.elements == 0:
        return info.add(op, args[0], info.add_literal(all_axes, DType.int64, [len(all_axes)]))
    return info.add(op, *args)


REDUCE = {
    "ReduceMax": "reduce_max",
    "ReduceMean": "reduce_mean",
    "ReduceMin": "reduce_min",
    "ReduceProd": "reduce_prod",
    "ReduceSum": "reduce_sum",
}


def _reduce(name: str) -> Callable[[OnnxParser, NodeInfo, Args], Instruction]:
    def parse(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
        return reduce(info, name, args)

    return parse


onnx_ops(REDUCE, _reduce)


@onnx_op("ReduceL1")
def parse_reduce_l1(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    return reduce(info, "reduce_sum", [info.add("abs", args[0]), *args[1:]])


@onnx_op("ReduceL2")
def parse_reduce_l2(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    return info.add("sqrt", reduce(info, "reduce_sum", [info.add("mul", args[0], args[0]), *args[1:]]))


@onnx_op("ReduceLogSum")
def parse_reduce_log_sum(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    return info.add("log", reduce(info, "reduce_sum", args))


@onnx_op("ReduceLogSumExp")
def parse_reduce_log_sum_exp(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    return info.add("log", reduce(info, "reduce_sum", [info.add("exp", args[0]), *args[1:]]))


@onnx_op("ReduceSumSquare")
def parse_reduce_sum_square(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    return reduce(info, "reduce_sum", [info.add("mul", args[0], args[0]), *args[1:]])


@onnx_op("BatchNormalization")
def parse_batchnorm(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    epsilon = np.float32(info.attr_float("epsilon", 1e-5))
    x = args[0]
    rank = len(_max_lens(x))
    dtype = x.shape.dtype
    if any(len(a.shape.lens) != 1 for a in args[1:]):
        raise ParseError("batchnorm op_builder: argument scale, bias, mean, or var rank != 1")
    if rank in (1, 2):
        eps = info.add_literal(epsilon, dtype)
        x_sub_mean = info.add_common_op("sub", x, args[3])
        var_eps = info.add_common_op("add", args[4], eps)
        rsqrt = info.add("rsqrt", var_eps)
        mul0 = info.add_common_op("mul", args[1], rsqrt)
        r0 = info.add_common_op("mul", x_sub_mean, mul0)
        return info.add_common_op("add", r0, args[2])
    if rank > 2:
        axes = list(range(1, rank - 1))
        eps = info.add_literal(epsilon, dtype)
        scale, bias, mean, var = (info.add("unsqueeze", a, axes=axes) for a in args[1:5])
        x_sub_mean = info.add_common_op("sub", x, mean)
        var_eps = info.add_common_op("add", var, eps)
        rsqrt = info.add("rsqrt", var_eps)
        mul0 = info.add_common_op("mul", scale, rsqrt)
        r0 = info.add_common_op("mul", x_sub_mean, mul0)
        return info.add_common_op("add", r0, bias)
    raise ParseError(f"batchnorm op_builder: rank {rank} input tensor, unhandled data format")


def _conv_transpose_auto_padding(
    auto_pad: str, strides: Sequence[int], k_lens: Sequence[int], dilations: Sequence[int]
) -> list[int]:
    kdims = len(k_lens)
    pads = [0] * (2 * kdims)
    for i in range(kdims):
        kernel = k_lens[i] + (k_lens[i] - 1) * (dilations[i] - 1)
        total = max(kernel - strides[i], 0)
        if "SAME_UPPER" in auto_pad:
            pads[i], pads[i + kdims] = total // 2, total - total // 2
        else:
            pads[i], pads[i + kdims] = total - total // 2, total // 2
    return pads


@onnx_op("ConvTranspose")
def parse_conv_transpose(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    x = args[0]
    kdims = x.shape.ndim - 2
    check_padding_mode(info)
    values: dict = {"padding": [0, 0], "stride": [1, 1], "dilation": [1, 1]}
    padding: list[int] = []
    asymmetric = False
    if info.has("pads"):
        padding = info.attr_ints("pads") or []
        half = len(padding) // 2
        asymmetric = any(padding[i] != padding[i + half] for i in range(half))
        if not asymmetric:
            check_attr_size(kdims, half, "PARSE_CONV_TRANSPOSE: inconsistent paddings")
            values["padding"] = padding[:half]
        elif x.shape.is_dynamic:
            raise ParseError(
                "PARSE_CONV_TRANSPOSE: asymmetric padding (padding_L != padding_R) not supported with dynamic shapes"
            )
        else:
            values["padding"] = [0] * half
    if info.has("strides"):
        values["stride"] = info.attr_ints("strides")
        check_attr_size(kdims, len(values["stride"]), "PARSE_CONV_TRANSPOSE: inconsistent strides")
    if info.has("dilations"):
        values["dilation"] = info.attr_ints("dilations")
        check_attr_size(kdims, len(values["dilation"]), "PARSE_CONV_TRANSPOSE: inconsistent dilations")
    auto_pad = (info.attr_str("auto_pad") or "NOTSET").upper()
    if info.has("auto_pad") and auto_pad != "NOTSET":
        if x.shape.is_dynamic:
            raise ParseError("PARSE_CONV_TRANSPOSE: auto padding not supported with dynamic shapes")
        if "SAME" in auto_pad:
            padding = _conv_transpose_auto_padding(
                auto_pad, values["stride"], args[1].shape.lens[2:], values["dilation"]
            )
        half = len(padding) // 2
        asymmetric = any(padding[i] != padding[i + half] for i in range(half))
        values["padding"] = [0] * half if asymmetric else padding[:half]
    if info.has("group"):
        values["group"] = info.attr_int("group")
    if len(values["padding"]) not in (kdims, 2 * kdims):
        values["padding"] = [0] * kdims
    if len(values["stride"]) != kdims:
        values["stride"] = [1] * kdims
    if len(values["dilation"]) != kdims:
        values["dilation"] = [1] * kdims
    out = info.add("convolution_backwards", x, args[1], **values)
    if asymmetric:
        dims = out.shape.lens
        starts = padding[:kdims]
        ends = [d - p for d, p in zip(dims[2:], padding[kdims:])]
        out = info.add("slice", out, axes=list(range(2, 2 + kdims)), starts=starts, ends=ends)
    if info.has("output_padding") and not info.has("output_shape"):
        non_kdims = out.shape.ndim * 2 - kdims
        extra = info.attr_ints("output_padding") or []
        check_attr_size(kdims, len(extra), "PARSE_CONV_TRANSPOSE: inconsistent output padding")
        out = info.add("pad", out, pads=[0] * non_kdims + extra)
    if info.has("output_shape"):
        if out.shape.is_dynamic:
            raise ParseError("PARSE_CONV_TRANSPOSE: output_shape attribute and dynamic shapes not supported")
        dims = out.shape.lens
        wanted = info.attr_ints("output_shape") or []
        check_attr_size(kdims, len(wanted), "PARSE_CONV_TRANSPOSE: inconsistent output shape")
        current = list(dims[2:])
        if current != wanted:
            pads = [0] * (len(dims) * 2 - kdims) + [w - c for w, c in zip(wanted, current)]
            out = info.add("pad", out, pads=pads)
    return info.add_bias(args, out, 1)


@onnx_op("Hardmax")
def parse_hardmax(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    x = args[0]
    lens = x.shape.lens
    old = parser.opset_version < 13
    axis = info.attr_int("axis", 1 if old else -1)
    if old:
        axis = axis + len(lens) if axis < 0 else axis
        n = int(np.prod(lens[:axis], dtype=np.int64))
        x = info.add("reshape", x, dims=[n, x.shape.elements // n])
        axis = 1
    dtype = x.shape.dtype
    indices = info.add("argmax", x, axis=axis)
    data = info.add("multibroadcast", info.add_literal(0, dtype), out_lens=x.shape.lens)
    updates = info.add("multibroadcast", info.add_literal(1, dtype), out_lens=indices.shape.lens)
    out = info.add("scatter_none", data, indices, updates, axis=axis)
    return info.add("reshape", out, dims=lens) if old else out


@onnx_op("LpNormalization")
def parse_lpnormalization(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    p = info.attributes["p"].i if info.has("p") else 2
    if p not in (1, 2):
        raise ParseError("LPNORMALIZATION: only L1 and L2 norm supported")
    x = args[0]
    lens, dtype = x.shape.lens, x.shape.dtype
    axis = -1
    if info.has("axis"):
        axis = info.attributes["axis"].i
        if axis < -len(lens) or axis >= len(lens):
            raise ParseError("LPNORMALIZATION: selected axis out of bounds")
    powered = info.add("abs", x) if p == 1 else info.add("mul", x, x)
    norms = info.add("reduce_sum", powered, axes=[axis])
    if p == 2:
        norms = info.add("sqrt", norms)
    norms = info.add("multibroadcast", norms, out_lens=lens)
    zero = info.add("multibroadcast", info.add_literal(0.0, dtype), out_lens=lens)
    one = info.add("multibroadcast", info.add_literal(1.0, dtype), out_lens=lens)
    is_zero = info.add("equal", norms, zero)
    return info.add("div", x, info.add("where", is_zero, one, norms))


@onnx_op("NonMaxSuppression")
def parse_nonmaxsuppression(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    op = loaded_op("nonmaxsuppression", info)
    return info.add(op.replace(use_dyn_output=parser.options.use_dyn_output), *args)  # type: ignore[attr-defined]


@onnx_op("RoiAlign")
def parse_roialign(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    mode = "half_pixel" if parser.opset_version >= 16 else "output_half_pixel"
    mode = info.attr_str("coordinate_transformation_mode", mode) or ""
    if mode not in ("half_pixel", "output_half_pixel"):
        raise ParseError(f'coordinate_transformation_mode "{mode}": invalid value!')
    return info.add(
        "roialign",
        *args,
        coordinate_transformation_mode=mode,
        mode="max" if info.attr_str("mode") == "max" else "average",
        output_height=info.attr_int("output_height", 1),
        output_width=info.attr_int("output_width", 1),
        sampling_ratio=info.attr_int("sampling_ratio", 0),
        spatial_scale=float(np.float32(info.attr_float("spatial_scale", 1.0))),
    )


# CausalConvWithState's fused activations
_CAUSAL_ACTIVATIONS = ("none", "silu", "swish")


@onnx_op("CausalConvWithState")
def parse_causal_conv_with_state(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    """mgxir's addition (MIGraphX has no parser for it): the input after its past state (zeros
    without one), a depthwise convolution without padding, the bias, SiLU where asked; the present
    state is the last kernel - 1 positions of the padded input."""

    def given(k: int) -> Instruction | None:
        return args[k] if len(args) > k and args[k].op.name != "undefined" else None

    x, w, bias, state = args[0], args[1], given(2), given(3)
    if x.shape.is_dynamic or x.shape.ndim != 3 or w.shape.ndim != 3 or w.shape.lens[:2] != (x.shape.lens[1], 1):
        raise ParseError("CausalConvWithState: input (batch, channels, length) and weight (channels, 1, k) needed")
    activation = info.attr_str("activation", "none") or "none"
    if activation not in _CAUSAL_ACTIVATIONS:
        raise ParseError(f"CausalConvWithState: unknown activation '{activation}'")
    batch, channels, length = x.shape.lens
    kernel = w.shape.lens[2]
    if state is None:
        zeros = np.zeros((batch, channels, kernel - 1), x.shape.dtype.numpy)
        state = info.add_literal(zeros, x.shape.dtype, [batch, channels, kernel - 1])
    padded = info.add("concat", state, x, axis=2)
    out = info.add("convolution", padded, w, padding=[0, 0], stride=[1], dilation=[1], group=channels)
    if bias is not None:
        out = info.add("add", out, info.add("broadcast", bias, axis=1, out_lens=list(out.shape.lens)))
    if activation != "none":
        out = info.add("mul", out, info.add("sigmoid", out))
    total = length + kernel - 1
    return [out, info.add("slice", padded, axes=[2], starts=[length], ends=[total])]
