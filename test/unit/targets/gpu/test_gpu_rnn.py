"""RNNs under the GPU target: rewrite_rnn unrolls rnn/gru/lstm into gemms and pointwise kernels (with
`exact_gates`, clip and LSTM's input_forget too), and the sequence-length helpers it leaves for
lengths that differ (rnn_var_sl_*) are generated kernels (mgxir/targets/gpu/rnn_kernels.py). MIGraphX's
RNN test models lower with no host step; the helpers give the reference's results run on the CPU
(gpu_host.py), and whole models give them on a GPU (`gpu` mark)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from gpu_host import COMPILER, run_emulated
from test_gpu_target import _program

from mgxir.diagnostics import DiagnosticSink
from mgxir.interp import Interpreter
from mgxir.targets.gpu.compiler import device_arch
from mgxir.targets.gpu.driver import compile_for_gpu
from mgxir.verifier import verify

pytest.importorskip("cuda.core")

# ../shared beside the checkout; MGXIR_SHARED where it lies elsewhere (a worktree's checkout)
SHARED = Path(os.environ.get("MGXIR_SHARED") or Path(__file__).resolve().parents[5] / "shared")
MODELS = SHARED / "onnx-models"
SEQUENCE = 5  # every model below runs over 5 steps
# variable and constant lengths, each direction, clip-free input_forget LSTMs, 3 to 8 inputs, layouts
RNN_MODELS = (
    "onnx_lstm_bi",
    "onnx_lstm_forward",
    "onnx_lstm_reverse",
    "onnx_lstm_f6args",
    "onnx_lstm_r5args",
    "onnx_lstm_bi0af",
    "onnx_lstm_hs",
    "onnx_lstm_cell",
    "lstm_bi_layout_cell_test",
    "lstm_r_layout_hs_cell_test",
    "onnx_gru_bi_2",
    "onnx_gru_reverse_1",
    "gru_bi_5arg_layout_test",
    "onnx_rnn_5args",
    "onnx_rnn_bi",
    "rnn_r_layout_test",
)
HOST_FREE = {"gpu::code_object", "gpu::gemm", "load", "allocate"}


def _steps(program) -> list:
    return [i for i in program.main if not (i.is_param or i.is_literal or i.is_return or i.op.defn.is_view)]


def _model(name: str):
    from mgxir.translate.onnx import import_model

    path = MODELS / f"{name}.onnx"
    if not path.exists():
        pytest.skip(f"{path} is not here")
    return import_model(str(path), sink=DiagnosticSink())


def _inputs(program, seed: int) -> dict[str, np.ndarray]:
    """Floats in [-0.5, 0.5] (relu gates explode on wider ones: the float64 reference and any float32
    unrolling then part ways); integer inputs (the sequence lengths) in [1, SEQUENCE], mostly different."""
    rng = np.random.default_rng(seed)
    values = {}
    for p in program.main.parameters():
        shape = p.shape
        if shape.dtype.is_integral:
            values[p.param_name] = rng.integers(1, SEQUENCE + 1, shape.lens).astype(shape.dtype.numpy)
        else:
            values[p.param_name] = rng.uniform(-0.5, 0.5, shape.lens).astype(shape.dtype.numpy)
    return values


@pytest.mark.parametrize("name", RNN_MODELS)
def test_rnn_models_lower_with_no_host_step(name: str) -> None:
    lowered = compile_for_gpu(_model(name), arch="sm_90")
    verify(lowered, DiagnosticSink())
    kinds = {i.op.defn.name for i in _steps(lowered)}
    assert kinds <= HOST_FREE, kinds - HOST_FREE


@pytest.mark.gpu
@pytest.mark.skipif(device_arch() is None, reason="no GPU")
@pytest.mark.parametrize("name", RNN_MODELS)
def test_rnn_models_match_reference_on_the_gpu(name: str) -> None:
    from mgxir.drivers.run import flatten_outputs
    from mgxir.targets.gpu.runtime import GpuExecutable

    program = _model(name)
    lowered = compile_for_gpu(program)
    for seed in range(2):
        params = _inputs(program, seed)
        got = flatten_outputs(GpuExecutable(lowered).run(params))
        want = flatten_outputs(Interpreter(program).run(params))
        assert got.keys() == want.keys()
        for key in want:
            np.testing.assert_allclose(np.asarray(got[key]), np.asarray(want[key]), atol=2e-5, rtol=1e-4)


# the helpers alone: states {seq, directions, batch, hidden}; lengths of every kind, 0 and the whole sequence
HELPERS = """
x = @param:x -> float_type, {5, 4, 3}, {12, 3, 1}
n = @param:n -> int32_type, {4}, {1}
s = @param:s -> half_type, {5, 2, 4, 3}, {24, 12, 3, 1}
r = @param:r -> float_type, {5, 1, 4, 3}, {1, 20, 5, 60}
m = @param:m -> int64_type, {4, 1}, {1, 1}
@5 = rnn_var_sl_shift_sequence(x,n)
@6 = rnn_var_sl_shift_output[output_name=hidden_states,direction=bidirectional](s,n)
@7 = rnn_var_sl_shift_output[output_name=cell_outputs,direction=reverse](r,m)
@8 = rnn_var_sl_shift_output[output_name=hidden_states,direction=forward](r,n)
@9 = rnn_var_sl_last_output[direction=bidirectional](s,n)
@10 = rnn_var_sl_last_output[direction=reverse](r,m)
@11 = rnn_var_sl_last_output[direction=forward](r,m)
@12 = @return(@5,@6,@7,@8,@9,@10,@11)
"""


def _helper_inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.uniform(-4, 4, (5, 4, 3)).astype(np.float32),
        "n": np.array([5, 0, 3, 1], np.int32),
        "s": rng.uniform(-4, 4, (5, 2, 4, 3)).astype(np.float16),
        "r": rng.uniform(-4, 4, (5, 1, 4, 3)).astype(np.float32),
        "m": np.array([[4], [5], [0], [3]], np.int64),
    }


def test_helpers_lower_to_their_kernels() -> None:
    lowered = compile_for_gpu(_program(HELPERS), arch="sm_90")
    symbols = {i.op["symbol_name"] for i in _steps(lowered) if i.op.defn.name == "gpu::code_object"}
    assert {i.op.defn.name for i in _steps(lowered)} <= HOST_FREE
    assert {
        "rnn_var_sl_shift_sequence_kernel",
        "rnn_var_sl_shift_output_kernel",
        "rnn_var_sl_last_output_kernel",
    } <= symbols


@pytest.mark.skipif(COMPILER is None, reason="no C++ compiler to emulate kernels with")
def test_helpers_emulated_on_the_cpu_match_reference() -> None:
    program = _program(HELPERS)
    lowered = compile_for_gpu(program, arch="sm_90")
    params = _helper_inputs(0)
    got = run_emulated(lowered, params)
    want = Interpreter(program).run(params)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.gpu
@pytest.mark.skipif(device_arch() is None, reason="no GPU")
def test_helpers_match_reference_on_the_gpu() -> None:
    from mgxir.drivers.run import flatten_outputs
    from mgxir.targets.gpu.runtime import GpuExecutable

    program = _program(HELPERS)
    params = _helper_inputs(1)
    got = flatten_outputs(GpuExecutable(compile_for_gpu(program)).run(params))
    want = flatten_outputs(Interpreter(program).run(params))
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_array_equal(np.asarray(got[key]), np.asarray(want[key]))
