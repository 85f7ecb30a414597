"""Shape rules on the inputs the common tests leave out: dynamic shapes (MIGraphX's dynamic_dimension
ranges), and refusals of inputs no shape can be given for, each with its exact message."""

from __future__ import annotations

import pytest

from mgxir import DType, Shape
from mgxir.ir.operation import ShapeError
from mgxir.ir.registry import make_op
from mgxir.ir.shape import DynamicDimension as D

F = DType.float
F23 = Shape.make(F, (2, 3))
F6 = Shape.make(F, (6,))
F234 = Shape.make(F, (2, 3, 4))
I64_3 = Shape.make(DType.int64, (3,))
I64_23 = Shape.make(DType.int64, (2, 3))
NCHW = Shape.make(F, (1, 4, 8, 8))
DYN = Shape.dynamic(F, [D(1, 4), D(3, 3)])


def dyn(*dims: tuple[int, int], dtype: DType = F) -> Shape:
    return Shape.dynamic(dtype, [D(lo, hi) for lo, hi in dims])


def shape_of(name: str, inputs: list[Shape], **attributes) -> Shape:
    op = make_op(name, **attributes)
    return op.defn.shape(op, inputs, [])


REFUSED = [
    ("multibroadcast", {}, [Shape.make(F, ())], "input rank must be at least 1"),
    ("multibroadcast", {}, [dyn((1, 4), (2, 2)), dyn((3, 3))], "dynamic dimension 1 does not broadcast"),
    ("slice", {"axes": (0,), "starts": (0, 1), "ends": (1,)}, [F23], "axes, starts and ends must have the same length"),
    ("slice", {"axes": (0,), "starts": (0,), "ends": (1,)}, [DYN], "cannot slice non-fixed dynamic axis 0"),
    ("slice", {}, [F23, I64_3], "Invalid 2 input and attributes configuration"),
    ("slice", {"axes": (0,)}, [F23, I64_3, Shape.make(DType.int64, (2,))], "must be static, 1-D and of one length"),
    ("slice", {"axes": (0,)}, [F23, I64_3, I64_3], "3 input and attributes mismatch"),
    ("concat", {"axis": 0}, [F23, F6], "input 1 has rank 1, input 0 has rank 2"),
    ("concat", {"axis": 0}, [F23, Shape.make(F, (2, 4))], "input 1 has size 4 in dimension 1, input 0 has 3"),
    ("flatten", {"axis": 3}, [F23], "axis 3 is out of range for rank 2"),
    ("allocate", {"shape": F23, "buf_type": F}, [], "shape and buf_type attributes both set"),
    ("allocate", {}, [], "shape and buf_type attributes both not set"),
    ("allocate", {"buf_type": F}, [F23], "without a shape it takes one static 1-D input: the output dimensions"),
    (
        "scatternd_none",
        {},
        [F23, Shape.make(DType.int64, (2, 3)), F6],
        "the last dimension of indices (3) must be in 1..2",
    ),
    ("scatternd_none", {}, [F23, Shape.make(DType.int64, (2, 1)), F6], "updates are {6}, expected {2, 3}"),
    (
        "scatternd_none",
        {},
        [F23, Shape.make(DType.int64, (2, 1)), I64_23],
        "updates have type int64_type, data has float_type",
    ),
    ("onehot", {"axis": -1}, [I64_3], "without a depth attribute it takes (indices, depth, values)"),
    ("onehot", {"axis": -1, "depth": 4}, [I64_3], "with a depth attribute it takes (indices, values)"),
    ("onehot", {"axis": -1, "depth": -1}, [I64_3, F6], "depth -1 is negative"),
    ("unique", {"axis": 1}, [F23], "only axis 0 or none is supported, got 1"),
    ("get_tuple_elem", {"index": 0}, [F23], "the input is not a tuple"),
    ("get_tuple_elem", {"index": 2}, [Shape.tuple_of([F23, F6])], "index 2 is out of range for a tuple of 2"),
    ("resize", {"sizes": (2, 3, 4)}, [F23], "sizes {2, 3, 4} do not match input rank 2"),
    ("resize", {"scales": (1.0,)}, [F23], "1 scales do not match input rank 2"),
    ("resize", {}, [F23, I64_23], "size/scale input must have rank 1"),
    ("resize", {}, [F23, dyn((1, 2), dtype=DType.int64)], "size/scale input must have static shape"),
    ("convolution_backwards", {}, [F23, F23], "input {2, 3} and weights {2, 3} need one rank >= 3"),
    (
        "convolution_backwards",
        {"stride": (1,)},
        [NCHW, Shape.make(F, (4, 2, 3, 3))],
        "padding, stride and dilation do not fit 2 spatial dimensions",
    ),
    (
        "convolution_backwards",
        {},
        [NCHW, Shape.make(F, (2, 4, 3, 3))],
        "input has 4 channels (dimension 1), weights have 2",
    ),
    (
        "convolution_backwards",
        {"padding": (5, 5)},
        [NCHW, Shape.make(F, (4, 2, 1, 1))],
        "spatial dimension 2 would have size -2",
    ),
    ("im2col", {}, [F23, F23], "needs rank-4 image and weights, got {2, 3} and {2, 3}"),
    ("roialign", {}, [F234, Shape.make(F, (2, 4)), Shape.make(DType.int64, (2,))], "X must have rank 4, got {2, 3, 4}"),
    (
        "roialign",
        {},
        [NCHW, Shape.make(F, (2, 3)), Shape.make(DType.int64, (2,))],
        "rois must be {num_rois, 4}, got {2, 3}",
    ),
    (
        "roialign",
        {},
        [NCHW, Shape.make(F, (2, 4)), Shape.make(DType.int64, (3,))],
        "batch_indices {3} do not match 2 rois",
    ),
    ("multinomial", {}, [F6, F23], "inputs need rank 2, got {6} and {2, 3}"),
    ("multinomial", {"dtype": DType.bool}, [F23, F23], "a boolean output type is invalid"),
    ("pack_int4", {}, [F23], "only int8 or uint8 is supported, got float_type"),
    ("pack_int4", {}, [Shape.make(DType.int8, (2, 3))], "cannot pack dimension 1 of odd length 3"),
    ("pack_fp4", {}, [F23], "cannot pack dimension 1 of odd length 3"),
    ("unpack_fp4", {}, [F23], "expects fp4x2_type, got float_type"),
    ("dimensions_of", {"start": 2, "end": 1}, [F23], "start 2 must be less than end 1"),
    ("fill", {}, [F23, F23], "the value must have one element, got {2, 3}"),
    ("fill", {}, [Shape.make(DType.int64, (1,)), F23], "value is int64_type, buffer is float_type"),
    ("broadcast_with_dims", {}, [F23, dyn((1, 3), dtype=DType.int64)], "the dims input must have a static shape"),
    (
        "dynamic_range",
        {},
        [Shape.make(F, ()), Shape.make(F, ()), Shape.make(DType.int64, ())],
        "start, limit and delta must have the same type",
    ),
    ("nonmaxsuppression", {}, [F23, F234], "boxes and scores need rank 3, got {2, 3} and {2, 3, 4}"),
    (
        "nonmaxsuppression",
        {},
        [Shape.make(F, (1, 5, 4)), Shape.make(F, (1, 2, 6))],
        "boxes have 5 boxes (dimension 1), scores 6 (dimension 2)",
    ),
    ("nonmaxsuppression", {}, [Shape.make(F, (1, 5, 4)), Shape.make(F, (2, 2, 5))], "boxes have 1 batches, scores 2"),
    # MIGraphX's reverse and scatter take no dynamic shape (check_shapes without dynamic_allowed)
    ("reverse", {"axes": (0,)}, [DYN], "dynamic input shapes are not supported"),
    ("scatter_add", {}, [F23, dyn((1, 2), (3, 3), dtype=DType.int64), F23], "dynamic input shapes are not supported"),
    ("pad", {"pads": (-2, 0, 0, 0)}, [DYN], "dimension 0 would have negative size -1"),
]


@pytest.mark.parametrize(
    ("name", "attributes", "inputs", "message"), REFUSED, ids=lambda v: v if isinstance(v, str) else None
)
def test_shape_rules_refuse(name: str, attributes: dict, inputs: list[Shape], message: str) -> None:
    with pytest.raises(ShapeError) as raised:
        shape_of(name, inputs, **attributes)
    assert name in str(raised.value) and message in str(raised.value), str(raised.value)


DYNAMIC_RESULTS = [
    # a dynamic input passes through, its ranges kept or combined as MIGraphX's dynamic_dimension does
    ("contiguous", {}, [DYN], DYN),
    ("multibroadcast", {}, [dyn((1, 4), (3, 3)), dyn((3, 3))], dyn((1, 4), (3, 3))),
    ("multibroadcast", {}, [dyn((1, 1), (3, 3)), F23], dyn((2, 2), (3, 3))),
    # MIGraphX's compute_common_dyn_dims: overlapping ranges give their intersection
    ("multibroadcast", {}, [dyn((1, 4), (3, 3)), dyn((2, 6), (3, 3))], dyn((2, 4), (3, 3))),
    ("multibroadcast", {"out_dyn_dims": (D(2, 8), D(3, 3))}, [DYN, F23], dyn((2, 8), (3, 3))),
    ("squeeze", {"axes": (1,)}, [dyn((1, 4), (1, 1), (3, 3))], dyn((1, 4), (3, 3))),
    ("squeeze", {}, [dyn((1, 4), (1, 1), (3, 3))], dyn((1, 4), (3, 3))),
    ("unsqueeze", {"axes": (0, 2)}, [DYN], dyn((1, 1), (1, 4), (1, 1), (3, 3))),
    ("slice", {"axes": (1,), "starts": (1,), "ends": (3,)}, [DYN], dyn((1, 4), (2, 2))),
    ("concat", {"axis": 0}, [DYN, dyn((2, 5), (3, 3))], dyn((3, 9), (3, 3))),
    ("onehot", {"axis": -1, "depth": 4}, [dyn((1, 3), dtype=DType.int64), F6], dyn((1, 3), (4, 4))),
    ("pooling", {"dyn_global": True}, [dyn((1, 2), (4, 4), (4, 8), (8, 8))], dyn((1, 2), (4, 4), (1, 1), (1, 1))),
    # dynamic spatial dimensions: each end of the range through the window rule (MIGraphX's pooling.hpp)
    ("pooling", {"lengths": (2, 2)}, [dyn((1, 1), (4, 4), (4, 8), (8, 8))], dyn((1, 1), (4, 4), (3, 7), (7, 7))),
    # argmax/argmin: the axis becomes {1, 1}; pad: each range (and optimal size) grows by its padding
    ("argmax", {"axis": 1}, [DYN], Shape.dynamic(DType.int64, [D(1, 4), D(1, 1)])),
    ("argmin", {"axis": -2}, [DYN], Shape.dynamic(DType.int64, [D(1, 1), D(3, 3)])),
    (
        "pad",
        {"pads": (1, 0, 2, -1)},
        [Shape.dynamic(F, [D(1, 4, (2,)), D(3, 3)])],
        Shape.dynamic(F, [D(4, 7, (5,)), D(2, 2)]),
    ),
    (
        "nonmaxsuppression",
        {"use_dyn_output": True},
        [Shape.make(F, (2, 5, 4)), Shape.make(F, (2, 3, 5))],
        Shape.dynamic(DType.int64, [(0, 30), (3, 3)]),
    ),
]


@pytest.mark.parametrize(
    ("name", "attributes", "inputs", "want"), DYNAMIC_RESULTS, ids=lambda v: v if isinstance(v, str) else None
)
def test_dynamic_shape_rules(name: str, attributes: dict, inputs: list[Shape], want: Shape) -> None:
    assert shape_of(name, inputs, **attributes) == want


def refusal(name: str, inputs: list[Shape], **attributes) -> str:
    with pytest.raises(ShapeError) as raised:
        shape_of(name, inputs, **attributes)
    return str(raised.value)


def static(*lens: int, dtype: DType = F) -> Shape:
    return Shape.make(dtype, lens)


WINDOW_SHAPES = [
    # convolution: MIGraphX's calc_conv_lens on each range end: (x + pads - dilated kernel) / stride + 1
    (
        "convolution",
        {"padding": (1, 1, 1, 1), "stride": (2, 1)},
        [dyn((1, 4), (3, 3), (6, 10), (6, 6)), static(2, 3, 3, 3)],
        dyn((1, 4), (2, 2), (3, 5), (6, 6)),
    ),
    # a static input with dynamic weights: the kernel's range widens the output's (dilation 2: 2w - 1)
    (
        "convolution",
        {"padding": (1,), "stride": (1,), "dilation": (2,)},
        [static(1, 3, 7), dyn((2, 2), (3, 3), (2, 4))],
        dyn((1, 1), (2, 2), (3, 7)),
    ),
    # a range smaller than the kernel saturates at 0 before the division
    (
        "convolution",
        {"padding": (0,), "stride": (1,), "dilation": (1,)},
        [dyn((1, 1), (1, 1), (1, 2)), static(1, 1, 3)],
        dyn((1, 1), (1, 1), (1, 1)),
    ),
    (
        "convolution",
        {"padding": (0,), "stride": (1,), "dilation": (1,)},
        [dyn((1, 2), (1, 1), (1, 1)), static(1, 1, 1)],
        dyn((1, 2), (1, 1), (1, 1)),
    ),
    # a zero-length spatial input gives 0 whatever the padding; the next axis goes on
    (
        "convolution",
        {"padding": (1, 0)},
        [dyn((1, 1), (1, 1), (0, 0), (4, 4)), static(1, 1, 2, 2)],
        dyn((1, 1), (1, 1), (0, 0), (3, 3)),
    ),
    # fixed ranges whose padded input is shorter than the kernel give 0; equal to it gives 1
    (
        "convolution",
        {"padding": (0,), "stride": (1,), "dilation": (1,)},
        [dyn((1, 2), (1, 1), (2, 2)), static(1, 1, 3)],
        dyn((1, 2), (1, 1), (0, 0)),
    ),
    (
        "convolution",
        {"padding": (0,), "stride": (1,), "dilation": (1,)},
        [dyn((1, 2), (1, 1), (3, 3)), static(1, 1, 3)],
        dyn((1, 2), (1, 1), (1, 1)),
    ),
    (
        "convolution",
        {"padding": (1,), "stride": (1,), "dilation": (1,)},
        [dyn((1, 2), (1, 1), (3, 3)), static(1, 1, 3)],
        dyn((1, 2), (1, 1), (3, 3)),
    ),
    # a SAME padding mode: ceil(x / stride) on each end
    (
        "convolution",
        {"padding": (0,), "stride": (2,), "dilation": (1,), "padding_mode": 1},
        [dyn((1, 1), (1, 1), (5, 7)), static(1, 1, 3)],
        dyn((1, 1), (1, 1), (3, 4)),
    ),
    (
        "convolution",
        {"padding": (1,), "stride": (2,), "dilation": (1,)},
        [static(1, 4, 7), static(2, 4, 3)],
        static(1, 2, 4),
    ),
    ("convolution", {}, [static(1, 1, 3, 5), static(1, 1, 3, 5)], static(1, 1, 1, 1)),
    (
        "quant_convolution",
        {},
        [static(1, 1, 3, 3, dtype=DType.int8), static(1, 1, 2, 2, dtype=DType.int8)],
        static(1, 1, 2, 2, dtype=DType.int32),
    ),
    (
        "quant_convolution",
        {},
        [static(1, 1, 3, 3, dtype=DType.fp8e4m3fn), static(1, 1, 2, 2, dtype=DType.fp8e4m3fn)],
        static(1, 1, 2, 2),
    ),
    # pooling: each range end through the window rule, ceil_mode rounding up
    (
        "pooling",
        {"lengths": (2,), "stride": (2,), "dilations": (1,), "ceil_mode": True},
        [dyn((1, 1), (2, 2), (5, 8))],
        dyn((1, 1), (2, 2), (3, 4)),
    ),
    (
        "pooling",
        {"lengths": (2,), "stride": (2,), "dilations": (1,), "padding_mode": 2},
        [dyn((1, 1), (2, 2), (5, 8))],
        dyn((1, 1), (2, 2), (3, 4)),
    ),
    (
        "pooling",
        {"lengths": (2,), "stride": (1,), "dilations": (1,), "padding": (1,)},
        [static(1, 2, 5)],
        static(1, 2, 6),
    ),
    (
        "pooling",
        {"lengths": (2, 3), "stride": (1, 2), "padding": (1, 0, 0, 1)},
        [static(1, 2, 5, 6)],
        static(1, 2, 5, 3),
    ),
]


@pytest.mark.parametrize(
    ("name", "attributes", "inputs", "want"), WINDOW_SHAPES, ids=lambda v: v if isinstance(v, str) else None
)
def test_window_shape_rules_follow_migraphx(name: str, attributes: dict, inputs: list[Shape], want: Shape) -> None:
    assert shape_of(name, inputs, **attributes) == want


WINDOW_REFUSALS = [
    (
        "convolution",
        {},
        [dyn((1, 2), (3, 3)), dyn((1, 2), (3, 3))],
        "input rank 2 and weights rank 2 do not fit a convolution",
    ),
    (
        "convolution",
        {"stride": (1,)},
        [dyn((1, 2), (1, 1), (4, 4), (4, 4)), static(1, 1, 2, 2)],
        "padding, stride and dilation do not fit 2 spatial dimensions",
    ),
    (
        "convolution",
        {"dilation": (1,)},
        [dyn((1, 2), (1, 1), (4, 4), (4, 4)), static(1, 1, 2, 2)],
        "padding, stride and dilation do not fit 2 spatial dimensions",
    ),
    (
        "convolution",
        {},
        [static(1, 4, 5, 6), static(2, 3, 6, 7)],
        "input has 4 channels (dimension 1) but weights expect 3 x group 1",
    ),
    (
        "convolution",
        {"padding": (0, 1)},
        [static(1, 1, 4, 2), static(1, 1, 2, 5)],
        "kernel size 5 (dilated 5) is larger than padded input dimension 3 (4)",
    ),
    (
        "convolution",
        {},
        [static(1, 1, 4, 4), static(1, 1, 2, 2, dtype=DType.half)],
        "input 1 has type half_type, input 0 has float_type",
    ),
    (
        "pooling",
        {"lengths": (3,), "stride": (1,), "dilations": (1,)},
        [dyn((1, 1), (1, 1), (1, 4))],
        "kernel size 3 (dilated 3) is larger than padded input dimension 2 (1)",
    ),
    (
        "pooling",
        {"lengths": (2, 5), "padding": (0, 1)},
        [static(1, 1, 4, 2)],
        "kernel size 5 (dilated 5) is larger than padded input dimension 3 (4)",
    ),
]


@pytest.mark.parametrize(
    ("name", "attributes", "inputs", "message"), WINDOW_REFUSALS, ids=lambda v: v if isinstance(v, str) else None
)
def test_window_shape_rules_refuse_with_the_dimension(
    name: str, attributes: dict, inputs: list[Shape], message: str
) -> None:
    assert refusal(name, inputs, **attributes) == f"{name}: {message}"


I64 = DType.int64
SIZE_MAX = 2**64 - 1

NN_SHAPES = [
    # dot of dynamic shapes: each batch dimension is the intersection of A's and B's ranges
    (
        "dot",
        {},
        [dyn((1, 3), (2, 2), (3, 3), (4, 5), (6, 6)), static(2, 2, 3, 6, 7)],
        dyn((2, 2), (2, 2), (3, 3), (4, 5), (7, 7)),
    ),
    ("gathernd", {}, [F234, static(5, 4, 2, dtype=I64)], static(5, 4, 4)),
    ("gathernd", {}, [F23, static(4, 2, dtype=I64)], static(4)),
    ("gathernd", {}, [F23, static(2, dtype=I64)], static(1)),
    ("gathernd", {"batch_dims": 1}, [F234, static(2, 5, 1, dtype=I64)], static(2, 5, 4)),
    ("gathernd", {"batch_dims": 1}, [F234, static(2, 2, dtype=I64)], static(2)),
    # resize with its sizes or scales as an input: each output dimension in [0, max], or the scaled
    # bounds where a scales attribute is given too (a bound at max stays at max)
    ("resize", {}, [F23, static(2, dtype=I64)], dyn((0, SIZE_MAX), (0, SIZE_MAX))),
    ("resize", {"scales": (1.0, 2.0, 0.5)}, [F234, static(3)], dyn((2, 2), (6, 6), (2, 2))),
    (
        "resize",
        {"scales": (1.0, 2.5, 2.0)},
        [dyn((1, 4), (2, 6), (5, SIZE_MAX)), static(3)],
        dyn((1, 4), (5, 15), (10, SIZE_MAX)),
    ),
    # reductions: the reduced axes become {1, 1}; with the axes as an input any axis may go
    ("reduce_sum", {"axes": (1,)}, [dyn((1, 4), (3, 3), (2, 5))], dyn((1, 4), (1, 1), (2, 5))),
    ("reduce_max", {}, [F23, static(1, dtype=I64)], dyn((1, 2), (1, 3))),
    ("reduce_max", {}, [dyn((2, 4), (3, 3)), static(1, dtype=I64)], dyn((1, 4), (1, 3))),
    # softmax keeps a packed or dynamic input's shape; any other gets packed strides in the same
    # order (MIGraphX's with_lens: a broadcast axis, stride 0, becomes the innermost)
    ("softmax", {"axis": 1}, [DYN], DYN),
    ("logsoftmax", {"axis": 0}, [Shape.make(F, (2, 3), (0, 1))], Shape.make(F, (2, 3), (1, 2))),
]


@pytest.mark.parametrize(
    ("name", "attributes", "inputs", "want"), NN_SHAPES, ids=lambda v: v if isinstance(v, str) else None
)
def test_nn_shape_rules_follow_migraphx(name: str, attributes: dict, inputs: list[Shape], want: Shape) -> None:
    got = shape_of(name, inputs, **attributes)
    assert got == want and got.strides == want.strides


def dd(lo: int, hi: int) -> str:
    return str(D(lo, hi))


STATIC_ONLY = "dynamic input shapes are not supported by this operator's shape rule here"
NN_REFUSALS = [
    (
        "dot",
        {},
        [dyn((1, 2), (2, 3), (3, 3)), dyn((3, 4), (3, 3), (4, 4))],
        f"batch dimension 0 of A and B are not compatible: {dd(1, 2)} vs {dd(3, 4)}",
    ),
    (
        "dot",
        {},
        [dyn((2, 2), (5, 5), (3, 3)), dyn((2, 2), (4, 4), (6, 6))],
        f"inner dimensions are not compatible: {dd(3, 3)} vs {dd(4, 4)}",
    ),
    ("gathernd", {}, [DYN, static(2, 1, dtype=I64)], STATIC_ONLY),
    ("gathernd", {}, [F23, dyn((1, 2), (1, 1), dtype=I64)], STATIC_ONLY),
    (
        "gathernd",
        {"batch_dims": 1},
        [F234, static(2, 3, dtype=I64)],
        "index depth 3 is larger than data rank 3 minus batch_dims 1",
    ),
    ("resize", {"sizes": (2, 3)}, [DYN], STATIC_ONLY),
    ("resize", {"sizes": (2, 3), "mode": "area"}, [F23], "Only 'nearest', 'linear', and 'cubic' modes are supported"),
    ("resize", {}, [F23], "One and only one of sizes or scales attributes must be given"),
    ("resize", {}, [F23, static(3)], "size/scale input's size must match rank of input X"),
    ("resize", {}, [F23, I64_23], "size/scale input must have rank 1"),
    ("resize", {}, [F23, dyn((1, 2), dtype=I64)], "size/scale input must have static shape"),
    ("reduce_sum", {"axes": (2,)}, [F23], "axis 2 is out of range for rank 2"),
    ("reduce_sum", {"axes": (1,)}, [F23, static(1, dtype=I64)], "takes an axes attribute or an axes input, not both"),
    ("softmax", {"axis": 2}, [F23], "axis 2 is out of range for rank 2"),
    ("argmax", {"axis": -3}, [F23], "axis -3 is out of range for rank 2"),
]


@pytest.mark.parametrize(
    ("name", "attributes", "inputs", "message"), NN_REFUSALS, ids=lambda v: v if isinstance(v, str) else None
)
def test_nn_shape_rules_refuse_with_exact_messages(
    name: str, attributes: dict, inputs: list[Shape], message: str
) -> None:
    assert refusal(name, inputs, **attributes) == f"{name}: {message}"


def strided(lens: tuple[int, ...], strides: tuple[int, ...], dtype: DType = F) -> Shape:
    return Shape.make(dtype, lens, strides)


LAYOUT_SHAPES = [
    # broadcast: the second input gives the output lens (its type is the first input's)
    ("broadcast", {"axis": 1}, [static(3, dtype=I64), F23], strided((2, 3), (0, 1), I64)),
    ("broadcast", {"axis": 1}, [static(3, dtype=I64), DYN], Shape.dynamic(I64, DYN.dyn_dims)),
    ("broadcast", {"axis": 0}, [dyn((1, 4), (3, 3), dtype=I64), F23], static(2, 3, dtype=I64)),
    # the input's strides land at the axis, 0 elsewhere
    (
        "broadcast",
        {"axis": 1, "out_lens": (5, 2, 3, 4)},
        [strided((2, 3), (1, 2))],
        strided((5, 2, 3, 4), (0, 1, 2, 0)),
    ),
    ("multibroadcast", {"out_lens": (4, 2, 3)}, [strided((2, 3), (1, 2))], strided((4, 2, 3), (0, 1, 2))),
    # dynamic multibroadcast (MIGraphX's compute_common_dyn_dims, right-aligned)
    ("multibroadcast", {}, [dyn((3, 3)), dyn((1, 4), (3, 3))], dyn((1, 4), (3, 3))),
    ("multibroadcast", {}, [dyn((2, 5), (3, 3)), dyn((1, 1), (3, 3))], dyn((2, 5), (3, 3))),
    (
        "multibroadcast",
        {},
        [Shape.dynamic(F, [D(1, 4, (2,))]), Shape.dynamic(F, [D(1, 4, (2,))])],
        Shape.dynamic(F, [D(1, 4, (2,))]),
    ),
    ("multibroadcast", {}, [dyn((2, 6)), dyn((1, 4))], dyn((2, 4))),
    ("multibroadcast", {}, [dyn((2, 6)), dyn((1, 2))], dyn((2, 2))),
    ("multibroadcast", {}, [dyn((2, 4)), dyn((4, 6))], dyn((4, 4))),
    ("multibroadcast", {}, [dyn((2, 3), (2, 4)), dyn((5, 5), (1, 1), (3, 6))], dyn((5, 5), (2, 3), (3, 4))),
    ("multibroadcast", {}, [dyn((1, 1), (2, 4)), dyn((5, 5), (3, 6), (2, 4))], dyn((5, 5), (3, 6), (2, 4))),
    ("multibroadcast", {}, [dyn((2, 4), (1, 1)), dyn((5, 5), (2, 4), (3, 6))], dyn((5, 5), (2, 4), (3, 6))),
    # reshape of a non-standard input (MIGraphX's reshape_dims): strides carried where axes merge
    # or split, else a standard result; reshape_lazy refuses where they do not
    ("reshape", {"dims": (3, 2)}, [strided((2, 3), (1, 2))], strided((3, 2), (2, 1))),
    ("reshape", {"dims": (2, 12)}, [strided((2, 3, 4), (1, 8, 2))], strided((2, 12), (1, 2))),
    ("reshape_lazy", {"dims": (2, 12)}, [strided((2, 3, 4), (1, 8, 2))], strided((2, 12), (1, 2))),
    ("reshape", {"dims": (12,)}, [strided((3, 4), (1, 3))], static(12)),
    ("reshape", {"dims": (2, 3)}, [strided((6,), (2,))], static(2, 3)),
    ("reshape_lazy", {"dims": (2, 3)}, [strided((6,), (2,))], strided((2, 3), (6, 2))),
    ("reshape_lazy", {"dims": (2, 3, 1)}, [strided((2, 3), (1, 2))], strided((2, 3, 1), (1, 2, 2))),
    ("reshape", {"dims": (2, 3, 1)}, [strided((2, 3), (1, 2))], strided((2, 3, 1), (1, 2, 2))),
    ("reshape", {"dims": (3, 2)}, [strided((2, 3), (0, 1))], static(3, 2)),
    ("reshape_lazy", {"dims": (2, 3, 1)}, [strided((2, 3), (0, 1))], strided((2, 3, 1), (0, 1, 1))),
    ("reshape_lazy", {"dims": (2, 2, 3)}, [strided((4, 3), (0, 1))], strided((2, 2, 3), (0, 0, 1))),
    ("reshape_lazy", {"dims": (4, 3)}, [strided((2, 2, 3), (0, 0, 1))], strided((4, 3), (0, 1))),
    ("reshape_lazy", {"dims": (4, 3)}, [strided((2, 2, 3), (12, 6, 1))], strided((4, 3), (6, 1))),
    ("reshape", {"dims": (0, 3)}, [F23], F23),
    ("reshape", {"dims": (2, 3)}, [strided((2, 3, 1), (1, 2, 1))], strided((2, 3), (1, 2))),
    ("reshape", {"dims": (4, 3)}, [strided((6, 2), (2, 12))], static(4, 3)),
    ("reshape_lazy", {"dims": (2, 3, 4, 1)}, [strided((2, 3, 4), (1, 8, 2))], strided((2, 3, 4, 1), (1, 8, 2, 2))),
    ("reshape_lazy", {"dims": (5, 12)}, [strided((5, 2, 2, 3), (24, 6, 3, 1))], strided((5, 12), (24, 1))),
    # a broadcast input reshapes to a standard result
    ("reshape", {"dims": (2, 3, 1)}, [strided((2, 3), (0, 1))], static(2, 3, 1)),
    ("reshape", {"dims": (-1,)}, [F23], F6),
    # squeeze and unsqueeze keep the input's strides; squeezing every axis gives a scalar
    ("squeeze", {"axes": (1,)}, [strided((2, 1, 3), (1, 6, 2))], strided((2, 3), (1, 2))),
    ("squeeze", {}, [strided((1, 2, 1, 3), (9, 1, 7, 2))], strided((2, 3), (1, 2))),
    ("squeeze", {}, [strided((1, 1), (1, 1))], strided((1,), (0,))),
    ("squeeze", {"axes": (-1,)}, [strided((2, 1), (1, 1))], strided((2,), (1,))),
    ("squeeze", {"axes": (0,)}, [dyn((1, 4), (1, 1), (3, 3))], dyn((1, 1), (3, 3))),
    ("squeeze", {}, [dyn((1, 1), (1, 4), (1, 1))], dyn((1, 4))),
    ("unsqueeze", {"axes": (1,)}, [strided((2, 3), (1, 2))], strided((2, 1, 3), (1, 6, 2))),
    ("unsqueeze", {"axes": (0, 3)}, [strided((2, 3), (1, 2))], strided((1, 2, 3, 1), (2, 1, 2, 1))),
    ("unsqueeze", {"axes": (0,), "steps": (2,)}, [strided((6,), (2,))], strided((2, 3), (6, 2))),
    ("unsqueeze", {"axes": (0,)}, [strided((1,), (0,))], static(1)),
    ("unsqueeze", {"axes": (0,)}, [strided((1,), (1,))], static(1, 1)),
    ("unsqueeze", {"axes": (1, 2)}, [static(2)], static(2, 1, 1)),
    # a scalar (every stride 0) gets stride 1 on the new axes
    ("unsqueeze", {"axes": (1,)}, [strided((2, 3), (0, 0))], strided((2, 1, 3), (0, 1, 0))),
    ("unsqueeze", {"axes": (-1,)}, [DYN], dyn((1, 4), (3, 3), (1, 1))),
    ("flatten", {"axis": -1}, [F234], static(6, 4)),
    ("flatten", {"axis": -3}, [F234], static(1, 24)),
    ("flatten", {"axis": 3}, [F234], static(24, 1)),
    ("flatten", {"axis": 0}, [F234], static(1, 24)),
    # slice keeps the strides; starts and ends clamp, negative ones count from the end
    ("slice", {"axes": (1,), "starts": (-4,), "ends": (-1,)}, [strided((5, 6), (1, 5))], strided((5, 3), (1, 5))),
    ("slice", {"axes": (0, 1), "starts": (-9, 0), "ends": (9, -9)}, [static(5, 6)], strided((5, 0), (6, 1))),
    ("slice", {"axes": (0,), "starts": (0,), "ends": (0,)}, [static(5, 6)], strided((0, 6), (6, 1))),
    ("slice", {"axes": (1,), "starts": (4,), "ends": (2,)}, [static(5, 6)], strided((5, 0), (6, 1))),
    ("slice", {"axes": (1,), "starts": (1,), "ends": (6,)}, [static(5, 6)], strided((5, 5), (6, 1))),
    ("slice", {"axes": (0,), "starts": (0,), "ends": (3,)}, [static(5, 6)], strided((3, 6), (6, 1))),
    ("slice", {"axes": (-1,), "starts": (1,), "ends": (2,)}, [static(5, 6)], strided((5, 1), (6, 1))),
    ("slice", {"axes": (1,)}, [static(5, 6), static(1, dtype=I64), static(1, dtype=I64)], dyn((5, 5), (0, 6))),
    ("slice", {"axes": (1,)}, [DYN, static(1, dtype=I64), static(1, dtype=I64)], dyn((1, 4), (0, 3))),
    ("slice", {}, [static(5, 6), *[static(2, dtype=I64)] * 3], dyn((0, 5), (0, 6))),
    ("concat", {"axis": 0}, [strided((2, 3), (1, 2)), strided((4, 3), (1, 4))], strided((6, 3), (1, 6))),
    ("transpose", {"permutation": (1, 0)}, [dyn((1, 4), (3, 3), dtype=I64)], Shape.dynamic(I64, [D(3, 3), D(1, 4)])),
]


@pytest.mark.parametrize(
    ("name", "attributes", "inputs", "want"), LAYOUT_SHAPES, ids=lambda v: v if isinstance(v, str) else None
)
def test_layout_shape_rules_keep_migraphx_strides(
    name: str, attributes: dict, inputs: list[Shape], want: Shape
) -> None:
    got = shape_of(name, inputs, **attributes)
    assert got == want and got.dtype == want.dtype, got
    if not want.is_dynamic:
        assert got.strides == want.strides and all(type(n) is int for n in (*got.lens, *got.strides)), got
    else:
        assert got.dyn_dims == want.dyn_dims, got


LAYOUT_REFUSALS = [
    ("broadcast", {"axis": 0, "out_lens": (2, 3)}, [DYN], STATIC_ONLY),
    ("broadcast", {"axis": 2, "out_lens": (2, 3, 4)}, [F23], "input rank 2 does not fit output {2, 3, 4} from axis 2"),
    ("broadcast", {"axis": 1, "out_lens": (5, 2, 4)}, [F23], "input dimension 1 is 3 but output dimension 2 is 4"),
    ("multibroadcast", {"out_lens": (2, 3)}, [DYN], STATIC_ONLY),
    ("multibroadcast", {}, [Shape.make(F, ())], "input rank must be at least 1"),
    (
        "multibroadcast",
        {"out_lens": (2, 4)},
        [static(3)],
        "input shape {3} cannot be broadcast to {2, 4} (dimension 1: 3 vs 4)",
    ),
    (
        "multibroadcast",
        {},
        [dyn((2, 3), (2, 4)), dyn((5, 5), (1, 1), (5, 6))],
        "dynamic dimension 2 does not broadcast",
    ),
    ("reshape", {"dims": (-1, -1)}, [F23], "at most one dimension may be -1"),
    ("reshape", {"dims": (3, 3)}, [DYN], "dynamic input shapes need the two-input form here"),
    ("reshape_lazy", {"dims": (12,)}, [strided((3, 4), (1, 3))], "reshape_lazy on axis that is not packed."),
    ("reshape_lazy", {"dims": (3, 2)}, [strided((2, 3), (0, 1))], "reshape_lazy on axis that is not packed."),
    ("reshape_lazy", {"dims": (4, 3)}, [strided((2, 2, 3), (6, 0, 1))], "reshape_lazy on axis that is not packed."),
    # offsets 0, 2, 5, 7: the span fits 4 elements, but 5 is no multiple of 2
    ("reshape_lazy", {"dims": (4,)}, [strided((2, 2), (5, 2))], "reshape_lazy on axis that is not packed."),
    ("squeeze", {"axes": (2,)}, [F23], "axis 2 is out of range for rank 2"),
    # MIGraphX refuses to squeeze a dynamic axis whose range does not hold 1
    ("squeeze", {"axes": (1,)}, [dyn((1, 4), (2, 4))], "dynamic axis 1 ({2, 4}) cannot have size 1"),
    ("unsqueeze", {"axes": (3,)}, [F23], "axis 3 is out of range for rank 3"),
    (
        "unsqueeze",
        {"axes": (1,), "steps": (3,)},
        [strided((6, 4), (1, 6))],
        "dimension 1 (4) is not divisible by step 3",
    ),
    ("unsqueeze", {"axes": (0,), "steps": (1, 1)}, [F6], "steps given for axes that do not exist"),
    ("unsqueeze", {"axes": (0,), "steps": (0,)}, [F6], "a step must be non-zero"),
    # MIGraphX: "step must be 1 when input is scalar" (a stride-0 input of 4 would otherwise split)
    ("unsqueeze", {"axes": (0,), "steps": (2,)}, [strided((4,), (0,))], "a step must be 1 when the input is a scalar"),
    ("unsqueeze", {"axes": (1,), "steps": (2,)}, [F6], "a step must be 1 for an axis past the input's rank"),
    ("flatten", {"axis": -4}, [F234], "axis -4 is out of range for rank 3"),
    ("flatten", {"axis": 1}, [DYN], STATIC_ONLY),
    ("slice", {"axes": (2,), "starts": (1,), "ends": (2,)}, [static(5, 6)], "axis 2 is out of range for rank 2"),
    (
        "slice",
        {"axes": (0,), "starts": (1, 2), "ends": (2,)},
        [static(5, 6)],
        "axes, starts and ends must have the same length",
    ),
    ("slice", {"axes": (0,), "starts": (0,), "ends": (1,)}, [DYN], "cannot slice non-fixed dynamic axis 0"),
    (
        "slice",
        {"axes": (1,)},
        [static(5, 6), dyn((1, 2), dtype=I64), static(1, dtype=I64)],
        "inputs (starts, ends, and input_axes) must be static, 1-D and of one length",
    ),
    (
        "slice",
        {"axes": (1,)},
        [static(5, 6), static(2, 1, dtype=I64), static(2, 1, dtype=I64)],
        "inputs (starts, ends, and input_axes) must be static, 1-D and of one length",
    ),
    (
        "slice",
        {"axes": (1,)},
        [static(5, 6), static(2, dtype=I64), static(2, dtype=I64)],
        "3 input and attributes mismatch",
    ),
    (
        "slice",
        {"axes": (3,)},
        [static(5, 6), static(1, dtype=I64), static(1, dtype=I64)],
        "axis 3 is out of range for rank 2",
    ),
    ("concat", {"axis": 0}, [F23, static(2, 3, dtype=I64)], "input 1 has type int64_type, input 0 has float_type"),
    ("concat", {"axis": 2}, [F23, F23], "axis 2 is out of range for rank 2"),
    ("concat", {"axis": 0}, [F23, DYN], STATIC_ONLY),
]


@pytest.mark.parametrize(
    ("name", "attributes", "inputs", "message"), LAYOUT_REFUSALS, ids=lambda v: v if isinstance(v, str) else None
)
def test_layout_shape_rules_refuse_with_exact_messages(
    name: str, attributes: dict, inputs: list[Shape], message: str
) -> None:
    assert refusal(name, inputs, **attributes) == f"{name}: {message}"


CB = {"stride": (1,), "dilation": (1,)}
VISION_SHAPES = [
    # convolution_backwards: stride * (x - 1) + dilation * (k - 1) + 1 - begin - end, 1 at the least
    ("convolution_backwards", {"padding": (1, 2), **CB}, [static(1, 2, 3), static(2, 1, 3)], static(1, 1, 2)),
    ("convolution_backwards", {"padding": (2, 2), **CB}, [static(1, 2, 3), static(2, 1, 3)], static(1, 1, 1)),
    # a dynamic box input gives a dynamic result even without use_dyn_output
    ("nonmaxsuppression", {}, [dyn((1, 2), (5, 5), (4, 4)), static(1, 2, 5)], Shape.dynamic(I64, [D(0, 20), D(3, 3)])),
]


@pytest.mark.parametrize(
    ("name", "attributes", "inputs", "want"), VISION_SHAPES, ids=lambda v: v if isinstance(v, str) else None
)
def test_vision_shape_rules(name: str, attributes: dict, inputs: list[Shape], want: Shape) -> None:
    assert shape_of(name, inputs, **attributes) == want


VISION_REFUSALS = [
    (
        "convolution_backwards",
        {"padding": (2, 3), **CB},
        [static(1, 2, 3), static(2, 1, 3)],
        "spatial dimension 2 would have size 0",
    ),
    (
        "convolution_backwards",
        {"padding": (0, 0), "stride": (1,), "dilation": (1, 2)},
        [static(1, 2, 3), static(2, 1, 3)],
        "padding, stride and dilation do not fit 1 spatial dimensions",
    ),
    (
        "convolution_backwards",
        {"padding": (0,), **CB},
        [static(1, 2, 3), static(2, 1, 3, dtype=DType.half)],
        "input 1 has type half_type, input 0 has float_type",
    ),
    ("convolution_backwards", {"padding": (0,), **CB}, [dyn((1, 2), (2, 2), (3, 3)), static(2, 1, 3)], STATIC_ONLY),
    ("convolution_backwards", {"padding": (0,), **CB}, [static(1, 2, 3), dyn((2, 2), (1, 1), (3, 3))], STATIC_ONLY),
    (
        "im2col",
        {"padding": (0, 1)},
        [static(1, 1, 4, 2), static(1, 1, 2, 5)],
        "kernel dimension 3 does not fit the padded image",
    ),
    ("im2col", {}, [dyn((1, 1), (1, 1), (4, 4), (2, 2)), static(1, 1, 2, 5)], STATIC_ONLY),
    ("im2col", {}, [static(1, 1, 4, 2), dyn((1, 1), (1, 1), (2, 2), (5, 5))], STATIC_ONLY),
    (
        "im2col",
        {},
        [static(1, 1, 4, 2), static(1, 2, 5)],
        "needs rank-4 image and weights, got {1, 1, 4, 2} and {1, 2, 5}",
    ),
    ("roialign", {}, [dyn((1, 1), (1, 1), (4, 4), (2, 2)), static(2, 4), static(2, dtype=I64)], STATIC_ONLY),
    ("roialign", {}, [NCHW, dyn((2, 2), (4, 4)), static(2, dtype=I64)], STATIC_ONLY),
    ("roialign", {}, [NCHW, static(2, 4), dyn((2, 2), dtype=I64)], STATIC_ONLY),
    ("nonmaxsuppression", {}, [static(1, 5, 4), static(2, 3, 5)], "boxes have 1 batches, scores 2"),
]


@pytest.mark.parametrize(
    ("name", "attributes", "inputs", "message"), VISION_REFUSALS, ids=lambda v: v if isinstance(v, str) else None
)
def test_vision_shape_rules_refuse_with_exact_messages(
    name: str, attributes: dict, inputs: list[Shape], message: str
) -> None:
    assert refusal(name, inputs, **attributes) == f"{name}: {message}"
