"""Pointwise operators on whole tensors: tosa's op where tosa has it for the types at hand. Every
other pointwise op (and every op inside a pointwise body) lowers through its scalar meaning
(mgxir/translate/mlir/arith_emitter.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from iree.compiler import ir
from iree.compiler.dialects import tosa

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.mlir.emitter import TOSA_FLOATS
from mgxir.translate.mlir.registry import POINTWISE_AS_GENERIC, lowers

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]
Types = list[DType]

# -- tosa on whole tensors ------------------------------------------------------------------------

TosaBuilder = Callable[["Lowering", ir.Type, Values], ir.Value]


def _tosa_mul(lowering: Lowering, result: ir.Type, args: Values) -> ir.Value:
    shift = lowering.function_values.get(_tosa_mul)
    if shift is None:  # one zero shift per function, made where the first mul is
        shift_type = lowering.types.tensor(DType.int8, [1])
        zero = ir.DenseElementsAttr.get_splat(shift_type, ir.IntegerAttr.get(shift_type.element_type, 0))
        shift = lowering.function_values[_tosa_mul] = tosa.const(zero)
    return lowering.create("tosa.mul", result, [args[0], args[1], shift])


def _tosa(name: str) -> TosaBuilder:
    """A tosa op without attributes, made with its instruction's tags in one step."""
    return lambda lowering, result, args: lowering.create(name, result, args)


# tosa's integer profile has add, sub and abs on i32 only (i8/i16 fail to legalize). Only ops whose
# tosa result is exactly the scalar meaning's take tosa: IREE lowers tosa's float functions (exp,
# sin, tanh, ...) to the same inaccurate polynomials as `math` ops, and tosa.maximum orders -0 below
# +0, where numpy's maximum returns its second operand for equal ones.
FLOATS_INTS = TOSA_FLOATS | {DType.int32}
F32_I32 = frozenset({DType.float, DType.int32})
# op name -> (tosa op, builder, the element types tosa takes for it)
TOSA: dict[str, tuple[str, TosaBuilder, frozenset[DType]]] = {
    # f16/bf16 add, sub and mul take the scalar meanings, whose rounding a backend cannot fuse away
    "add": ("tosa.add", _tosa("tosa.add"), F32_I32),
    "sub": ("tosa.sub", _tosa("tosa.sub"), F32_I32),
    "mul": ("tosa.mul", _tosa_mul, frozenset({DType.float})),
    "abs": ("tosa.abs", _tosa("tosa.abs"), FLOATS_INTS),
    "floor": ("tosa.floor", _tosa("tosa.floor"), TOSA_FLOATS),
    "ceil": ("tosa.ceil", _tosa("tosa.ceil"), TOSA_FLOATS),
}
_TYPE_NOTE = {
    TOSA_FLOATS: "f16/bf16/f32",
    FLOATS_INTS: "f16/bf16/f32/i32",
    F32_I32: "f32/i32",
    frozenset({DType.float}): "f32",
}


def _describe_tosa(name: str) -> str:
    op, _, takes = TOSA[name]
    return f"{op} ({_TYPE_NOTE[takes]}), else (and with dynamic dimensions) linalg.generic"


@lowers(*TOSA, to=_describe_tosa, dynamic=True)
def _tosa_elementwise(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    _, build, takes = TOSA[ins.op.name]
    if ins.shape.is_dynamic or ins.shape.dtype not in takes or any(a.shape.dtype not in takes for a in ins.args):
        return POINTWISE_AS_GENERIC.lower(lowering, ins, args)
    return build(lowering, lowering.types.of_shape(ins.shape), args)
