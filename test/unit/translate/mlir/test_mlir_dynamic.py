"""Dynamic dimensions in MLIR: programs with `?` sizes come back with their ranges and compute the
same on the reference interpreter, and IREE (local-task) runs the dynamic-shaped function on
concrete inputs of several sizes with the reference's outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("iree.compiler")
pytest.importorskip("iree.runtime")

from mgxir import DiagnosticSink, MgxError, parse_program, verify
from mgxir.drivers.run import flatten_outputs, rms_error
from mgxir.interp import Interpreter
from mgxir.targets.iree import IreeOptions, run_on_iree
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
    got = flatten_outputs(
        run_on_iree(program, params, DiagnosticSink(), IreeOptions(device="local-task", cache_dir=tmp_path))
    )
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        np.testing.assert_allclose(got[key].astype(np.float64), value.astype(np.float64), rtol=2e-3, atol=1e-5)


# One program of the ops that lower with dynamic dimensions beyond the elementwise ones, so that IREE
# compiles it once; it runs at the smallest, a middle and the largest sizes of the ranges.
OPS = """
x = @param:x -> dynamic, float_type, {[1..4], 3, [2..8]}
y = @param:y -> dynamic, float_type, {[1..4], 3, [2..8]}
s = @param:s -> dynamic, float_type, {[1..4], [2..8], 3}
v = @param:v -> dynamic, float_type, {[2..8]}
r = @param:r -> half_type, {1, 3, 1}
a = @param:a -> dynamic, float_type, {[1..4], [2..6], 5}
b = @param:b -> dynamic, float_type, {[1..4], 5, 3}
i = @param:i -> int32_type, {2, 2}
j = @param:j -> dynamic, int64_type, {[2..6]}
c = @param:c -> dynamic, half_type, {[1..4], 4, 6, 6}
w = @param:w -> half_type, {6, 2, 3, 3}
q = @param:q -> float_type, {1, 2, 5}
@1 = slice[axes={1},starts={1},ends={3}](x)
@2 = slice[axes={1},starts={-1},ends={3}](y)
@3 = concat[axis=1](@1,@2)
@4 = concat[axis=2](x,y)
@5 = softmax[axis=2](x)
@6 = logsoftmax[axis=0](y)
@7 = dot(a,b)
@8 = gather[axis=1](a,i)
@9 = gather[axis=1](a,j)
@10 = convolution[padding={1, 1},stride={1, 1},dilation={1, 1},group=2](c,w)
@11 = pooling[mode=average,padding={1, 1},stride={2, 2},lengths={3, 3}](c)
@12 = pooling[mode=max,padding={0, 0},stride={1, 1},lengths={2, 2}](@10)
@13 = unsqueeze[axes={1, 4}](x)
@14 = squeeze[axes={1}](@13)
@15 = reshape[dims={}](x,s)
@16 = convert[target_type=float_type](r)
@17 = multibroadcast(@16,x)
@18 = broadcast[axis=2](v,x)
@19 = greater(x,@17)
@20 = convert[target_type=bool_type](@19)
@21 = where(@20,@18,@17)
@22 = convert[target_type=half_type](@21)
@23 = fixed_pad(x) -> float_type, {4, 3, 8}
@24 = broadcast_for_dot(q,b) -> dynamic, float_type, {[1..4], 2, 5}
@25 = dot(@24,b)
@26 = @return(@3,@4,@5,@6,@7,@8,@9,@10,@11,@12,@14,@15,@22,@23,@25)
"""


def _inputs(program, fraction: float) -> dict[str, np.ndarray]:
    """Inputs whose dynamic dimensions sit at `fraction` of their ranges (equal ranges, equal sizes)."""
    rng = np.random.default_rng(7)
    params = {}
    for p in program.main.parameters():
        shape = p.shape
        lens = [d.min + round(fraction * (d.max - d.min)) for d in shape.dyn_dims] if shape.is_dynamic else shape.lens
        if shape.dtype.is_integral:  # gather indices, negative ones included
            params[p.param_name] = rng.integers(-2, 2, lens).astype(shape.dtype.numpy)
        else:
            params[p.param_name] = rng.uniform(-1, 1, lens).astype(shape.dtype.numpy)
    return params


@pytest.fixture(scope="module")
def ops_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("iree-dynamic-ops")


def test_dynamic_ops_come_back() -> None:
    program = _program(OPS)
    back = program_from_mlir(mlir_bytecode(program), "ops.mlirbc")
    verify(back)
    params = _inputs(program, 0.5)
    expected, got = _run(program, params), _run(back, params)
    for key, value in expected.items():
        assert np.array_equal(got[key], value), key


@pytest.mark.parametrize("fraction", [0.0, 0.5, 1.0])
def test_dynamic_ops_run_on_iree(fraction: float, ops_cache: Path) -> None:
    program = _program(OPS)
    params = _inputs(program, fraction)
    expected = _run(program, params)
    # compiled once, run at each size
    got = flatten_outputs(
        run_on_iree(program, params, DiagnosticSink(), IreeOptions(device="local-task", cache_dir=ops_cache))
    )
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        assert rms_error(got[key], value) < 1e-3, key


# select_module picks a module by the inputs' run-time sizes; broadcast_with_dims takes its output's
# sizes from a tensor's values. One program, compiled once.
SELECTED = """
module: "main"
data = @param:data -> dynamic, float_type, {[1..4], 4}
x = @param:x -> float_type, {3, 1}
d = @param:d -> int64_type, {3}
@1 = select_module[output_dyn_shapes=[float_type, {[1..4], 4}]](data), [batch_1, batch_2]
@2 = get_tuple_elem[index=0](@1)
@3 = broadcast_with_dims(x,d)
@4 = @return(@2,@3)

module: "batch_1"
batch_1:data = @param:data -> float_type, {1, 4}
batch_1:@1 = neg(batch_1:data)
batch_1:@2 = @return(batch_1:@1)

module: "batch_2"
batch_2:data = @param:data -> float_type, {2, 4}
batch_2:@1 = exp(batch_2:data)
batch_2:@2 = @return(batch_2:@1)
"""


def _selected_inputs(batch: int, dims: list[int]) -> dict[str, np.ndarray]:
    data = np.linspace(-1, 1, 4 * batch, dtype=np.float32).reshape(batch, 4)
    return {"data": data, "x": np.array([[1], [2], [3]], np.float32), "d": np.array(dims, np.int64)}


@pytest.mark.parametrize(("batch", "dims"), [(1, [2, 3, 4]), (2, [1, 3, 1])])
def test_select_module_and_broadcast_with_dims_run_on_iree(batch: int, dims: list[int], ops_cache: Path) -> None:
    program = _program(SELECTED)
    params = _selected_inputs(batch, dims)
    expected = _run(program, params)
    back = program_from_mlir(mlir_bytecode(program), "selected.mlirbc")
    for key, value in _run(back, params).items():
        assert np.array_equal(value, expected[key]), key
    got = flatten_outputs(
        run_on_iree(program, params, DiagnosticSink(), IreeOptions(device="local-task", cache_dir=ops_cache))
    )
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        assert rms_error(got[key], value) < 1e-6, key


def test_select_module_without_a_fitting_module_fails_at_run_time(ops_cache: Path) -> None:
    program = _program(SELECTED)
    with pytest.raises(MgxError) as info:
        run_on_iree(
            program,
            _selected_inputs(3, [1, 1, 1]),
            DiagnosticSink(),
            IreeOptions(device="local-task", cache_dir=ops_cache),
        )
    assert "select_module: no module's parameter shapes fit the input shapes" in str(info.value)
