"""Layout and nn operators refuse inputs their shape rule cannot give a shape for, with a message naming
the operator and the problem (what mgx-opt prints at the instruction)."""

from __future__ import annotations

import pytest

from mgxir import DType, Shape
from mgxir.ir.operation import ShapeError
from mgxir.ir.registry import make_op
from mgxir.ir.shape import DynamicDimension

F23 = Shape.make(DType.float, (2, 3))
F6 = Shape.make(DType.float, (6,))
F234 = Shape.make(DType.float, (2, 3, 4))
NCHW = Shape.make(DType.float, (1, 4, 8, 8))
W3x3 = Shape.make(DType.float, (2, 4, 3, 3))
I64 = Shape.make(DType.int64, (2, 3))
DYN = Shape.dynamic(DType.float, [DynamicDimension(1, 4), DynamicDimension(3, 3)])

REFUSED = [
    ("transpose", {"permutation": (0,)}, [F23], "permutation {0} has 1 axes, the input has rank 2"),
    ("transpose", {"permutation": (1, 1)}, [F23], "{1, 1} is not a permutation of the axes"),
    ("broadcast", {"axis": 2, "out_lens": (2, 3)}, [F6], "axis 2 is out of range for output rank 2"),
    ("broadcast", {"axis": 0, "out_lens": (3,)}, [F23], "input rank 2 does not fit output {3} from axis 0"),
    ("multibroadcast", {"out_lens": (3,)}, [F23], "input rank 2 is larger than output rank 1"),
    ("reshape", {"dims": (-1, -1)}, [F6], "at most one dimension may be -1"),
    ("reshape", {"dims": (-1, 4)}, [F6], "cannot infer the -1 dimension of {-1, 4} from 6 elements"),
    ("reshape", {"dims": (4, 2)}, [F6], "{4, 2} has 8 elements but the input {6} has 6"),
    ("reshape", {"dims": (3, 3)}, [DYN], "dynamic input shapes need the two-input form here"),
    ("squeeze", {"axes": (0,)}, [F23], "axis 0 has size 2, not 1"),
    ("unsqueeze", {"axes": (0,), "steps": (1, 1)}, [F6], "steps given for axes that do not exist"),
    ("unsqueeze", {"axes": (0,), "steps": (0,)}, [F6], "a step must be non-zero"),
    ("unsqueeze", {"axes": (0,), "steps": (4,)}, [F6], "dimension 0 (6) is not divisible by step 4"),
    ("unsqueeze", {"axes": (1,), "steps": (2,)}, [F6], "a step must be 1 for an axis past the input's rank"),
    ("dot", {}, [F6, F23], "both inputs need rank 2 or more"),
    ("dot", {}, [F234, F23], "inputs have ranks 3 and 2"),
    ("dot", {}, [F234, Shape.make(DType.float, (3, 4, 2))], "batch dimensions differ: {2, 3, 4} x {3, 4, 2}"),
    ("convolution", {}, [F23, F23], "input rank must be at least 3, got 2"),
    ("convolution", {}, [NCHW, F234], "weights have rank 3, input has rank 4"),
    ("convolution", {"padding": (1, 1, 1)}, [NCHW, W3x3], "padding {1, 1, 1} does not fit 2 spatial dimensions"),
    ("convolution", {"stride": (1,)}, [NCHW, W3x3], "stride and dilation need 2 values"),
    ("pooling", {}, [F23], "input rank must be at least 3, got 2"),
    ("pooling", {"stride": (1,)}, [NCHW], "stride {1} does not fit 2 spatial dimensions"),
    ("pooling", {"lengths": (2,)}, [NCHW], "lengths and dilations need 2 values"),
    ("pooling", {"padding": (0, 0, 0)}, [NCHW], "padding {0, 0, 0} does not fit 2 spatial dimensions"),
    ("reduce_sum", {"axes": (0,)}, [F23, I64], "takes an axes attribute or an axes input, not both"),
    (
        "gathernd",
        {},
        [F23, Shape.make(DType.int64, (1, 3))],
        "index depth 3 is larger than data rank 2 minus batch_dims 0",
    ),
    ("resize", {"mode": "area", "scales": (1.0, 1.0)}, [F23], "Only 'nearest', 'linear', and 'cubic' modes"),
    ("resize", {"sizes": (2, 3), "scales": (1.0, 1.0)}, [F23], "One and only one of sizes or scales"),
    ("resize", {}, [F23], "One and only one of sizes or scales"),
]


@pytest.mark.parametrize(
    ("name", "attributes", "inputs", "message"), REFUSED, ids=lambda v: v if isinstance(v, str) else None
)
def test_layout_shape_rules_refuse(name: str, attributes: dict, inputs: list[Shape], message: str) -> None:
    op = make_op(name, **attributes)
    with pytest.raises(ShapeError) as raised:
        op.defn.shape(op, inputs, [])
    assert name in str(raised.value) and message in str(raised.value), str(raised.value)


def test_unsqueeze_steps_split_an_axis() -> None:
    op = make_op("unsqueeze", axes=(0,), steps=(2,))
    assert op.defn.shape(op, [F6], []) == Shape.make(DType.float, (2, 3), (3, 1))
