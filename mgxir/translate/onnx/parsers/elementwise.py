"""Elementwise ONNX operators: unary and binary ops, comparisons, activations made of pointwise ops."""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.registry import lookup, make_op
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError, broadcast_lens, onnx_type
from mgxir.translate.onnx.registry import onnx_op, onnx_ops

Args = list[Instruction]

# ONNX op -> MIGraphX op whose attributes the node's attributes of the same names fill
GENERIC = {
    "Abs": "abs",
    "Acos": "acos",
    "Acosh": "acosh",
    "Asin": "asin",
    "Asinh": "asinh",
    "Atan": "atan",
    "Atanh": "atanh",
    "Ceil": "ceil",
    "Concat": "concat",
    "Cos": "cos",
    "Cosh": "cosh",
    "Elu": "elu",
    "Erf": "erf",
    "Exp": "exp",
    "Flatten": "flatten",
    "Floor": "floor",
    "Gather": "gather",
    "GatherND": "gathernd",
    "Identity": "identity",
    "IsNaN": "isnan",
    "LeakyRelu": "leaky_relu",
    "Log": "log",
    "LRN": "lrn",
    "Neg": "neg",
    "Reciprocal": "recip",
    "Relu": "relu",
    "Round": "nearbyint",
    "Sigmoid": "sigmoid",
    "Sign": "sign",
    "Sin": "sin",
    "Sinh": "sinh",
    "Sqrt": "sqrt",
    "Tan": "tan",
    "Tanh": "tanh",
    "Not": "not",
    "BitwiseNot": "bitwise_not",  # mgxir's additions (MIGraphX has no parsers for these)
    "Det": "det",
}
BINARY = {
    "Add": "add",
    "Div": "div",
    "And": "logical_and",
    "Or": "logical_or",
    "Xor": "logical_xor",
    "BitwiseAnd": "bitwise_and",
    "BitwiseOr": "bitwise_or",  # mgxir's additions (MIGraphX has no parser for these)
    "BitwiseXor": "bitwise_xor",
    "Mul": "mul",
    "PRelu": "prelu",
    "Sub": "sub",
}
VARIADIC = {"Sum": "add", "Max": "max", "Min": "min"}
COMPARE = {"Equal": "equal", "Greater": "greater", "Less": "less"}


def loaded_op(name: str, info: NodeInfo) -> object:
    """`make_op(name)` with the attributes of the same names taken from the node (load_to_value)."""
    defn = lookup(name)
    assert defn is not None
    values = {}
    for attr in defn.attributes:
        value = info.value(attr.name) if info.has(attr.name) else None
        if value is None:
            continue
        default = defn.defaults[defn.attribute_index[attr.name]]
        values[attr.name] = tuple(value.tolist()) if isinstance(default, tuple) else value.reshape(-1)[0].item()
    return defn.make(**values)


def _generic(name: str) -> Callable[[OnnxParser, NodeInfo, Args], Instruction]:
    def parse(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
        op = loaded_op(name, info)
        if not any(a.shape.is_dynamic for a in args):
            args = [a for a in args if a.shape.elements > 0]
            if not args:
                return info.add("undefined")
        return info.add(op, *args)  # type: ignore[arg-type]

    return parse


def _binary(name: str) -> Callable[[OnnxParser, NodeInfo, Args], Instruction]:
    def parse(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
        if len(args) != 2:
            raise ParseError("binary operators should have 2 operands")
        if info.has("broadcast") and info.has("axis") and info.attr_int("broadcast"):
            if any(a.shape.is_dynamic for a in args):
                raise ParseError("Binary op broadcast attribute not supported for dynamic input shapes")
            axis = info.attr_int("axis")
            short = 0 if args[0].shape.ndim < args[1].shape.ndim else 1
            long = 1 - short
            b = info.add("broadcast", args[short], axis=axis, out_lens=args[long].shape.lens)
            return info.add(name, args[long], b)
        return info.add_common_op(name, *args)

    return parse


def _variadic(name: str) -> Callable[[OnnxParser, NodeInfo, Args], Instruction]:
    def parse(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
        out = args[0]
        for a in args[1:]:
            out = info.add_common_op(name, out, a)
        return out

    return parse


def as_bool(info: NodeInfo, ins: Instruction) -> Instruction:
    if ins.shape.dtype is not DType.bool:
        return info.add("convert", ins, target_type=DType.bool)
    return ins


def _compare(name: str) -> Callable[[OnnxParser, NodeInfo, Args], Instruction]:
    def parse(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
        return as_bool(info, info.add_common_op(name, args[0], args[1]))

    return parse


onnx_ops(GENERIC, _generic)
onnx_ops(BINARY, _binary)
onnx_ops(VARIADIC, _variadic)
onnx_ops(COMPARE, _compare)


@onnx_op("GreaterOrEqual", "LessOrEqual")
def parse_or_equal(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    opposite = "less" if info.op_type == "GreaterOrEqual" else "greater"
    return info.add("not", as_bool(info, info.add_common_op(opposite, args[0], args[1])))


_POW_ORDER = {
    DType.int8: 1,
    DType.uint8: 2,
    DType.int16: 3,
    DType.uint16: 4,
    DType.int32: 5,
    DType.uint32: 6,
    DType.int64: 7,
    DType.uint64: 8,
    DType.half: 9,
    DType.float: 10,
    DType.double: 11,
}


@onnx_op("Pow")
def parse_pow(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    base, exponent = args[0].shape.dtype, args[1].shape.dtype
    if base not in _POW_ORDER or exponent not in _POW_ORDER:
        raise ParseError("PARSE_POW: Input data type not supported!")
    compute = base if _POW_ORDER[base] >= _POW_ORDER[exponent] else exponent
    a, b = args[0], args[1]
    if compute is not base:
        a = info.add("convert", a, target_type=compute)
    if compute is not exponent:
        b = info.add("convert", b, target_type=compute)
    out = info.add_common_op("pow", a, b)
    if compute is not base:
        out = info.add("convert", out, target_type=base)
    return out


@onnx_op("BitShift")
def parse_bitshift(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """mgxir's addition (MIGraphX has no parser for it): shift_left or shift_right by `direction`."""
    direction = info.attr_str("direction", "")
    if direction not in ("LEFT", "RIGHT"):
        raise ParseError(f"BitShift: direction must be LEFT or RIGHT, not '{direction}'")
    return _binary("shift_left" if direction == "LEFT" else "shift_right")(parser, info, args)


@onnx_op("Mod")
def parse_mod(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if (args[0].shape.dtype.is_float or args[1].shape.dtype.is_float) and not info.has("fmod"):
        raise ParseError("Mod operator with float args and fmod=0 invalid")
    name = "fmod" if info.has("fmod") and info.attr_int("fmod") == 1 else "mod"
    return info.add_common_op(name, args[0], args[1])


@onnx_op("Cast")
def parse_cast(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if not info.has("to"):
        raise ParseError("PARSE_CAST: missing to type attribute!")
    return info.add("convert", *args, target_type=onnx_type(info.attr_int("to")))


@onnx_op("BitCast")
def parse_bitcast(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """mgxir's addition (MIGraphX has no parser for it): MIGraphX's bit_cast, the same bits read
    as the type `to` of the same size."""
    if not info.has("to"):
        raise ParseError("BitCast: missing to type attribute")
    return info.add("bit_cast", args[0], target_type=onnx_type(info.attr_int("to")))


@onnx_op("CastLike")
def parse_castlike(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if len(args) != 2:
        raise ParseError("PARSE_CASTLIKE: CastLike must have exactly 2 inputs!")
    return info.add("convert", args[0], target_type=args[1].shape.dtype)


def type_limit(info: NodeInfo, dtype: DType, lowest: bool) -> Instruction:
    if dtype.is_float:
        limits = ml_dtypes.finfo(dtype.numpy)
        value = limits.min if lowest else limits.max
    elif dtype is DType.bool:
        value = not lowest
    else:
        limits_i = np.iinfo(dtype.numpy)
        value = limits_i.min if lowest else limits_i.max
    return info.add_literal(np.array(value, dtype.numpy), dtype)


@onnx_op("Clip")
def parse_clip(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    x = args[0]
    dtype = x.shape.dtype
    if info.has("min") or info.has("max"):
        lo = info.add_literal(info.attr_float("min"), dtype) if info.has("min") else type_limit(info, dtype, True)
        hi = info.add_literal(info.attr_float("max"), dtype) if info.has("max") else type_limit(info, dtype, False)
    else:
        lo = args[1] if len(args) > 1 and args[1].shape.lens else type_limit(info, dtype, True)
        hi = args[2] if len(args) > 2 and args[2].shape.lens else type_limit(info, dtype, False)
    return info.add_common_op("clip", x, lo, hi)


@onnx_op("Where")
def parse_where(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    dynamic = [a.shape.is_dynamic for a in args]
    if all(dynamic):
        return info.add("where", *args[:3])
    if any(dynamic):
        raise ParseError("PARSE_WHERE: doesn't support mixed static and dynamic shape inputs")
    lens = broadcast_lens(broadcast_lens(args[0].shape.lens, args[1].shape.lens), args[2].shape.lens)
    out = [a if a.shape.lens == lens else info.add("multibroadcast", a, out_lens=lens) for a in args[:3]]
    return info.add("where", *out)


@onnx_op("Celu")
def parse_celu(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    alpha = info.attributes["alpha"].f if info.has("alpha") else 1.0
    if alpha == 0.0:
        raise ParseError("celu op_builder: alpha is zero (division by zero)")
    x = args[0]
    dtype, lens = x.shape.dtype, x.shape.lens
    if dtype is not DType.float:
        raise ParseError("celu op_builder: input tensor not float type")

    def constant(v: float) -> Instruction:
        return info.add("multibroadcast", info.add_literal(v, dtype), out_lens=lens)

    zero, one, alpha_ins = constant(0.0), constant(1.0), constant(alpha)
    linear = info.add_common_op("max", zero, x)
    expo = info.add_common_op("exp", info.add_common_op("div", x, alpha_ins))
    mul = info.add_common_op("mul", alpha_ins, info.add_common_op("sub", expo, one))
    return info.add_common_op("add", linear, info.add_common_op("min", zero, mul))


@onnx_op("Selu")
def parse_selu(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    x = args[0]
    dtype, lens = x.shape.dtype, x.shape.lens
    alpha = info.attributes["alpha"].f if info.has("alpha") else 1.67326
    gamma = info.attributes["gamma"].f if info.has("gamma") else 1.0507
    l_alpha = info.add_literal([alpha], dtype, [1])
    l_gamma = info.add_literal([np.float32(gamma) / np.float32(2.0)], dtype, [1])
    if lens != (1,):
        l_alpha = info.add("multibroadcast", l_alpha, out_lens=lens)
        l_gamma = info.add("multibroadcast", l_gamma, out_lens=lens)
    sign_x = info.add("sign", x)
    exp_x = info.add("exp", x)
    alpha_ex = info.add("mul", l_alpha, exp_x)
    aex_alpha = info.add("sub", alpha_ex, l_alpha)
    ins1 = info.add("add", aex_alpha, x)
    ins2 = info.add("sub", aex_alpha, x)
    sign2 = info.add("mul", sign_x, ins2)
    return info.add("mul", info.add("sub", ins1, sign2), l_gamma)


@onnx_op("HardSigmoid", "HardSwish")
def parse_hardsigmoid(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    alpha, beta = np.float32(0.2), np.float32(0.5)
    if info.op_type == "HardSwish":
        alpha = np.float32(1.0 / 6.0)
    else:
        if info.has("alpha"):
            alpha = np.float32(info.attributes["alpha"].f)
        if info.has("beta"):
            beta = np.float32(info.attributes["beta"].f)
    x = args[0]
    lens, dtype = x.shape.lens, x.shape.dtype

    def constant(v: float) -> Instruction:
        lit = info.add_literal(v, dtype)
        return info.add("multibroadcast", lit, out_lens=lens)

    mb_alpha = constant(alpha)
    mb_beta = constant(beta)
    mb_zero = constant(0)
    mb_one = constant(1)
    add = info.add("add", mb_beta, info.add("mul", mb_alpha, x))
    hard = info.add("clip", add, mb_zero, mb_one)
    return info.add("mul", x, hard) if info.op_type == "HardSwish" else hard


@onnx_op("ThresholdedRelu")
def parse_thresholdedrelu(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    alpha = info.attr_float("alpha", 1.0)
    x = args[0]
    zero = info.add_literal(0, x.shape.dtype)
    lit_alpha = info.add_literal(alpha, x.shape.dtype)
    mb_zero = info.add("multibroadcast", zero, out_lens=x.shape.lens)
    mb_alpha = info.add("multibroadcast", lit_alpha, out_lens=x.shape.lens)
    return info.add("where", info.add("greater", x, mb_alpha), x, mb_zero)


@onnx_op("Softplus", "Softsign")
def parse_softplus(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    x = args[0]
    ones = info.add("multibroadcast", info.add_literal(1, x.shape.dtype), out_lens=x.shape.lens)
    if info.op_type == "Softplus":
        return info.add("log", info.add("add", info.add("exp", x), ones))
    return info.add("div", x, info.add("add", info.add("abs", x), ones))


def _swish(info: NodeInfo, x: Instruction) -> Instruction:
    alpha = info.add_literal(np.asarray(info.attr_float("alpha", 1.0), x.shape.dtype.numpy), x.shape.dtype)
    return info.add("mul", x, info.add("sigmoid", info.add_common_op("mul", x, alpha)))


@onnx_op("Swish", "Mish", "SwiGLU")
def parse_swish_mish(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """mgxir's additions (MIGraphX has no parsers for them): Swish x * sigmoid(alpha x), SwiGLU
    Swish(a) * b (a and b of one shape), Mish x * tanh(softplus(x))."""
    x = args[0]
    if info.op_type == "Swish":
        return _swish(info, x)
    if info.op_type == "SwiGLU":
        if len(args) != 2 or args[1].shape != x.shape:
            raise ParseError("SwiGLU: inputs A and B of one shape and type are needed")
        return info.add("mul", _swish(info, x), args[1])
    ones = info.add("multibroadcast", info.add_literal(1, x.shape.dtype), out_lens=x.shape.lens)
    softplus = info.add("log", info.add("add", info.add("exp", x), ones))
    return info.add("mul", x, info.add("tanh", softplus))


@onnx_op("Shrink")
def parse_shrink(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    bias = info.attr_float("bias", 0.0)
    lambd = info.attr_float("lambd", 0.5)
    x = args[0]
    lit_bias = info.add_literal(np.float32(bias))
    lit_neg_lambd = info.add_literal(-np.float32(lambd))
    lit_lambd = info.add_literal(np.float32(lambd))
    plus = info.add_common_op("add", x, lit_bias)
    minus = info.add_common_op("sub", x, lit_bias)
    cond1 = info.add_common_op("less", x, lit_neg_lambd)
    cond2a = info.add_common_op("not", cond1)
    cond2b = info.add_common_op("greater", x, lit_lambd)
    cond2 = info.add_common_op("logical_and", cond2a, cond2b)
    first = info.add_common_op("mul", cond1, plus)
    second = info.add_common_op("mul", cond2, minus)
    out = info.add_common_op("add", first, second)
    if out.shape.dtype is not x.shape.dtype:
        out = info.add("convert", out, target_type=x.shape.dtype)
    return out


@onnx_op("IsInf")
def parse_isinf(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    negative = bool(info.attr_int("detect_negative", 1))
    positive = bool(info.attr_int("detect_positive", 1))
    x = args[0]
    if not negative and not positive:
        return info.add("multibroadcast", info.add_literal(False, DType.bool), out_lens=x.shape.lens)
    is_inf = info.add("isinf", x)
    if negative and positive:
        return is_inf
    zero = info.add("multibroadcast", info.add_literal(0, x.shape.dtype), out_lens=x.shape.lens)
    cond = as_bool(info, info.add_common_op("less" if negative else "greater", x, zero))
    return info.add("logical_and", is_inf, cond)


@onnx_op("Mean")
def parse_mean(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if len(args) == 1:
        return args[0]
    dtype = args[0].shape.dtype
    divisor = info.add_literal(len(args), dtype)
    if dtype in (DType.float, DType.half, DType.double):
        mean = info.add_common_op("div", args[0], divisor)
        for a in args[1:]:
            mean = info.add_common_op("add", mean, info.add_common_op("div", a, divisor))
        return mean
    total = args[0]
    for a in args[1:]:
        total = info.add_common_op("add", total, a)
    return info.add_common_op("div", total, divisor)


@onnx_op("Dropout")
def parse_dropout(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    out = info.add("identity", args[0])
    lens = args[0].shape.lens
    mask = info.add_literal(np.ones(lens, bool), DType.bool, lens)
    return [out, mask]


@onnx_op("ImageScaler")
def parse_imagescaler(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    scale = info.attr_float("scale", 1.0)
    bias = info.attr_floats("bias", [])
    x = args[0]
    lens, dtype = x.shape.lens, x.shape.dtype
    scale_val = info.add_literal(scale, dtype)
    bias_vals = info.add_literal(bias, dtype, [len(bias)])
    scaled = info.add("mul", x, info.add("scalar", scale_val, scalar_bcst_dims=lens))
    return info.add("add", scaled, info.add("broadcast", bias_vals, axis=1, out_lens=lens))


@onnx_op("BiasAdd")
def parse_biasadd(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    return info.add_common_op("add", info.add_common_op("add", args[0], args[1]), args[2])


__all__ = ["as_bool", "loaded_op", "make_op", "type_limit"]
