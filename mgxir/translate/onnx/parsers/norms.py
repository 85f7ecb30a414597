"""Normalization ONNX operators: layer, group, instance, mean-variance, simplified and skip norms."""

from __future__ import annotations

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError
from mgxir.translate.onnx.registry import onnx_op

Args = list[Instruction]

_LAYERNORM_TYPES = (DType.float, DType.bf16, DType.half)


def _epsilon(info: NodeInfo) -> np.float32:
    return np.float32(info.attr_float("epsilon", 1e-5))


def _half_epsilon(dtype: DType, epsilon: np.float32) -> float:
    """MIGraphX raises a tiny epsilon to 1e-7 for half inputs."""
    return 1e-7 if dtype is DType.half and abs(epsilon) < 1e-7 else float(epsilon)


def _convert(info: NodeInfo, ins: Instruction, dtype: DType) -> Instruction:
    return ins if ins.shape.dtype is dtype else info.add("convert", ins, target_type=dtype)


@onnx_op("LayerNormalization")
def parse_layernorm(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    axis = info.attr_int("axis", -1) or 0
    epsilon = _epsilon(info)
    stash = info.attr_int("stash_type", 1) == 1 if info.has("stash_type") else True
    if not 2 <= len(args) <= 3:
        raise ParseError("PARSE_LAYERNORM: invalid input count")
    x = args[0]
    rank = x.shape.ndim
    if x.shape.dtype not in _LAYERNORM_TYPES:
        raise ParseError("PARSE_LAYERNORM: Invalid type for input")
    if rank < 2:
        raise ParseError(f"PARSE_LAYERNORM: invalid ndims={rank}, must be at least 2")
    if axis < -rank or axis >= rank:
        raise ParseError("PARSE_LAYERNORM: invalid axis")
    scale = args[1]
    if scale.shape.dtype not in _LAYERNORM_TYPES:
        raise ParseError("PARSE_LAYERNORM: Invalid type for scale")
    bias = args[2] if len(args) > 2 else None
    if bias is not None and bias.shape.dtype not in _LAYERNORM_TYPES:
        raise ParseError("PARSE_LAYERNORM: Invalid type for bias")
    axis = axis + rank if axis < 0 else axis
    kdims = rank - axis
    axes = list(range(axis, axis + kdims))
    dtype = x.shape.dtype
    stashed = stash and dtype is not DType.float
    xf = info.add("convert", x, target_type=DType.float) if stashed else x
    mean = info.add("reduce_mean", xf, axes=axes)
    centered = info.add_common_op("sub", xf, mean)
    variance = info.add("reduce_mean", info.add_common_op("sqdiff", xf, mean), axes=axes)
    eps = info.add_literal(np.float64(_half_epsilon(dtype, epsilon)), dtype)
    rsqrt = info.add("rsqrt", info.add_common_op("add", variance, eps))
    result = info.add_common_op("mul", centered, rsqrt)
    if stashed:
        result = info.add("convert", result, target_type=dtype)
    skipped = rank - kdims
    if skipped > 0:
        if scale.shape.ndim == 1:
            scale = info.add("broadcast", scale, axis=skipped, out_lens=x.shape.lens)
        if bias is not None and bias.shape.ndim == 1:
            bias = info.add("broadcast", bias, axis=skipped, out_lens=x.shape.lens)
    y = info.add_common_op("mul", result, scale)
    if bias is not None:
        y = info.add_common_op("add", y, bias)
    return [y, mean, rsqrt]


def _channels_last(info: NodeInfo, ins: Instruction, invert: bool) -> Instruction:
    n = ins.shape.ndim
    perm = [0, *range(2, n), 1]
    if invert:
        perm = [perm.index(i) for i in range(n)]
    return info.add("transpose", ins, permutation=perm)


@onnx_op("GroupNormalization", "GroupNorm")
def parse_groupnorm(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    contrib = info.op_type == "GroupNorm"
    epsilon = _epsilon(info)
    if not (info.has("num_groups") or info.has("groups")):
        raise ParseError("PARSE_GROUPNORM: num_groups must be available")
    num_groups = abs(info.attr_int("groups" if contrib else "num_groups") or 0)
    channels_last = contrib and (info.attr_int("channels_last", 1) == 1)
    silu = False
    if contrib:
        if not info.has("activation"):
            raise ParseError("PARSE_GROUPNORM: activation must be available")
        silu = info.attr_int("activation") == 1
    if len(args) != 3:
        raise ParseError("PARSE_GROUPNORM: invalid input count")
    x = args[0]
    if channels_last:
        x = _channels_last(info, x, True)
    dtype, x_lens = x.shape.dtype, list(x.shape.lens)
    if x.shape.ndim <= 2:
        raise ParseError("PARSE_GROUPNORM: invalid input shape")
    c = x_lens[1]
    if num_groups == 0 or c % num_groups:
        raise ParseError("PARSE_GROUPNORM: num_groups should be a divisor of the number of channels")
    scale = _convert(info, args[1], dtype)
    bias = _convert(info, args[2], dtype)
    for tensor, name in ((scale, "scale"), (bias, "bias")):
        if tensor.shape.ndim != 1 or tensor.shape.lens[0] != c:
            raise ParseError(f"PARSE_GROUPNORM: {name} tensor shape should be equal to the number of channels")
    dims = [x_lens[0], num_groups, c // num_groups, *x_lens[2:]]
    grouped = info.add("reshape", x, dims=dims)
    axes = list(range(2, len(dims)))
    mean = info.add("reduce_mean", grouped, axes=axes)
    centered = info.add_common_op("sub", grouped, mean)
    variance = info.add("reduce_mean", info.add_common_op("sqdiff", grouped, mean), axes=axes)
    eps = info.add_literal(np.float32(_half_epsilon(dtype, epsilon)), dtype)
    rsqrt = info.add("rsqrt", info.add_common_op("add", variance, eps))
    result = info.add("reshape", info.add_common_op("mul", centered, rsqrt), dims=x_lens)
    scale = info.add("broadcast", scale, axis=1, out_lens=x_lens)
    bias = info.add("broadcast", bias, axis=1, out_lens=x_lens)
    out = info.add("add", info.add("mul", result, scale), bias)
    if channels_last:
        out = _channels_last(info, out, False)
    if silu:
        out = info.add("mul", out, info.add("sigmoid", out))
    return out


_INSTANCENORM_TYPES = (DType.float, DType.half, DType.double, DType.bf16)


@onnx_op("InstanceNormalization")
def parse_instancenorm(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    epsilon = _epsilon(info)
    dtype = args[0].shape.dtype
    literal_dtype = dtype
    if dtype is DType.half:
        args = [info.add("convert", a, target_type=DType.float) for a in args]
        literal_dtype = DType.float
    x, scale, bias = args[0], args[1], args[2]
    if dtype not in _INSTANCENORM_TYPES:
        raise ParseError(
            f"InstanceNormalization: invalid output type: {dtype.value}. Valid types are 1 (float), 10 (half), "
            "and 11 (double)."
        )
    axes = list(range(2, x.shape.ndim))
    mean = info.add("reduce_mean", x, axes=axes)
    centered = info.add_common_op("sub", x, mean)
    variance = info.add("reduce_mean", info.add_common_op("sqdiff", x, mean), axes=axes)
    eps = info.add_literal(epsilon, literal_dtype)
    rsqrt = info.add("rsqrt", info.add_common_op("add", variance, eps))
    normed = info.add_common_op("mul", centered, rsqrt)
    if x.shape.is_dynamic:
        scale = info.add("broadcast", scale, x, axis=1)
        bias = info.add("broadcast", bias, x, axis=1)
    else:
        scale = info.add("broadcast", scale, axis=1, out_lens=x.shape.lens)
        bias = info.add("broadcast", bias, axis=1, out_lens=x.shape.lens)
    out = info.add("add", info.add("mul", normed, scale), bias)
    if dtype is DType.half:
        out = info.add("convert", out, target_type=DType.half)
    return out


@onnx_op("MeanVarianceNormalization")
def parse_mean_variance_normalization(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    x = args[0]
    rank = x.shape.ndim
    if info.has("axes"):
        axes = info.attr_ints("axes") or []
    elif rank != 4:
        raise ParseError(f"Input tensor needs to be rank 4 when axes is not specified. Instead it is rank {rank}")
    else:
        axes = [0, 2, 3]
    if len(axes) != rank - 1:
        raise ParseError("mvn op_builder: Length of axes attribute needs to be equal to input tensor rank - 1")
    mean = info.add("reduce_mean", x, axes=axes)
    mean_squared = info.add_common_op("mul", mean, mean)
    squared_mean = info.add("reduce_mean", info.add_common_op("mul", x, x), axes=axes)
    std = info.add_common_op("sqrt", info.add_common_op("sub", squared_mean, mean_squared))
    dividend = info.add_common_op("sub", x, mean)
    dtype = x.shape.dtype
    eps = info.add_literal(np.float64(1e-7 if dtype is DType.half else 1e-9), dtype)
    return info.add_common_op("div", dividend, info.add_common_op("add", std, eps))


def _rms_norm(info: NodeInfo, x: Instruction, axis: int, epsilon: np.float32) -> tuple[Instruction, ...]:
    """x * rsqrt(mean(x^2) + epsilon), the mean taken in float: (normed, mean, rsqrt)."""
    dtype = x.shape.dtype
    xf = info.add("convert", x, target_type=DType.float)
    rms = info.add("reduce_mean", info.add_common_op("mul", xf, xf), axes=[axis])
    rms = info.add("convert", rms, target_type=dtype)
    mean = rms
    eps = info.add_literal(np.float32(_half_epsilon(dtype, epsilon)), dtype)
    rrms = info.add("rsqrt", info.add_common_op("add", rms, eps))
    return info.add_common_op("mul", x, rrms), mean, rrms


@onnx_op("SimplifiedLayerNormalization")
def parse_simplified_layer_normalization(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    axis = info.attr_int("axis", -1) or 0
    epsilon = _epsilon(info)
    if info.has("stash_type"):
        parser.sink.warn("SIMPLIFIED_LAYER_NORMALIZATION attribute stash_type is only used for training.")
    if len(args) != 2:
        raise ParseError(f"PARSE_SIMPLIFIED_LAYER_NORMALIZATION: invalid input count - expected 2 got {len(args)}")
    x, scale = args
    rank = x.shape.ndim
    axis = axis + rank if axis < 0 else axis
    if rank < 2:
        raise ParseError(f"PARSE_SIMPLIFIED_LAYER_NORMALIZATION: invalid ndims={rank}, must be at least 2")
    normed, mean, rrms = _rms_norm(info, x, axis, epsilon)
    return [info.add_common_op("mul", normed, scale), mean, rrms]


@onnx_op("SkipLayerNormalization")
def parse_skip_layer_normalization(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    epsilon = _epsilon(info)
    if not 3 <= len(args) <= 5:
        raise ParseError("PARSE_SKIPLAYERNORMALIZATION: invalid input count")
    x, skip, gamma = args[:3]
    dtype, rank = x.shape.dtype, x.shape.ndim
    skip_rank = skip.shape.ndim
    if rank != 3 or (rank != skip_rank and skip_rank != 2) or gamma.shape.ndim != 1:
        raise ParseError("PARSE_SKIPLAYERNORMALIZATION: invalid input shape")
    beta = args[3] if len(args) >= 4 else None
    if beta is not None and (beta.shape.dtype is not dtype or beta.shape.ndim != 1):
        raise ParseError("PARSE_SKIPLAYERNORMALIZATION: Invalid Beta shape")
    bias = args[4] if len(args) == 5 else None
    if bias is not None and (bias.shape.dtype is not dtype or bias.shape.ndim != 1):
        raise ParseError("PARSE_SKIPLAYERNORMALIZATION: Invalid Bias shape")
    axis = rank - 1
    x = info.add_common_op("add", x, skip)
    if bias is not None:
        x = info.add_common_op("add", x, bias)
    mean = info.add("reduce_mean", x, axes=[axis])
    variance = info.add("reduce_mean", info.add_common_op("sqdiff", x, mean), axes=[axis])
    eps = info.add_literal(np.float32(_half_epsilon(dtype, epsilon)), dtype)
    r_var = info.add("rsqrt", info.add_common_op("add", variance, eps))
    result = info.add_common_op("mul", info.add_common_op("sub", x, mean), r_var)
    result = info.add_common_op("mul", result, gamma)
    if beta is not None:
        result = info.add_common_op("add", result, beta)
    return [result, mean, r_var, x]


@onnx_op("SkipSimplifiedLayerNormalization")
def parse_skip_simplified_layer_normalization(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    epsilon = _epsilon(info)
    if not 3 <= len(args) <= 4:
        raise ParseError("PARSE_SKIPSIMPLIFIEDLAYERNORMALIZATION: invalid input count")
    x, skip, gamma = args[:3]
    bias = args[3] if len(args) == 4 else None
    rank = x.shape.ndim
    if rank < 2 or rank > 3 or rank != skip.shape.ndim or gamma.shape.ndim != 1:
        raise ParseError("PARSE_SKIPSIMPLIFIEDLAYERNORMALIZATION: invalid input shape")
    x = info.add_common_op("add", x, skip)
    normed, mean, rrms = _rms_norm(info, x, rank - 1, epsilon)
    result = info.add_common_op("mul", normed, gamma)
    if bias is not None:
        result = info.add_common_op("add", result, bias)
        x = info.add_common_op("add", x, bias)
    return [result, mean, rrms, x]


@onnx_op("RMSNormalization")
def parse_rms_normalization(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """mgxir's own (MIGraphX has no parser for it): ONNX opset 23's RMSNormalization,
    X / sqrt(mean(X^2 over axis..rank-1) + epsilon) * scale, computed in float (stash_type 1) or in
    X's own type (stash_type 0), then in X's type again before the scale, as ONNX's function body does."""
    if len(args) != 2:
        raise ParseError(f"RMSNormalization: expected 2 inputs (X, scale), got {len(args)}")
    x, scale = args
    rank = x.shape.ndim
    axis = info.attr_int("axis", -1)
    axis = axis + rank if axis is not None and axis < 0 else axis
    if axis is None or not 0 <= axis < rank:
        raise ParseError(f"RMSNormalization: axis {info.attr_int('axis', -1)} is out of range for rank {rank}")
    stash = info.attr_int("stash_type", 1)
    if stash not in (1, 0):
        raise ParseError(f"RMSNormalization: stash_type {stash} is not supported (1: float, 0: the input's type)")
    dtype = x.shape.dtype
    compute = DType.float if stash == 1 else dtype
    xc = _convert(info, x, compute)
    mean_square = info.add("reduce_mean", info.add_common_op("mul", xc, xc), axes=list(range(axis, rank)))
    eps = info.add_literal(np.float32(_epsilon(info)), compute)
    normed = info.add_common_op("div", xc, info.add("sqrt", info.add_common_op("add", mean_square, eps)))
    return info.add_common_op("mul", _convert(info, normed, dtype), scale)
