"""eliminate_convert: as MIGraphX, a chain of converts becomes one convert from the chain's input
(or the input itself when its shape is the result's), and a convert to its input's shape goes.

MIGraphX does not check that the inner converts were lossless: `convert[int32](convert[float](x))`
of a float `x` becomes `x`. mgxir keeps that behaviour to print what MIGraphX prints."""

from __future__ import annotations

import dataclasses

from mgxir.ir.module import Module
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.rewrite import Rewriter


@dataclasses.dataclass
class EliminateConvert(ModulePass):
    name = "eliminate_convert"
    description = "Collapse chains of converts and remove converts to their input's shape."

    def apply_module(self, module: Module, context: PassContext) -> None:
        for ins in module:
            if ins.op.defn.name != "convert" or not ins.args:
                continue
            source = ins.args[0]
            if source.op.defn.name == "convert":
                while source.op.defn.name == "convert":
                    source = source.args[0]
                if ins.shape == source.shape:
                    Rewriter(module).replace_all_uses(ins, source)
                else:
                    Rewriter(module).replace(ins, ins.op, [source])
                context.count("nested converts folded")
            elif ins.shape == source.shape:
                Rewriter(module).replace_all_uses(ins, source)
                context.count("converts removed")
