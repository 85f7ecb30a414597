"""rewrite_reduce: as MIGraphX's rewrite_reduce, reductions built into other operators become
explicit reductions:

- `logsoftmax` becomes `log(softmax)`;
- `softmax` becomes `exp(x - max) / sum(exp(x - max))` with reduce_max and reduce_sum, computed
  in float for inputs of narrower types (MIGraphX's upcast followed by eliminate_convert);
- the variance `mean((x - mean(x))^2)` (as pow, mul or sqdiff) becomes `mean(x*x) - mean(x)^2`;
- `reduce_mean` becomes `reduce_sum(x / n)` (integers: `reduce_sum(x) / n`), accumulating in
  float (int32 for integers) for one-byte types and for two-byte types over many elements.

Not done here: MIGraphX's float upcast of the attention chain from a dot to a half softmax, and
its closing simplify_reshapes/CSE runs. A convert back to the result type is added only where the
type changed (MIGraphX always adds one)."""

from __future__ import annotations

import dataclasses

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.ir.traits import Broadcasting
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.matchers import has_value
from mgxir.passes.rewrite import Rewriter

_WIDE_FLOATS = frozenset({DType.float, DType.double})


def _convert(module: Module, pos: Instruction, x: Instruction, dtype: DType) -> Instruction:
    if x.shape.dtype == dtype:
        return x
    return module.insert(pos, make_op("convert", target_type=dtype), [x])


def _broadcast_to(module: Module, pos: Instruction, x: Instruction, lens: tuple[int, ...]) -> Instruction:
    if tuple(x.shape.lens) == lens:
        return x
    return module.insert(pos, make_op("multibroadcast", out_lens=lens), [x])


def _finish(module: Module, ins: Instruction, result: Instruction, dtype: DType) -> None:
    """`ins`'s users read `result`, converted to `dtype` in place of `ins` where the type changed."""
    if result.shape.dtype == dtype:
        Rewriter(module).replace_all_uses(ins, result)
    else:
        Rewriter(module).replace(ins, make_op("convert", target_type=dtype), [result])


def rewrite_softmax(module: Module, ins: Instruction) -> None:
    source = ins.args[0]
    axis = ins.op["axis"]
    lens = tuple(source.shape.lens)
    x = _convert(module, ins, source, DType.float) if source.shape.dtype not in _WIDE_FLOATS else source
    largest = module.insert(ins, make_op("reduce_max", axes=(axis,)), [x])
    shifted = module.insert(ins, make_op("sub"), [x, _broadcast_to(module, ins, largest, lens)])
    exp = module.insert(ins, make_op("exp"), [shifted])
    total = module.insert(ins, make_op("reduce_sum", axes=(axis,)), [exp])
    if x is source:
        Rewriter(module).replace(ins, make_op("div"), [exp, _broadcast_to(module, ins, total, lens)])
    else:
        quotient = module.insert(ins, make_op("div"), [exp, _broadcast_to(module, ins, total, lens)])
        Rewriter(module).replace(ins, make_op("convert", target_type=source.shape.dtype), [quotient])


def _skip_broadcasts(ins: Instruction) -> Instruction:
    while ins.op.defn.has(Broadcasting) and ins.args:
        ins = ins.args[0]
    return ins


def variance_parts(ins: Instruction) -> tuple[Instruction, Instruction] | None:
    """For `reduce_mean(d)` with d = (x - mean)^2, (x - mean)*(x - mean) or sqdiff(x, mean), mean
    being the same reduce_mean of x: (x, mean)."""
    inner = ins.args[0]
    name = inner.op.defn.name
    candidates: list[tuple[Instruction, Instruction]] = []
    if (name == "pow" or name == "mul") and len(inner.args) == 2:
        difference = inner.args[0]
        squared = has_value(inner.args[1], 2.0) if name == "pow" else inner.args[1] is difference
        if squared and difference.op.defn.name == "sub" and len(difference.args) == 2:
            candidates.append((difference.args[0], _skip_broadcasts(difference.args[1])))
    elif name == "sqdiff" and len(inner.args) == 2:
        a, b = inner.args
        candidates += [(a, _skip_broadcasts(b)), (b, _skip_broadcasts(a))]
    for x, mean in candidates:
        if mean.op == ins.op and mean.args and mean.args[0] is x:
            return x, mean
    return None


def rewrite_variance(module: Module, ins: Instruction, x: Instruction, mean: Instruction) -> None:
    squares = module.insert(ins, make_op("mul"), [x, x])
    mean_of_squares = module.insert(ins, mean.op, [squares])
    square_of_mean = module.insert(ins, make_op("mul"), [mean, mean])
    Rewriter(module).replace(ins, make_op("sub"), [mean_of_squares, square_of_mean])


def _accumulates_wider(dtype: DType, count: int) -> bool:
    size = dtype.itemsize
    if size == 1:
        return True
    if size >= 3:
        return False
    if dtype.is_integral:
        largest = float(np.iinfo(dtype.numpy).max)
    else:
        import ml_dtypes  # its finfo knows bf16 as well as numpy's types

        largest = float(ml_dtypes.finfo(dtype.numpy).max)
    return count >= largest / 4


def rewrite_mean(module: Module, ins: Instruction) -> None:
    source = ins.args[0]
    dtype = source.shape.dtype
    integral = dtype.is_integral or dtype == DType.bool
    count = source.shape.elements // max(ins.shape.elements, 1)
    x = source
    if _accumulates_wider(dtype, count):
        x = _convert(module, ins, source, DType.int32 if integral else DType.float)
    accumulator = x.shape.dtype
    n = module.add_literal(Literal(Shape.make(accumulator, (1,)), np.array([count])))
    axes: Operation = make_op("reduce_sum", axes=ins.op["axes"])
    if integral:
        total = module.insert(ins, axes, [x])
        quotient = module.insert(ins, make_op("div"), [total, _broadcast_to(module, ins, n, tuple(total.shape.lens))])
        _finish(module, ins, quotient, ins.shape.dtype)
    else:
        scaled = module.insert(ins, make_op("div"), [x, _broadcast_to(module, ins, n, tuple(x.shape.lens))])
        total = module.insert(ins, axes, [scaled])
        _finish(module, ins, total, ins.shape.dtype)


@dataclasses.dataclass
class RewriteReduce(ModulePass):
    name = "rewrite_reduce"
    description = "Lower softmax, logsoftmax, variance and reduce_mean to reduce_max/reduce_sum arithmetic."

    def apply_module(self, module: Module, context: PassContext) -> None:
        for ins in list(module):
            if ins.op.defn.name == "logsoftmax" and ins.args and not ins.shape.is_dynamic:
                softmax = module.insert(ins, make_op("softmax", axis=ins.op["axis"]), [ins.args[0]])
                Rewriter(module).replace(ins, make_op("log"), [softmax])
                context.count("logsoftmax rewritten")
        for ins in list(module):
            if not ins.args or ins.is_return or ins.shape.is_dynamic or ins.args[0].shape.is_dynamic:
                continue
            if ins.op.defn.name == "softmax":
                rewrite_softmax(module, ins)
                context.count("softmax rewritten")
            elif ins.op.defn.name == "reduce_mean":
                parts = variance_parts(ins)
                if parts is not None:
                    rewrite_variance(module, ins, *parts)
                    context.count("variance rewritten")
        for ins in list(module):
            if ins.op.defn.name == "reduce_mean" and ins.args and not ins.args[0].shape.is_dynamic:
                rewrite_mean(module, ins)
                context.count("reduce_mean rewritten")
