"""The numpy emitter: the scalar meanings evaluated on whole arrays at once, so that the test suite
checks every meaning against the reference compute on many edge values cheaply. Each call is the
protocol's rule written with numpy (mgxir/ops/scalar.py); it records the math functions a meaning
used (`functions`), which tells a comparison where an ulp bound applies."""

from __future__ import annotations

import math

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ops.scalar import Arithmetic, BinaryFunction, Logic, MathFunction, Predicate

_MATH = {
    "acos": np.arccos,
    "acosh": np.arccosh,
    "asin": np.arcsin,
    "asinh": np.arcsinh,
    "atan": np.arctan,
    "atanh": np.arctanh,
    "ceil": np.ceil,
    "cos": np.cos,
    "cosh": np.cosh,
    "exp": np.exp,
    "expm1": np.expm1,
    "fabs": np.abs,
    "floor": np.floor,
    "log": np.log,
    "log2": np.log2,
    "rint": np.rint,
    "sin": np.sin,
    "sinh": np.sinh,
    "sqrt": np.sqrt,
    "tan": np.tan,
    "tanh": np.tanh,
    "trunc": np.trunc,
}
_COMPARE = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}
_LOGIC = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def _c_remainder(x: float, y: float) -> float:
    if y == 0 or math.isinf(x) or math.isnan(x) or math.isnan(y):
        return math.nan
    return math.remainder(x, y)


_remainder = np.vectorize(_c_remainder, otypes=[np.float64])
_erf = np.vectorize(math.erf, otypes=[np.float64])


class NumpyEmitter:
    """Values are numpy arrays (or 0-d arrays for constants); every result broadcasts its operands."""

    def __init__(self) -> None:
        self.functions: set[str] = set()

    def dtype_of(self, v: np.ndarray) -> DType:
        return DType.from_numpy(v.dtype)

    def constant(self, value: float | int | bool, t: DType) -> np.ndarray:
        with np.errstate(over="ignore"):  # a limit beyond the type's range is its infinity
            return np.asarray(value).astype(t.numpy)

    def arithmetic(self, op: Arithmetic, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.asarray(a), np.asarray(b)
        with np.errstate(all="ignore"):
            if op == "add":
                return np.asarray(a + b)
            if op == "sub":
                return np.asarray(a - b)
            if op == "mul":
                return np.asarray(a * b)
            if op == "rem":
                return np.asarray(np.fmod(a, b))
            if a.dtype.kind in "iu":  # C division truncates toward zero
                q = a // b
                return np.asarray(np.where((np.fmod(a, b) != 0) & ((a < 0) != (b < 0)), q + 1, q).astype(a.dtype))
            return np.asarray(a / b)

    def neg(self, a: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(np.negative(a))

    def compare(self, predicate: Predicate, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(_COMPARE[predicate](a, b))

    def select(self, condition: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.where(condition, a, b)).astype(np.result_type(a, b))

    def logic(self, op: Logic, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(_LOGIC[op](a, b))

    def logical_not(self, a: np.ndarray) -> np.ndarray:
        return np.asarray(np.logical_not(a))

    def bitwise_and(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(np.bitwise_and(a, b))

    def convert(self, v: np.ndarray, t: DType) -> np.ndarray:
        v = np.asarray(v)
        with np.errstate(all="ignore"):
            if t is DType.bool:
                return np.asarray(v != 0)
            if v.dtype.kind == "f" and t.is_integral:
                return np.trunc(v).astype(t.numpy)
            return v.astype(t.numpy)

    def math(self, function: MathFunction, x: np.ndarray) -> np.ndarray:
        self.functions.add(function)
        x = np.asarray(x)
        narrow = x.dtype.name.startswith(("float8", "bfloat"))  # ml_dtypes' types: computed in float
        wide = x.astype(np.float32) if narrow else x
        with np.errstate(all="ignore"):
            y = _erf(wide).astype(wide.dtype) if function == "erf" else _MATH[function](wide)
        return np.asarray(y).astype(x.dtype)

    def binary_math(self, function: BinaryFunction, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        self.functions.add(function)
        a, b = np.asarray(a), np.asarray(b)
        with np.errstate(all="ignore"):
            if function == "pow":
                return np.asarray(np.power(a, b))
            return np.asarray(_remainder(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype))

    def is_nan(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.isnan(x))

    def is_inf(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(np.isinf(x))

    def reinterpret(self, v: np.ndarray, t: DType) -> np.ndarray:
        return np.ascontiguousarray(v).view(t.numpy)

    def extremum(self, a: np.ndarray, b: np.ndarray, largest: bool) -> np.ndarray:
        return np.asarray(np.maximum(a, b) if largest else np.minimum(a, b))
