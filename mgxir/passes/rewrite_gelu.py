"""rewrite_gelu: tanh-approximated GELU (`x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`
and its `0.797885 x + 0.035677 x^3` form) becomes `x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3)))`,
which overflows less, as MIGraphX's rewrite_gelu does. With `fast_math` (the default) the erf GELU
`0.5 * x * (1 + erf(x / sqrt 2))` and the tanh forms of half inputs are rewritten instead.

Unlike MIGraphX's matchers, every `x` in a pattern must be the same instruction and the constant
MIGraphX leaves unchecked in `x * (c + 0.5 * tanh(...))` must be 0.5, so only real GELUs change."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.matchers import has_value
from mgxir.passes.rewrite import Rewriter

_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)

Match = Callable[[Instruction], Instruction | None]


def _named(ins: Instruction, name: str, used_once: bool = False) -> bool:
    return (
        ins.op.defn.name == name
        and len(ins.args) == (1 if name == "tanh" or name == "erf" else 2)
        and (not used_once or len(ins.users) == 1)
    )


def _with_constant(ins: Instruction, name: str, value: float, used_once: bool = False) -> Instruction | None:
    """For `name(c, y)` or `name(y, c)` with `c` the constant `value`: `y`."""
    if not _named(ins, name, used_once):
        return None
    a, b = ins.args
    if has_value(b, value) and not has_value(a, value):
        return a
    if has_value(a, value):
        return b
    return None


def _cube_of(ins: Instruction) -> Instruction | None:
    if _named(ins, "pow", used_once=True) and has_value(ins.args[1], 3.0):
        return ins.args[0]
    return None


def _cubic_term(ins: Instruction, coefficient: float) -> Instruction | None:
    """`coefficient * x^3`: `x`."""
    if not _named(ins, "mul"):
        return None
    for a, b in ((ins.args[0], ins.args[1]), (ins.args[1], ins.args[0])):
        if has_value(a, coefficient):
            x = _cube_of(b)
            if x is not None:
                return x
    return None


def tanh_argument_x(tanh: Instruction) -> Instruction | None:
    """For `tanh(sqrt(2/pi) * (x + 0.044715 x^3))` or `tanh(0.797885 x + 0.035677 x^3)`: `x`."""
    if not _named(tanh, "tanh", used_once=True):
        return None
    inner = tanh.args[0]
    scaled = _with_constant(inner, "mul", _SQRT_2_OVER_PI)
    if scaled is not None and _named(scaled, "add"):
        for a, b in ((scaled.args[0], scaled.args[1]), (scaled.args[1], scaled.args[0])):
            if _cubic_term(a, 0.044715) is b:
                return b
    if _named(inner, "add"):
        for a, b in ((inner.args[0], inner.args[1]), (inner.args[1], inner.args[0])):
            x = _cubic_term(a, 0.035677)
            if x is not None and _with_constant(b, "mul", 0.797885) is x:
                return x
    return None


def gelu_tanh_x(ins: Instruction) -> Instruction | None:
    """`x * (0.5 + 0.5 * tanh(..x..))` or `(0.5 * x) * (1 + tanh(..x..))` in any argument order: `x`."""
    if not _named(ins, "mul"):
        return None
    for a, b in ((ins.args[0], ins.args[1]), (ins.args[1], ins.args[0])):
        if _named(b, "add"):
            for p, q in ((b.args[0], b.args[1]), (b.args[1], b.args[0])):
                half_tanh = _with_constant(q, "mul", 0.5)
                if has_value(p, 0.5) and half_tanh is not None and tanh_argument_x(half_tanh) is a:
                    return a
        half_x = _with_constant(a, "mul", 0.5, used_once=True)
        one_plus = _with_constant(b, "add", 1.0, used_once=True)
        if half_x is not None and one_plus is not None and tanh_argument_x(one_plus) is half_x:
            return half_x
    return None


def _erf_x(add: Instruction) -> Instruction | None:
    """For `1 + erf(x * sqrt(1/2))` or `1 + erf(x / sqrt 2)`: `x`."""
    erf = _with_constant(add, "add", 1.0, used_once=True)
    if erf is None or not _named(erf, "erf", used_once=True):
        return None
    scaled = erf.args[0]
    if len(scaled.users) != 1:
        return None
    x = _with_constant(scaled, "mul", math.sqrt(0.5))
    if x is not None:
        return x
    if _named(scaled, "div") and has_value(scaled.args[1], math.sqrt(2.0)):
        return scaled.args[0]
    return None


def gelu_erf_x(ins: Instruction) -> Instruction | None:
    """`0.5 * x * (1 + erf(x / sqrt 2))`, the three factors multiplied in any order: `x`."""
    if not _named(ins, "mul"):
        return None
    for inner, outer in ((ins.args[0], ins.args[1]), (ins.args[1], ins.args[0])):
        if not _named(inner, "mul"):
            continue
        factors = [inner.args[0], inner.args[1], outer]
        for i, half in enumerate(factors):
            if not has_value(half, 0.5):
                continue
            rest = factors[:i] + factors[i + 1 :]
            for add, x in (rest, rest[::-1]):
                if _erf_x(add) is x:
                    return x
    return None


def _scalar(module: Module, dtype: DType, value: float) -> Instruction:
    return module.add_literal(Literal(Shape.scalar_of(dtype), np.array([value])))


def _broadcast(module: Module, pos: Instruction, scalar: Instruction, like: Instruction) -> Instruction:
    return module.insert(pos, make_op("multibroadcast", out_lens=tuple(like.shape.lens)), [scalar])


def replace_with_exp_form(module: Module, ins: Instruction, x: Instruction) -> None:
    dtype = x.shape.dtype
    outer = -2.0 * _SQRT_2_OVER_PI
    cubic = 0.044715 * outer
    outer_lit, cubic_lit, one = (_scalar(module, dtype, v) for v in (outer, cubic, 1.0))
    xb = module.insert(ins, make_op("mul"), [x, _broadcast(module, ins, cubic_lit, x)])
    a = module.insert(ins, make_op("mul"), [x, xb])
    b = module.insert(ins, make_op("add"), [a, _broadcast(module, ins, outer_lit, a)])
    u = module.insert(ins, make_op("mul"), [x, b])
    exp_u = module.insert(ins, make_op("exp"), [u])
    c = module.insert(ins, make_op("add"), [_broadcast(module, ins, one, exp_u), exp_u])
    y = module.insert(ins, make_op("div"), [x, c])
    Rewriter(module).replace_all_uses(ins, y)


@dataclasses.dataclass
class RewriteGelu(ModulePass):
    name = "rewrite_gelu"
    description = "Rewrite tanh GELU (and, with fast_math, erf GELU of half inputs) as x / (1 + exp(...))."
    fast_math: bool = True

    def apply_module(self, module: Module, context: PassContext) -> None:
        for ins in list(module):
            if ins.parent is not module or ins.op.defn.name != "mul" or ins.shape.is_dynamic:
                continue
            if self.fast_math:
                x = gelu_erf_x(ins) or gelu_tanh_x(ins)
                if x is None or x.shape.dtype != DType.half:
                    continue
            else:
                x = gelu_tanh_x(ins)
                if x is None:
                    continue
            replace_with_exp_form(module, ins, x)
            context.count("gelu rewritten")
