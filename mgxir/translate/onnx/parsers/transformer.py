"""Transformer ONNX operators (most from onnxruntime's contrib domain): the Gelu family and
MultiHeadAttention."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError, onnx_type
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


# -- MultiHeadAttention --------------------------------------------------------------------------

_MHA = "MultiHeadAttention"


@dataclass
class _MhaParams:
    num_heads: int
    mask_filter_value: np.float32
    batch_size: int = 0
    q_sequence_length: int = 0
    kv_sequence_length: int = 0
    total_sequence_length: int = 0
    hidden_size: int = 0
    hidden_size_v: int = 0
    head_size: int = 0
    head_size_v: int = 0
    qkv_format: str = "q_k_v"  # q_k_v, q_k_v_cross, kv_packed, qkv_packed
    qkv_biased: bool = False
    key_pad_mode: str = "none"  # none, direct_2d_pad, left_pad, right_pad, direct_3d_pad


def _mha_check_query(args: Args, p: _MhaParams) -> None:
    q = args[0].shape
    rank, lens = q.ndim, q.lens
    p.batch_size, p.q_sequence_length = lens[0], lens[1]
    if rank not in (3, 5):
        raise ParseError(f"{_MHA}: Input 'query' rank needs to be 3 or 5, current: {rank}")
    if rank == 5:
        if lens[2] != p.num_heads or lens[3] != 3:
            raise ParseError(
                f"{_MHA}: Input 'query' shape needs to be (batch_size, q_sequence_length, num_heads, 3, head_size) "
                "for packed input."
            )
        p.kv_sequence_length = lens[1]
        p.head_size = p.head_size_v = lens[4]
        p.hidden_size = p.hidden_size_v = p.num_heads * lens[4]
        p.qkv_format = "qkv_packed"
        return
    if len(args) < 2:
        raise ParseError(f"{_MHA}: Wrong number of inputs, 'key' is missing.")
    p.hidden_size = lens[2]
    p.head_size = lens[2] // p.num_heads
    k = args[1].shape
    if not 3 <= k.ndim <= 5:
        raise ParseError(f"{_MHA}: Input 'key' rank needs to be 3, 4 or 5, current: {k.ndim}")
    if k.ndim == 5:
        kl = k.lens
        if kl[0] != p.batch_size or kl[2] != p.num_heads or kl[3] != 2 or kl[4] != p.head_size:
            raise ParseError(
                f"{_MHA}: Input 'key' shape needs to be (batch_size, kv_sequence_length, num_heads, 2, head_size)"
            )
        p.kv_sequence_length, p.hidden_size_v, p.head_size_v = kl[1], p.hidden_size, kl[4]
        p.qkv_format = "kv_packed"
        return
    if len(args) < 3:
        raise ParseError(f"{_MHA}: Wrong number of inputs, 'value' is missing.")
    v = args[2].shape
    if k.ndim != v.ndim:
        raise ParseError(f"{_MHA}: Input 'key' and 'value' rank needs to be equal.")
    kl, vl = k.lens, v.lens
    if k.ndim == 3:
        if kl[0] != p.batch_size or kl[2] != p.hidden_size:
            raise ParseError(f"{_MHA}: Input 'key' shape needs to be (batch_size, kv_sequence_length, hidden_size)")
        if vl[0] != p.batch_size or vl[1] != kl[1]:
            raise ParseError(f"{_MHA}: Input 'value' shape needs to be (batch_size, kv_sequence_length, hidden_size_v)")
        p.kv_sequence_length, p.hidden_size_v, p.head_size_v = kl[1], vl[2], vl[2] // p.num_heads
        p.qkv_format = "q_k_v"
    else:
        if kl[0] != p.batch_size or kl[1] != p.num_heads or kl[3] != p.head_size:
            raise ParseError(
                f"{_MHA}: Input 'key' shape needs to be (batch_size, num_heads, kv_sequence_length, head_size)"
            )
        if vl[0] != p.batch_size or vl[1] != p.num_heads or vl[2] != kl[2]:
            raise ParseError(
                f"{_MHA}: Input 'value' shape needs to be (batch_size, num_heads, kv_sequence_length, head_size_v)"
            )
        p.kv_sequence_length, p.hidden_size_v, p.head_size_v = kl[2], vl[3] * p.num_heads, vl[3]
        p.qkv_format = "q_k_v_cross"


def _mha_check_rest(args: Args, p: _MhaParams) -> None:
    if len(args) > 3:
        bias = args[3].shape
        p.qkv_biased = bias.ndim == 1
        if bias.ndim == 1 and bias.lens[0] != p.hidden_size_v + 2 * p.hidden_size:
            raise ParseError("MultiheadAttention: 1D Bias must be of size hidden_size + hidden_size + v_hidden_size")
    if len(args) > 4 and args[4].shape.elements != 0:
        m = args[4].shape
        if m.dtype is not DType.int32:
            raise ParseError(f"{_MHA}: Key padding mask must be a int32 tensor")
        if not 1 <= m.ndim <= 3:
            raise ParseError(f"{_MHA}: Key_pad_mask must be either 1D, 2D or 3D shape tensor")
        if m.ndim == 1:
            if m.lens[0] not in (p.batch_size, 3 * p.batch_size + 2):
                raise ParseError(f"{_MHA}: Key Padding Mask must be either batch or 3 x Batch + 2 for 1D key pads")
            p.key_pad_mode = "right_pad" if m.lens[0] == p.batch_size else "left_pad"
        elif m.ndim == 2:
            if m.lens[0] != p.batch_size or m.lens[1] != p.kv_sequence_length:
                raise ParseError(
                    f"{_MHA}: 2D Keypad mask must have either (batch, kv_sequence_length) or (batch, "
                    "total_sequence_length)"
                )
            p.key_pad_mode = "direct_2d_pad"
        else:
            if (m.lens[0], m.lens[1], m.lens[2]) != (p.batch_size, p.kv_sequence_length, p.total_sequence_length):
                raise ParseError(
                    f"{_MHA}: 3D Keypad mask must have either (batch, kv_sequence_length, total_sequence_length) "
                    "or (batch, total_sequence_length)"
                )
            p.key_pad_mode = "direct_3d_pad"
    if len(args) > 5:
        b = args[5].shape.lens
        if len(b) != 4:
            raise ParseError(f"{_MHA}: attention_bias must be 4D shape")
        for dim, want, what in (
            (0, p.batch_size, "first dimension must be batch_size"),
            (1, p.num_heads, "second dimension must be num_heads"),
            (2, p.q_sequence_length, "third dimension must be sequence_length"),
            (3, p.kv_sequence_length, "fourth dimension must be total_sequence_length"),
        ):
            if b[dim] != want:
                raise ParseError(f"{_MHA}: attention_bias {what}")
    for index, name, head in ((6, "past_key", p.head_size), (7, "past_value", p.head_size_v)):
        if len(args) <= index or args[index].shape.elements == 0:
            continue
        pl = args[index].shape.lens
        if len(pl) != 4:
            raise ParseError(f"{_MHA}: {name} must be 4D shape")
        if pl[0] != p.batch_size:
            raise ParseError(f"{_MHA}: {name} first dimension must be batch_size")
        if pl[1] != p.num_heads:
            raise ParseError(f"{_MHA}: {name} second dimension must be num_heads")
        if pl[3] != head:
            raise ParseError(f"{_MHA}: {name} fourth dimension must be {'head_size' if index == 6 else 'head_size_v'}")
    if len(args) > 7 and args[6].shape.elements and args[7].shape.elements:
        if args[6].shape.lens[2] != args[7].shape.lens[2]:
            raise ParseError(f"{_MHA}: past_key and past_value must have matching past_sequence_length")
    if len(args) > 8 and args[8].shape.elements and args[8].shape.dtype is not DType.int32:
        raise ParseError(f"{_MHA}: past_sequence_length must be a int32 tensor")


def _unpack(info: NodeInfo, packed: Instruction, count: int) -> list[Instruction]:
    moved = info.add("transpose", packed, permutation=[3, 0, 1, 2, 4])
    return [
        info.add("squeeze", info.add("slice", moved, axes=[0], starts=[i], ends=[i + 1]), axes=[0])
        for i in range(count)
    ]


def _mha_qkv(info: NodeInfo, p: _MhaParams, args: Args) -> list[Instruction]:
    if p.qkv_format == "qkv_packed":
        return _unpack(info, args[0], 3)
    query = info.add("reshape", args[0], dims=[p.batch_size, p.q_sequence_length, p.num_heads, p.head_size])
    if p.qkv_format == "kv_packed":
        return [query, *_unpack(info, args[1], 2)]
    key, value = args[1], args[2]
    if p.qkv_format == "q_k_v":
        key = info.add("reshape", key, dims=[p.batch_size, p.kv_sequence_length, p.num_heads, p.head_size])
        value = info.add("reshape", value, dims=[p.batch_size, p.kv_sequence_length, p.num_heads, p.head_size_v])
    return [query, key, value]


def _mha_bias(info: NodeInfo, p: _MhaParams, bias: Instruction, qkv: list[Instruction]) -> list[Instruction]:
    b = info.add("unsqueeze", info.add("unsqueeze", bias, axes=[0]), axes=[0])
    h, hv = p.hidden_size, p.hidden_size_v
    parts = [
        (0, h, p.q_sequence_length, h),
        (h, 2 * h, p.kv_sequence_length, h),
        (2 * h, 2 * h + hv, p.kv_sequence_length, hv),
    ]
    biases = [
        info.add(
            "multibroadcast", info.add("slice", b, axes=[2], starts=[lo], ends=[hi]), out_lens=[p.batch_size, seq, n]
        )
        for lo, hi, seq, n in parts
    ]
    heads = [p.head_size, p.head_size, p.head_size_v]
    seqs = [p.q_sequence_length, p.kv_sequence_length, p.kv_sequence_length]
    flat = [info.add("reshape", x, dims=[p.batch_size, s, p.num_heads * hd]) for x, s, hd in zip(qkv, seqs, heads)]
    summed = [info.add("add", bb, x) for bb, x in zip(biases, flat)]
    return [info.add("reshape", x, dims=[p.batch_size, s, p.num_heads, hd]) for x, s, hd in zip(summed, seqs, heads)]


def _mha_mask(info: NodeInfo, mask_index: Instruction, dtype: DType, p: _MhaParams) -> Instruction | None:
    if p.key_pad_mode == "right_pad":
        kv = p.kv_sequence_length
        indices = info.add_literal(np.arange(kv), DType.int32, [kv])
        indices = info.add("multibroadcast", indices, out_lens=[p.batch_size, kv])
        right = info.add("multibroadcast", mask_index, out_lens=[p.batch_size, kv])
        mask_index = info.add("convert", info.add("less", indices, right), target_type=DType.int32)
    elif p.key_pad_mode not in ("direct_2d_pad", "direct_3d_pad"):
        return None
    total = p.kv_sequence_length
    full = [p.batch_size, p.num_heads, total, total]
    pass_value = info.add_literal([0], dtype, [1])
    mask_value = info.add_literal([p.mask_filter_value], dtype, [1])
    bc_pass = info.add("multibroadcast", pass_value, out_lens=full)
    bc_mask = info.add("multibroadcast", mask_value, out_lens=full)
    raw = info.add("reshape", mask_index, dims=[p.batch_size, 1, 1, total])
    raw = info.add("reshape", info.add("multibroadcast", raw, out_lens=full), dims=full)
    in_pass = info.add("convert", bc_pass, target_type=DType.int32)
    in_bool = info.add("convert", info.add("equal", raw, in_pass), target_type=DType.bool)
    return info.add("where", in_bool, bc_mask, bc_pass)


@onnx_op("MultiHeadAttention")
def parse_multi_head_attention(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    if not info.has("num_heads"):
        raise ParseError(f"{_MHA}: num_heads attribute is required")
    p = _MhaParams(
        int(np.int32(info.attr_int("num_heads"))), np.float32(info.attr_float("mask_filter_value", -10000.0))
    )
    if not args or len(args) > 9:
        raise ParseError(
            f"{_MHA}: Wrong number of inputs. Only 'query', 'key', 'value', bias, key_padding_mask, attention_bias, "
            "past_key, past_value, and past_sequence_length inputs are supported."
        )
    _mha_check_query(args, p)
    _mha_check_rest(args, p)
    query, key, value = _mha_qkv(info, p, args)
    if p.qkv_biased:
        query, key, value = _mha_bias(info, p, args[3], [query, key, value])
    perm = [0, 2, 1, 3]
    query = info.add("transpose", query, permutation=perm)
    if p.qkv_format != "q_k_v_cross":
        key = info.add("transpose", key, permutation=perm)
        value = info.add("transpose", value, permutation=perm)
    present: list[Instruction] = []
    if len(args) > 7 and args[6].shape.elements > 0 and args[7].shape.elements > 0:
        if len(args) > 8 and args[8].shape.elements > 0:
            seqlens = args[8]
        else:
            seqlens = info.add_literal(np.zeros(p.batch_size), DType.int32, [p.batch_size])
        key = info.add("concat_past_present", key, seqlens, args[6], kv_num_heads=p.num_heads)
        value = info.add("concat_past_present", value, seqlens, args[7], kv_num_heads=p.num_heads)
        present = [key, value]
    mask = _mha_mask(info, args[4], query.shape.dtype, p) if len(args) > 4 else None
    bias = args[5] if len(args) > 5 else None
    scale = np.float32(1 / math.sqrt(p.head_size)) if p.head_size else np.float32(np.inf)
    if info.has("scale"):
        scale = np.float32(info.attr_float("scale"))
    scale_literal = info.add_literal(scale, query.shape.dtype)
    result = info.add("dot", query, info.add("transpose", key, permutation=[0, 1, 3, 2]))
    if bias is not None:
        result = info.add_common_op("add", result, bias)
    if mask is not None:
        result = info.add_common_op("add", result, mask)
    result = info.add_common_op("mul", result, scale_literal)
    result = info.add("dot", info.add("softmax", result, axis=-1), value)
    result = info.add("transpose", result, permutation=perm)
    result = info.add("reshape", result, dims=[p.batch_size, p.q_sequence_length, p.hidden_size_v])
    return [result, *present]


# -- Attention -----------------------------------------------------------------------------------


def _attention_attributes(info: NodeInfo) -> dict:
    attrs: dict = {"num_heads": 1, "qkv": [0, 0, 0], "scale": np.float32(0.0)}
    if info.has("do_rotary") and info.attr_int("do_rotary") == 1:
        raise ParseError("PARSE_ATTENTION: Rotary Embedding in Attention OP not supported")
    attrs["mask_filter"] = np.float32(info.attr_float("mask_filter_value", -10000.0))
    if not info.has("num_heads"):
        raise ParseError("PARSE_ATTENTION: num_heads attribute required")
    attrs["num_heads"] = int(info.attr_int("num_heads") or 0)
    if info.has("qkv_hidden_sizes"):
        value = info.value("qkv_hidden_sizes")
        if value is None or value.dtype != np.int64:
            raise ParseError("PARSE_ATTENTION: qkv_hidden_sizes must be int64 type")
        sizes = [int(v) for v in value.reshape(-1)]
        if len(sizes) != 3:
            raise ParseError("PARSE_ATTENTION: qkv_hidden_sizes must have exactly 3 values")
        if sizes[0] != sizes[1]:
            raise ParseError("Attention: q and k hidden sizes must be identitical!")
        if 0 in sizes:
            raise ParseError("PARSE_ATTENTION: qkv_hidden_sizes must be nonzero and valid")
        attrs["qkv"] = sizes
    if info.has("rotary_embedding_dim"):
        if info.attr_int("rotary_embedding_dim") not in (32, 64, 128):
            raise ParseError("PARSE_ATTENTION: rotary_embedding_dim must be either 32, 64, or 128")
        raise ParseError("PARSE_ATTENTION: rotary_embedding_dim must be used with do_rotary attribute")
    if info.has("scale"):
        attrs["scale"] = np.float32(info.attr_float("scale"))
    if info.has("unidirectional") and info.attr_int("unidirectional") == 1:
        raise ParseError("PARSE_ATTENTION: unidirectional attr not supported")
    return attrs


def _check_attention_mask(lens: tuple[int, ...], batch: int, seq: int) -> None:
    if len(lens) == 1:
        raise ParseError("Attention: Left/Right Padding not currently supported")
    if len(lens) == 2:
        if lens[0] != batch or lens[1] != seq:
            raise ParseError(
                "Attention: Invalid Mask_Index shape\n Use (batch, total_sequence_length) for shapes of size 2"
            )
    elif len(lens) == 3:
        if lens[0] != batch or lens[1] != seq or lens[2] != seq:
            raise ParseError(
                "Attention: Invalid Mask_Index shape\n Use (batch, sequence_length, total_sequence_length) for "
                "shapes of size 3"
            )
        raise ParseError("Attention: Mask_index 3D masking not supported")
    elif len(lens) == 4:
        if lens[0] != batch or lens[1] != 1 or lens[2] != lens[3]:
            raise ParseError(
                "Attention: Invalid Mask_Index shape\n Use (batch, 1, max_sequence_length, max_sequence_length) for "
                "shapes of size 4"
            )
        raise ParseError("Attention: Mask_index 4D Megatron masking not supported")
    else:
        raise ParseError("Attention: Mask_index Require shape of size either 1, 2, 3, 4 dimensions")


@onnx_op("Attention")
def parse_attention(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction | list[Instruction]:
    if parser.opset_version >= 23 and not info.has("num_heads"):
        return _parse_onnx_attention(info, args)
    if not 2 <= len(args) <= 7:
        raise ParseError("Attention: Wrong number of inputs provided")
    attrs = _attention_attributes(info)
    x, weights = args[0], args[1]
    if x.shape.ndim != 3:
        raise ParseError("Attention: Input must have shape defiend as (batch, sequence_length, hidden_size")
    batch, seq, hidden = x.shape.lens
    num_heads = attrs["num_heads"]
    qkv = attrs["qkv"]
    w = weights.shape
    if w.lens[0] != hidden:
        raise ParseError("Attention: Input hidden size must be the same for input and weight tensors")
    if w.dtype is not x.shape.dtype:
        raise ParseError("Attention: Input and weight datatype must be the same")
    if w.lens[1] % 3 != 0:
        if any(v <= 0 for v in qkv):
            raise ParseError("Attention: QKV size attribute must be set with non even weights")
    elif any(v <= 0 for v in qkv):
        qkv = [w.lens[1] // 3] * 3
    if sum(qkv) != w.lens[1]:
        raise ParseError("Attention: q k v hidden sizes sum must match weights tensor 1 dimension")
    bias = args[2] if len(args) > 2 else None
    if bias is not None:
        if sum(qkv) != bias.shape.lens[0]:
            raise ParseError("Attention: q k v hidden sizes sum must match bias tensor 0 dimension")
        if x.shape.dtype is not bias.shape.dtype:
            raise ParseError("Attention: input bias must be the same type as input vector")
        if bias.shape.ndim != 1:
            raise ParseError("Attention: Bias requires tensor of (hidden_size + hidden_size + v_hidden_size) ")
    mask = args[3] if len(args) > 3 else None
    if mask is not None:
        if mask.shape.dtype is not DType.int32:
            raise ParseError("Attention: Mask_Index type must be int32 type")
        _check_attention_mask(mask.shape.lens, batch, seq)
    if len(args) > 4:
        raise ParseError("Attention: Past Not supported")

    stacked = info.add("unsqueeze", weights, axes=[0])
    stacked = info.add("multibroadcast", stacked, out_lens=[batch, *stacked.shape.lens[1:]])
    result = info.add("dot", x, stacked)
    if bias is not None:
        result = info.add_common_op("add", result, bias)
    bounds = [0, qkv[0], qkv[0] + qkv[1], qkv[0] + qkv[1] + qkv[2]]
    mats = [info.add("slice", result, axes=[2], starts=[bounds[i]], ends=[bounds[i + 1]]) for i in range(3)]
    attn_mask = None
    if mask is not None and mask.shape.ndim > 1:
        dtype = x.shape.dtype
        full = [batch, num_heads, seq, seq]
        bc_pass = info.add("multibroadcast", info.add_literal([0], dtype, [1]), out_lens=full)
        bc_mask = info.add("multibroadcast", info.add_literal([attrs["mask_filter"]], dtype, [1]), out_lens=full)
        raw = info.add("reshape", mask, dims=[batch, 1, 1, seq])
        raw = info.add("reshape", info.add("multibroadcast", raw, out_lens=full), dims=full)
        in_pass = info.add("convert", bc_pass, target_type=mask.shape.dtype)
        in_bool = info.add("convert", info.add("equal", raw, in_pass), target_type=DType.bool)
        attn_mask = info.add("where", in_bool, bc_mask, bc_pass)
    scale_set = attrs["scale"] != 0
    scale_value = attrs["scale"] if scale_set else np.float32(hidden // num_heads)
    scale = info.add_literal(scale_value, mats[0].shape.dtype)
    if not scale_set:
        scale = info.add("recip", info.add("sqrt", scale))
    heads = []
    for m in mats:
        lens = m.shape.lens
        split = info.add("reshape", m, dims=[lens[0], lens[1], num_heads, lens[2] // num_heads])
        heads.append(split)
    q, k, v = (info.add("transpose", h, permutation=[0, 2, 1, 3]) for h in heads)
    out = info.add("dot", q, info.add("transpose", k, permutation=[0, 1, 3, 2]))
    if attn_mask is not None:
        out = info.add_common_op("add", out, attn_mask)
    out = info.add_common_op("mul", out, scale)
    out = info.add("dot", info.add("softmax", out, axis=3), v)
    out = info.add("transpose", out, permutation=[0, 2, 1, 3])
    lens = out.shape.lens
    return info.add("reshape", out, dims=[lens[0], lens[1], lens[2] * lens[3]])


# -- rotary embedding ------------------------------------------------------------------------------


def rotary_embedding(
    info: NodeInfo, x: Instruction, positions: Instruction, cos: Instruction, sin: Instruction, interleaved: bool
) -> Instruction:
    """MIGraphX's rotary_embedding op builder: `x` {batch, heads, seq, head} rotated by the rows of the
    cos/sin caches ({max_seq, head / 2}) that the positions pick (one per batch, one per token, or
    one start position counted up along the sequence)."""
    lens = x.shape.lens
    if len(lens) != 4:
        raise ParseError(
            "rotary_embedding: expected input of rank 4 with layout [batch, heads, seq, head_size] in 4-arg mode"
        )
    cos, sin = _gather_rotary_cache(info, lens, positions, cos, sin, interleaved)
    return _apply_rotation(info, x, cos, sin, interleaved)


def _gather_rotary_cache(
    info: NodeInfo, lens: tuple[int, ...], positions: Instruction, cos: Instruction, sin: Instruction, interleaved: bool
) -> tuple[Instruction, Instruction]:
    batch, _, seq, head = lens
    if head % 2:
        raise ParseError(
            "rotary_embedding: head_size must be even so that head_size/2 can be used for rotary embedding"
        )
    for name, cache in (("cos_cache", cos), ("sin_cache", sin)):
        if not cache.shape.lens or cache.shape.lens[-1] != head // 2:
            raise ParseError(
                f"rotary_embedding: {name} last dimension must equal head_size/2 to be compatible with input"
            )
    count = positions.shape.elements
    if count == batch * seq and seq > 1:
        indices = info.add("reshape", positions, dims=[batch, seq, 1])
    else:
        if count == 1 and batch > 1:
            start = info.add("reshape", positions, dims=[1, 1, 1])
            start = info.add("multibroadcast", start, out_lens=[batch, 1, 1])
        else:
            start = info.add("reshape", positions, dims=[batch, 1, 1])
        if seq > 1:
            start = info.add("multibroadcast", start, out_lens=[batch, seq, 1])
            steps = info.add_literal(np.arange(seq), positions.shape.dtype, [1, seq, 1])
            steps = info.add("multibroadcast", steps, out_lens=[batch, seq, 1])
            indices = info.add_common_op("add", start, steps)
        else:
            indices = start
    gathered = [info.add("gathernd", cache, indices, batch_dims=0) for cache in (cos, sin)]
    if interleaved:
        gathered = [info.add("reshape", g, dims=[g.shape.elements, 1]) for g in gathered]
    doubled = [info.add("concat", g, g, axis=-1) for g in gathered]
    cos, sin = (info.add("reshape", d, dims=[batch, 1, seq, head]) for d in doubled)
    return cos, sin


def _apply_rotation(
    info: NodeInfo, x: Instruction, cos: Instruction, sin: Instruction, interleaved: bool
) -> Instruction:
    lens = list(x.shape.lens)
    width = lens[-1]
    half = width // 2
    signs = info.add_literal(np.array([-1.0, 1.0], np.float32), x.shape.dtype, [2])
    if interleaved:
        signs = info.add("reshape", signs, dims=[1, 2])
        signs = info.add("multibroadcast", signs, out_lens=[half, 2])
        signs = info.add("reshape", signs, dims=[width])
        pairs = info.add("reshape", x, dims=[x.shape.elements // 2, 2])
        evens = info.add("slice", pairs, axes=[1], starts=[0], ends=[1])
        odds = info.add("slice", pairs, axes=[1], starts=[1], ends=[2])
        rotated = info.add("reshape", info.add("concat", odds, evens, axis=-1), dims=lens)
    else:
        signs = info.add("reshape", signs, dims=[2, 1])
        signs = info.add("multibroadcast", signs, out_lens=[2, half])
        signs = info.add("reshape", signs, dims=[width])
        first = info.add("slice", x, axes=[-1], starts=[0], ends=[half])
        second = info.add("slice", x, axes=[-1], starts=[half], ends=[width])
        rotated = info.add("concat", second, first, axis=-1)
    signs = info.add("multibroadcast", signs, out_lens=lens)
    by_cos = info.add_common_op("mul", x, cos)
    by_sin = info.add_common_op("mul", signs, sin)
    by_sin = info.add_common_op("mul", rotated, by_sin)
    return info.add_common_op("add", by_cos, by_sin)


_ROTARY = "RotaryEmbedding"


@dataclass
class _RotaryParams:
    interleaved: bool = False
    num_heads: int = 0
    rotary_dim: int = 0
    batch: int = 0
    seq: int = 0
    head: int = 0
    hidden: int = 0
    bnsh: bool = False


def _rotary_attributes(info: NodeInfo) -> _RotaryParams:
    p = _RotaryParams(interleaved=bool(info.attr_int("interleaved", 0)))
    if info.has("is_packed_batching") and info.attr_int("is_packed_batching"):
        raise ParseError(f"{_ROTARY}: is_packed_batching aka ragged batching is not supported.")
    p.num_heads = info.attr_int("num_heads", 0) or 0
    p.rotary_dim = info.attr_int("rotary_embedding_dim", 0) or 0
    if info.has("scale") and info.attr_float("scale") != 1.0:
        raise ParseError(f"{_ROTARY}: scale is not supported.")
    if (p.num_heads != 0) != (p.rotary_dim != 0):
        raise ParseError(f"{_ROTARY}: num_heads and rotary_embedding dims must be used together and non-zero")
    return p


def _rotary_inputs(args: Args, p: _RotaryParams) -> None:
    lens = args[0].shape.lens
    if len(lens) not in (3, 4):
        raise ParseError(
            f"{_ROTARY}:Input must be 3D (Batch , Sequence Length, Hidden size) or 4D (Batch, Num Heads, "
            "Sequence Length, Head Size))"
        )
    p.batch = lens[0]
    if len(lens) == 3:
        p.seq, p.hidden = lens[1], lens[2]
    else:
        p.num_heads, p.seq, p.head = lens[1], lens[2], lens[3]
        p.hidden = p.num_heads * p.head
        p.bnsh = True
    positions = args[1].shape
    if positions.ndim > 2 or positions.scalar:
        raise ParseError(
            f"{_ROTARY}: Position_ids must be either 1D tensor of shape (1) or 2d (Batch, Sequence Length)"
        )
    if positions.ndim == 1 and positions.lens[0] != 1:
        raise ParseError(f"{_ROTARY}: Position_id must have shape of 1 for 1D tensor")
    if positions.ndim == 2 and positions.lens != (p.batch, p.seq):
        raise ParseError(f"{_ROTARY}: Position_id 2D dims must match input batch size and sequence length")
    cos_lens, sin_lens = args[2].shape.lens, args[3].shape.lens
    if len(cos_lens) != 2 or len(sin_lens) != 2:
        # MIGraphX reads the second dimension unchecked; a clear refusal here
        raise ParseError(f"{_ROTARY}: cos_cache and sin_cache must be 2-D (max sequence length, rotary dim / 2)")
    if p.num_heads == 0:
        p.head = cos_lens[1] * 2
        p.num_heads = p.hidden // p.head
    else:
        p.head = p.hidden // p.num_heads
    if p.rotary_dim == 0:
        p.rotary_dim = p.head
    elif p.head < p.rotary_dim:
        raise ParseError(f"{_ROTARY}: rotary_embedding_dim must be <= head_size")
    _check_rotary_cache_width(cos_lens[1], p)
    if cos_lens[0] != sin_lens[0]:
        raise ParseError(f"{_ROTARY}: max_sequence_length must be the same between sin & cos caches!")
    _check_rotary_cache_width(sin_lens[1], p)


def _check_rotary_cache_width(width: int, p: _RotaryParams) -> None:
    if p.rotary_dim != 0 and p.rotary_dim // 2 != width:
        raise ParseError(f"{_ROTARY}: rotary_embedding must be the same between sin & cos caches!")


def _onnx_rotary_embedding(info: NodeInfo, args: Args) -> Instruction:
    """ONNX's RotaryEmbedding (opset 23; mgxir's own: MIGraphX parses only the contrib op, whose
    second input is position_ids): X (batch, heads, sequence, size) or (batch, sequence, hidden)
    with num_heads, cos and sin caches (batch, sequence, rotary / 2) or (positions, rotary / 2) read
    at position_ids; halves or interleaved pairs rotated, the rest of each head kept."""
    x, cos, sin = args[0], args[1], args[2]
    if x.shape.is_dynamic or x.shape.ndim not in (3, 4):
        raise ParseError(f"{_ROTARY}: X must be static of rank 3 or 4")
    lens = list(x.shape.lens)
    heads = info.attr_int("num_heads", 0)
    if x.shape.ndim == 3:
        if not heads or lens[2] % heads:
            raise ParseError(f"{_ROTARY}: a 3-d X needs num_heads dividing its hidden size {lens[2]}")
        x = info.add("reshape", x, dims=[lens[0], lens[1], heads, lens[2] // heads])
    else:
        x = info.add("transpose", x, permutation=[0, 2, 1, 3])
    batch, seq, heads, size = x.shape.lens
    rotary = info.attr_int("rotary_embedding_dim", 0) or size
    half = rotary // 2
    if len(args) > 3 and args[3].op.name != "undefined":
        cos, sin = (info.add("gather", cache, args[3], axis=0) for cache in (cos, sin))
    if any(tuple(c.shape.lens) != (batch, seq, half) for c in (cos, sin)) or rotary > size or rotary % 2:
        raise ParseError(f"{_ROTARY}: caches must be ({batch}, {seq}, {half}) for rotary dimension {rotary}")
    cos, sin = (
        info.add("multibroadcast", info.add("unsqueeze", c, axes=[2]), out_lens=[batch, seq, heads, half])
        for c in (cos, sin)
    )
    rotated = info.add("slice", x, axes=[3], starts=[0], ends=[rotary]) if rotary < size else x
    interleaved = bool(info.attr_int("interleaved", 0))
    if interleaved:
        pairs = info.add("reshape", info.add("contiguous", rotated), dims=[batch, seq, heads, half, 2])
        x1, x2 = (
            info.add("squeeze", info.add("slice", pairs, axes=[4], starts=[k], ends=[k + 1]), axes=[4]) for k in (0, 1)
        )
    else:
        x1, x2 = (info.add("slice", rotated, axes=[3], starts=[k * half], ends=[(k + 1) * half]) for k in (0, 1))
    real = info.add("sub", info.add("mul", cos, x1), info.add("mul", sin, x2))
    imag = info.add("add", info.add("mul", sin, x1), info.add("mul", cos, x2))
    if interleaved:
        pairs = info.add("concat", *(info.add("unsqueeze", v, axes=[4]) for v in (real, imag)), axis=4)
        out = info.add("reshape", pairs, dims=[batch, seq, heads, rotary])
    else:
        out = info.add("concat", real, imag, axis=3)
    if rotary < size:
        out = info.add("concat", out, info.add("slice", x, axes=[3], starts=[rotary], ends=[size]), axis=3)
    if len(lens) == 3:
        return info.add("reshape", out, dims=lens)
    return info.add("transpose", out, permutation=[0, 2, 1, 3])


@onnx_op("RotaryEmbedding")
def parse_rotary_embedding(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if len(args) > 1 and args[1].shape.dtype.is_float:  # ONNX's own: cos_cache second, not position_ids
        return _onnx_rotary_embedding(info, args)
    if len(args) != 4:
        raise ParseError(f"{_ROTARY}: Wrong number of inputs provided require 4")
    p = _rotary_attributes(info)
    _rotary_inputs(args, p)
    x = args[0]
    if not p.bnsh:
        x = info.add("reshape", x, dims=[p.batch, p.seq, p.num_heads, p.head])
        x = info.add("transpose", x, permutation=[0, 2, 1, 3])
    tail = None
    if p.head > p.rotary_dim:
        tail = info.add("slice", x, axes=[-1], starts=[p.rotary_dim], ends=[p.head])
        x = info.add("slice", x, axes=[-1], starts=[0], ends=[p.rotary_dim])
    out = rotary_embedding(info, x, args[1], args[2], args[3], p.interleaved)
    if tail is not None:
        out = info.add("concat", out, tail, axis=-1)
    if not p.bnsh:
        out = info.add("transpose", out, permutation=[0, 2, 1, 3])
        out = info.add("reshape", out, dims=[p.batch, p.seq, p.hidden])
    return out


# -- GroupQueryAttention ---------------------------------------------------------------------------

_GQA = "GroupQueryAttention"


@dataclass
class _GqaParams:
    num_heads: int
    kv_num_heads: int
    do_rotary: bool = False
    interleaved: bool = False
    local_window: int = -1
    scale: float = 0.0


def _gqa_attributes(info: NodeInfo) -> _GqaParams:
    do_rotary = bool(info.attr_int("do_rotary", 0))
    if not info.has("kv_num_heads"):
        raise ParseError(f"{_GQA}: Attribute 'kv_num_heads' is required but was not provided.")
    kv_num_heads = info.attr_int("kv_num_heads")
    local_window = info.attr_int("local_window_size", -1)
    if not info.has("num_heads"):
        raise ParseError(f"{_GQA}: Attribute 'num_heads' is required but was not provided.")
    p = _GqaParams(info.attr_int("num_heads"), kv_num_heads, do_rotary, local_window=local_window)
    p.interleaved = bool(info.attr_int("rotary_interleaved", 0))
    p.scale = float(np.float32(info.attr_float("scale", 0.0)))
    if info.has("softcap") and info.attr_float("softcap") != 0.0:
        raise ParseError(f"{_GQA}: non-zero softcap is not yet supported.")
    if p.num_heads <= 0 or p.kv_num_heads <= 0:
        # MIGraphX divides by them unchecked; a clear refusal here
        raise ParseError(f"{_GQA}: num_heads and kv_num_heads must be positive")
    return p


def _gqa_scores(
    info: NodeInfo, p: _GqaParams, q: Instruction, k: Instruction, past: Instruction, head_size: int
) -> Instruction:
    """Scaled q.k^T where future keys, keys past each batch's length and (with a local window) keys
    too far back are -inf, in MIGraphX's instruction order."""
    batch, _, sequence, _ = q.shape.lens
    max_sequence = k.shape.lens[2]
    scores = info.add("dot", q, info.add("transpose", k, permutation=[0, 1, 3, 2]))
    bnsm = [batch, p.num_heads, sequence, max_sequence]
    index_type = past.shape.dtype
    dtype = q.shape.dtype
    key_range = info.add_literal(np.arange(max_sequence), index_type, [max_sequence])
    key_range = info.add("multibroadcast", key_range, out_lens=bnsm)
    minus_inf = info.add_literal(np.float32(-np.inf), dtype, [1])
    minus_inf = info.add("multibroadcast", minus_inf, out_lens=bnsm)
    scale = p.scale if p.scale != 0.0 else float(np.float32(1.0) / np.sqrt(np.float32(head_size)))
    scale_literal = info.add("multibroadcast", info.add_literal(scale, dtype, [1]), out_lens=bnsm)
    scores = info.add("mul", scores, scale_literal)
    query_range = None
    if sequence > 1:
        query_range = info.add_literal(np.arange(sequence), index_type, [sequence])
        query_range = info.add("reshape", query_range, dims=[sequence, 1])
        query_range = info.add("multibroadcast", query_range, out_lens=bnsm)
        causal = info.add("convert", info.add("greater", key_range, query_range), target_type=DType.bool)
        scores = info.add("where", causal, minus_inf, scores)
    lengths = info.add("reshape", past, dims=[batch, p.num_heads, 1, 1])
    lengths = info.add("multibroadcast", lengths, out_lens=bnsm)
    if p.local_window > 0:
        prompt = query_range is not None
        window = info.add_literal(-p.local_window if prompt else -(p.local_window + 1), index_type, [1])
        window = info.add("multibroadcast", window, out_lens=bnsm)
        start = info.add("add", query_range if query_range is not None else lengths, window)
        outside = info.add("convert", info.add("greater", start, key_range), target_type=DType.bool)
        scores = info.add("where", outside, minus_inf, scores)
    beyond = info.add("convert", info.add("greater", key_range, lengths), target_type=DType.bool)
    return info.add("where", beyond, minus_inf, scores)


@onnx_op("GroupQueryAttention")
def parse_group_query_attention(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    p = _gqa_attributes(info)
    if not 7 <= len(args) <= 11:
        raise ParseError(f"{_GQA}: Wrong number of inputs provided")
    qkv = args[0]
    if len(args[1].shape.lens) > 1:
        qkv = info.add("concat", args[0], args[1], args[2], axis=2)
    if qkv.shape.ndim != 3:
        raise ParseError(f"{_GQA}: query must be 3-D (batch, sequence, hidden), got {qkv.shape.ndim}-D")
    batch, sequence, hidden = qkv.shape.lens
    heads = p.num_heads + 2 * p.kv_num_heads
    head_size = hidden // heads
    packed = info.add("reshape", qkv, dims=[batch, sequence, heads, head_size])
    packed = info.add("transpose", packed, permutation=[0, 2, 1, 3])
    qk_heads = p.num_heads + p.kv_num_heads
    qk = info.add("slice", packed, axes=[1], starts=[0], ends=[qk_heads])
    new_v = info.add("slice", packed, axes=[1], starts=[qk_heads], ends=[heads])
    seqlens = args[5]
    if p.do_rotary:
        positions = seqlens
        if sequence > 1:
            positions = info.add_literal(0, seqlens.shape.dtype, [1])
        qk = rotary_embedding(info, qk, positions, args[7], args[8], p.interleaved)
    q = info.add("slice", qk, axes=[1], starts=[0], ends=[p.num_heads])
    new_k = info.add("slice", qk, axes=[1], starts=[p.num_heads], ends=[qk_heads])
    k = info.add("concat_past_present", new_k, seqlens, args[3], kv_num_heads=p.kv_num_heads)
    v = info.add("concat_past_present", new_v, seqlens, args[4], kv_num_heads=p.kv_num_heads)
    present = [k, v]
    past = info.add("multibroadcast", seqlens, out_lens=[batch, p.num_heads])
    group = p.num_heads // p.kv_num_heads
    if group != 1:
        grouped_lens = list(k.shape.lens)
        grouped_lens[1] = p.num_heads
        k, v = (info.add("unsqueeze", t, axes=[2]) for t in (k, v))
        spread = list(k.shape.lens)
        spread[2] = group
        k, v = (info.add("multibroadcast", t, out_lens=spread) for t in (k, v))
        k, v = (info.add("reshape", t, dims=grouped_lens) for t in (k, v))
    scores = _gqa_scores(info, p, q, k, past, head_size)
    out = info.add("dot", info.add("softmax", scores, axis=3), v)
    out = info.add("transpose", out, permutation=[0, 2, 1, 3])
    out = info.add("reshape", out, dims=[batch, sequence, head_size * p.num_heads])
    return [out, *present]


# -- Attention as ONNX opset 23 defines it (mgxir's own: MIGraphX parses only the contrib op) ---------


def _given(args: Args, index: int) -> Instruction | None:
    if index >= len(args) or args[index].op.name == "undefined":
        return None
    return args[index]


def _heads_first(info: NodeInfo, x: Instruction, heads: int | None, name: str) -> Instruction:
    """(batch, sequence, heads * size) as (batch, heads, sequence, size); a 4-d input as it is."""
    if x.shape.ndim == 4:
        return x
    if x.shape.ndim != 3 or not heads:
        raise ParseError(f"Attention: {name} must be 4-d, or 3-d with q_num_heads and kv_num_heads")
    batch, seq, hidden = x.shape.lens
    if hidden % heads:
        raise ParseError(f"Attention: {name}'s hidden size {hidden} is not a multiple of {heads} heads")
    x = info.add("reshape", info.make_contiguous(x), dims=[batch, seq, heads, hidden // heads])
    return info.add("transpose", x, permutation=[0, 2, 1, 3])


def _repeat_heads(info: NodeInfo, x: Instruction, times: int) -> Instruction:
    """Each head `times` times in a row, [h0, h0, h1, h1, ...] (grouped-query attention)."""
    batch, heads, seq, size = x.shape.lens
    x = info.add("unsqueeze", x, axes=[2])
    x = info.add("multibroadcast", x, out_lens=[batch, heads, times, seq, size])
    return info.add("reshape", info.add("contiguous", x), dims=[batch, heads * times, seq, size])


def _allowed_band(
    info: NodeInfo, q_seq: int, kv_seq: int, offset: int | Instruction, left: int, right: int
) -> Instruction | np.ndarray:
    """Which key j the query i (at offset + i among the keys) attends: offset + i - j within
    [-right, left] (a negative bound is no bound; causal is left unbounded, right 0)."""
    if isinstance(offset, int):
        diff = np.arange(q_seq)[:, None] + offset - np.arange(kv_seq)[None, :]
        allowed = np.ones_like(diff, bool)
        if left >= 0:
            allowed &= diff <= left
        if right >= 0:
            allowed &= -diff <= right
        return allowed
    rows = info.add_literal(np.arange(q_seq).reshape(q_seq, 1), DType.int64)
    columns = info.add_literal(np.arange(kv_seq).reshape(1, kv_seq), DType.int64)
    diff = info.add_common_op("sub", info.add_common_op("add", rows, offset), columns)
    allowed = None
    for bound, sign in ((left, 1), (right, -1)):
        if bound < 0:
            continue
        # sign * diff <= bound, as sign * diff < bound + 1 in integers
        limit = info.add_literal(np.array([sign * (bound + 1)]), DType.int64)
        within = info.add_common_op("less" if sign > 0 else "greater", diff, limit)
        allowed = within if allowed is None else info.add_common_op("logical_and", allowed, within)
    assert allowed is not None
    return allowed


def _add_bias(info: NodeInfo, bias: Instruction | None, allowed: Instruction | np.ndarray, dtype: DType) -> Instruction:
    """`bias` plus 0 where `allowed` and -inf elsewhere."""
    if isinstance(allowed, np.ndarray):
        extra = info.add_literal(np.where(allowed, 0.0, -np.inf), dtype, list(allowed.shape))
    else:
        zero = info.add_literal(np.zeros(1), dtype)
        minus_inf = info.add_literal(np.full(1, -np.inf), dtype)
        extra = info.add_common_op("where", allowed, zero, minus_inf)
    return extra if bias is None else info.add_common_op("add", bias, extra)


def _parse_onnx_attention(info: NodeInfo, args: Args) -> list[Instruction]:
    """ONNX's Attention (opset 23): scaled dot-product attention of 4-d (batch, heads, sequence, size)
    or 3-d (batch, sequence, hidden) Q, K, V, with grouped-query heads, a boolean or additive mask,
    a causal mask, a key/value cache, softcap, and the four outputs (Y, present key and value, the
    QK product at the stage `qk_matmul_output_mode` names), computed as ONNX's reference does."""
    if len(args) < 3:
        raise ParseError(f"Attention: Q, K and V are needed, got {len(args)} inputs")
    nonpad = _given(args, 6)
    left, right = info.attr_int("left_window_size", -1), info.attr_int("right_window_size", -1)
    q_heads, kv_heads = info.attr_int("q_num_heads", 0), info.attr_int("kv_num_heads", 0)
    three_d = args[0].shape.ndim == 3
    q = _heads_first(info, args[0], q_heads, "Q")
    k = _heads_first(info, args[1], kv_heads, "K")
    v = _heads_first(info, args[2], kv_heads, "V")
    dtype = q.shape.dtype
    past_key, past_value = _given(args, 4), _given(args, 5)
    if (past_key is None) != (past_value is None):
        raise ParseError("Attention: past_key and past_value must be given together")
    if nonpad is not None and past_key is not None:
        raise ParseError("Attention: nonpad_kv_seqlen cannot be combined with past_key and past_value")
    if past_key is not None and past_value is not None:
        k = info.add("concat", past_key, k, axis=2)
        v = info.add("concat", past_value, v, axis=2)
    present_key, present_value = k, v
    q_seq, kv_seq = q.shape.lens[2], k.shape.lens[2]

    bias: Instruction | None = None
    mask = _given(args, 3)
    if mask is not None:
        if mask.shape.dtype is DType.bool:
            zero = info.add_literal(np.zeros(1), dtype)
            minus_inf = info.add_literal(np.full(1, -np.inf), dtype)
            mask = info.add_common_op("where", mask, zero, minus_inf)
        missing = kv_seq - mask.shape.lens[-1]
        if missing > 0:  # a mask shorter than the keys masks the rest
            lens = [*mask.shape.lens[:-1], missing]
            mask = info.add("concat", mask, info.add_literal(np.full(lens, -np.inf), dtype, lens), axis=-1)
        bias = mask
    # where each query block starts among the keys: after the cache, or per batch after the
    # keys that are not padding (an external cache)
    offset: int | Instruction = past_key.shape.lens[2] if past_key is not None else 0
    if nonpad is not None:
        lengths = info.add("reshape", info.add("convert", nonpad, target_type=DType.int64), dims=[-1, 1, 1, 1])
        offset = info.add_common_op("sub", lengths, info.add_literal(np.array([q_seq]), DType.int64))
    if info.attr_int("is_causal", 0):
        bias = _add_bias(info, bias, _allowed_band(info, q_seq, kv_seq, offset, -1, 0), dtype)
    if left >= 0 or right >= 0:
        bias = _add_bias(info, bias, _allowed_band(info, q_seq, kv_seq, offset, left, right), dtype)
    if nonpad is not None:
        keys = info.add_literal(np.arange(kv_seq).reshape(1, 1, 1, kv_seq), DType.int64)
        bias = _add_bias(info, bias, info.add_common_op("less", keys, lengths), dtype)

    q_heads, kv_heads = q.shape.lens[1], k.shape.lens[1]
    if q_heads != kv_heads:
        if q_heads % kv_heads or v.shape.lens[1] != kv_heads:
            raise ParseError(f"Attention: {q_heads} query heads cannot share {kv_heads} key/value heads")
        k, v = _repeat_heads(info, k, q_heads // kv_heads), _repeat_heads(info, v, q_heads // kv_heads)

    scale = info.attr_float("scale", None)
    root = np.sqrt(1 / np.sqrt(q.shape.lens[3]) if scale is None else scale)
    root_literal = info.add_literal(np.float64(root), dtype)
    k_t = info.add("transpose", info.add_common_op("mul", k, root_literal), permutation=[0, 1, 3, 2])
    qk = info.add("dot", info.add_common_op("mul", q, root_literal), k_t)
    softcap = info.attr_float("softcap", 0.0) or 0.0
    if softcap > 0:
        cap = info.add_literal(np.float64(softcap), dtype)
        qk = info.add_common_op("mul", info.add("tanh", info.add_common_op("div", qk, cap)), cap)
    qk_output = qk
    scores = qk if bias is None else info.add_common_op("add", qk, bias)
    mode = info.attr_int("qk_matmul_output_mode", 0)
    if mode == 2:
        qk_output = scores
    precision = info.attr_int("softmax_precision", 0)
    if precision:
        scores = info.add("convert", scores, target_type=onnx_type(precision))
    probabilities = info.add("softmax", scores, axis=-1)
    if precision:
        probabilities = info.add("convert", probabilities, target_type=dtype)
    if bias is not None:  # a row whose keys are all masked attends to nothing: zeros, as ONNX says
        row_max = info.add("reduce_max", bias, axes=[bias.shape.ndim - 1])
        masked = info.add_common_op("equal", row_max, info.add_literal(np.full(1, -np.inf), dtype))
        zero = info.add_literal(np.zeros(1), dtype)
        probabilities = info.add_common_op("where", masked, zero, probabilities)
    if mode == 3:
        qk_output = probabilities
    y = info.add("dot", probabilities, v)
    if three_d:
        y = info.add("transpose", y, permutation=[0, 2, 1, 3])
        batch, seq = y.shape.lens[:2]
        y = info.add("reshape", info.make_contiguous(y), dims=[batch, seq, -1])
    return [y, present_key, present_value, qk_output]
