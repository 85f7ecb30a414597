"""simplify_reshapes: MIGraphX's shape-transform clean-ups. As MIGraphX does: find_gather_scalar once,
then find_gather (when enabled), then the main rewrites in MIGraphX's order (the first that applies to an
instruction wins), repeated with dead-code elimination between while anything changes, at most `depth`
times. Each rewrite lives in the file of its family and is named as MIGraphX names its matcher."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.dead_code_elimination import eliminate_dead_code
from mgxir.passes.rewrite import RootDispatch, find_matches
from mgxir.passes.simplify_reshapes import concat, gather, nested, views

# True: changed; False: no match; MATCHED_UNCHANGED: matched, changed nothing, try no other rewrite here
Rewrite = Callable[[Module, Instruction], object]

# MIGraphX's matcher order (src/simplify_reshapes.cpp, simplify_reshapes::apply)
ORDER: tuple[str, ...] = (
    "find_nop_reshapes",
    "find_flatten",
    "find_reshape_cont",
    "find_slice_shape_transforms",
    "find_nested_shape_transforms",
    "find_concat_slice",
    "find_concat_transpose",
    "find_concat_reshape",
    "find_concat_multibroadcasts",
    "find_nested_slice",
    "find_nested_concat",
    "find_transpose_slice",
    "find_slice_transpose",
    "find_unary_shape_transforms",
    "find_reshape_dot",
    "find_mul_add_shape_op_dot",
    "find_op_shape_transform_op",
)

WRITTEN: dict[str, Rewrite] = {
    rewrite.__name__: rewrite for family in (nested, views, concat, gather) for rewrite in family.REWRITES
}
REWRITES: tuple[Rewrite, ...] = tuple(WRITTEN[name] for name in ORDER)
GATHER_SCALAR = RootDispatch((WRITTEN["find_gather_scalar"],))
GATHER = RootDispatch((WRITTEN["find_gather"],))
assert set(WRITTEN) == {*ORDER, "find_gather_scalar", "find_gather"}, "every rewrite has its place"
WITH_OP_SHAPE_TRANSFORM_OP = RootDispatch(REWRITES)
WITHOUT_OP_SHAPE_TRANSFORM_OP = RootDispatch(r for r in REWRITES if r.__name__ != "find_op_shape_transform_op")
# False tries every rewrite on every instruction (tests compare the two)
DISPATCH_BY_ROOT = True


def _run_once(module: Module, rewrites: RootDispatch[Rewrite], context: PassContext) -> bool:
    return find_matches(module, rewrites, context, by_root=DISPATCH_BY_ROOT)


@dataclasses.dataclass
class SimplifyReshapes(ModulePass):
    name = "simplify_reshapes"
    description = "Remove no-op shape ops, collapse chains of views, move views through concat, slice and dot."
    depth: int = 4
    enable_op_shape_transform_op: bool = False  # MIGraphX's defaults; its GPU target enables the gather rewrite
    enable_gather_rewrite: bool = False

    def apply_module(self, module: Module, context: PassContext) -> None:
        if _run_once(module, GATHER_SCALAR, context):
            eliminate_dead_code(module, context)
        if self.enable_gather_rewrite:
            _run_once(module, GATHER, context)
        # MIGraphX runs find_op_shape_transform_op only when enable_op_shape_transform_op is set
        rewrites = WITH_OP_SHAPE_TRANSFORM_OP if self.enable_op_shape_transform_op else WITHOUT_OP_SHAPE_TRANSFORM_OP
        for _ in range(self.depth):
            changed = _run_once(module, rewrites, context)
            eliminate_dead_code(module, context)
            if not changed:
                break
