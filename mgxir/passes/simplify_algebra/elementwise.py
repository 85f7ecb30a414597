"""simplify_algebra's elementwise rewrites: multiplying or dividing by 1 or -1, adding or subtracting 0,
zero products and quotients, zero points of (de)quantization, division and subtraction by constants,
rsqrt, log of exp or of a quotient, and squaring. Constants are recognised as MIGraphX's
`match::has_value` does: through broadcasts, contiguous and converts down to a literal whose every
element equals the value, within a tolerance for floating-point types."""

from __future__ import annotations

from mgxir.ir.instruction import Instruction
from mgxir.ir.registry import make_op
from mgxir.ir.traits import ZeroPointed
from mgxir.passes.matchers import has_value, used_once
from mgxir.passes.propagate_constant import ConstantAnalysis
from mgxir.passes.rewrite import MATCHED_UNCHANGED, Rewriter, pattern


def _value_and_other(ins: Instruction, value: float, atol_mult: int = 10, rtol_mult: int = 10) -> Instruction | None:
    """`either_arg(0, 1)(has_value(value), any().bind("x"))`: x, the argument beside the value."""
    if len(ins.args) < 2:
        return None
    if has_value(ins.args[0], value, atol_mult, rtol_mult):
        return ins.args[1]
    if has_value(ins.args[1], value, atol_mult, rtol_mult):
        return ins.args[0]
    return None


def _second_is(ins: Instruction, value: float, atol_mult: int = 10, rtol_mult: int = 10) -> bool:
    """`args(any(), has_value(value))`: two arguments, the second the value."""
    return len(ins.args) == 2 and has_value(ins.args[1], value, atol_mult, rtol_mult)


@pattern("mul", "div", "add", "sub")
def find_unit_ops(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> bool:
    """x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0 -> x."""
    name = ins.op.defn.name
    x: Instruction | None = None
    if name == "mul":
        x = _value_and_other(ins, 1.0)
    elif name == "div" and _second_is(ins, 1.0):
        x = ins.args[0]
    elif name == "add":
        x = _value_and_other(ins, 0.0, 0, 0)
    elif name == "sub" and _second_is(ins, 0.0, 0, 0):
        x = ins.args[0]
    if x is None:
        return False
    rewriter.replace_all_uses(ins, x)
    return True


@pattern("mul", "div", "sub")
def find_neg_unit_ops(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> bool:
    """x * -1, -1 * x, x / -1, 0 - x -> neg(x)."""
    name = ins.op.defn.name
    x: Instruction | None = None
    if name == "mul":
        x = _value_and_other(ins, -1.0)
    elif name == "div" and _second_is(ins, -1.0):
        x = ins.args[0]
    elif name == "sub" and len(ins.args) == 2 and has_value(ins.args[0], 0.0, 0, 0):
        x = ins.args[1]
    if x is None:
        return False
    neg = rewriter.insert(ins, make_op("neg"), [x])
    rewriter.replace_all_uses(ins, neg)
    return True


@pattern(ZeroPointed)
def eliminate_zero_point(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> bool:
    """quantizelinear / dequantizelinear with a zero point of 0 drop it (quantizelinear keeps its
    output type in out_type)."""
    name = ins.op.defn.name
    if not ins.op.defn.has(ZeroPointed) or len(ins.args) < 3:
        return False
    if not has_value(ins.args[2], 0.0, 0, 0):
        return False
    op = ins.op.replace(out_type=ins.shape.dtype) if name == "quantizelinear" else ins.op
    without_zero_point = rewriter.insert(ins, op, ins.args[:2])
    rewriter.replace_all_uses(ins, without_zero_point)
    return True


@pattern("mul", "div")
def find_zero_ops(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> bool:
    """0 * x, x * 0, 0 / x -> the zero (a scalar zero reshaped to the result's lens)."""
    name = ins.op.defn.name
    zero: Instruction | None = None
    if name == "mul" and len(ins.args) >= 2:
        zero = next((a for a in ins.args[:2] if has_value(a, 0.0, 0, 0)), None)
    elif name == "div" and len(ins.args) == 2 and has_value(ins.args[0], 0.0, 0, 0):
        zero = ins.args[0]
    if zero is None or ins.shape.is_dynamic:
        return False
    if zero.shape.scalar:
        zero = rewriter.insert(ins, make_op("reshape", dims=ins.shape.lens), [zero])
    rewriter.replace_all_uses(ins, zero)
    return True


@pattern("div")
def find_div_const(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> object:
    """x / c -> x * recip(c), recip placed just after c; not for integral types."""
    if ins.op.defn.name != "div" or len(ins.args) < 2 or not constant(ins.args[1]):
        return False
    c = ins.args[1]
    if ins.shape.dtype.is_integral:
        return MATCHED_UNCHANGED
    recip = rewriter.insert_after(c, make_op("recip"), [c])
    rewriter.replace(ins, make_op("mul"), [ins.args[0], recip])
    return True


@pattern("sub")
def find_sub_const(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> bool:
    """x - c -> x + neg(c), neg placed just after c."""
    if ins.op.defn.name != "sub" or len(ins.args) < 2 or not constant(ins.args[1]):
        return False
    c = ins.args[1]
    neg = rewriter.insert_after(c, make_op("neg"), [c])
    rewriter.replace(ins, make_op("add"), [ins.args[0], neg])
    return True


@pattern("recip")
def find_rsqrt(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> bool:
    """recip(sqrt(x)) -> rsqrt(x) when the sqrt has no other use."""
    if ins.op.defn.name != "recip" or len(ins.args) != 1:
        return False
    sqrt = ins.args[0]
    if sqrt.op.defn.name != "sqrt" or len(sqrt.args) != 1 or not used_once(sqrt):
        return False
    rewriter.replace(ins, make_op("rsqrt"), [sqrt.args[0]])
    return True


@pattern("log")
def find_log_exp(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> bool:
    """log(exp(x)) -> x."""
    if ins.op.defn.name != "log" or not ins.args:
        return False
    exp = ins.args[0]
    if exp.op.defn.name != "exp" or len(exp.args) != 1:
        return False
    rewriter.replace_all_uses(ins, exp.args[0])
    return True


def _positive(ins: Instruction) -> bool:
    """exp(..), reduce_sum(exp(..)) or multibroadcast(reduce_sum(exp(..)))."""
    if ins.op.defn.name == "multibroadcast" and ins.args:
        ins = ins.args[0]
        if ins.op.defn.name != "reduce_sum":
            return False
    if ins.op.defn.name == "reduce_sum" and ins.args:
        ins = ins.args[0]
    return ins.op.defn.name == "exp"


@pattern("log")
def find_log_div(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> bool:
    """log(x / y) -> log(x) - log(y) when x and y are known positive and the quotient has no other use."""
    if ins.op.defn.name != "log" or len(ins.args) != 1:
        return False
    div = ins.args[0]
    if div.op.defn.name != "div" or len(div.args) != 2 or not used_once(div):
        return False
    x, y = div.args
    if not (_positive(x) and _positive(y)):
        return False
    log_x = rewriter.insert(ins, make_op("log"), [x])
    log_y = rewriter.insert(ins, make_op("log"), [y])
    rewriter.replace(ins, make_op("sub"), [log_x, log_y])
    return True


@pattern("pow")
def find_pow2(rewriter: Rewriter, ins: Instruction, constant: ConstantAnalysis) -> bool:
    """pow(x, 2) -> x * x."""
    if ins.op.defn.name != "pow" or len(ins.args) < 2 or not has_value(ins.args[1], 2.0, 0, 1):
        return False
    x = ins.args[0]
    square = rewriter.insert(ins, make_op("mul"), [x, x])
    rewriter.replace_all_uses(ins, square)
    return True


REWRITES = (
    find_unit_ops,
    find_neg_unit_ops,
    eliminate_zero_point,
    find_zero_ops,
    find_div_const,
    find_sub_const,
    find_rsqrt,
    find_log_exp,
    find_log_div,
    find_pow2,
)
