"""MIGraphX element types as MLIR element types, and back.

Integer tensors are signless in MLIR (arith, linalg and tosa work on signless integers); the
unsigned MIGraphX types map to the signless type of their width and the lowering picks the
unsigned arith ops (`divui`, `extui`, `uitofp`, `cmpi ult`) for them. Where a value's unsignedness
cannot be told from the ops (parameters, literals), it is recorded as `mgx.type`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from iree.compiler import ir

from mgxir.diagnostics import MgxError
from mgxir.ir.dtype import DType
from mgxir.ir.shape import Shape

# MIGraphX type -> a constructor of its MLIR element type (called inside a context)
_ELEMENT: dict[DType, Callable[[], ir.Type]] = {
    DType.bool: lambda: ir.IntegerType.get_signless(1),
    DType.half: ir.F16Type.get,
    DType.float: ir.F32Type.get,
    DType.double: ir.F64Type.get,
    DType.uint8: lambda: ir.IntegerType.get_signless(8),
    DType.int8: lambda: ir.IntegerType.get_signless(8),
    DType.uint16: lambda: ir.IntegerType.get_signless(16),
    DType.int16: lambda: ir.IntegerType.get_signless(16),
    DType.int32: lambda: ir.IntegerType.get_signless(32),
    DType.int64: lambda: ir.IntegerType.get_signless(64),
    DType.uint32: lambda: ir.IntegerType.get_signless(32),
    DType.uint64: lambda: ir.IntegerType.get_signless(64),
    DType.fp8e4m3fnuz: ir.Float8E4M3FNUZType.get,
    DType.fp8e4m3fn: ir.Float8E4M3FNType.get,
    DType.fp8e5m2: ir.Float8E5M2Type.get,
    DType.bf16: ir.BF16Type.get,
    DType.fp8e5m2fnuz: ir.Float8E5M2FNUZType.get,
    DType.fp4x2: lambda: ir.IntegerType.get_signless(8),  # two fp4 e2m1 codes in a byte
}

# unsigned integers, and fp4x2, whose packed bytes are handled as their unsigned bits
UNSIGNED = frozenset({DType.uint8, DType.uint16, DType.uint32, DType.uint64, DType.fp4x2})
# raw-bit types: numpy cannot hand their buffers to MLIR, so literals go through integer bits
RAW_BITS = frozenset({DType.bf16, DType.fp8e4m3fnuz, DType.fp8e4m3fn, DType.fp8e5m2, DType.fp8e5m2fnuz})


def lowers_type(t: DType) -> bool:
    return t in _ELEMENT


class TypeCache:
    """Element and tensor types of one MLIR context, made once each."""

    def __init__(self) -> None:
        self._elements: dict[DType, ir.Type] = {}
        self._tensors: dict[tuple[DType, tuple[int, ...]], ir.RankedTensorType] = {}
        self._shapes: dict[Shape, ir.RankedTensorType] = {}
        self.index = ir.IndexType.get()

    def element(self, t: DType) -> ir.Type:
        found = self._elements.get(t)
        if found is None:
            make = _ELEMENT.get(t)
            if make is None:
                raise MgxError(f"{t.type_name} has no MLIR element type")
            found = self._elements[t] = make()
        return found

    def tensor(self, t: DType, lens: Sequence[int]) -> ir.RankedTensorType:
        key = (t, tuple(lens))
        found = self._tensors.get(key)
        if found is None:
            found = self._tensors[key] = ir.RankedTensorType.get(list(lens), self.element(t))
        return found

    def of_shape(self, shape: Shape) -> ir.RankedTensorType:
        """The tensor type of a shape: its lens (strides are layout, not value), `?` for dynamic dims."""
        found = self._shapes.get(shape)
        if found is not None:
            return found
        if shape.is_tuple:
            raise MgxError("a tuple has no tensor type")
        if shape.is_dynamic:
            dims = [d.min if d.is_fixed else ir.ShapedType.get_dynamic_size() for d in shape.dyn_dims]
            found = ir.RankedTensorType.get(dims, self.element(shape.dtype))
        else:
            found = self.tensor(shape.dtype, shape.lens)
        self._shapes[shape] = found
        return found


def dtype_of(element: ir.Type, unsigned: bool = False) -> DType:
    """The MIGraphX type of an MLIR element type (`unsigned` picks uintN for a signless iN)."""
    if isinstance(element, ir.IntegerType):
        width = ir.IntegerType(element).width
        if width == 1:
            return DType.bool
        name = f"{'u' if unsigned else ''}int{width}"
        return DType[name]
    for t, make in _ELEMENT.items():
        if not (t.is_integral) and make() == element:
            return t
    raise MgxError(f"MLIR element type {element} has no MIGraphX type")
