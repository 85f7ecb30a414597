"""MIGraphX element types: names, enum ids, sizes and numpy dtypes."""

from __future__ import annotations

import enum

import numpy as np


class DType(enum.IntEnum):
    """The element types of MIGraphX, with the enum values that `convert[target_type=N]` prints."""

    bool = 0
    half = 1
    float = 2
    double = 3
    uint8 = 4
    int8 = 5
    uint16 = 6
    int16 = 7
    int32 = 8
    int64 = 9
    uint32 = 10
    uint64 = 11
    fp8e4m3fnuz = 12
    fp8e4m3fn = 13
    fp8e5m2 = 14
    bf16 = 15
    fp8e5m2fnuz = 16
    tuple = 17
    fp4x2 = 18

    @property
    def type_name(self) -> str:
        """The printed name, e.g. `float_type`."""
        return _TYPE_NAMES[self]

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype holding one element (fp4x2 holds two packed values in a uint8)."""
        if self is DType.tuple:
            raise ValueError("tuple_type has no element dtype")
        found = _NUMPY.get(self)
        return found if found is not None else _with_ml_dtypes()[self]

    @property
    def itemsize(self) -> int:
        return 0 if self is DType.tuple else self.numpy.itemsize

    @property
    def is_float(self) -> bool:
        return self in _FLOATS

    @property
    def is_integral(self) -> bool:
        return self in _INTEGRALS

    @property
    def is_unsigned(self) -> bool:
        return self in (DType.bool, DType.uint8, DType.uint16, DType.uint32, DType.uint64)

    @property
    def is_fp8(self) -> bool:
        return self in (DType.fp8e4m3fnuz, DType.fp8e4m3fn, DType.fp8e5m2, DType.fp8e5m2fnuz)

    @property
    def bits_dtype(self) -> np.dtype:
        """The unsigned integer dtype with the same width, for bit-exact storage."""
        return np.dtype(f"u{self.itemsize}") if self is not DType.bool else np.dtype("u1")

    @staticmethod
    def from_name(name: str) -> DType:
        """`float_type` -> DType.float; raises KeyError for an unknown name."""
        return _BY_NAME[name]

    @staticmethod
    def from_numpy(dtype: np.dtype) -> DType:
        dtype = np.dtype(dtype)
        found = _BY_NUMPY.get(dtype)
        if found is None:
            _with_ml_dtypes()
            found = _BY_NUMPY[dtype]
        return found


_TYPE_NAMES = {t: f"{t.name}_type" for t in DType}
_BY_NAME = {name: t for t, name in _TYPE_NAMES.items()}
_NUMPY: dict[DType, np.dtype] = {
    DType.bool: np.dtype(np.bool_),
    DType.half: np.dtype(np.float16),
    DType.float: np.dtype(np.float32),
    DType.double: np.dtype(np.float64),
    DType.uint8: np.dtype(np.uint8),
    DType.int8: np.dtype(np.int8),
    DType.uint16: np.dtype(np.uint16),
    DType.int16: np.dtype(np.int16),
    DType.int32: np.dtype(np.int32),
    DType.int64: np.dtype(np.int64),
    DType.uint32: np.dtype(np.uint32),
    DType.uint64: np.dtype(np.uint64),
    DType.fp4x2: np.dtype(np.uint8),
}
_BY_NUMPY = {dt: t for t, dt in _NUMPY.items() if t is not DType.fp4x2}
# the types numpy lacks come from ml_dtypes, imported on first use (a tenth of numpy's import time)
_ML_DTYPES = {
    DType.fp8e4m3fnuz: "float8_e4m3fnuz",
    DType.fp8e4m3fn: "float8_e4m3fn",
    DType.fp8e5m2: "float8_e5m2",
    DType.bf16: "bfloat16",
    DType.fp8e5m2fnuz: "float8_e5m2fnuz",
}


def _with_ml_dtypes() -> dict[DType, np.dtype]:
    """The dtype tables, completed with ml_dtypes' types."""
    if DType.bf16 not in _NUMPY:
        import ml_dtypes

        for t, name in _ML_DTYPES.items():
            _NUMPY[t] = np.dtype(getattr(ml_dtypes, name))
            _BY_NUMPY[_NUMPY[t]] = t
    return _NUMPY


_FLOATS = frozenset(
    {
        DType.half,
        DType.float,
        DType.double,
        DType.bf16,
        DType.fp8e4m3fnuz,
        DType.fp8e4m3fn,
        DType.fp8e5m2,
        DType.fp8e5m2fnuz,
    }
)
_INTEGRALS = frozenset(
    {
        DType.bool,
        DType.uint8,
        DType.int8,
        DType.uint16,
        DType.int16,
        DType.int32,
        DType.int64,
        DType.uint32,
        DType.uint64,
    }
)
