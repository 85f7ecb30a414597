"""Which MIGraphX element types the kernels handle, how each is stored in a buffer and in which
type it is computed: float and half compute in 32-bit float (half rounds back after every op, as
numpy's float16 arithmetic does), double in 64-bit float, int32 and the 8- and 16-bit integers in
32-bit int (the narrow ones wrapped to their width after every op), bool in SPIR-V's bool (stored
as one byte)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mgxir.ir.dtype import DType

# the compute type: 32- and 64-bit float, 32- and 64-bit signed int, bool
Kind = Literal["f", "d", "i", "l", "b"]


@dataclass(frozen=True)
class ElementType:
    dtype: DType
    kind: Kind
    storage: Literal["float", "int", "uint"]
    width: int  # bits in the buffer
    # the capability and extension that let a buffer hold this width (none for 32 bits)
    capability: str | None = None
    extension: str | None = None

    @property
    def itemsize(self) -> int:
        return self.width // 8

    @property
    def name(self) -> str:
        return self.dtype.type_name


ELEMENT_TYPES: dict[DType, ElementType] = {
    DType.float: ElementType(DType.float, "f", "float", 32),
    DType.half: ElementType(DType.half, "f", "float", 16, "StorageBuffer16BitAccess", "SPV_KHR_16bit_storage"),
    DType.bf16: ElementType(DType.bf16, "f", "uint", 16, "StorageBuffer16BitAccess", "SPV_KHR_16bit_storage"),
    DType.double: ElementType(DType.double, "d", "float", 64, "Float64"),
    DType.int32: ElementType(DType.int32, "i", "int", 32),
    DType.int64: ElementType(DType.int64, "l", "int", 64, "Int64"),
    DType.uint32: ElementType(DType.uint32, "l", "uint", 32),
    # narrow integers: computed in 32-bit int, wrapped to their width after every operation
    DType.int8: ElementType(DType.int8, "i", "int", 8, "StorageBuffer8BitAccess", "SPV_KHR_8bit_storage"),
    DType.uint8: ElementType(DType.uint8, "i", "uint", 8, "StorageBuffer8BitAccess", "SPV_KHR_8bit_storage"),
    DType.int16: ElementType(DType.int16, "i", "int", 16, "StorageBuffer16BitAccess", "SPV_KHR_16bit_storage"),
    DType.uint16: ElementType(DType.uint16, "i", "uint", 16, "StorageBuffer16BitAccess", "SPV_KHR_16bit_storage"),
    DType.bool: ElementType(DType.bool, "b", "uint", 8, "StorageBuffer8BitAccess", "SPV_KHR_8bit_storage"),
    # fp8: bytes, computed in float and rounded to the format after every operation
    **{t: ElementType(t, "f", "uint", 8, "StorageBuffer8BitAccess", "SPV_KHR_8bit_storage") for t in DType if t.is_fp8},
}
# each fp8 format as ml_dtypes has it: (exponent bits, mantissa bits, bias, kind): kind 0 has
# infinities (e5m2), 1 is "fn" (S.1111.111 is NaN, what overflows is NaN), 2 is "fnuz" (0x80 is
# NaN and what overflows, no -0)
FP8_FORMATS: dict[DType, tuple[int, int, int, int]] = {
    DType.fp8e4m3fn: (4, 3, 7, 1),
    DType.fp8e4m3fnuz: (4, 3, 8, 2),
    DType.fp8e5m2: (5, 2, 15, 0),
    DType.fp8e5m2fnuz: (5, 2, 16, 2),
}


class Unsupported(Exception):
    """A module the SPIR-V translation cannot make a kernel for; the message says why."""


def element_type(dtype: DType) -> ElementType:
    found = ELEMENT_TYPES.get(dtype)
    if found is None:
        supported = ", ".join(t.type_name for t in ELEMENT_TYPES)
        raise Unsupported(f"element type {dtype.type_name} (kernels handle {supported})")
    return found
