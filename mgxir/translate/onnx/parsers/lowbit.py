"""Matrix products with 4-bit block-quantized weights (onnxruntime's contrib ops MatMulNBits and
MatMulBnb4): B unpacked, dequantized per block, transposed, then a dot, as MIGraphX's parsers build them."""

from __future__ import annotations

import math

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError
from mgxir.translate.onnx.registry import onnx_op

Args = list[Instruction]

# bitsandbytes' NF4 code book: the dequantized value of each 4-bit index
NF4_VALUES = (
    -1.0,
    -0.6961928009986877,
    -0.5250730514526367,
    -0.39491748809814453,
    -0.28444138169288635,
    -0.18477343022823334,
    -0.09105003625154495,
    0.0,
    0.07958029955625534,
    0.16093020141124725,
    0.24611230194568634,
    0.33791524171829224,
    0.44070982933044434,
    0.5626170039176941,
    0.7229568362236023,
    1.0,
)


def _lens_text(lens: object) -> str:
    return ", ".join(str(n) for n in lens)  # type: ignore[attr-defined]


def _required_int(info: NodeInfo, name: str, message: str) -> int:
    if not info.has(name):
        raise ParseError(message)
    return info.attr_int(name) or 0


def _check_block_size(block_size: int, message: str) -> None:
    if block_size < 16 or block_size & (block_size - 1):
        raise ParseError(f"{message}{block_size}")


def matmul_weights(info: NodeInfo, a: Instruction, b: Instruction) -> Instruction:
    """a times the rank-2 b: a vector unsqueezed and squeezed back, b broadcast over a's batch dims."""
    rank = a.shape.ndim
    if rank == 1:
        a = info.add("unsqueeze", a, axes=[0])
    elif rank > 2:
        lens = list(a.shape.lens)
        lens[-2:] = b.shape.lens
        b = info.add("multibroadcast", b, out_lens=lens)
    out = info.add("dot", a, b)
    if rank == 1:
        out = info.add("squeeze", out, axes=[out.shape.ndim - 2])
    return out


def _nbits_unpacked(info: NodeInfo, n: int, columns: int, x: Instruction) -> Instruction:
    x = info.add("unpack_int4", info.add("reshape", x, dims=[n, -1]))
    if x.shape.lens[1] > columns:
        x = info.add("slice", x, axes=[1], starts=[0], ends=[columns])
    return x


def _nbits_blockwise(info: NodeInfo, n: int, k: int, block_size: int, x: Instruction) -> Instruction:
    x = info.add("unsqueeze", x, axes=[2])
    lens = list(x.shape.lens)
    lens[2] = block_size
    x = info.add("reshape", info.add("multibroadcast", x, out_lens=lens), dims=[n, -1])
    if x.shape.lens[1] > k:
        x = info.add("slice", x, axes=[1], starts=[0], ends=[k])
    return x


@onnx_op("MatMulNBits")
def parse_matmulnbits(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    n, k, bits, block_size = (
        _required_int(info, name, f"MatMulNBits: Attribute {name} required, but is missing")
        for name in ("N", "K", "bits", "block_size")
    )
    if bits != 4:
        raise ParseError(f"MatMulNBits: bits only supported for value of 4, actual value {bits}")
    _check_block_size(block_size, "MatMulNBits: block_size must be a power of 2 and >=16, actual value ")
    blocks_per_column = (k + block_size - 1) // block_size
    blob_size = math.ceil(block_size * bits / 8)
    expected_b = (n, blocks_per_column, blob_size)
    if args[1].shape.lens != expected_b:
        raise ParseError(
            f"MatMulNBits: Input B does not match expected dims: {_lens_text(expected_b)}. Actual dims: "
            f"{_lens_text(args[1].shape.lens)}"
        )
    if args[2].shape.elements != n * blocks_per_column:
        raise ParseError(
            f"MatMulNBits: Input scales does not match expected dims: {n * blocks_per_column}. Actual dims: "
            f"{_lens_text(args[2].shape.lens)}"
        )
    if len(args) > 3:
        expected_zp = (n * math.ceil(blocks_per_column * bits / 8),)
        if args[3].shape.lens != expected_zp:
            raise ParseError(
                f"MatMulNBits: Input zero_points does not match expected dims: {_lens_text(expected_zp)}. "
                f"Actual dims: {_lens_text(args[3].shape.lens)}"
            )
    b = _nbits_unpacked(info, n, k, args[1])
    scales = _nbits_blockwise(info, n, k, block_size, info.add("reshape", args[2], dims=[n, -1]))
    if len(args) == 4:
        zero_point = _nbits_blockwise(info, n, k, block_size, _nbits_unpacked(info, n, blocks_per_column, args[3]))
    else:
        zero_point = info.add("multibroadcast", info.add_literal([8], DType.uint8), out_lens=list(b.shape.lens))
    b = info.add("dequantizelinear", b, scales, zero_point)
    return matmul_weights(info, args[0], info.add("transpose", b, permutation=[1, 0]))


def _bnb4_check_dims(name: str, ins: Instruction, expected: int) -> None:
    if ins.shape.lens != (expected,):
        raise ParseError(
            f"MatMulBnb4: Input {name} does not match expected dims: {expected}. Actual dims: "
            f"{_lens_text(ins.shape.lens)}"
        )


def _bnb4_dequantized(info: NodeInfo, data: Instruction, absmax: Instruction, quant_type: int) -> Instruction:
    """FP4 as MIGraphX reads it: the 4-bit value over 8 times absmax; NF4 through its code book."""
    if quant_type == 0:
        values = info.add("convert", data, target_type=DType.float)
        eight = info.add("multibroadcast", info.add_literal(np.float32(8.0)), out_lens=list(values.shape.lens))
        return info.add("mul", info.add("div", values, eight), absmax)
    table = info.add_literal(np.array(NF4_VALUES, np.float32), DType.float, [len(NF4_VALUES)])
    indices = info.add("convert", data, target_type=DType.int64)
    return info.add("mul", info.add("gather", table, indices, axis=0), absmax)


@onnx_op("MatMulBnb4")
def parse_matmulbnb4(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    n, k, block_size = (
        _required_int(info, name, f"MatMulBnb4: Attribute {name} is required but missing")
        for name in ("N", "K", "block_size")
    )
    _check_block_size(block_size, "MatMulBnb4: block_size must be a power of 2 and >= 16, actual value: ")
    quant_type = _required_int(info, "quant_type", "MatMulBnb4: Attribute quant_type is required but missing")
    if quant_type not in (0, 1):
        raise ParseError(f"MatMulBnb4: quant_type must be 0 (FP4) or 1 (NF4), actual value: {quant_type}")
    if len(args) < 3:
        raise ParseError("MatMulBnb4: requires exactly 3 inputs (A, B, absmax)")
    a = args[0]  # at least 1-D: an ONNX scalar is a {1} parameter
    if a.shape.lens[-1] != k:
        raise ParseError(f"MatMulBnb4: Input A inner dimension ({a.shape.lens[-1]}) must match attribute K ({k})")
    _bnb4_check_dims("B", args[1], (n * k + 1) // 2)
    _bnb4_check_dims("absmax", args[2], (n * k + block_size - 1) // block_size)
    data = info.add("reshape", info.add("unpack_int4", args[1]), dims=[n, k])
    absmax = info.add("unsqueeze", args[2], axes=[1])
    lens = list(absmax.shape.lens)
    lens[1] = block_size
    # a runt last block fails here, as in MIGraphX (whose slice to N * K after it is never reached)
    absmax = info.add("reshape", info.add("multibroadcast", absmax, out_lens=lens), dims=[n * k])
    absmax = info.add("reshape", absmax, dims=[n, k])
    b = _bnb4_dequantized(info, data, absmax, quant_type)
    return matmul_weights(info, a, info.add("transpose", b, permutation=[1, 0]))
