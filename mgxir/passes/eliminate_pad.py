"""eliminate_pad: a zero constant `pad` of the spatial axes feeding a convolution, im2col or pooling
becomes that op's own padding, as MIGraphX does.

Where MIGraphX changes results, mgxir does not fold: pads of the batch or channel axes, negative
(cropping) pads, and max pooling (whose padding is ignored, while padded zeros take part in the
max; `fold_max_pooling=true` folds it as MIGraphX does). A convolution's own padding is added to the
pad's (MIGraphX overwrites it). Average pooling is never folded, as in MIGraphX."""

from __future__ import annotations

import dataclasses

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.traits import PaddedWindow
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.rewrite import Rewriter


def spatial_pads(pad: Instruction) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The begin and end pads of the spatial axes of a zero constant pad that pads nothing else."""
    op = pad.op
    if op["mode"] != 0 or op["value"] != 0.0:
        return None
    rank = pad.shape.ndim
    pads = op["pads"]
    if rank < 3 or len(pads) != 2 * rank or min(pads) < 0:
        return None
    begin, end = pads[:rank], pads[rank:]
    if any(begin[:2]) or any(end[:2]):
        return None
    return tuple(begin[2:]), tuple(end[2:])


def begin_end_padding(padding: tuple[int, ...], spatial: int) -> tuple[int, ...]:
    return padding * 2 if len(padding) == spatial else padding


@dataclasses.dataclass
class EliminatePad(ModulePass):
    name = "eliminate_pad"
    description = "Fold a zero pad of the spatial axes into the padding of the convolution or pooling it feeds."
    fold_max_pooling: bool = False  # as MIGraphX, although padded zeros then no longer take part in the max

    def apply_module(self, module: Module, context: PassContext) -> None:
        for ins in module:
            name = ins.op.defn.name
            if not ins.op.defn.has(PaddedWindow) or not ins.args or ins.args[0].op.defn.name != "pad":
                continue
            pad = ins.args[0]
            pads = spatial_pads(pad)
            if pads is None:
                continue
            if name == "pooling" and not self._foldable_pooling(ins.op["mode"]):
                continue
            begin, end = pads
            spatial = len(begin)
            padding = begin_end_padding(tuple(ins.op["padding"]), spatial)
            if len(padding) != 2 * spatial:
                continue
            folded = tuple(p + q for p, q in zip(padding, (*begin, *end)))
            Rewriter(module).replace(ins, ins.op.replace(padding=folded), [pad.args[0], *ins.args[1:]])
            context.count(f"pads folded into {name}")

    def _foldable_pooling(self, mode: int) -> bool:
        if mode == 0:  # average
            return False
        return mode != 1 or self.fold_max_pooling
