"""simplify_reshapes' first rewrites: find_nop_reshapes (a shape op whose result has its input's shape,
or a reduction that keeps the lens, is its input), find_flatten (flatten becomes reshape), and the cases of
find_nested_shape_transforms that need no general shape-transform algebra: a chain from a scalar
becomes one multibroadcast, a chain between one-element shapes one reshape, a chain of reshape,
squeeze and unsqueeze one squeeze, unsqueeze or reshape, and a chain of transposes one transpose
(none when the permutations cancel)."""

from __future__ import annotations

from collections.abc import Sequence

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ops.registry import make_op
from mgxir.passes.rewrite import replace_instruction, replace_op

_SAME_SHAPE_NOPS = frozenset(
    {
        "flatten",
        "reshape",
        "contiguous",
        "squeeze",
        "unsqueeze",
        "as_shape",
        "broadcast",
        "concat",
        "convert",
        "multibroadcast",
        "pad",
        "slice",
        "step",
        "transpose",
    }
)
_SAME_LENS_NOPS = frozenset({"reduce_mean", "reduce_max", "reduce_min", "reduce_sum", "reduce_prod"})
_SHAPE_TRANSFORMS = frozenset(
    {"flatten", "reshape", "squeeze", "unsqueeze", "transpose", "broadcast", "multibroadcast"}
)
_RESHAPERS = frozenset({"flatten", "reshape", "squeeze", "unsqueeze"})


def find_nop_reshapes(module: Module, ins: Instruction) -> bool:
    name = ins.op.defn.name
    if not ins.args:
        return False
    source = ins.args[0]
    if (name in _SAME_SHAPE_NOPS and ins.shape == source.shape) or (
        name in _SAME_LENS_NOPS and ins.shape.lens == source.shape.lens
    ):
        replace_instruction(module, ins, source)
        return True
    return False


def find_flatten(module: Module, ins: Instruction) -> bool:
    if ins.op.defn.name != "flatten" or ins.shape.is_dynamic:
        return False
    replace_op(module, ins, make_op("reshape", dims=ins.shape.lens))
    return True


def _skip_contiguous(ins: Instruction) -> Instruction:
    while ins.op.defn.name == "contiguous" and ins.args:
        ins = ins.args[0]
    return ins


def _feeds_shape_transform(ins: Instruction) -> bool:
    for user in ins.users:
        if user.op.defn.name in _SHAPE_TRANSFORMS:
            return True
        if user.op.defn.name == "contiguous" and _feeds_shape_transform(user):
            return True
    return False


def insert_auto_reshape(module: Module, pos: Instruction, dims: Sequence[int], source: Instruction) -> Instruction:
    """`source` reshaped to `dims`: itself, a squeeze or unsqueeze of size-1 axes, else a reshape."""
    lens = list(source.shape.lens)
    dims = list(dims)
    if dims == lens:
        return source
    if len(lens) > len(dims):
        axes = _size_one_axes(longer=lens, shorter=dims)
        if axes:
            return module.insert(pos, make_op("squeeze", axes=axes), [source])
    elif len(lens) < len(dims):
        axes = _size_one_axes(longer=dims, shorter=lens)
        if axes:
            return module.insert(pos, make_op("unsqueeze", axes=axes), [source])
    return module.insert(pos, make_op("reshape", dims=dims), [source])


def _size_one_axes(longer: list[int], shorter: list[int]) -> list[int]:
    """The axes of `longer` to drop (all of size 1) to leave `shorter`, or [] if there are none."""
    axes = []
    at = 0
    for i, n in enumerate(longer):
        if n == 1:
            axes.append(i)
        elif at < len(shorter) and shorter[at] == n:
            at += 1
        else:
            return []
    return axes if at == len(shorter) else []


def find_nested_shape_transforms(module: Module, ins: Instruction) -> bool:
    if ins.op.defn.name not in _SHAPE_TRANSFORMS or not ins.args or ins.shape.is_dynamic:
        return False
    if _skip_contiguous(ins.args[0]).op.defn.name not in _SHAPE_TRANSFORMS or _feeds_shape_transform(ins):
        return False
    chain: list[Instruction] = []
    source = ins
    while source.op.defn.name in _SHAPE_TRANSFORMS or source.op.defn.name == "contiguous":
        chain.append(source)
        source = source.args[0]
    if source.shape.is_dynamic or source.shape.is_tuple:
        return False
    lens = ins.shape.lens
    if source.shape.scalar:
        replace_op(module, ins, make_op("multibroadcast", out_lens=lens), [source])
        return True
    if source.shape.elements == 1 and ins.shape.elements == 1:
        replace_op(module, ins, make_op("reshape", dims=lens), [source])
        return True
    names = {c.op.defn.name for c in chain}
    if names <= _RESHAPERS and len(chain) > 1:
        replacement = insert_auto_reshape(module, ins, lens, source)
        replace_instruction(module, ins, replacement)
        return True
    if names == {"transpose"} and len(chain) > 1:
        permutation = list(range(source.shape.ndim))
        for step in reversed(chain):
            permutation = [permutation[p] for p in step.op["permutation"]]
        if permutation == sorted(permutation):
            replace_instruction(module, ins, source)
        else:
            replace_op(module, ins, make_op("transpose", permutation=permutation), [source])
        return True
    return False


REWRITES = (find_nop_reshapes, find_flatten, find_nested_shape_transforms)
