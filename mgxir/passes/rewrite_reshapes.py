"""MIGraphX's `rewrite_reshapes<T>` (rewrite_reshapes.hpp): where a fusable op (`pointwise`, or
T's op) reaches another only through reshape-like ops (reshape, squeeze, unsqueeze, flatten,
transpose, contiguous, broadcasts), both are rebuilt on the "common" dimensions of the two shapes
(shape_transform_descriptor), so that nothing stands between them any more; the reshapes move to
the inputs and to the result. Then simplify_reshapes (depth 1), CSE and DCE run, as MIGraphX does.

`ReshapeFusion` is T: fuse_pointwise uses `PointwiseReshape`, fuse_reduce its `ReduceReshape`."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from mgxir.analysis.shape_transform_descriptor import ShapeTransformDescriptor
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.registry import make_op
from mgxir.passes.base import PassContext
from mgxir.passes.dead_code_elimination import eliminate_dead_code
from mgxir.passes.eliminate_common_subexpression import EliminateCommonSubexpression
from mgxir.passes.matchers import is_broadcast_or_contiguous, is_shape_transform_or_contiguous, used_once
from mgxir.passes.rewrite import MATCHED_UNCHANGED, Outcome, Pattern, Rewriter, RootDispatch, find_matches
from mgxir.passes.simplify_reshapes import SimplifyReshapes

AxesMap = Sequence[Sequence[int]]


class ReshapeFusion:
    """MIGraphX's rewrite_reshapes_base: the op name rewritten, how to rebuild one on new inputs
    (with the map from its old axes to the common axes), and the dims it is compared by."""

    name = "pointwise"

    def insert(self, rewriter: Rewriter, ins: Instruction, inputs: list[Instruction], axes_map: AxesMap) -> Instruction:
        return rewriter.insert(ins, ins.op, inputs, ins.module_args)

    def base_dims(self, ins: Instruction) -> list[int]:
        return list(ins.shape.lens)

    def can_rebuild(self, ins: Instruction, axes_map: AxesMap) -> bool:
        """Whether `ins` can be rebuilt on the common dimensions that `axes_map` maps its axes to."""
        return True


PointwiseReshape = ReshapeFusion


def _is_reshape(ins: Instruction) -> bool:
    return is_shape_transform_or_contiguous(ins.op.defn) and used_once(ins)


def _find_input_if(start: Instruction, last: Instruction, predicate: Callable[[Instruction], bool]) -> Instruction:
    while start is not last:
        if predicate(start):
            return start
        if len(start.args) != 1:
            return last
        start = start.args[0]
    return last


class FindOpReshapeOp(Pattern):
    """`find_op_reshape_op{op1, op2}`: an `op2` instruction with an argument that is a chain of
    single-use reshapes over a single-use `op1` instruction; both are rebuilt on the common
    dimensions. Once matched, no later pattern is tried on the instruction, rebuilt or not."""

    def __init__(self, fusion: ReshapeFusion, op1: str, op2: str):
        super().__init__()
        self.__name__ = "find_op_reshape_op"
        self.roots = (op2,)
        self.fusion = fusion
        self.op1 = op1

    def match(self, ins: Instruction, *args: object) -> tuple[Instruction, Instruction] | None:
        """(input, x): the argument taken and the op1 instruction behind it."""
        for arg in ins.args:
            if not _is_reshape(arg) or not arg.args:
                continue
            x = arg.args[0]
            while len(x.args) == 1 and _is_reshape(x):
                x = x.args[0]
            if x.op.defn.name == self.op1 and used_once(x):
                return arg, x
        return None

    def insert(self, rewriter: Rewriter, ins: Instruction, inputs: list[Instruction], axes_map: AxesMap) -> Instruction:
        if ins.op.defn.name == "pointwise":
            return rewriter.insert(ins, ins.op, inputs, ins.module_args)
        return self.fusion.insert(rewriter, ins, inputs, axes_map)

    def rewrite(self, rewriter: Rewriter, ins: Instruction, binding: object) -> Outcome:
        return True if self.rebuild(rewriter, ins, *binding) else MATCHED_UNCHANGED  # type: ignore[misc]

    def rebuild(self, rewriter: Rewriter, ins: Instruction, input_ins: Instruction, x_ins: Instruction) -> bool:
        if _find_input_if(input_ins, x_ins, lambda i: not is_broadcast_or_contiguous(i.op.defn)) is x_ins:
            return False  # only broadcasts between them
        dims1 = self.fusion.base_dims(ins)
        dims2 = self.fusion.base_dims(x_ins)
        if math.prod(dims1) != math.prod(dims2):
            return False
        ops = []
        chain = input_ins
        while chain is not x_ins:
            ops.append(chain.op)
            chain = chain.args[0]
        ops.reverse()
        desc = ShapeTransformDescriptor.create(list(x_ins.shape.lens), ops).rebase(dims2)
        if desc.empty() or desc.elements() != math.prod(dims2):
            return False
        common_dims = desc.common_dims()
        if not (
            self.fusion.can_rebuild(x_ins, desc.common_axes_map_from_src())
            and self.fusion.can_rebuild(ins, desc.common_axes_map_from_dst())
        ):
            return False

        def reshape_input(
            position: Instruction, transform: ShapeTransformDescriptor
        ) -> Callable[[Instruction], Instruction]:
            def apply_to(value: Instruction) -> Instruction:
                for op in transform.generate(list(value.shape.lens)):
                    value = rewriter.insert(position, op, [value])
                return value

            return apply_to

        to_common_x = reshape_input(x_ins, desc.to_common_from_src())
        x_inputs = [to_common_x(a) for a in x_ins.args]
        new_x = self.insert(rewriter, x_ins, x_inputs, desc.common_axes_map_from_src())
        if list(new_x.shape.lens) != list(common_dims):
            new_x = rewriter.insert(x_ins, make_op("multibroadcast", out_lens=common_dims), [new_x])
        to_common = reshape_input(ins, desc.to_common_from_dst())
        inputs = [new_x if a is input_ins else to_common(a) for a in ins.args]
        fused = self.insert(rewriter, ins, inputs, desc.common_axes_map_from_dst())
        result = reshape_input(ins, desc.to_dst_from_common())(fused)
        rewriter.replace_all_uses(ins, result)
        return True


def rewrite_reshapes(module: Module, fusion: ReshapeFusion, context: PassContext) -> bool:
    """One run of MIGraphX's rewrite_reshapes<T> over `module`; True when some rewrite fired."""
    if fusion.name == "pointwise":
        matchers = [FindOpReshapeOp(fusion, "pointwise", "pointwise")]
    else:
        matchers = [
            FindOpReshapeOp(fusion, "pointwise", fusion.name),
            FindOpReshapeOp(fusion, fusion.name, "pointwise"),
            FindOpReshapeOp(fusion, fusion.name, fusion.name),
        ]
    changed = find_matches(module, RootDispatch(matchers), context)
    SimplifyReshapes(depth=1).apply_module(module, context)
    EliminateCommonSubexpression().apply_module(module, context)
    eliminate_dead_code(module, context)
    return changed
