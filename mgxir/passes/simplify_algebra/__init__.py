"""simplify_algebra: MIGraphX's algebraic rewrites, tried in MIGraphX's order on each instruction (the
first that applies wins), repeated with dead-code elimination between while anything changes, at most
8 times. Each rewrite lives in the file of its family and is named as MIGraphX names its matcher."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.dead_code_elimination import eliminate_dead_code
from mgxir.passes.propagate_constant import ConstantAnalysis
from mgxir.passes.rewrite import RootDispatch, find_matches
from mgxir.passes.simplify_algebra import broadcast, concat, elementwise, linear

# True: changed; False: no match; MATCHED_UNCHANGED: matched, changed nothing, try no other rewrite here
Rewrite = Callable[[Module, Instruction, ConstantAnalysis], object]

# MIGraphX's matcher order (src/simplify_algebra.cpp, simplify_algebra::apply)
ORDER: tuple[str, ...] = (
    "find_conv_broadcast_input",
    "find_inner_broadcast",
    "find_dot_broadcast",
    "find_double_add_lit_broadcast",
    "find_add_lit_broadcast",
    "find_add_convs",
    "find_conv_dot_horiz_fusion",
    "find_mul_conv",
    "find_mul_slice_conv",
    "find_mul_dot",
    "find_dot_slice",
    "find_dot_mul",
    "find_mul_add",
    "find_unit_ops",
    "find_neg_unit_ops",
    "eliminate_zero_point",
    "find_zero_ops",
    "find_dot_add",
    "find_conv_add",
    "find_div_const",
    "find_sub_const",
    "find_rsqrt",
    "find_log_exp",
    "find_log_div",
    "find_concat_conv",
    "find_concat_same_input",
    "find_concat_op",
    "find_split_concat",
    "find_splits",
    "find_split_reshape",
    "find_split_transpose",
    "find_pow2",
)

WRITTEN: dict[str, Rewrite] = {
    rewrite.__name__: rewrite for family in (broadcast, linear, elementwise, concat) for rewrite in family.REWRITES
}
REWRITES: tuple[Rewrite, ...] = tuple(WRITTEN[name] for name in ORDER)
assert set(WRITTEN) == set(ORDER), "every rewrite has its place in ORDER"
# False tries every rewrite on every instruction (tests compare the two)
DISPATCH_BY_ROOT = True


@functools.cache
def by_root(rewrites: tuple[Rewrite, ...]) -> RootDispatch[Rewrite]:
    """The dispatch table of `rewrites`, built once (looked up per run, so that a test may
    substitute REWRITES)."""
    return RootDispatch(rewrites)


@dataclasses.dataclass
class SimplifyAlgebra(ModulePass):
    name = "simplify_algebra"
    description = "MIGraphX's algebraic rewrites: move broadcasts out, fold constants, fuse dots and convolutions."
    max_rounds: int = 8

    def apply_module(self, module: Module, context: PassContext) -> None:
        for _ in range(self.max_rounds):
            constant = ConstantAnalysis(need_values=False)
            changed = find_matches(module, by_root(REWRITES), context, constant, by_root=DISPATCH_BY_ROOT)
            eliminate_dead_code(module, context)
            if not changed:
                break
