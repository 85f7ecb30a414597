"""insert_pad: asymmetric begin/end padding of a convolution, im2col or (max or lpnorm) pooling
becomes an explicit `pad` before it, leaving the op unpadded, as MIGraphX's insert_pad does.
Max pooling pads with the lowest float, which never wins the max; lpnorm with zero."""

from __future__ import annotations

import dataclasses

import numpy as np

from mgxir.ir.module import Module
from mgxir.ir.registry import make_op
from mgxir.ir.traits import PaddedWindow
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.rewrite import Rewriter

LOWEST_FLOAT = float(np.finfo(np.float32).min)


@dataclasses.dataclass
class InsertPad(ModulePass):
    name = "insert_pad"
    description = "Move asymmetric convolution and pooling padding into an explicit pad before the op."

    def apply_module(self, module: Module, context: PassContext) -> None:
        for ins in module:
            if not ins.op.defn.has(PaddedWindow) or not ins.args:
                continue
            name = ins.op.defn.name
            source = ins.args[0]
            if source.shape.is_dynamic or source.shape.ndim < 3:
                continue
            spatial = source.shape.ndim - 2
            padding = tuple(ins.op["padding"])
            if len(padding) != 2 * spatial or padding[:spatial] == padding[spatial:]:
                continue
            value = 0.0
            if name == "pooling":
                mode = ins.op["mode"]
                if mode == 0:  # average
                    continue
                if mode == 1:  # max
                    value = LOWEST_FLOAT
            pads = (0, 0, *padding[:spatial], 0, 0, *padding[spatial:])
            pad = module.insert(ins, make_op("pad", pads=pads, value=value), [source])
            unpadded = ins.op.replace(padding=(0,) * (2 * spatial))
            Rewriter(module).replace(ins, unpadded, [pad, *ins.args[1:]])
            context.count(f"pads inserted before {name}")
