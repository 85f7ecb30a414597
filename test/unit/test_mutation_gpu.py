"""The GPU target's generated kernels at corners that hand-made mutants showed untested (issues 20
and 23), run on the CPU through gpu_host.py (no GPU needed) against the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_host import COMPILER, run_emulated
from test_gpu_target import _program

from mgxir.interp import Interpreter
from mgxir.targets.gpu.driver import compile_for_gpu

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
