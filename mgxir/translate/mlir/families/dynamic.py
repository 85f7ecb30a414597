"""Operators of dynamic shapes: sizes known only at run time (`?` dimensions) read with `tensor.dim`,
results of a size computed at run time made with `tensor.empty` of that size."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iree.compiler import ir
from iree.compiler.dialects import arith, linalg, math, tensor

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.translate.mlir.emitter import PARALLEL
from mgxir.translate.mlir.registry import lowers

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]


@lowers("dimensions_of", to="tensor.dim of each dimension, tensor.from_elements", dynamic=True)
def _dimensions_of(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    e = lowering.emitter
    i64 = lowering.types.element(DType.int64)
    dims = e.dims(args[0])[ins.op["start"] : ins.op["end"]]
    values = [arith.index_cast(i64, n) if isinstance(n, ir.Value) else e.scalar_constant(n, DType.int64) for n in dims]
    return tensor.from_elements(lowering.types.of_shape(ins.shape), values)


@lowers(
    "dynamic_range",
    to="count = clamp(ceil((limit - start) / delta), 0, max_output); linalg.generic of start + i * delta "
    "over tensor.empty(count)",
    dynamic=True,
)
def _dynamic_range(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    e, s = lowering.emitter, lowering.scalars
    t = ins.args[0].shape.dtype
    start, limit, delta = (tensor.extract(v, [e.index(0)] * a.shape.ndim) for v, a in zip(args, ins.args))
    i64 = DType.int64
    if t.is_float:  # in f32: the host code of IREE's VM has no f64 conversions
        f32 = DType.float
        span = arith.subf(s.to_float(limit, t, f32), s.to_float(start, t, f32))
        steps = s.convert(math.ceil(arith.divf(span, s.to_float(delta, t, f32))), f32, i64)
    else:
        steps = arith.ceildivsi(s.sub(s.widen(limit, t, i64), s.widen(start, t, i64), i64), s.widen(delta, t, i64))
    steps = s.min(s.max(steps, s.const(0, i64), i64), s.const(ins.op["max_output"], i64), i64)
    count = arith.index_cast(lowering.types.index, steps)

    def body(scalars: Values) -> Values:
        i = arith.index_cast(lowering.types.element(DType.int64), linalg.IndexOp(0).result)
        step = s.mul(s.convert(i, DType.int64, t), delta, t)
        return [s.add(start, step, t)]

    init = e.empty(t, [count])
    return e.generic([], [(init, e.identity_map(1))], [PARALLEL], body)[0]
