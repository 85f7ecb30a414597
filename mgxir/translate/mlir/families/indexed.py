"""Helpers for lowerings that compute each output element from coordinates: a `linalg.generic`
whose body reads its operands with `tensor.extract` at positions computed in `index` arithmetic."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from iree.compiler import ir
from iree.compiler.dialects import arith, linalg

from mgxir.ir.dtype import DType
from mgxir.translate.mlir.emitter import PARALLEL, REDUCTION
from mgxir.translate.mlir.scalar import CannotLower
from mgxir.translate.mlir.types import UNSIGNED

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]
# body(coordinates of the domain, scalars of the block) -> yielded scalars
IndexedBody = Callable[[Values, Values], Values]


class IndexMath:
    """`index` arithmetic at the current insertion point."""

    def __init__(self, lowering: Lowering) -> None:
        self.lowering = lowering
        self.index_type = lowering.types.index

    def const(self, n: int) -> ir.Value:
        return self.lowering.emitter.index(n)

    def add(self, a: ir.Value, b: ir.Value | int) -> ir.Value:
        return arith.addi(a, self._value(b))

    def sub(self, a: ir.Value, b: ir.Value | int) -> ir.Value:
        return arith.subi(a, self._value(b))

    def mul(self, a: ir.Value, b: ir.Value | int) -> ir.Value:
        return arith.muli(a, self._value(b))

    def div(self, a: ir.Value, b: int) -> ir.Value:
        return arith.divui(a, self.const(b))

    def rem(self, a: ir.Value, b: int) -> ir.Value:
        return arith.remui(a, self.const(b))

    def min(self, a: ir.Value, b: ir.Value | int) -> ir.Value:
        return arith.minsi(a, self._value(b))

    def max(self, a: ir.Value, b: ir.Value | int) -> ir.Value:
        return arith.maxsi(a, self._value(b))

    def clamp(self, a: ir.Value, low: int, high: int) -> ir.Value:
        return self.max(self.min(a, high), low)

    def cmp(self, predicate: arith.CmpIPredicate, a: ir.Value, b: ir.Value | int) -> ir.Value:
        return arith.cmpi(predicate, a, self._value(b))

    def eq(self, a: ir.Value, b: ir.Value | int) -> ir.Value:
        return self.cmp(arith.CmpIPredicate.eq, a, b)

    def lt(self, a: ir.Value, b: ir.Value | int) -> ir.Value:
        return self.cmp(arith.CmpIPredicate.slt, a, b)

    def le(self, a: ir.Value, b: ir.Value | int) -> ir.Value:
        return self.cmp(arith.CmpIPredicate.sle, a, b)

    def all(self, flags: Sequence[ir.Value]) -> ir.Value | None:
        """The conjunction of i1 flags (None for none)."""
        result = None
        for f in flags:
            result = f if result is None else arith.andi(result, f)
        return result

    def select(self, flag: ir.Value, a: ir.Value | int, b: ir.Value | int) -> ir.Value:
        return arith.select(flag, self._value(a), self._value(b))

    def from_element(self, value: ir.Value, t: DType) -> ir.Value:
        """An integer element as an index (zero-extended for unsigned types)."""
        if not t.is_integral:
            raise CannotLower(f"indices of {t.type_name} have no lowering (integer types only)")
        if t in UNSIGNED or t is DType.bool:
            return arith.index_castui(self.index_type, value)
        return arith.index_cast(self.index_type, value)

    def to_element(self, value: ir.Value, t: DType) -> ir.Value:
        return arith.index_cast(self.lowering.types.element(t), value)

    def wrapped(self, position: ir.Value, n: int | ir.Value) -> ir.Value:
        """A position counted from the end when negative."""
        return self.select(self.lt(position, 0), self.add(position, n), position)

    def linear(self, coords: Sequence[ir.Value], lens: Sequence[int]) -> ir.Value:
        """The row-major offset of coordinates in a tensor of `lens`."""
        offset = self.const(0)
        for c, n in zip(coords, lens):
            offset = self.add(self.mul(offset, n), c)
        return offset

    def delinearize(self, offset: ir.Value, lens: Sequence[int]) -> Values:
        coords: Values = []
        for n in reversed(lens):
            coords.append(self.rem(offset, n))
            offset = self.div(offset, n)
        return coords[::-1]

    def _value(self, v: ir.Value | int) -> ir.Value:
        return self.const(v) if isinstance(v, int) else v


Size = int | ir.Value


class SizeMath:
    """Arithmetic on sizes that are ints where known at translation time and `index` values where
    known only at run time: ints fold, anything else becomes index arithmetic."""

    def __init__(self, lowering: Lowering) -> None:
        self.x = IndexMath(lowering)

    def value(self, n: Size) -> ir.Value:
        return self.x.const(n) if isinstance(n, int) else n

    def add(self, a: Size, b: Size) -> Size:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        return a if isinstance(b, int) and b == 0 else arith.addi(self.value(a), self.value(b))

    def sub(self, a: Size, b: Size) -> Size:
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        return a if isinstance(b, int) and b == 0 else arith.subi(self.value(a), self.value(b))

    def mul(self, a: Size, b: Size) -> Size:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        return a if isinstance(b, int) and b == 1 else arith.muli(self.value(a), self.value(b))

    def div(self, a: Size, b: int, ceil: bool = False) -> Size:
        """a / b rounded down (or up), b > 0."""
        if isinstance(a, int):
            return -(-a // b) if ceil else a // b
        if b == 1:
            return a
        return (arith.ceildivsi if ceil else arith.floordivsi)(a, self.value(b))

    def max(self, a: Size, b: Size) -> Size:
        if isinstance(a, int) and isinstance(b, int):
            return max(a, b)
        return arith.maxsi(self.value(a), self.value(b))


def indexed(
    lowering: Lowering,
    out_type: DType,
    out_lens: Sequence[int | ir.Value],
    body: IndexedBody,
    inputs: Sequence[tuple[ir.Value, ir.AffineMapAttr]] = (),
    init: ir.Value | None = None,
    reduced: Sequence[int] = (),
) -> ir.Value:
    """A `linalg.generic` over the output's dimensions followed by `reduced` reduction dimensions;
    `body` gets the domain's coordinates and the block's scalars (inputs, then the accumulator)."""
    e = lowering.emitter
    rank = len(out_lens)
    domain = rank + len(reduced)
    out = init if init is not None else e.empty(out_type, out_lens)
    iterators = [PARALLEL] * rank + [REDUCTION] * len(reduced)
    out_map = e.projection(domain, range(rank))
    if reduced:
        # a loop dimension of `reduced` extent: an input the generic reads for its shape only
        extent = e.empty(DType.bool, reduced)
        inputs = [*inputs, (extent, e.projection(domain, range(rank, domain)))]

    def fill(scalars: Values) -> Values:
        coords = [linalg.IndexOp(d).result for d in range(domain)]
        if reduced:
            scalars = [*scalars[: len(inputs) - 1], scalars[-1]]
        return body(coords, scalars)

    return e.generic(list(inputs), [(out, out_map)], iterators, fill)[0]
