"""Random ONNX operators: RandomNormal(Like) and RandomUniform(Like) become literals drawn at import,
with the draws of MIGraphX's std::mt19937 and libstdc++'s distributions (same seed, same values)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.shape import Shape
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError, check_literal_size, onnx_type
from mgxir.translate.onnx.registry import onnx_op

Args = list[Instruction]

_VALID = (DType.float, DType.half, DType.double)
_TWO_32 = float(1 << 32)
_BELOW_ONE = math.nextafter(1.0, 0.0)


class _Mt19937Canonical:
    """std::generate_canonical<double, 53> over std::mt19937: two 32-bit draws per value."""

    def __init__(self, seed: int):
        # RandomState(seed) seeds with init_genrand(seed), as std::mt19937(seed) does
        self.state = np.random.RandomState(seed & 0xFFFFFFFF)

    def draws(self, n: int) -> np.ndarray:
        raw = self.state.randint(0, 1 << 32, size=2 * n, dtype=np.uint64).astype(np.float64)
        values = (raw[0::2] + raw[1::2] * _TWO_32) / (_TWO_32 * _TWO_32)
        return np.where(values >= 1.0, _BELOW_ONE, values)


def _uniform(gen: _Mt19937Canonical, n: int, low: float, high: float) -> np.ndarray:
    return gen.draws(n) * (high - low) + low


def _normal(gen: _Mt19937Canonical, n: int, mean: float, stddev: float) -> np.ndarray:
    """libstdc++'s normal_distribution: Marsaglia's polar method, the second value saved."""
    out = np.empty(n, np.float64)
    i = 0
    while i < n:
        x, y = 2.0 * gen.draws(2) - 1.0
        r2 = x * x + y * y
        if r2 > 1.0 or r2 == 0.0:
            continue
        mult = math.sqrt(-2.0 * math.log(r2) / r2)
        out[i] = y * mult * stddev + mean
        if i + 1 < n:
            out[i + 1] = x * mult * stddev + mean
        i += 2
    return out


def _random(info: NodeInfo, args: Args, draw: Callable[[_Mt19937Canonical, int], np.ndarray]) -> Instruction:
    name = info.op_type
    use_dtype = info.has("dtype")
    code = int(info.attr_int("dtype", 1) or 0) if use_dtype else 1
    out_type = onnx_type(code)
    if out_type not in _VALID:
        raise ParseError(f"{name}: invalid output type: {code}. Valid types are 1 (float), 10 (half), and 11 (double).")
    if info.has("shape"):
        lens = [int(np.int32(n)) for n in info.attr_ints("shape") or []]
        shape = Shape.make(out_type, lens)
    elif len(args) == 1:
        arg_type = args[0].shape.dtype
        if arg_type not in _VALID:
            raise ParseError(f"{name}: invalid output type: {arg_type.value}. Valid types are float, half, and double.")
        shape = Shape.make(out_type, args[0].shape.lens) if use_dtype else args[0].shape
    else:
        raise ParseError(f"{name}: cannot deduce shape without shape attribute or argument.")
    check_literal_size(shape)
    seed = int(info.attr_float("seed")) if info.has("seed") else time.perf_counter_ns()
    values = draw(_Mt19937Canonical(seed), shape.elements)
    return info.add_literal(values, out_type, shape.lens)


@onnx_op("RandomNormal", "RandomNormalLike")
def parse_randomnormal(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    mean = float(np.float32(info.attr_float("mean", 0.0)))
    scale = float(np.float32(info.attr_float("scale", 1.0)))
    return _random(info, args, lambda gen, n: _normal(gen, n, mean, scale))


@onnx_op("RandomUniform", "RandomUniformLike")
def parse_randomuniform(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    high = float(np.float32(info.attr_float("high", 1.0)))
    low = float(np.float32(info.attr_float("low", 0.0)))
    return _random(info, args, lambda gen, n: _uniform(gen, n, low, high))


@onnx_op("Multinomial")
def parse_multinomial(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if not args:
        raise ParseError("PARSE_MULTINOMIAL: no arguments given")
    output_type = onnx_type(int(info.attr_int("dtype", 6) or 0))
    if not info.has("sample_size"):
        raise ParseError("PARSE_MULTINOMIAL: sample_size not given")
    sample_size = int(info.attr_int("sample_size") or 0)
    x = args[0]
    maxes = info.add("reduce_max", x, axes=[1])
    cdf = info.add("exp", info.add_common_op("sub", x, maxes))
    cdf = info.add("prefix_scan_sum", cdf, axis=1, exclusive=False)
    if info.has("seed"):
        seed = info.add_literal([np.float32(info.attr_float("seed"))], DType.float, [1])
    else:
        seed = info.add("random_seed")
    s0 = x.shape
    if s0.dyn_dims is not None:
        dims = info.add("dimensions_of", x, end=2)
        batch = info.add("mul", dims, info.add_literal([1, 0], DType.int64, [2]))
        alloc_shape = info.add("add", batch, info.add_literal([0, sample_size], DType.int64, [2]))
        compile_shape = Shape.dynamic(s0.dtype, [s0.dyn_dims[0], (sample_size, sample_size)])
        buffer = info.add("allocate", alloc_shape, shape=compile_shape)
    else:
        # the size is checked before the zeros are made (sample_size 2**31-1 drew 16 GiB)
        lens = [s0.lens[0], sample_size]
        check_literal_size(Shape.make(DType.float, lens))
        buffer = info.add_literal(np.zeros(lens, np.float32), DType.float, lens)
    randoms = info.add("random_uniform", seed, buffer)
    return info.add("multinomial", cdf, randoms, dtype=output_type)
