"""Generated kernels for the operators that ran on the host (pad's reflect and edge modes,
reverse, onehot, resize, gathernd, fill, unpack_int4, concat_past_present, scatter, scatternd,
prefix_scan_sum, undefined, lrn): each program lowers
with no host step and its kernels compile with NVRTC here; on a GPU (`gpu` mark) each gives the
reference interpreter's result."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from gpu_host import COMPILER, run_emulated
from test_gpu_target import _program

from mgxir.interp import Interpreter
from mgxir.targets.gpu.compiler import device_arch
from mgxir.targets.gpu.driver import compile_for_gpu

pytest.importorskip("cuda.core")

gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(device_arch() is None, reason="no GPU")


def _floats(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    return rng.uniform(-4, 4, shape).astype(dtype)


# name -> (program, the symbols its kernels must include, its inputs from a generator)
Inputs = Callable[[np.random.Generator], dict[str, np.ndarray]]
PROGRAMS: dict[str, tuple[str, tuple[str, ...], Inputs]] = {
    # reflect with a pad as long as the axis, edge, a negative pad that crops, reverse of two axes
    "pad_modes_reverse": (
        """
x = @param:x -> float_type, {2, 3, 5}, {15, 5, 1}
@1 = pad[mode=1,pads={0, 1, 4, 0, 2, -1}](x)
@2 = pad[mode=2,pads={1, 0, 2, 0, 1, 4}](x)
@3 = reverse[axes={0, -1}](x)
@4 = @return(@1,@2,@3)
""",
        ("pad_kernel", "reverse_kernel"),
        lambda rng: {"x": _floats(rng, (2, 3, 5), np.float32)},
    ),
    "pad_reflect_half_transposed": (
        """
x = @param:x -> half_type, {4, 3}, {1, 4}
@1 = pad[mode=1,pads={2, 1, 3, 2}](x)
@2 = @return(@1)
""",
        ("pad_kernel",),
        lambda rng: {"x": _floats(rng, (4, 3), np.float16)},
    ),
    "onehot": (
        """
i = @param:i -> int64_type, {2, 3}, {3, 1}
v = @param:v -> float_type, {2}, {1}
@2 = onehot[axis=1,depth=5](i,v)
@3 = @return(@2)
""",
        ("onehot_kernel",),
        lambda rng: {"i": rng.integers(-5, 5, (2, 3)), "v": np.array([-1.5, 2.0], np.float32)},
    ),
    "resize_nearest_linear_cubic": (
        """
x = @param:x -> float_type, {1, 2, 4, 5}, {40, 20, 5, 1}
@1 = resize[scales={1, 1, 2, 1.5},nearest_mode=floor,mode=nearest,coordinate_transformation_mode=asymmetric](x)
@2 = resize[sizes={1, 2, 7, 3},mode=linear,coordinate_transformation_mode=half_pixel](x)
@3 = resize[scales={1, 1, 2, 2},mode=cubic,coordinate_transformation_mode=align_corners](x)
@4 = resize[sizes={1, 2, 8, 10},nearest_mode=ceil,mode=nearest,coordinate_transformation_mode=tf_half_pixel_for_nn](x)
@5 = @return(@1,@2,@3,@4)
""",
        ("resize_kernel",),
        lambda rng: {"x": _floats(rng, (1, 2, 4, 5), np.float32)},
    ),
    "gathernd": (
        """
d = @param:d -> float_type, {2, 3, 4}, {12, 4, 1}
i = @param:i -> int64_type, {5, 2}, {2, 1}
j = @param:j -> int32_type, {2, 3, 1}, {3, 1, 1}
@3 = gathernd(d,i)
@4 = gathernd[batch_dims=1](d,j)
@5 = @return(@3,@4)
""",
        ("gathernd_kernel",),
        lambda rng: {
            "d": _floats(rng, (2, 3, 4), np.float32),
            "i": np.stack([rng.integers(-2, 2, 5), rng.integers(-3, 3, 5)], axis=1),
            "j": rng.integers(-3, 3, (2, 3, 1)).astype(np.int32),
        },
    ),
    "fill": (
        """
v = @param:v -> half_type, {1}, {0}
b = @param:b -> half_type, {3, 4}, {4, 1}
@2 = fill(v,b)
@3 = @return(@2)
""",
        ("fill_kernel",),
        lambda rng: {"v": np.array([2.5], np.float16), "b": _floats(rng, (3, 4), np.float16)},
    ),
    "unpack_int4": (
        """
x = @param:x -> int8_type, {4, 3}, {3, 1}
y = @param:y -> uint8_type, {3, 4}, {4, 1}
@2 = unpack_int4[axis=1](x)
@3 = unpack_int4[axis=0](y)
@4 = @return(@2,@3)
""",
        ("unpack_int4_kernel",),
        lambda rng: {
            "x": rng.integers(-128, 128, (4, 3)).astype(np.int8),
            "y": rng.integers(0, 256, (3, 4)).astype(np.uint8),
        },
    ),
    # repeated targets combine in the reference's order (the last update wins for none)
    "scatter_elements": (
        """
d = @param:d -> float_type, {3, 4}, {4, 1}
i = @param:i -> int64_type, {2, 4}, {4, 1}
j = @param:j -> int32_type, {3, 3}, {3, 1}
u = @param:u -> float_type, {3, 4}, {4, 1}
@4 = scatter_none[axis=0](d,i,u)
@5 = scatter_add[axis=1](d,j,u)
@6 = scatter_max[axis=-1](d,j,u)
@7 = @return(@4,@5,@6)
""",
        ("scatter_none_kernel", "scatter_add_kernel", "scatter_max_kernel"),
        lambda rng: {
            "d": _floats(rng, (3, 4), np.float32),
            "i": rng.integers(-3, 3, (2, 4)),
            "j": rng.integers(-4, 4, (3, 3)).astype(np.int32),
            "u": _floats(rng, (3, 4), np.float32),
        },
    ),
    "scatternd": (
        """
d = @param:d -> half_type, {4, 3, 2}, {6, 2, 1}
i = @param:i -> int64_type, {5, 1}, {1, 1}
u = @param:u -> half_type, {5, 3, 2}, {6, 2, 1}
k = @param:k -> int64_type, {3, 2}, {2, 1}
v = @param:v -> half_type, {3, 2}, {2, 1}
@5 = scatternd_add(d,i,u)
@6 = scatternd_none(d,k,v)
@7 = scatternd_mul(d,k,v)
@8 = @return(@5,@6,@7)
""",
        ("scatternd_add_kernel", "scatternd_none_kernel", "scatternd_mul_kernel"),
        lambda rng: {
            "d": _floats(rng, (4, 3, 2), np.float16),
            "i": rng.integers(0, 4, (5, 1)),
            "u": _floats(rng, (5, 3, 2), np.float16),
            "k": np.stack([rng.integers(0, 4, 3), rng.integers(0, 3, 3)], axis=1),
            "v": _floats(rng, (3, 2), np.float16),
        },
    ),
    # inclusive, exclusive, reversed; float and int32 (which wraps as the reference's cumsum)
    "prefix_scan_sum": (
        """
x = @param:x -> float_type, {3, 7}, {7, 1}
y = @param:y -> int32_type, {5, 2}, {1, 5}
@2 = prefix_scan_sum[axis=1](x)
@3 = prefix_scan_sum[axis=1,exclusive=1](x)
@4 = prefix_scan_sum[axis=-1,reverse=1](x)
@5 = prefix_scan_sum[axis=0,exclusive=1,reverse=1](y)
@6 = prefix_scan_sum[axis=0](y)
@7 = @return(@2,@3,@4,@5,@6)
""",
        ("prefix_scan_sum_kernel",),
        lambda rng: {
            "x": _floats(rng, (3, 7), np.float32),
            "y": rng.integers(2**30, 2**31 - 1, (5, 2)).astype(np.int32),
        },
    ),
    # across 5 channels of 7 (the window cut at both ends), an even size, half, a channels-last input
    "lrn": (
        """
x = @param:x -> float_type, {2, 7, 3, 2}, {42, 6, 2, 1}
h = @param:h -> half_type, {1, 4, 3}, {12, 1, 4}
@2 = lrn[alpha=0.0001,beta=0.75,bias=1,size=5](x)
@3 = lrn[alpha=0.5,beta=0.5,bias=2,size=2](x)
@4 = lrn[alpha=0.001,beta=0.75,bias=1,size=3](h)
@5 = @return(@2,@3,@4)
""",
        ("lrn_kernel",),
        lambda rng: {"x": _floats(rng, (2, 7, 3, 2), np.float32), "h": _floats(rng, (1, 4, 3), np.float16)},
    ),
    # an optional input left out (as MIGraphX's ONNX parser writes it) returned: the reference's zero
    "undefined": (
        """
x = @param:x -> float_type, {2}, {1}
@1 = undefined -> float_type, {}, {}
@2 = neg(x) -> float_type, {2}, {1}
@3 = @return(@1,@2)
""",
        ("undefined_kernel",),
        lambda rng: {"x": _floats(rng, (2,), np.float32)},
    ),
    # a decoding step (one new row per head, at each batch's past length) and a prompt (rows from 0)
    "concat_past_present": (
        """
n = @param:n -> half_type, {2, 2, 1, 8}, {16, 8, 8, 1}
p = @param:p -> half_type, {2, 2, 3, 8}, {48, 24, 8, 1}
s = @param:s -> int32_type, {2}, {1}
c = @param:c -> half_type, {2, 2, 6, 8}, {96, 48, 8, 1}
t = @param:t -> int32_type, {2, 1}, {1, 1}
@5 = concat_past_present[kv_num_heads=2](n,s,c)
@6 = concat_past_present[kv_num_heads=2](p,s,c)
@7 = concat_past_present[kv_num_heads=2](n,t,c)
@8 = @return(@5,@6,@7)
""",
        ("concat_past_present_kernel",),
        lambda rng: {
            "n": _floats(rng, (2, 2, 1, 8), np.float16),
            "p": _floats(rng, (2, 2, 3, 8), np.float16),
            "s": np.array([5, 2], np.int32),
            "t": np.array([[1], [4]], np.int32),  # {batch, 1}, as the GroupQueryAttention parser gives it
            "c": _floats(rng, (2, 2, 6, 8), np.float16),
        },
    ),
}


@pytest.fixture(scope="module")
def lowered() -> dict[str, object]:
    return {name: compile_for_gpu(_program(text), arch="sm_90") for name, (text, _, _) in PROGRAMS.items()}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_lowers_to_kernels_with_no_host_step(lowered: dict, name: str) -> None:
    program = lowered[name]
    steps = [i for i in program.main if not (i.is_param or i.is_literal or i.is_return)]
    kinds = {i.op.defn.name for i in steps}
    assert kinds <= {"gpu::code_object", "load", "allocate"}, kinds
    symbols = {i.op["symbol_name"] for i in steps if i.op.defn.name == "gpu::code_object"}
    assert set(PROGRAMS[name][1]) <= symbols
    for ins in steps:
        if ins.op.defn.name == "gpu::code_object":
            code = ins.op["code_object"]
            assert code.binary.startswith(b"\x7fELF")
            # one kernel parameter per argument: inputs, then the output (fill's buffer included)
            assert code.source.count("__restrict__") == len(ins.args), ins.op["symbol_name"]


@gpu
@needs_gpu
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_matches_reference(lowered: dict, name: str) -> None:
    from mgxir.drivers.run import flatten_outputs
    from mgxir.targets.gpu.runtime import GpuExecutable

    text, _, make_inputs = PROGRAMS[name]
    program = _program(text)
    params = make_inputs(np.random.default_rng(0))
    got = flatten_outputs(GpuExecutable(lowered[name]).run(params))
    want = flatten_outputs(Interpreter(program).run(params))
    assert got.keys() == want.keys()
    for key in want:
        expected = np.asarray(want[key])
        # float16: one unit in the last place (scatter's additions into one element may round in another
        # order on the GPU: H200, 5.73828125 against 5.734375)
        atol, rtol = (2e-3, 1e-3) if expected.dtype == np.float16 else (1e-5, 1e-7)
        np.testing.assert_allclose(np.asarray(got[key], np.float64), expected.astype(np.float64), atol=atol, rtol=rtol)


@pytest.mark.skipif(COMPILER is None, reason="no C++ compiler to emulate kernels with")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_emulated_on_the_cpu_matches_reference(lowered: dict, name: str) -> None:
    """The same comparison with each kernel run on the CPU (gpu_host.py): every element of
    every output, no GPU needed."""
    text, _, make_inputs = PROGRAMS[name]
    program = _program(text)
    params = make_inputs(np.random.default_rng(1))
    got = run_emulated(lowered[name], params)
    want = Interpreter(program).run(params)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        expected = np.asarray(w)
        tolerance = 2e-3 if expected.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(np.asarray(g, np.float64), expected.astype(np.float64), atol=tolerance)


# The GPU target's generated kernels at corners that hand-made mutants showed untested (issues 20
# and 23), run on the CPU through gpu_host.py (no GPU needed) against the reference interpreter.

pytest.importorskip("cuda.core")
pytestmark = pytest.mark.skipif(COMPILER is None, reason="no C++ compiler to emulate kernels with")

# every index of an axis of 5 written both ways (-5 is 0, -1 is 4), on either axis, through a
# transposed (non-standard) data view and with int32 and int64 indices
GATHERS = """
x = @param:x -> float_type, {5, 4}, {4, 1}
i = @param:i -> int64_type, {2, 5}, {5, 1}
j = @param:j -> int32_type, {6}, {1}
@3 = gather[axis=0](x,i)
@4 = transpose[permutation={1, 0}](x)
@5 = gather[axis=-1](@4,i)
@6 = gather[axis=1](x,j)
@7 = @return(@3,@5,@6)
"""


def test_gather_wraps_negative_indices() -> None:
    """A negative index counts from the axis' end. Killed mutants: the wrap dropped, `k <= 0`
    (index 0 read as the last), `k -= len`."""
    program = _program(GATHERS)
    lowered = compile_for_gpu(program, arch="sm_90")
    symbols = {i.op["symbol_name"] for i in lowered.main if i.op.defn.name == "gpu::code_object"}
    assert "gather_kernel" in symbols
    params = {
        "x": np.arange(20, dtype=np.float32).reshape(5, 4) * 1.5 - 7,
        "i": np.array([[-5, -4, -3, -2, -1], [0, 1, 2, 3, 4]], np.int64),
        "j": np.array([-4, -1, 0, 3, -2, 1], np.int32),
    }
    got = run_emulated(lowered, params)
    want = Interpreter(program).run(params)
    assert len(got) == len(want) == 3
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, np.asarray(w))
    np.testing.assert_array_equal(got[0][0], got[0][1])  # -5..-1 are 0..4
