"""Operators with module arguments: `pointwise` bodies become `linalg.generic` regions,
`fused_reduce` bodies become private funcs (whose reductions are `linalg.generic`s) called in place."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iree.compiler import ir
from iree.compiler.dialects import func

from mgxir.ir.instruction import Instruction
from mgxir.translate.mlir.registry import lowers

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]


@lowers("pointwise", to="linalg.generic whose region is the module on scalars")
def _pointwise(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    return lowering.pointwise(ins, args)


@lowers("fused_reduce", to="func.call of a private func.func holding the module")
def _fused_reduce(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    body = ins.module_args[0]
    fn = lowering.function(body, body.name, public=False)
    return func.CallOp(fn, args).result
