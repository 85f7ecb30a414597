"""MIGraphX's shape rules for dynamic inputs of dot, gather and pooling (dot.hpp, gather.hpp,
pooling.hpp), and the reference's unsqueeze of a dynamic input at each run's size."""

from __future__ import annotations

import numpy as np
import pytest

from mgxir import parse_program, verify
from mgxir.interp import Interpreter
from mgxir.ir.dtype import DType
from mgxir.ir.operation import ShapeError
from mgxir.ir.registry import lookup
from mgxir.ir.shape import DynamicDimension as D
from mgxir.ir.shape import Shape
from mgxir.ops import register_all_ops

register_all_ops()
F = DType.float


def shape_of(name: str, inputs: list[Shape], **attrs: object) -> Shape:
    defn = lookup(name)
    assert defn is not None
    return defn.shape(defn.make(**attrs), inputs, [])


def test_dot_batch_dimensions_intersect() -> None:
    a = Shape.dynamic(F, [D(1, 4), D(2, 6), D(5, 5)])
    b = Shape.dynamic(F, [D(2, 8), D(5, 5), D(3, 3)])
    assert shape_of("dot", [a, b]).dyn_dims == (D(2, 4), D(2, 6), D(3, 3))
    static_b = Shape.make(F, [3, 5, 7])
    assert shape_of("dot", [a, static_b]).dyn_dims == (D(3, 3), D(2, 6), D(7, 7))


def test_dot_refuses_disjoint_dimensions() -> None:
    a = Shape.dynamic(F, [D(1, 2), D(2, 6), D(5, 5)])
    with pytest.raises(ShapeError, match="batch dimension 0 of A and B are not compatible"):
        shape_of("dot", [a, Shape.dynamic(F, [D(3, 4), D(5, 5), D(3, 3)])])
    with pytest.raises(ShapeError, match="inner dimensions are not compatible"):
        shape_of("dot", [a, Shape.dynamic(F, [D(1, 2), D(6, 6), D(3, 3)])])


def test_gather_of_dynamic_data_and_indices() -> None:
    data = Shape.dynamic(F, [D(1, 4), D(2, 6), D(5, 5)])
    indices = Shape.make(DType.int32, [2, 3])
    assert shape_of("gather", [data, indices], axis=1).dyn_dims == (D(1, 4), D(2, 2), D(3, 3), D(5, 5))
    scalar = Shape.make(DType.int32, [1], [0])
    assert shape_of("gather", [data, scalar], axis=-1).dyn_dims == (D(1, 4), D(2, 6))
    dynamic_indices = Shape.dynamic(DType.int64, [D(1, 3)])
    static_data = Shape.make(F, [4, 5])
    assert shape_of("gather", [static_data, dynamic_indices], axis=0).dyn_dims == (D(1, 3), D(5, 5))


def test_pooling_of_dynamic_spatial_dimensions() -> None:
    x = Shape.dynamic(F, [D(1, 4), D(3, 3), D(6, 9), D(8, 8)])
    pooled = shape_of("pooling", [x], lengths=(3, 3), stride=(2, 2), padding=(1, 1))
    assert pooled.dyn_dims == (D(1, 4), D(3, 3), D(3, 5), D(4, 4))
    same = shape_of("pooling", [x], lengths=(3, 3), stride=(2, 2), padding=(1, 1), padding_mode=1)
    assert same.dyn_dims[2:] == (D(3, 5), D(4, 4))


def test_unsqueeze_of_a_dynamic_input_takes_each_runs_size() -> None:
    program = parse_program(
        "x = @param:x -> dynamic, float_type, {[1..4], 3}\n@1 = unsqueeze[axes={1}](x)\n@2 = @return(@1)\n"
    )
    verify(program)
    interpreter = Interpreter(program)
    for n in (1, 4):
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        (out,) = interpreter.run({"x": x})
        assert np.array_equal(out, x.reshape(n, 1, 3))
