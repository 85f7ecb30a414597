"""MIGraphX's own programs (../shared/reference/migraphx-examples/*.read.txt: what MIGraphX 2.16
printed for them) under `--target=gpu`: each compiles for sm_90 here (NVRTC, no GPU), runs on the
CPU through the emulated platform where its kernels' threads are independent, and on a GPU (`gpu`
mark) gives the reference interpreter's numbers, control flow included."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from gpu_host import COMPILER

from mgxir.diagnostics import DiagnosticSink
from mgxir.drivers.run import flatten_outputs
from mgxir.interp import Interpreter
from mgxir.targets.gpu.compiler import device_arch
from mgxir.targets.gpu.driver import compile_for_gpu
from mgxir.text.parser import parse_program
from mgxir.verifier import verify

pytest.importorskip("cuda.core")

# ../shared beside the checkout; MGXIR_SHARED where it lies elsewhere (a worktree's checkout)
SHARED = Path(os.environ.get("MGXIR_SHARED") or Path(__file__).resolve().parents[5] / "shared")
EXAMPLES = SHARED / "reference" / "migraphx-examples"
GOLDEN = sorted(p.name.removesuffix(".read.txt") for p in EXAMPLES.glob("*.read.txt"))
if not GOLDEN:
    pytest.skip(f"no MIGraphX programs at {EXAMPLES}", allow_module_level=True)


def _program(name: str):
    path = EXAMPLES / f"{name}.read.txt"
    return parse_program(path.read_text(), str(path))


def _inputs(program, seed: int = 0) -> dict[str, np.ndarray]:
    """Floats in [-1, 1], booleans both ways by seed, integers in [0, 2]; a dynamic input at its
    largest lens."""
    rng = np.random.default_rng(seed)
    values: dict[str, np.ndarray] = {}
    for p in program.main.parameters():
        shape = p.shape
        lens = tuple(d.max for d in shape.dyn_dims) if shape.is_dynamic else shape.lens
        dtype = shape.dtype.numpy
        if shape.dtype.name == "bool":
            values[p.param_name] = np.full(lens, seed % 2 == 0)
        elif shape.dtype.is_integral:
            values[p.param_name] = rng.integers(0, 3, lens).astype(dtype)
        else:
            values[p.param_name] = rng.uniform(-1, 1, lens).astype(dtype)
    return values


def _compare(got, want, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    got, want = flatten_outputs(got), flatten_outputs(want)
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_allclose(np.asarray(got[key]), np.asarray(want[key]), rtol=rtol, atol=atol, err_msg=key)


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_program_compiles_for_the_gpu(name: str) -> None:
    lowered = compile_for_gpu(_program(name), arch="sm_90")
    verify(lowered, DiagnosticSink())


@pytest.mark.skipif(COMPILER is None, reason="no C++ compiler to emulate kernels with")
@pytest.mark.parametrize("name", GOLDEN)
def test_golden_program_emulated_matches_reference(name: str) -> None:
    from gpu_emulated_platform import EmulatedPlatform

    from mgxir.targets.gpu.runtime import GpuExecutable

    program = _program(name)
    lowered = compile_for_gpu(program, arch="sm_90", library_convolution=False)
    try:
        executable = GpuExecutable(lowered, platform=EmulatedPlatform(lowered))
    except NotImplementedError as e:
        pytest.skip(f"not emulated: {e}")
    for seed in range(2):
        params = _inputs(program, seed)
        _compare(executable.run(params), Interpreter(program).run(params))


@pytest.mark.gpu
@pytest.mark.skipif(device_arch() is None, reason="no GPU")
@pytest.mark.parametrize("name", GOLDEN)
def test_golden_program_on_the_gpu_matches_reference(name: str) -> None:
    """`--target=gpu` as mgx-run runs it (compile for the device, load, run) against the reference."""
    from mgxir.targets.gpu.target import GpuOptions, GpuTarget

    program = _program(name)
    target = GpuTarget()
    for seed in range(2):
        params = _inputs(program, seed)
        got = target.run(program, params, GpuOptions(), DiagnosticSink())
        _compare(got, Interpreter(program).run(params), rtol=1e-4, atol=1e-5)
