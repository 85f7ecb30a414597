"""Operator traits: what an operator is, as the passes ask it (MLIR's op traits, xDSL's `has_trait`).

A definition declares its traits (`traits = (Broadcasting,)`); a pass asks `op.defn.has(Broadcasting)`,
so a new operator joins every pass by declaring what it is. A trait that subclasses another implies
it. Each trait says what it means to a pass; where MIGraphX keeps the same category (an operator
attribute or a list in a pass), the docstring names it and test_architecture.py checks the members.
"""

from __future__ import annotations


class Trait:
    """Base of every trait; never declared itself."""


class Pointwise(Trait):
    """Elementwise on scalars (MIGraphX's "pointwise" attribute): fuse_pointwise may fuse it. Given
    to every definition whose `pointwise` flag is set."""


class FusedBody(Trait):
    """Its module input is a fused body that back ends compile as one kernel (`pointwise`,
    `fused_reduce`, `split_fused_reduce`): the fusion passes leave such bodies alone, as MIGraphX
    marks the modules it fuses into `bypass`, so fusing a fused program changes nothing."""


class ShapeTransform(Trait):
    """The result is the input's elements seen through other lens and strides, with no arithmetic:
    MIGraphX's `shape_transform_ops()` of simplify_reshapes, which its shape-transform descriptor
    can compose and simplify."""


class Broadcasting(ShapeTransform):
    """Repeats its input along new or size-1 axes with stride 0 (`broadcast`, `multibroadcast`)."""


class Reshaper(Trait):
    """Regroups the input's dimensions, keeping the elements in row-major order (reshape, squeeze,
    unsqueeze, flatten, reshape_lazy)."""


class Reduction(Trait):
    """Reduces the input along some axes, keeping them as size 1 (MIGraphX's "reduce" attribute)."""


class ArgReduction(Reduction):
    """A reduction to the index of an extreme along one `axis` (argmin, argmax)."""


class NopWhenShapeKept(Trait):
    """The identity whenever its result shape equals its input's (MIGraphX's find_nop_reshapes)."""


class NopWhenLensKept(Trait):
    """The identity whenever its result lens equal its input's (MIGraphX's find_nop_reshapes: the
    arithmetic reductions over axes of length 1)."""


class Contraction(Trait):
    """A matrix product over the last two axes, batched over the others (dot, quant_dot)."""


class HorizontallyFusable(Trait):
    """A linear map of input 0 by weights in input 1: users of one input with constant weights can
    become one op on the concatenated weights (MIGraphX's find_conv_dot_horiz_fusion)."""


class Recurrent(Trait):
    """A recurrent layer that rewrite_rnn unrolls into dots and pointwise ops (rnn, gru, lstm)."""


class PaddedWindow(Trait):
    """Slides a window over padded spatial axes and takes its padding as an attribute, so a `pad`
    before it can be folded in (eliminate_pad) or taken out (insert_pad)."""


class ValueTransparent(Trait):
    """Its elements are its input's elements, repeated, copied or converted: matchers that read a
    literal's value (MIGraphX's `match::has_value`, rewrite_gelu's constants) look through it."""


class FoldsWithItsInput(Trait):
    """propagate_constant folds it only where its input would be folded (MIGraphX's
    skip_propagate looks through it)."""


class NeverFolded(Trait):
    """propagate_constant never folds it: its result is larger than its input (unpacking) or has
    no value (`undefined`)."""


class ConcatOperand(Trait):
    """Not pointwise, yet MIGraphX's find_concat_op moves a concat above it like a pointwise op."""


class ZeroPointed(Trait):
    """Takes a zero point as input 2, which may be dropped when it is all zeros (quantizelinear,
    dequantizelinear)."""
