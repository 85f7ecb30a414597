"""Scalar arithmetic in `arith`/`math` with MIGraphX's semantics for each element type (signed or
unsigned integers, C division, saturating conversions). Pointwise bodies are built from these."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import arith, math

from mgxir.ir.dtype import DType
from mgxir.translate.mlir.emitter import Emitter
from mgxir.translate.mlir.types import UNSIGNED

FP = arith.CmpFPredicate
IP = arith.CmpIPredicate

# comparison name -> (float predicate, signed predicate, unsigned predicate)
COMPARISONS: dict[str, tuple[FP, IP, IP]] = {
    "eq": (FP.OEQ, IP.eq, IP.eq),
    "ne": (FP.UNE, IP.ne, IP.ne),
    "gt": (FP.OGT, IP.sgt, IP.ugt),
    "ge": (FP.OGE, IP.sge, IP.uge),
    "lt": (FP.OLT, IP.slt, IP.ult),
    "le": (FP.OLE, IP.sle, IP.ule),
}


class CannotLower(Exception):
    """This operation has no lowering for these types or attributes; the message says why."""


class Scalars:
    """Scalar values of a known MIGraphX type at the current insertion point."""

    def __init__(self, emitter: Emitter) -> None:
        self.e = emitter

    def const(self, value: float | int | bool, t: DType) -> ir.Value:
        return self.e.scalar_constant(value, t)

    # -- arithmetic -----------------------------------------------------------------------------

    def add(self, a: ir.Value, b: ir.Value, t: DType) -> ir.Value:
        return arith.addf(a, b) if t.is_float else arith.addi(a, b)

    def sub(self, a: ir.Value, b: ir.Value, t: DType) -> ir.Value:
        return arith.subf(a, b) if t.is_float else arith.subi(a, b)

    def mul(self, a: ir.Value, b: ir.Value, t: DType) -> ir.Value:
        return arith.mulf(a, b) if t.is_float else arith.muli(a, b)

    def div(self, a: ir.Value, b: ir.Value, t: DType) -> ir.Value:
        if t.is_float:
            return arith.divf(a, b)
        return arith.divui(a, b) if t in UNSIGNED or t is DType.bool else arith.divsi(a, b)

    def narrow(self, x: ir.Value, t: DType) -> ir.Value:
        """An f32 rounded to the nearest (ties to even) `t` (f16 or bf16) in integer arithmetic, then
        `arith.truncf` (exact by then). NVIDIA's Vulkan driver (580, H100) drops an `OpFConvert` to
        f16 and back inside one dispatch, so a product rounded that way reached a subtract unrounded
        (f16 mvn: rms 6.2e-2); integer rounding cannot be dropped. NaN and infinities pass unchanged;
        f16's subnormal range rounds as `roundeven(x * 2^24) * 2^-24`."""
        info = ml_dtypes.finfo(t.numpy)
        element = self.e.types.element(t)
        f32, i32 = self.e.types.element(DType.float), ir.IntegerType.get_signless(32)

        def i(value: int) -> ir.Value:
            return arith.constant(i32, ir.IntegerAttr.get(i32, value))

        drop = 23 - int(info.nmant)
        bits = arith.bitcast(i32, x)
        lsb = arith.andi(arith.shrui(bits, i(drop)), i(1))
        up = arith.addi(bits, arith.addi(i((1 << (drop - 1)) - 1), lsb))
        rounded = arith.bitcast(f32, arith.andi(up, i(~((1 << drop) - 1))))
        rounded = arith.select(self.is_nan(x), x, rounded)
        smallest_normal = float(info.smallest_normal)
        if smallest_normal > float(np.finfo(np.float32).smallest_normal):
            quantum = float(info.smallest_subnormal)
            scaled = math.roundeven(arith.mulf(x, self.const(1 / quantum, DType.float)))
            subnormal = arith.mulf(scaled, self.const(quantum, DType.float))
            tiny = arith.cmpf(FP.OLT, math.absf(x), self.const(smallest_normal, DType.float))
            rounded = arith.select(tiny, subnormal, rounded)
        return arith.truncf(element, rounded)

    def max(self, a: ir.Value, b: ir.Value, t: DType) -> ir.Value:
        if t.is_float:
            return arith.maximumf(a, b)
        return arith.maxui(a, b) if t in UNSIGNED or t is DType.bool else arith.maxsi(a, b)

    def min(self, a: ir.Value, b: ir.Value, t: DType) -> ir.Value:
        if t.is_float:
            return arith.minimumf(a, b)
        return arith.minui(a, b) if t in UNSIGNED or t is DType.bool else arith.minsi(a, b)

    def cmp(self, kind: str, a: ir.Value, b: ir.Value, t: DType) -> ir.Value:
        """An i1 comparison (NaN compares false, except `ne`)."""
        fp, sp, up = COMPARISONS[kind]
        if t.is_float:
            return arith.cmpf(fp, a, b)
        return arith.cmpi(up if t in UNSIGNED or t is DType.bool else sp, a, b)

    def is_nan(self, x: ir.Value) -> ir.Value:
        return arith.cmpf(FP.UNO, x, x)

    def is_inf(self, x: ir.Value, t: DType) -> ir.Value:
        """|x| == inf (arith, which every IREE backend takes; math.isinf is not lowered on CPU)."""
        return arith.cmpf(FP.OEQ, math.absf(x), self.const(float("inf"), t))

    def truthy(self, a: ir.Value, t: DType) -> ir.Value:
        """i1: the value is not zero."""
        if t is DType.bool:
            return a
        return self.cmp("ne", a, self.const(0, t), t)

    def from_bool(self, flag: ir.Value, t: DType) -> ir.Value:
        """An i1 as 0 or 1 of type `t`."""
        if t is DType.bool:
            return flag
        element = self.e.types.element(t)
        return arith.uitofp(element, flag) if t.is_float else arith.extui(element, flag)

    def select(self, flag: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.select(flag, a, b)

    def convert(self, x: ir.Value, source: DType, target: DType) -> ir.Value:
        """MIGraphX's convert: NaN to 0 in integers, finite values saturate to the target's range,
        floats truncate toward zero; to bool is `x > 0`."""
        if source is target:
            return x
        element = self.e.types.element(target)
        if target is DType.bool:
            if source is DType.bool:
                return x
            if source in UNSIGNED:
                return self.cmp("ne", x, self.const(0, source), source)
            return self.cmp("gt", x, self.const(0, source), source)
        if source is DType.bool:
            return self.from_bool(x, target)
        if source.is_float and target.is_float:
            if target.itemsize > source.itemsize:
                return arith.extf(element, x)
            if target.itemsize == source.itemsize and target is not source:  # f16 <-> bf16
                wide = arith.extf(self.e.types.element(DType.float), x)
                return self.convert(wide, DType.float, target)
            limit = float(ml_dtypes.finfo(target.numpy).max)
            clipped = self.max(self.min(x, self.const(limit, source), source), self.const(-limit, source), source)
            kept = arith.select(self.is_inf(x, source), x, clipped)
            return self.narrow(kept, target) if source is DType.float else arith.truncf(element, kept)
        if source.is_float:
            info = np.iinfo(target.numpy)
            clipped = self.max(
                self.min(x, self.const(float(info.max), source), source), self.const(float(info.min), source), source
            )
            zeroed = arith.select(self.is_nan(x), self.const(0, source), clipped)
            return arith.fptoui(element, zeroed) if target in UNSIGNED else arith.fptosi(element, zeroed)
        if target.is_float:
            return arith.uitofp(element, x) if source in UNSIGNED else arith.sitofp(element, x)
        return self._int_to_int(x, source, target)

    def _int_to_int(self, x: ir.Value, source: DType, target: DType) -> ir.Value:
        wide_t = DType.int64
        wide = x
        if source.itemsize < 8:
            i64 = self.e.types.element(wide_t)
            wide = arith.extui(i64, x) if source in UNSIGNED else arith.extsi(i64, x)
        info = np.iinfo(target.numpy)
        source_info = np.iinfo(source.numpy)
        if info.max < source_info.max:
            wide = self.min(wide, self.const(int(info.max), wide_t), wide_t)
        if info.min > source_info.min:
            wide = self.max(wide, self.const(int(info.min), wide_t), wide_t)
        if target.itemsize == 8:
            return wide
        return arith.trunci(self.e.types.element(target), wide)

    def widen(self, x: ir.Value, source: DType, target: DType) -> ir.Value:
        """A value into a type at least as wide that holds it exactly (sign or zero extension)."""
        if source is target:
            return x
        if target.is_float:
            return self.to_float(x, source, target)
        element = self.e.types.element(target)
        return arith.extui(element, x) if source in UNSIGNED or source is DType.bool else arith.extsi(element, x)

    def to_float(self, x: ir.Value, source: DType, target: DType) -> ir.Value:
        """A plain numeric conversion into a float type (for quantization arithmetic)."""
        if source is target:
            return x
        element = self.e.types.element(target)
        if source.is_float:
            if target.itemsize > source.itemsize:
                return arith.extf(element, x)
            return self.narrow(x, target) if source is DType.float else arith.truncf(element, x)
        if source is DType.bool or source in UNSIGNED:
            return arith.uitofp(element, x)
        return arith.sitofp(element, x)
