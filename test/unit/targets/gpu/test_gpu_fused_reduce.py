"""fused_reduce bodies that ran on the host under the GPU target (fused_reduce_kernels.py): argmax and
argmin (ONNX ArgMax/ArgMin, Hardmax) as index-reduction kernels, and bodies reading an input of the
reduced shape (skip layernorm's and dynamic quantization's second reduction) through the reduce
kernels with that input broadcast along the rows. Each lowers with no host step; the index
reductions give the reference's results run on the CPU (gpu_host.py), everything on a GPU
(`gpu` mark)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from gpu_host import COMPILER, run_emulated
from test_gpu_target import _program

from mgxir.diagnostics import DiagnosticSink
from mgxir.drivers.run import flatten_outputs
from mgxir.interp import Interpreter
from mgxir.targets.gpu.compiler import device_arch
from mgxir.targets.gpu.driver import compile_for_gpu
from mgxir.verifier import verify

pytest.importorskip("cuda.core")

SHARED = Path(os.environ.get("MGXIR_SHARED") or Path(__file__).resolve().parents[5] / "shared")
MODELS = (
    "argmax_test",
    "argmin_test",
    "argmax_select_last_index_test",
    "argmin_select_last_index_test",
    "hardmax_default_test",
    "hardmax_axis_neg_test",
    "skip_layer_normalization_test",
    "skip_layer_normalization_beta_bias_test",
    "dynamicquantizelinear_2d_test",
    "group_norm_contrib_3d_test",
    "mha_past_key_value_test",
    "mha_past_key_value_bias_seq_len_test",
)
HOST_FREE = {"gpu::code_object", "gpu::gemm", "load", "allocate"}

# ties (first or last of them), NaNs (the first wins), half, a strided input, every axis
ARG_REDUCTIONS = """
x = @param:x -> float_type, {3, 4, 5}, {20, 5, 1}
h = @param:h -> half_type, {4, 6}, {1, 4}
@2 = argmax[axis=1](x) -> int64_type, {3, 1, 5}, {5, 5, 1}
@3 = argmin[axis=2,select_last_index=1](x) -> int64_type, {3, 4, 1}, {4, 1, 1}
@4 = argmax[axis=0,select_last_index=1](x) -> int64_type, {1, 4, 5}, {20, 5, 1}
@5 = argmin[axis=-1](h) -> int64_type, {4, 1}, {1, 1}
@6 = argmax[axis=0](h) -> int64_type, {1, 6}, {6, 1}
@7 = @return(@2,@3,@4,@5,@6)
"""


def _arg_inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, (3, 4, 5)).astype(np.float32)  # few values: many ties
    x[1, 2, 3] = x[1, 0, 3] = x[1, 2, 1] = np.nan  # two NaNs along axes 1 and 2
    x[2, 0, 0] = np.nan
    h = rng.integers(-3, 4, (4, 6)).astype(np.float16)
    h[3, 1] = np.nan
    return {"x": x, "h": h}


def _steps(program) -> list:
    return [i for i in program.main if not (i.is_param or i.is_literal or i.is_return or i.op.defn.is_view)]


def _model(name: str):
    from mgxir.translate.onnx import import_model

    path = SHARED / "onnx-models" / f"{name}.onnx"
    if not path.exists():
        pytest.skip(f"{path} is not here")
    return import_model(str(path), sink=DiagnosticSink())


def _inputs(program, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        p.param_name: rng.uniform(-2, 2, p.shape.lens).astype(p.shape.dtype.numpy) for p in program.main.parameters()
    }


def test_arg_reductions_lower_to_index_kernels() -> None:
    lowered = compile_for_gpu(_program(ARG_REDUCTIONS), arch="sm_90")
    steps = _steps(lowered)
    assert {i.op.defn.name for i in steps} <= HOST_FREE
    symbols = [i.op["symbol_name"] for i in steps if i.op.defn.name == "gpu::code_object"]
    assert symbols.count("arg_reduce_kernel") == 5


@pytest.mark.skipif(COMPILER is None, reason="no C++ compiler to emulate kernels with")
def test_arg_reductions_emulated_match_reference() -> None:
    program = _program(ARG_REDUCTIONS)
    lowered = compile_for_gpu(program, arch="sm_90")
    for seed in range(3):
        params = _arg_inputs(seed)
        got = run_emulated(lowered, params)
        want = Interpreter(program).run(params)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("name", MODELS)
def test_models_lower_with_no_host_step(name: str) -> None:
    lowered = compile_for_gpu(_model(name), arch="sm_90")
    verify(lowered, DiagnosticSink())
    kinds = {i.op.defn.name for i in _steps(lowered)}
    assert kinds <= HOST_FREE, kinds - HOST_FREE


@pytest.mark.parametrize("name", ["mha_past_key_value_test", "skip_layer_normalization_test"])
def test_row_inputs_read_as_whole_rows_keep_the_body_s_values(name: str) -> None:
    """Each fused_reduce with an input of the reduced shape computes the same with that input
    broadcast to whole rows and the body's broadcasts of it bypassed (row_broadcasts_bypassed), as
    the reference interpreter runs both."""
    from mgxir.passes.manager import PassManager
    from mgxir.passes.registry import parse_pipeline
    from mgxir.targets.gpu.fused_reduce_kernels import row_broadcasts_bypassed
    from mgxir.targets.gpu.lowering import GPU_PIPELINE

    program = _model(name)
    PassManager(parse_pipeline(GPU_PIPELINE.split(",gpu_lowering")[0])).run(program, DiagnosticSink())
    run_module = Interpreter(program).run_module
    rng = np.random.default_rng(0)
    checked = 0
    for ins in program.main:
        if ins.is_param or ins.is_literal or ins.is_return or ins.op.defn.name != "fused_reduce":
            continue
        full = tuple(max(a.shape.lens[d] for a in ins.args) for d in range(ins.shape.ndim))
        module = ins.module_args[0]
        params = sorted((p for p in module if p.is_param), key=lambda p: p.param_name)
        rows = {p.param_name for p, a in zip(params, ins.args) if a.shape.lens != full}
        if not rows:
            continue
        arrays = [rng.uniform(1, 3, a.shape.lens).astype(a.shape.dtype.numpy) for a in ins.args]
        want = ins.op.defn.compute(ins.op, arrays, [module], run_module)
        whole_rows = [np.broadcast_to(a, full) for a in arrays]
        got = ins.op.defn.compute(ins.op, whole_rows, [row_broadcasts_bypassed(module, rows)], run_module)
        # a result computed from a row input may come out whole rows (the kernel then writes its one value)
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        np.testing.assert_allclose(got, np.broadcast_to(want, got.shape), rtol=1e-3)
        checked += 1
    assert checked


@pytest.mark.gpu
@pytest.mark.skipif(device_arch() is None, reason="no GPU")
def test_arg_reductions_match_reference_on_the_gpu() -> None:
    from mgxir.targets.gpu.runtime import GpuExecutable

    program = _program(ARG_REDUCTIONS)
    executable = GpuExecutable(compile_for_gpu(program))
    for seed in range(3):
        params = _arg_inputs(seed)
        got = flatten_outputs(executable.run(params))
        want = flatten_outputs(Interpreter(program).run(params))
        for key in want:
            np.testing.assert_array_equal(np.asarray(got[key]), np.asarray(want[key]), err_msg=key)


@pytest.mark.gpu
@pytest.mark.skipif(device_arch() is None, reason="no GPU")
@pytest.mark.parametrize("name", MODELS)
def test_models_match_reference_on_the_gpu(name: str) -> None:
    from mgxir.targets.gpu.runtime import GpuExecutable

    program = _model(name)
    executable = GpuExecutable(compile_for_gpu(program))
    for seed in range(2):
        params = _inputs(program, seed)
        got = flatten_outputs(executable.run(params))
        want = flatten_outputs(Interpreter(program).run(params))
        assert got.keys() == want.keys()
        for key in want:
            expected = np.asarray(want[key])
            # half: a few units in the last place (sums in another order); quantized: one step
            atol = 1 if expected.dtype.kind in "iu" else (4e-3 if expected.dtype == np.float16 else 2e-5)
            np.testing.assert_allclose(np.asarray(got[key]), expected, atol=atol, rtol=1e-3, err_msg=key)
