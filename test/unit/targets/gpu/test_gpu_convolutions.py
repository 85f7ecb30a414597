"""The GPU target's grouped and depthwise convolutions, padding modes, layouts around host steps,
and its warnings for host steps. Lowering and NVRTC compilation run everywhere; runs against the
reference interpreter are marked `gpu`."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_host import COMPILER, run_emulated
from test_gpu_target import _inputs, _program

from mgxir.diagnostics import MgxError
from mgxir.interp import Interpreter
from mgxir.targets.gpu.compiler import device_arch
from mgxir.targets.gpu.driver import compile_for_gpu

pytest.importorskip("cuda.core")

gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(device_arch() is None, reason="no GPU")

PROGRAMS = {
    # MobileNet's block: 1x1 convolution (cuDNN, channels-last), depthwise 3x3 stride 2 with its
    # bias and relu (SAME padding), 1x1 convolution: the depthwise kernel reads and writes NHWC
    "depthwise_half_between_convs": """
x = @param:x -> half_type, {2, 16, 10, 10}, {1600, 100, 10, 1}
w0 = @param:w0 -> half_type, {32, 16, 1, 1}, {16, 1, 1, 1}
w1 = @param:w1 -> half_type, {32, 1, 3, 3}, {9, 9, 3, 1}
b = @param:b -> half_type, {32}, {1}
w2 = @param:w2 -> half_type, {16, 32, 1, 1}, {32, 1, 1, 1}
@5 = convolution[padding={1, 1},stride={1, 1},dilation={1, 1},group=1](x,w0)
@6 = convolution[padding={0, 0, 1, 1},stride={2, 2},dilation={1, 1},group=32,padding_mode=1](@5,w1)
@7 = broadcast[axis=1,out_lens={2, 32, 6, 6}](b)
@8 = add(@6,@7)
@9 = relu(@8)
@10 = convolution[padding={0, 0},stride={1, 1},dilation={1, 1},group=1](@9,w2)
@11 = @return(@10)
""",
    # a channel multiplier of 2, dilation, float32 (channels-first), residual add in the epilogue
    "depthwise_float_multiplier": """
x = @param:x -> float_type, {1, 6, 9, 11}, {594, 99, 11, 1}
w = @param:w -> float_type, {12, 1, 3, 5}, {15, 15, 5, 1}
r = @param:r -> float_type, {1, 12, 7, 7}, {588, 49, 7, 1}
@3 = convolution[padding={1, 2},stride={1, 1},dilation={2, 2},group=6](x,w)
@4 = add(@3,r)
@5 = @return(@4)
""",
    # a 1-d depthwise convolution (wav2vec2's positional convolution is one, grouped)
    "depthwise_1d": """
x = @param:x -> float_type, {2, 8, 20}, {160, 20, 1}
w = @param:w -> float_type, {8, 1, 5}, {5, 5, 1}
@2 = convolution[padding={2},stride={1},dilation={1},group=8](x,w)
@3 = @return(@2)
""",
    # ResNeXt's grouped 3x3 and a grouped float16 one after it: cuDNN, in NHWC for half
    "grouped_half": """
x = @param:x -> half_type, {2, 32, 8, 8}, {2048, 64, 8, 1}
w0 = @param:w0 -> half_type, {32, 8, 3, 3}, {72, 9, 3, 1}
w1 = @param:w1 -> half_type, {16, 4, 1, 1}, {4, 1, 1, 1}
@3 = convolution[padding={1, 1},stride={1, 1},dilation={1, 1},group=4](x,w0)
@4 = relu(@3)
@5 = convolution[padding={0, 0},stride={2, 2},dilation={1, 1},group=8](@4,w1)
@6 = @return(@5)
""",
    "grouped_float_same_lower": """
x = @param:x -> float_type, {1, 8, 7, 7}, {392, 49, 7, 1}
w = @param:w -> float_type, {8, 4, 2, 2}, {16, 4, 2, 1}
@2 = convolution[padding={1, 1, 0, 0},stride={1, 1},dilation={1, 1},group=2,padding_mode=2](x,w)
@3 = @return(@2)
""",
    # inputs already channels-last: the convolutions' results are NHWC by their shape rule, so the
    # return reads them as they are (no copy to a standard layout the program never asked for)
    "channels_last_input_to_return": """
x = @param:x -> half_type, {2, 16, 12, 12}, {2304, 1, 192, 16}
w0 = @param:w0 -> half_type, {16, 1, 3, 3}, {9, 9, 3, 1}
w1 = @param:w1 -> half_type, {16, 8, 3, 3}, {72, 9, 3, 1}
@3 = convolution[padding={1, 1},stride={2, 2},dilation={1, 1},group=16](x,w0)
@4 = convolution[padding={1, 1},stride={1, 1},dilation={1, 1},group=2](@3,w1)
@5 = @return(@3,@4)
""",
    # squeeze-and-excitation's scaling and an activation between two channels-last convolutions: the
    # pointwise kernel writes NHWC, so the second convolution reads it with no layout copy
    "pointwise_between_convs_keeps_nhwc": """
x = @param:x -> half_type, {2, 8, 6, 6}, {288, 36, 6, 1}
w0 = @param:w0 -> half_type, {16, 8, 1, 1}, {8, 1, 1, 1}
s = @param:s -> half_type, {2, 16, 1, 1}, {16, 1, 1, 1}
w1 = @param:w1 -> half_type, {8, 16, 1, 1}, {16, 1, 1, 1}
@4 = convolution[padding={0, 0},stride={1, 1},dilation={1, 1},group=1](x,w0)
@5 = multibroadcast[out_lens={2, 16, 6, 6}](s)
@6 = sigmoid(@5)
@7 = mul(@4,@6)
@8 = tanh(@7)
@9 = convolution[padding={0, 0},stride={1, 1},dilation={1, 1},group=1](@8,w1)
@10 = @return(@9)
""",
    # transposed convolutions (ConvTranspose): stride, dilation, groups, asymmetric padding, 1-d
    "convolution_backwards": """
x = @param:x -> float_type, {2, 4, 3, 5}, {60, 15, 5, 1}
w = @param:w -> float_type, {4, 3, 3, 2}, {18, 6, 2, 1}
y = @param:y -> float_type, {1, 6, 7}, {42, 7, 1}
v = @param:v -> float_type, {6, 1, 4}, {4, 4, 1}
@4 = convolution_backwards[padding={1, 0, 0, 1},stride={2, 3},dilation={1, 2},padding_mode=0,group=2](x,w)
@5 = convolution_backwards[padding={2},stride={2},dilation={1},padding_mode=0,group=6](y,v)
@6 = @return(@4,@5)
""",
    # int8 convolutions into int32 (groups, stride, asymmetric padding)
    "quant_convolution": """
x = @param:x -> int8_type, {2, 4, 5, 6}, {120, 30, 6, 1}
w = @param:w -> int8_type, {6, 2, 3, 2}, {12, 6, 2, 1}
@2 = quant_convolution[padding={1, 0, 0, 1},stride={1, 2},dilation={1, 1},padding_mode=0,group=2](x,w)
@3 = @return(@2)
""",
    # int8 products into int32: batched, and with a transposed operand
    "quant_dot": """
a = @param:a -> int8_type, {2, 3, 5}, {15, 5, 1}
b = @param:b -> int8_type, {2, 5, 4}, {20, 4, 1}
c = @param:c -> int8_type, {4, 5}, {1, 4}
d = @param:d -> int8_type, {3, 4}, {4, 1}
@4 = quant_dot(a,b)
@5 = quant_dot(d,c)
@6 = @return(@4,@5)
""",
    # a channels-last convolution result whose consumer has no kernel (a bit cast into bool) and
    # runs on the host: it reads a standard copy (the float16 ShuffleNet failure:
    # `pass 'gpu_lowering' left invalid IR`)
    "channels_last_into_host_step": """
x = @param:x -> half_type, {1, 8, 6, 6}, {288, 36, 6, 1}
w = @param:w -> half_type, {8, 8, 3, 3}, {72, 9, 3, 1}
@2 = convolution[padding={1, 1},stride={1, 1},dilation={1, 1},group=1](x,w)
@3 = pooling[mode=max,padding={0, 0},stride={2, 2},lengths={2, 2}](@2)
@4 = convert[target_type=5](@3)
@5 = bit_cast[target_type=0](@4)
@6 = convert[target_type=1](@5)
@7 = @return(@6)
""",
}


@pytest.fixture(scope="module")
def lowered() -> dict[str, object]:
    return {name: compile_for_gpu(_program(text), arch="sm_90") for name, text in PROGRAMS.items()}


def _names(program) -> list[str]:
    return [i.op.defn.name for i in program.main]


def _symbols(program) -> list[str]:
    return [i.op["symbol_name"] for i in program.main if i.op.defn.name == "gpu::code_object"]


def test_depthwise_is_one_generated_kernel_with_its_epilogue(lowered: dict) -> None:
    program = lowered["depthwise_half_between_convs"]
    assert _names(program).count("gpu::convolution") == 2
    assert "add_relu_depthwise_kernel" in _symbols(program)
    # channels-last from the first convolution to the last: only the input, the result and the
    # depthwise weights (a parameter here; channels innermost, read as vectors) copied
    copies = [i for i in program.main if i.op.defn.name == "gpu::code_object"]
    copies = [i for i in copies if i.op["symbol_name"] in ("layout_kernel", "contiguous_kernel")]
    assert sorted((i.op["symbol_name"], i.args[0].name) for i in copies) == [
        ("contiguous_kernel", "gpu::convolution"),
        ("layout_kernel", "@param"),
        ("layout_kernel", "@param"),
    ]
    assert sorted(i.args[0].param_name for i in copies if i.args[0].is_param) == ["w1", "x"]
    depthwise = next(i for i in program.main if i.op.defn.name == "gpu::code_object" and "depthwise" in i.op.text)
    assert depthwise.shape.strides == (1152, 1, 192, 32)  # NHWC, as the 1x1 convolution wrote it
    for name in ("depthwise_float_multiplier", "depthwise_1d"):
        assert "convolution" not in _names(lowered[name]), name
        assert any("depthwise_kernel" in s for s in _symbols(lowered[name])), name


def test_grouped_convolutions_are_library_calls(lowered: dict) -> None:
    for name in ("grouped_half", "grouped_float_same_lower"):
        calls = [i for i in lowered[name].main if i.op.defn.name == "gpu::convolution"]
        assert calls and all(c.op["op"]["group"] > 1 for c in calls), name
        assert "convolution" not in _names(lowered[name])


def test_depthwise_through_the_library_when_asked() -> None:
    from mgxir.passes.manager import PassManager
    from mgxir.passes.registry import parse_pipeline
    from mgxir.targets.gpu.lowering import GPU_PIPELINE

    program = _program(PROGRAMS["depthwise_1d"])
    PassManager(parse_pipeline(GPU_PIPELINE.replace("gpu_lowering", "gpu_lowering{depthwise=library}"))).run(program)
    assert _names(program).count("gpu::convolution") == 1
    with pytest.raises(MgxError, match="depthwise is one of kernel, library"):
        PassManager(parse_pipeline("gpu_lowering{depthwise=other}")).run(_program(PROGRAMS["depthwise_1d"]))


def test_channels_last_inputs_need_no_copies(lowered: dict) -> None:
    program = lowered["channels_last_input_to_return"]
    assert sorted(_symbols(program)) == ["depthwise_kernel", "layout_kernel", "layout_kernel"]
    copies = [i for i in program.main if i.op.defn.name == "gpu::code_object" and "layout_kernel" in i.op.text]
    assert sorted(i.args[0].param_name for i in copies) == ["w0", "w1"]  # only weights (parameters here)
    assert _names(program).count("gpu::convolution") == 1


def test_pointwise_between_convolutions_stays_channels_last(lowered: dict) -> None:
    program = lowered["pointwise_between_convs_keeps_nhwc"]
    copies = [i for i in program.main if i.op.defn.name == "gpu::code_object" and "layout_kernel" in i.op.text]
    assert [i.args[0].param_name for i in copies] == ["x"]  # the input only
    kernels = [i for i in program.main if i.op.defn.name == "gpu::code_object"]
    scaling = next(i for i in kernels if i.args[0].name == "gpu::convolution")
    assert scaling.shape.strides == (576, 1, 96, 16)
    # walked in the NHWC output's memory order: 16-byte vectors of channels, not one strided half
    assert "mgx_vec<mgx_half, 8>" in scaling.op["code_object"].source


def test_host_step_reads_a_standard_copy_of_a_channels_last_result(lowered: dict) -> None:
    program = lowered["channels_last_into_host_step"]  # compile_for_gpu verified it after each pass
    host = [i for i in program.main if i.op.defn.name == "pointwise"]
    assert len(host) == 1
    assert all(a.shape.standard for a in host[0].args)
    assert "contiguous_kernel" in _symbols(program)


def test_every_depthwise_kernel_compiles(lowered: dict) -> None:
    for program in lowered.values():
        for ins in program.main:
            if ins.op.defn.name == "gpu::code_object":
                assert ins.op["code_object"].binary.startswith(b"\x7fELF")


@gpu
@needs_gpu
@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("depthwise", ["kernel", "library"])
def test_convolutions_match_reference(name: str, depthwise: str) -> None:
    from mgxir.drivers.run import flatten_outputs, rms_error
    from mgxir.passes.manager import PassManager
    from mgxir.passes.registry import parse_pipeline
    from mgxir.targets.gpu.lowering import GPU_PIPELINE
    from mgxir.targets.gpu.runtime import GpuExecutable

    program = _program(PROGRAMS[name])
    params = _inputs(program)
    lowered = _program(PROGRAMS[name])
    pipeline = GPU_PIPELINE.replace("gpu_lowering", f"gpu_lowering{{depthwise={depthwise}}}")
    PassManager(parse_pipeline(pipeline)).run(lowered)
    got = flatten_outputs(GpuExecutable(lowered).run(params))
    with np.errstate(all="ignore"):
        want = flatten_outputs(Interpreter(program).run(params))
    for key in want:
        limit = 1e-2 if want[key].dtype == np.float16 else 1e-4
        assert rms_error(np.asarray(got[key], np.float64), np.asarray(want[key], np.float64)) <= limit, key


def test_perf_batch_size_is_the_first_inputs_leading_dimension() -> None:
    from mgxir.targets.gpu.runtime import batch_size

    assert batch_size(_program(PROGRAMS["grouped_half"])) == 2
    assert batch_size(_program("s = @param:s -> float_type\nx = @param:x -> float_type, {8, 3}\n@2 = @return(x)")) == 8
    assert batch_size(_program("s = @param:s -> float_type\n@1 = @return(s)")) == 1


@pytest.mark.skipif(COMPILER is None, reason="no C++ compiler to emulate kernels with")
@pytest.mark.parametrize(
    "name", ["depthwise_float_multiplier", "depthwise_1d", "convolution_backwards", "quant_convolution", "quant_dot"]
)
def test_generated_convolutions_emulated_on_the_cpu_match_reference(lowered: dict, name: str) -> None:
    """The generated depthwise, transposed and int8 convolution and int8 product kernels (programs
    with no library call) run on the CPU (gpu_host.py) against the reference."""
    program = _program(PROGRAMS[name])
    params = _inputs(program, seed=3)
    got = run_emulated(lowered[name], params)
    want = Interpreter(program).run(params)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), atol=1e-5)


@pytest.mark.skipif(COMPILER is None, reason="no C++ compiler to emulate kernels with")
def test_vectorised_depthwise_emulated_on_the_cpu_matches_reference() -> None:
    """A channels-last float16 depthwise kernel with its epilogue (8 channels a thread, weights
    read as vectors), with the channels-last input as a parameter (no library call around it)."""
    text = """
x = @param:x -> half_type, {2, 16, 7, 9}, {1008, 1, 144, 16}
w = @param:w -> half_type, {16, 1, 3, 5}, {15, 15, 5, 1}
b = @param:b -> half_type, {16}, {1}
@3 = convolution[padding={1, 2},stride={2, 1},dilation={1, 1},group=16](x,w)
@4 = broadcast[axis=1,out_lens={2, 16, 4, 9}](b)
@5 = add(@3,@4)
@6 = relu(@5)
@7 = @return(@6)
"""
    program = _program(text)
    lowered_program = compile_for_gpu(_program(text), arch="sm_90")
    source = next(i.op["code_object"].source for i in lowered_program.main if "depthwise" in i.op.text)
    assert "const mgx_vec<mgx_half, 8> wv" in source
    params = _inputs(program, seed=4)
    got = run_emulated(lowered_program, params)
    want = Interpreter(program).run(params)
    np.testing.assert_allclose(np.asarray(got[0], np.float64), np.asarray(want[0], np.float64), atol=2e-2)


@pytest.mark.skipif(COMPILER is None, reason="no C++ compiler to emulate kernels with")
def test_channels_last_pointwise_emulated_on_the_cpu_matches_reference() -> None:
    """A pointwise module on a channels-last input, read by a kernel (pooling) that takes any
    layout: it writes NHWC walking the output's memory order, with a broadcast operand."""
    text = """
x = @param:x -> half_type, {2, 16, 6, 4}, {384, 1, 64, 16}
s = @param:s -> half_type, {2, 16, 1, 1}, {16, 1, 1, 1}
@2 = multibroadcast[out_lens={2, 16, 6, 4}](s)
@3 = mul(x,@2)
@4 = tanh(@3)
@5 = pooling[mode=max,padding={0, 0},stride={2, 2},lengths={2, 2}](@4)
@6 = @return(@5)
"""
    program = _program(text)
    lowered_program = compile_for_gpu(_program(text), arch="sm_90")
    scaling = next(i for i in lowered_program.main if "mul_tanh_kernel" in i.op.text)
    assert scaling.shape.strides == (384, 1, 64, 16)
    assert "mgx_vec<mgx_half, 8>" in scaling.op["code_object"].source
    params = _inputs(program, seed=5)
    got = run_emulated(lowered_program, params)
    want = Interpreter(program).run(params)
    np.testing.assert_allclose(np.asarray(got[0], np.float64), np.asarray(want[0], np.float64), atol=2e-3)
