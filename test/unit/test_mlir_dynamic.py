"""Dynamic dimensions in MLIR: programs with `?` sizes come back with their ranges and compute the
same on the reference interpreter, and IREE (local-task) runs the dynamic-shaped function on
concrete inputs of several sizes with the reference's outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("iree.compiler")
pytest.importorskip("iree.runtime")

from mgxir import DiagnosticSink, parse_program, verify
from mgxir.drivers.run import flatten_outputs
from mgxir.interp import Interpreter
from mgxir.targets.iree import IreeOptions, run_on_iree, using
from mgxir.text.printer import print_program
from mgxir.translate.mlir.api import mlir_bytecode, program_from_mlir

ELEMENTWISE = """
module: "main"
x = @param:x -> dynamic, float_type, {[1..4], 3, [2..8]}
y = @param:y -> dynamic, float_type, {[1..4], 3, [2..8]}
@2 = add(x,y)
@3 = pointwise(@2,x), [main:pointwise0]
@4 = transpose[permutation={2, 0, 1}](@3)
@5 = reduce_mean[axes={0, 2}](x)
@6 = reduce_max[axes={1}](@3)
@7 = @return(@4,@5,@6)

module: "main:pointwise0"
main:pointwise0:x1 = @param:x1 -> float_type, {1}, {0}
main:pointwise0:x0 = @param:x0 -> float_type, {1}, {0}
main:pointwise0:@2 = mul(main:pointwise0:x0,main:pointwise0:x1) -> float_type, {1}, {0}
main:pointwise0:@3 = tanh(main:pointwise0:@2) -> float_type, {1}, {0}
main:pointwise0:@4 = @return(main:pointwise0:@3)
"""

RANGE = """
x = @param:x -> dynamic, half_type, {[1..4], [1..6]}
s = @param:s -> {dtype}, {1}
l = @param:l -> {dtype}, {1}
d = @param:d -> {dtype}, {1}
@4 = dimensions_of[start=0,end=2](x)
@5 = dynamic_range[max_output=6](s,l,d)
@6 = reduce_sum[axes={1}](x)
@7 = @return(@4,@5,@6)
"""

RNG = np.random.default_rng(3)


def _f32(*lens: int) -> np.ndarray:
    return RNG.uniform(-1, 1, lens).astype(np.float32)


CASES = {
    "elementwise-2x5": (ELEMENTWISE, {"x": _f32(2, 3, 5), "y": _f32(2, 3, 5)}),
    "elementwise-4x8": (ELEMENTWISE, {"x": _f32(4, 3, 8), "y": _f32(4, 3, 8)}),
    "range-int": (
        RANGE.replace("{dtype}", "int32_type"),
        {"x": _f32(3, 5).astype(np.float16), "s": np.int32([7]), "l": np.int32([-4]), "d": np.int32([-3])},
    ),
    "range-float": (
        RANGE.replace("{dtype}", "float_type"),
        {"x": _f32(1, 6).astype(np.float16), "s": np.float32([0.5]), "l": np.float32([3]), "d": np.float32([0.75])},
    ),
    "range-clamped": (
        RANGE.replace("{dtype}", "int64_type"),
        {"x": _f32(4, 1).astype(np.float16), "s": np.int64([0]), "l": np.int64([100]), "d": np.int64([1])},
    ),
}


def _program(text: str):
    program = parse_program(text)
    verify(program)
    return program


def _run(program, params) -> dict[str, np.ndarray]:
    with np.errstate(all="ignore"):
        return flatten_outputs(Interpreter(program).run(params))


@pytest.mark.parametrize("name", list(CASES))
def test_comes_back_with_its_ranges(name: str) -> None:
    text, params = CASES[name]
    program = _program(text)
    back = program_from_mlir(mlir_bytecode(program), "x.mlirbc")
    verify(back)
    assert print_program(back).splitlines()[1] == print_program(program).splitlines()[1]  # x's dynamic shape
    expected, got = _run(program, params), _run(back, params)
    for key, value in expected.items():
        assert np.array_equal(got[key], value), key


@pytest.mark.parametrize("name", list(CASES))
def test_runs_on_iree_with_concrete_sizes(name: str, tmp_path: Path) -> None:
    text, params = CASES[name]
    program = _program(text)
    expected = _run(program, params)
    with using(IreeOptions(device="local-task", cache_dir=tmp_path)):
        got = flatten_outputs(run_on_iree(program, params, DiagnosticSink()))
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        np.testing.assert_allclose(got[key].astype(np.float64), value.astype(np.float64), rtol=2e-3, atol=1e-5)
