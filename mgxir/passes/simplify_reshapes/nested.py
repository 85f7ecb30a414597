"""simplify_reshapes' first rewrites: find_nop_reshapes (a shape op whose result has its input's shape,
or a reduction that keeps the lens, is its input), find_flatten (flatten becomes reshape) and
find_nested_shape_transforms (a chain of views becomes the fewest views the shape-transform descriptor
generates: one multibroadcast from a scalar, one reshape between one-element shapes). Also
insert_auto_reshape, MIGraphX's helper that picks squeeze, unsqueeze or reshape."""

from __future__ import annotations

from collections.abc import Sequence

from mgxir.analysis.shape_transform_descriptor import optimize_shape_transforms
from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import OpDef
from mgxir.ir.registry import make_op
from mgxir.ir.traits import NopWhenLensKept, NopWhenShapeKept, ShapeTransform
from mgxir.passes.matchers import is_contiguous, is_shape_transform, is_shape_transform_or_contiguous, skip, skip_output
from mgxir.passes.rewrite import MATCHED_UNCHANGED, Rewriter, pattern


def _nop_when_kept(defn: OpDef) -> bool:
    return defn.has(NopWhenShapeKept) or defn.has(NopWhenLensKept)


@pattern(where=_nop_when_kept)
def find_nop_reshapes(rewriter: Rewriter, ins: Instruction) -> bool:
    defn = ins.op.defn
    if not ins.args:
        return False
    source = ins.args[0]
    # a dynamic shape's lens are its maxima: a reduction over axes given at run time keeps them
    # there and still reduces (MIGraphX's same_shape never equals a dynamic and a static shape)
    if (defn.has(NopWhenShapeKept) and ins.shape == source.shape) or (
        defn.has(NopWhenLensKept)
        and ins.shape.lens == source.shape.lens
        and not ins.shape.is_dynamic
        and not source.shape.is_dynamic
    ):
        rewriter.replace_all_uses(ins, source)
        return True
    return False


@pattern("flatten")
def find_flatten(rewriter: Rewriter, ins: Instruction) -> bool:
    if ins.op.defn.name != "flatten" or ins.shape.is_dynamic:
        return False
    rewriter.replace(ins, make_op("reshape", dims=ins.shape.lens))
    return True


def _skip_contiguous(ins: Instruction) -> Instruction:
    return skip(ins, is_contiguous)


def _output_is_shape_transform(ins: Instruction) -> bool:
    """MIGraphX's skip_output(contiguous)(shape transform): down single outputs past contiguous."""
    after = skip_output(ins, is_contiguous)
    return after is not None and after.op.defn.has(ShapeTransform)


def insert_auto_reshape(rewriter: Rewriter, pos: Instruction, dims: Sequence[int], source: Instruction) -> Instruction:
    """`source` reshaped to `dims`: itself, a squeeze or unsqueeze of size-1 axes, else a reshape."""
    lens = list(source.shape.lens)
    dims = list(dims)
    if dims == lens:
        return source
    if len(lens) > len(dims):
        axes = _size_one_axes(longer=lens, shorter=dims)
        if axes:
            return rewriter.insert(pos, make_op("squeeze", axes=axes), [source])
    elif len(lens) < len(dims):
        axes = _size_one_axes(longer=dims, shorter=lens)
        if axes:
            return rewriter.insert(pos, make_op("unsqueeze", axes=axes), [source])
    return rewriter.insert(pos, make_op("reshape", dims=dims), [source])


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


def _broadcasts_to(lens: Sequence[int], out_lens: Sequence[int]) -> bool:
    if len(lens) > len(out_lens):
        return False
    return all(n in (1, m) for n, m in zip(reversed(lens), reversed(out_lens)))


@pattern(where=is_shape_transform)
def find_nested_shape_transforms(rewriter: Rewriter, ins: Instruction) -> object:
    if not ins.op.defn.has(ShapeTransform) or len(ins.args) != 1 or ins.shape.is_dynamic:
        return False
    if not _skip_contiguous(ins.args[0]).op.defn.has(ShapeTransform) or _output_is_shape_transform(ins):
        return False
    ops = []
    source = ins
    while is_shape_transform_or_contiguous(source.op.defn):
        ops.append(source.op)
        source = source.args[0]
    if source.shape.is_dynamic or source.shape.is_tuple:
        return False
    lens = ins.shape.lens
    # Not in MIGraphX (which throws there): a "scalar" (all strides 0) whose lens do not broadcast to
    # the result goes through the descriptor instead.
    if source.shape.scalar and _broadcasts_to(source.shape.lens, lens):
        rewriter.replace(ins, make_op("multibroadcast", out_lens=lens), [source])
        return True
    if source.shape.elements == 1 and ins.shape.elements == 1:
        rewriter.replace(ins, make_op("reshape", dims=lens), [source])
        return True
    ops.reverse()
    optimized = optimize_shape_transforms(source.shape.lens, ops)
    if optimized == ops:
        return MATCHED_UNCHANGED
    replacement = source
    for op in optimized:
        replacement = rewriter.insert(ins, op, [replacement])
    rewriter.replace_all_uses(ins, replacement)
    return True


REWRITES = (find_nop_reshapes, find_flatten, find_nested_shape_transforms)
