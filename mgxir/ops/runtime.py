"""Sampling, 4-bit packing, shape-introspection and target-internal operators, and `unknown:`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from mgxir.ir.attributes import BOOL, INT, SHAPE, STRING, TYPE, Attr, OptionalKind
from mgxir.ir.dtype import DType
from mgxir.ir.operation import ComputeError, OpDef, Operation, RunModule, RuntimeValue
from mgxir.ir.registry import register
from mgxir.ir.shape import Shape
from mgxir.ir.traits import ConcatOperand, NeverFolded, Reshaper
from mgxir.ir.values import OpNode
from mgxir.ops.common import fail, lens_text, normalize_axis, require_static, unknown_dims
from mgxir.ops.layout import Reshape, reshape_dims

if TYPE_CHECKING:
    from mgxir.ir.module import Module

Shapes = Sequence[Shape]
Modules = Sequence["Module"]
Arrays = list[np.ndarray]


@register
class Multinomial(OpDef):
    """Inputs (cdf {batch, classes}, uniform samples {batch, n}): the class each sample falls in."""

    name = "multinomial"
    attributes = (Attr("dtype", TYPE, DType.int32),)
    arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        cdf, samples = inputs
        require_static(self.name, cdf, samples)
        if cdf.ndim != 2 or samples.ndim != 2:
            raise fail(self.name, f"inputs need rank 2, got {lens_text(cdf.lens)} and {lens_text(samples.lens)}")
        if op["dtype"] == DType.bool:
            raise fail(self.name, "a boolean output type is invalid")
        return Shape.make(op["dtype"], (cdf.lens[0], samples.lens[1]))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        cdf, samples = (a.astype(np.float64) for a in inputs)
        out = np.empty((cdf.shape[0], samples.shape[1]), op["dtype"].numpy)
        for b in range(cdf.shape[0]):
            out[b] = np.searchsorted(cdf[b], samples[min(b, samples.shape[0] - 1)] * cdf[b, -1], side="right")
        return out


@register
class RandomSeed(OpDef):
    name = "random_seed"
    attributes = (Attr("dtype", TYPE, DType.uint64),)
    arity = (0, 0)
    has_side_effects = True

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        return Shape.scalar_of(op["dtype"])

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        return np.array([np.random.SeedSequence().entropy % 2**32], op["dtype"].numpy)


@register
class RandomUniform(OpDef):
    """Inputs (seed, output buffer): uniform values in [0, 1) (integers: [0, max]) of the buffer's shape.
    MIGraphX draws from std::mt19937; this draws from numpy's MT19937 with the same seed."""

    name = "random_uniform"
    arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        return inputs[1]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        seed = int(inputs[0].reshape(-1)[0])
        generator = np.random.Generator(np.random.MT19937(seed))
        like = inputs[1]
        if like.dtype.kind in "iu":
            return generator.integers(0, np.iinfo(like.dtype).max, like.shape, dtype=like.dtype, endpoint=True)
        return generator.random(like.shape).astype(like.dtype)


class _Int4(OpDef):
    attributes = (Attr("axis", INT, -1),)
    arity = (1, 1)
    axis_attributes = {"axis": "input"}
    factor = 2

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        require_static(self.name, x)
        if x.dtype not in (DType.int8, DType.uint8):
            raise fail(self.name, f"only int8 or uint8 is supported, got {x.dtype.type_name}")
        axis = normalize_axis(self.name, op["axis"], x.ndim)
        lens = list(x.lens)
        if self.factor == 2:
            lens[axis] *= 2
        elif lens[axis] % 2:
            raise fail(self.name, f"cannot pack dimension {axis} of odd length {lens[axis]}")
        else:
            lens[axis] //= 2
        return Shape.make(x.dtype, lens)


@register
class PackInt4(_Int4):
    """Element 2i goes to the low nibble, element 2i+1 to the high nibble."""

    name = "pack_int4"
    factor = 0

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x = inputs[0]
        axis = normalize_axis(self.name, op["axis"], x.ndim)
        bits = np.moveaxis(x, axis, -1).view(np.uint8).astype(np.uint16)
        packed = ((bits[..., 1::2] << 4) | (bits[..., 0::2] & 0xF)).astype(np.uint8)
        return np.moveaxis(packed.view(x.dtype), -1, axis)


@register
class UnpackInt4(_Int4):
    name = "unpack_int4"
    traits = (NeverFolded, ConcatOperand)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x = inputs[0]
        axis = normalize_axis(self.name, op["axis"], x.ndim)
        bits = np.moveaxis(x, axis, -1).view(np.uint8)
        nibbles = np.stack([bits & 0xF, bits >> 4], axis=-1).reshape(*bits.shape[:-1], -1).astype(np.int16)
        if x.dtype == np.int8:
            nibbles = np.where(nibbles >= 8, nibbles - 16, nibbles)
        return np.moveaxis(nibbles.astype(x.dtype), -1, axis)


# the eight magnitudes of fp4 e2m1; bit 3 is the sign
FP4_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


@register
class PackFp4(OpDef):
    """Rounds floats to the nearest fp4 e2m1 value (saturating at 6) and packs pairs in a byte."""

    name = "pack_fp4"
    attributes = (Attr("axis", INT, -1),)
    arity = (1, 1)
    axis_attributes = {"axis": "input"}

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        require_static(self.name, x)
        axis = normalize_axis(self.name, op["axis"], x.ndim)
        if x.lens[axis] % 2:
            raise fail(self.name, f"cannot pack dimension {axis} of odd length {x.lens[axis]}")
        lens = list(x.lens)
        lens[axis] //= 2
        return x.with_lens(lens, DType.fp4x2)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x = np.moveaxis(inputs[0].astype(np.float64), normalize_axis(self.name, op["axis"], inputs[0].ndim), -1)
        # nearest magnitude; argmin takes the first (even mantissa) of two equally near values
        magnitude = np.argmin(np.abs(np.abs(x)[..., None] - FP4_VALUES), axis=-1)
        codes = (magnitude | (np.signbit(x) << 3)).astype(np.uint8)
        packed = (codes[..., 1::2] << 4) | codes[..., 0::2]
        return np.moveaxis(packed.astype(np.uint8), -1, normalize_axis(self.name, op["axis"], inputs[0].ndim))


@register
class UnpackFp4(OpDef):
    name = "unpack_fp4"
    traits = (NeverFolded,)
    attributes = (Attr("axis", INT, -1),)
    arity = (1, 1)
    axis_attributes = {"axis": "input"}

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        require_static(self.name, x)
        if x.dtype != DType.fp4x2:
            raise fail(self.name, f"expects fp4x2_type, got {x.dtype.type_name}")
        axis = normalize_axis(self.name, op["axis"], x.ndim)
        lens = list(x.lens)
        lens[axis] *= 2
        return x.with_lens(lens, DType.fp8e4m3fn)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        axis = normalize_axis(self.name, op["axis"], inputs[0].ndim)
        bits = np.moveaxis(inputs[0].view(np.uint8), axis, -1)
        codes = np.stack([bits & 0xF, bits >> 4], axis=-1).reshape(*bits.shape[:-1], -1)
        values = np.where(codes & 8, -1.0, 1.0) * FP4_VALUES[codes & 7]
        return np.moveaxis(values.astype(DType.fp8e4m3fn.numpy), -1, axis)


@register
class ReshapeLazy(Reshape):
    """`reshape` that only ever aliases its input (the input must be standard)."""

    name = "reshape_lazy"
    traits = (Reshaper,)
    arity = (1, 1)
    is_view = True

    def layout(self, s: Shape, lens: list[int]) -> Shape:
        """MIGraphX's reshape_dims, lazy: the input's strides carried over, or an error."""
        found = reshape_dims(s, lens, lazy=True)
        if found is None:
            raise fail(self.name, "reshape_lazy on axis that is not packed.")
        return found


@register
class DimensionsOf(OpDef):
    name = "dimensions_of"
    attributes = (Attr("start", INT, 0), Attr("end", INT, 0))
    arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        if op["start"] >= op["end"]:
            raise fail(self.name, f"start {op['start']} must be less than end {op['end']}")
        return Shape.make(DType.int64, (op["end"] - op["start"],))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        return np.array(inputs[0].shape[op["start"] : op["end"]], np.int64)


@register
class Fill(OpDef):
    """Inputs (one-element value, buffer): the buffer filled with the value."""

    name = "fill"
    arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        if inputs[0].is_dynamic or inputs[0].elements != 1:
            raise fail(self.name, f"the value must have one element, got {lens_text(inputs[0].lens)}")
        if inputs[0].dtype != inputs[1].dtype:
            raise fail(self.name, f"value is {inputs[0].dtype.type_name}, buffer is {inputs[1].dtype.type_name}")
        return inputs[1]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        return np.full(inputs[1].shape, inputs[0].reshape(-1)[0], inputs[1].dtype)


@register
class ScanSlice(OpDef):
    """Inputs (data, index): the index-th slice along axis (counted from the end when direction=1)."""

    name = "scan_slice"
    attributes = (Attr("axis", INT, 0), Attr("direction", INT, 0))
    arity = (2, 2)
    is_view = True
    axis_attributes = {"axis": "input"}

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x = inputs[0]
        require_static(self.name, x)
        lens = list(x.lens)
        lens[normalize_axis(self.name, op["axis"], x.ndim)] = 1
        return Shape.make(x.dtype, lens, x.strides)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x = inputs[0]
        axis = normalize_axis(self.name, op["axis"], x.ndim)
        i = int(inputs[1].reshape(-1)[0])
        last = x.shape[axis] - 1
        if not 0 <= i <= last:
            raise ComputeError(f"ScanSlice: index {{{i}}} out of range [0, {last}]")
        if op["direction"]:
            i = last - i
        index = [slice(None)] * x.ndim
        index[axis] = slice(i, i + 1)
        return x[tuple(index)]


@register
class ConcatPastPresent(OpDef):
    """Target-internal KV-cache update for group-query attention; result has the cache's shape."""

    name = "concat_past_present"
    attributes = (Attr("kv_num_heads", INT, 0),)
    arity = (3, 3)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        return inputs[-1]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        """Inputs (new {batch, kv_heads, seq, head}, seqlens_k {batch}, cache {batch, kv_heads, max_seq,
        head}): the cache with each head's new rows written at row 0 for a prompt (seq > 1), else at
        row seqlens_k[b]. Offsets are taken in the flat buffers as MIGraphX does."""
        new, seqlens, cache = inputs
        batch, sequence, head_size = new.shape[0], new.shape[2], new.shape[3]
        kv_heads = op["kv_num_heads"]
        cache_rows = cache.shape[2]
        chunk = sequence * head_size
        source = np.ascontiguousarray(new).reshape(-1)
        out = np.array(cache, copy=True).reshape(-1)
        past_lengths = seqlens.reshape(-1).astype(np.int64)
        for b in range(batch):
            past_rows = 0 if sequence != 1 else int(past_lengths[b])
            for h in range(kv_heads):
                start = (b * kv_heads + h) * cache_rows * head_size + past_rows * head_size
                read = (b * kv_heads + h) * chunk
                if past_rows < 0 or start + chunk > out.size or read + chunk > source.size:
                    raise ComputeError(
                        f"{self.name}: rows {past_rows}..{past_rows + sequence} of batch {b} fall outside the cache"
                    )
                out[start : start + chunk] = source[read : read + chunk]
        return out.reshape(cache.shape)


@register
class GqaRotaryEmbedding(OpDef):
    """Target-internal rotary embedding for group-query attention; result has input 0's shape."""

    name = "gqa_rotary_embedding"
    attributes = (Attr("num_heads", INT, 1), Attr("kv_num_heads", INT, 1), Attr("interleaved", BOOL, False))
    arity = (1, None)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        return inputs[0]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        """Inputs (qkv {batch, heads + 2 kv_heads, seq, head}, seqlens_k {batch}, cos and sin caches
        {max_seq, rotary / 2}): the query and key heads rotated over their first `rotary` channels at
        position s for a prompt (seq > 1), else at seqlens_k[b]; the value heads pass through."""
        if len(inputs) != 4:
            raise ComputeError(f"{self.name}: needs qkv, seqlens_k, cos and sin caches, got {len(inputs)} inputs")
        qkv, seqlens, cos_cache, sin_cache = inputs
        batch, _, sequence, head_size = qkv.shape
        half = cos_cache.shape[1]
        rotary = 2 * half
        rotated_heads = op["num_heads"] + op["kv_num_heads"]
        if rotary > head_size:
            raise ComputeError(f"{self.name}: rotary width {rotary} exceeds head size {head_size}")
        if sequence == 1:
            positions = seqlens.reshape(-1)[:batch].astype(np.int64).reshape(batch, 1)
        else:
            positions = np.arange(sequence, dtype=np.int64).reshape(1, sequence)
        if positions.min() < 0 or positions.max() >= cos_cache.shape[0]:
            raise ComputeError(f"{self.name}: positions exceed the {cos_cache.shape[0]}-row cos/sin cache")
        # {batch or 1, 1, seq or 1, half}: one row per (batch, position), shared by every head
        cos = cos_cache.astype(np.float64)[positions][:, None]
        sin = sin_cache.astype(np.float64)[positions][:, None]
        x = qkv[:, :rotated_heads, :, :rotary].astype(np.float64)
        if op["interleaved"]:
            first, second = x[..., 0::2], x[..., 1::2]
        else:
            first, second = x[..., :half], x[..., half:]
        rotated_first = first * cos - second * sin
        rotated_second = second * cos + first * sin
        out = np.array(qkv, copy=True)
        if op["interleaved"]:
            out[:, :rotated_heads, :, 0:rotary:2] = rotated_first
            out[:, :rotated_heads, :, 1:rotary:2] = rotated_second
        else:
            out[:, :rotated_heads, :, :half] = rotated_first
            out[:, :rotated_heads, :, half:rotary] = rotated_second
        return out


class _TrustedShape(OpDef):
    """Dynamic-shape and target-internal ops whose result shape is taken as printed."""


@register
class BroadcastForDot(_TrustedShape):
    """Input 0 broadcast over the batch dimensions (all but the last two) of both inputs."""

    name = "broadcast_for_dot"
    arity = (2, 2)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        x, other = inputs
        if x.ndim < 2 or other.ndim < 2:
            raise ComputeError(f"{self.name}: inputs need rank at least 2, got {x.ndim} and {other.ndim}")
        try:
            batch = np.broadcast_shapes(x.shape[:-2], other.shape[:-2])
        except ValueError:
            raise ComputeError(
                f"{self.name}: batch dimensions {lens_text(x.shape[:-2])} and {lens_text(other.shape[:-2])} "
                "do not broadcast"
            ) from None
        return np.broadcast_to(x, batch + x.shape[-2:])


@register
class BroadcastWithDims(_TrustedShape):
    name = "broadcast_with_dims"
    arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        x, dims = inputs
        if dims.is_dynamic:
            raise fail(self.name, "the dims input must have a static shape")
        if not dims.lens:
            raise fail(self.name, "the dims input must have rank 1 or more")
        return unknown_dims(self.name, x.dtype, max(x.ndim, dims.lens[0]))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        dims = [int(d) for d in inputs[1].reshape(-1)]
        return np.broadcast_to(inputs[0], np.broadcast_shapes(inputs[0].shape, tuple(dims)))


@register
class FixedPad(_TrustedShape):
    """A dynamic-shaped input zero-padded at the end of each axis to its maximum lengths; a static one
    passes through."""

    name = "fixed_pad"
    arity = (1, 1)

    def kernel(self, op: Operation, inputs: Shapes, modules: Modules, run_module: RunModule) -> Callable:
        declared = inputs[0]
        if not declared.is_dynamic or declared.dyn_dims is None:
            return lambda x: x
        max_lens = tuple(d.max for d in declared.dyn_dims)
        return lambda x: _pad_to(self.name, x, max_lens)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        return inputs[0]


def _pad_to(name: str, x: np.ndarray, lens: tuple[int, ...]) -> np.ndarray:
    if x.ndim != len(lens) or any(n > m for n, m in zip(x.shape, lens)):
        raise ComputeError(f"{name}: runtime lengths {lens_text(x.shape)} exceed the maximum {lens_text(lens)}")
    if x.shape == lens:
        return x
    out = np.zeros(lens, x.dtype)
    out[tuple(slice(0, n) for n in x.shape)] = x
    return out


@register
class DynamicRange(_TrustedShape):
    """Inputs (start, limit, delta), first elements read: start + i * delta for i below
    max(ceil((limit - start) / delta), 0), at most max_output values, in start's type."""

    name = "dynamic_range"
    attributes = (Attr("max_output", INT, 2**31 - 1),)
    arity = (3, 3)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        if len({s.dtype for s in inputs}) != 1:
            raise fail(self.name, "start, limit and delta must have the same type")
        return unknown_dims(self.name, inputs[0].dtype, 1, op["max_output"])

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        start, limit, delta = (x.reshape(-1)[0] for x in inputs)
        if not (delta > 0 or delta < 0):
            raise ComputeError(f"{self.name}: delta must be non-zero")
        with np.errstate(all="ignore"):
            exact_count = np.ceil((np.float64(limit) - np.float64(start)) / np.float64(delta))
        if not np.isfinite(exact_count):
            raise ComputeError(f"{self.name}: computed element count is not finite")
        count = min(int(max(exact_count, 0.0)), op["max_output"])
        dtype = inputs[0].dtype
        with np.errstate(over="ignore"):
            return (start + np.arange(count).astype(dtype) * delta.astype(dtype)).astype(dtype)


@register
class Capture(OpDef):
    """Int8 calibration: passes its input through (the capture callback is the target's)."""

    name = "capture"
    attributes = (Attr("ins_index", INT, 0),)
    arity = (1, 1)
    has_side_effects = True

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        return inputs[0]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        return inputs[0]


class _RunsModule(OpDef):
    """Evaluates its one module on its inputs; a single result is returned unwrapped."""

    module_arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape | None:
        return None

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        results = run_module(modules[0], inputs)
        return results[0] if len(results) == 1 else tuple(results)


@register
class Group(_RunsModule):
    name = "group"
    attributes = (Attr("tag", STRING, ""),)


@register
class RunOnTarget(_RunsModule):
    name = "run_on_target"
    attributes = (Attr("target_id", INT, 0),)


@register
class SelectModule(OpDef):
    """Runs the first module whose parameter shapes fit the inputs' runtime shapes."""

    name = "select_module"
    attributes = (Attr("output_dyn_shapes", OptionalKind(SHAPE), None),)
    module_arity = (1, None)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape | None:
        return op["output_dyn_shapes"]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        for module in modules:
            parameters = sorted(module.parameters(), key=lambda p: p.param_name)
            input_parameters = [p for p in parameters if _OUTPUT_PARAMETER not in p.param_name]
            if len(input_parameters) > len(inputs):
                continue
            if all(_fits(p.shape, x) for p, x in zip(input_parameters, inputs)):
                break
        else:
            raise ComputeError(f"{self.name}: no module's parameter shapes fit the input shapes")
        by_name = {p.param_name: x for p, x in zip(input_parameters, inputs)}
        # output parameters are the target's result buffers; the reference writes fresh arrays
        args = [
            by_name[p.param_name] if p.param_name in by_name else np.zeros(p.shape.lens, p.shape.dtype.numpy)
            for p in parameters
        ]
        return tuple(run_module(module, args))


_OUTPUT_PARAMETER = "#output_"


def _fits(declared: Shape, x: np.ndarray) -> bool:
    """Whether a runtime array has exactly a static parameter shape's type and lengths."""
    if declared.is_dynamic or declared.is_tuple:
        return False
    return np.dtype(declared.dtype.numpy) == x.dtype and declared.lens == (x.shape or (1,))


@register
class Unknown(OpDef):
    """An ONNX operator MIGraphX's parser did not support, printed `unknown:OpType`."""

    name = "unknown:"
    attributes = (Attr("op", STRING, ""),)

    def from_node(self, node: OpNode, raw_attributes: str) -> Operation:
        return self.make(op=node.name.removeprefix("unknown:"))

    def format(self, op: Operation) -> str:
        return "unknown:" + op["op"]

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape | None:
        return inputs[0] if inputs else None

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        raise ComputeError(f"'unknown:{op['op']}' stands for an ONNX operator MIGraphX does not support")
