"""Which instructions alias memory, and where: a view's element offset in the buffer of its input.

An instruction is a view when the reference compute of its operator, run on an array laid out as
its input is, returns a numpy view of that array with the instruction's own
strides (transpose, broadcast, slice, squeeze, a reshape of a standard input...). The offset is
then read off that view, so no operator needs a GPU rule of its own."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import ComputeError
from mgxir.ir.shape import Shape


def _no_modules(module: object, args: list[np.ndarray]) -> list[np.ndarray]:
    raise ComputeError("a view does not run modules")


def view_offset(ins: Instruction, input_offset: int = 0) -> int | None:
    """The element offset of `ins`'s result in the buffer its first argument lives in (which starts
    at `input_offset` there), or None where `ins` does not alias that argument."""
    if len(ins.args) != 1 or ins.module_args or ins.shape.is_tuple or ins.shape.is_dynamic:
        return None
    source: Shape = ins.args[0].shape
    if source.is_tuple or source.is_dynamic or source.dtype != ins.shape.dtype or not ins.op.defn.has_compute:
        return None
    # one byte per element: only addresses matter, and untouched pages of np.empty cost nothing
    storage = np.empty(input_offset + max(source.element_space, 1), dtype=np.uint8)
    array = as_strided(storage[input_offset:], source.lens, source.strides)
    try:
        with np.errstate(all="ignore"):
            result = ins.op.defn.compute(ins.op, [array], [], _no_modules)
    except (ComputeError, ValueError, TypeError, IndexError):
        return None
    if not isinstance(result, np.ndarray) or not np.may_share_memory(result, storage):
        return None
    if tuple(result.shape) != tuple(ins.shape.lens):
        return None
    for n, want, got in zip(ins.shape.lens, ins.shape.strides, result.strides):
        if n != 1 and want != got:
            return None
    if result.size == 0:
        return input_offset
    return result.__array_interface__["data"][0] - storage.__array_interface__["data"][0]
