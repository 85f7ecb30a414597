"""The matcher helpers rewrites share, named as MIGraphX's `match::` helpers are: use counts, reading a
literal's value, skipping through views, and the operator tests built from traits."""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.operation import OpDef
from mgxir.ir.shape import Shape
from mgxir.ir.traits import Broadcasting, Reduction, ShapeTransform, ValueTransparent

OpTest = Callable[[OpDef], bool]

# -- operator tests ---------------------------------------------------------------------------


def is_contiguous(defn: OpDef) -> bool:
    return defn.name == "contiguous"


def is_shape_transform(defn: OpDef) -> bool:
    return defn.has(ShapeTransform)


def is_shape_transform_or_contiguous(defn: OpDef) -> bool:
    """MIGraphX's shape-transform list with `contiguous` (simplify_reshapes, rewrite_reshapes)."""
    return defn.has(ShapeTransform) or defn.name == "contiguous"


def is_broadcast(defn: OpDef) -> bool:
    return defn.has(Broadcasting)


def is_broadcast_or_contiguous(defn: OpDef) -> bool:
    return defn.has(Broadcasting) or defn.name == "contiguous"


def is_pointwise(defn: OpDef) -> bool:
    return defn.pointwise


def is_reduction(defn: OpDef) -> bool:
    return defn.has(Reduction)


def is_reduce_like(defn: OpDef) -> bool:
    """MIGraphX's `contains(name, "reduce")` test: the reductions and the fused reductions."""
    return defn.has(Reduction) or "reduce" in defn.name


def is_reduction_or_pointwise(defn: OpDef) -> bool:
    return defn.pointwise or defn.has(Reduction)


# -- uses -------------------------------------------------------------------------------------


def used_once(ins: Instruction) -> bool:
    """MIGraphX's `match::used_once`: one user, or none when it is its module's last instruction."""
    users = ins.users
    return len(users) == 1 or (not users and ins.parent is not None and ins is ins.parent.last)


def first_user(ins: Instruction) -> Instruction:
    return next(iter(ins.users))


# -- walking ----------------------------------------------------------------------------------


def skip(ins: Instruction, through: OpTest) -> Instruction:
    """MIGraphX's `match::skip`: up single-input instructions whose op passes `through`, to the first
    other."""
    while len(ins.args) == 1 and through(ins.op.defn):
        ins = ins.args[0]
    return ins


def skip_output(ins: Instruction, through: OpTest) -> Instruction | None:
    """MIGraphX's `match::skip_output`: down single outputs past instructions whose op passes
    `through`; None where `ins` has not exactly one output."""
    while len(ins.users) == 1:
        after = first_user(ins)
        if not through(after.op.defn) or len(after.users) != 1:
            return after
        ins = after
    return None


# -- literal values ---------------------------------------------------------------------------


def scalar_constant(ins: Instruction) -> Literal | None:
    """The one value of a constant with one element (through broadcasts and contiguous), as a
    scalar literal."""
    while is_broadcast_or_contiguous(ins.op.defn) and ins.args:
        ins = ins.args[0]
    if not ins.is_literal or ins.literal.data is None:
        return None
    shape = ins.shape
    if shape.is_dynamic or shape.is_tuple or not (shape.elements == 1 or shape.scalar):
        return None
    return Literal(Shape.scalar_of(shape.dtype), ins.literal.data.ravel()[:1])


_DOUBLE_PRECISION = frozenset({DType.double})


def has_value(ins: Instruction, value: float, atol_mult: int = 10, rtol_mult: int = 10) -> bool:
    """MIGraphX's `match::has_value(value, atol_mult, rtol_mult)`: every element of the literal under
    `ins` (through broadcasts, contiguous and converts) equals `value` cast to the literal's type;
    floats (bf16 and fp8 included) within epsilon * (atol + rtol * |value|), exactly (one step) when
    that tolerance is 0."""
    while len(ins.args) == 1 and ins.op.defn.has(ValueTransparent):
        ins = ins.args[0]
    if not ins.is_literal or ins.literal.elided:
        return False
    dtype = ins.literal.shape.dtype
    data = ins.literal.data
    if data.size == 0:
        return False
    tolerance = atol_mult + rtol_mult * abs(value)
    if not dtype.is_float:
        return bool(np.all(data == _cast_to_integral(value, data.dtype)))
    target = np.asarray(value, dtype=np.float64).astype(data.dtype)
    if tolerance == 0:
        return _within_one_ulp(data, target, dtype)
    epsilon = float(ml_dtypes.finfo(data.dtype).eps)
    difference = np.abs(data.astype(np.float64) - target.astype(np.float64))
    return bool(np.all(difference < epsilon * tolerance))


def _cast_to_integral(value: float, dtype: np.dtype) -> np.generic:
    """`static_cast<T>(value)` for an integral T (unsigned types wrap, as on the hardware)."""
    if dtype == np.bool_:
        return np.bool_(value != 0)
    bits = np.dtype(dtype).itemsize * 8
    wrapped = int(value) % (1 << bits)
    if np.issubdtype(dtype, np.signedinteger) and wrapped >= 1 << (bits - 1):
        wrapped -= 1 << bits
    return np.asarray(wrapped).astype(dtype)[()]


def _within_one_ulp(data: np.ndarray, target: np.ndarray, dtype: DType) -> bool:
    """`float_equal`: both finite and at most one step apart in the common type with float."""
    common = np.float64 if dtype in _DOUBLE_PRECISION else np.float32
    values = data.astype(common)
    centre = target.astype(common)
    low = np.nextafter(centre, common(-np.inf))
    high = np.nextafter(centre, common(np.inf))
    return bool(np.isfinite(centre) and np.all(np.isfinite(values) & (low <= values) & (values <= high)))
