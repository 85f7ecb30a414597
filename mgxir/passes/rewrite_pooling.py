"""rewrite_pooling: as MIGraphX's rewrite_pooling, a pooling whose window is the whole unpadded
spatial input with unit strides and dilations becomes `reduce_mean` or `reduce_max` over the
spatial axes, and a dilated pooling gathers its windows' elements side by side (after a pad when
padded) and pools them with stride = window.

Where MIGraphX changes results, mgxir leaves the pooling: lpnorm pooling of the whole input
(MIGraphX makes it reduce_max), dilated pooling with ceil_mode or padding_mode, and padded dilated
average or lpnorm pooling. Begin/end padding is padded as given (MIGraphX assumes symmetric)."""

from __future__ import annotations

import dataclasses

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.insert_pad import LOWEST_FLOAT
from mgxir.passes.rewrite import Rewriter

_AVERAGE, _MAX = 0, 1
_MAX_GATHERED_ELEMENTS = 100_000  # MIGraphX's limit on the input of a rewritten dilated pooling


def window_indices(size: int, kernel: int, stride: int, dilation: int) -> list[int]:
    """Each window's elements in order, windows one after another."""
    span = dilation * (kernel - 1)
    return [start + dilation * step for start in range(0, size - span, stride) for step in range(kernel)]


def rewrite_dilated(module: Module, ins: Instruction) -> bool:
    op = ins.op
    source = ins.args[0]
    spatial = source.shape.ndim - 2
    padding = tuple(op["padding"])
    if len(padding) == spatial:
        padding = padding * 2
    begin, end = padding[:spatial], padding[spatial:]
    padded = any(padding)
    if op["ceil_mode"] or op["padding_mode"] != 0 or (padded and op["mode"] != _MAX):
        return False
    if source.shape.elements > _MAX_GATHERED_ELEMENTS:
        return False
    elements = source
    if padded:
        pads = (0, 0, *begin, 0, 0, *end)
        elements = module.insert(ins, make_op("pad", pads=pads, value=LOWEST_FLOAT), [elements])
    kernels = tuple(op["lengths"])
    for axis in range(spatial):
        size = source.shape.lens[axis + 2] + begin[axis] + end[axis]
        indices = window_indices(size, kernels[axis], op["stride"][axis], op["dilations"][axis])
        if not indices:
            return False
        data = np.asarray(indices, dtype=np.int32)
        literal = module.add_literal(Literal(Shape.make(DType.int32, (len(indices),)), data))
        elements = module.insert(ins, make_op("gather", axis=axis + 2), [elements, literal])
    pooled = op.replace(padding=(0,) * spatial, stride=kernels, dilations=(1,) * spatial)
    Rewriter(module).replace(ins, pooled, [elements])
    return True


@dataclasses.dataclass
class RewritePooling(ModulePass):
    name = "rewrite_pooling"
    description = "Pooling over the whole spatial input becomes a reduce; dilated pooling gathers its windows."

    def apply_module(self, module: Module, context: PassContext) -> None:
        for ins in list(module):
            if ins.op.defn.name != "pooling" or not ins.args or ins.shape.is_dynamic:
                continue
            op = ins.op
            source = ins.args[0].shape
            if source.is_dynamic or op["dyn_global"]:
                continue
            whole = tuple(source.lens[2:]) == tuple(op["lengths"])
            unit_strides = all(s == 1 for s in op["stride"])
            unpadded = not any(op["padding"])
            undilated = all(d == 1 for d in op["dilations"])
            if whole and unit_strides and unpadded and undilated:
                if op["mode"] not in (_AVERAGE, _MAX):
                    continue
                reduce = "reduce_mean" if op["mode"] == _AVERAGE else "reduce_max"
                axes = tuple(range(2, source.ndim))
                Rewriter(module).replace(ins, make_op(reduce, axes=axes))
                context.count("pooling became a reduce")
            elif not undilated and rewrite_dilated(module, ins):
                context.count("dilated pooling gathered")
