"""Layout operators refuse inputs their shape rule cannot give a shape for, with a message naming
the operator and the problem (what mgx-opt prints at the instruction)."""

from __future__ import annotations

import pytest

from mgxir import DType, Shape
from mgxir.ir.operation import ShapeError
from mgxir.ir.registry import make_op
from mgxir.ir.shape import DynamicDimension

F23 = Shape.make(DType.float, (2, 3))
F6 = Shape.make(DType.float, (6,))
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
