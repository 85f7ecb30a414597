"""The GPU target: lowering, kernel generation and NVRTC compilation run everywhere (NVRTC needs no
GPU); running on a GPU against the reference interpreter is marked `gpu` and skipped without one."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mgxir.diagnostics import DiagnosticSink
from mgxir.interp import Interpreter
from mgxir.targets.gpu import compiler
from mgxir.targets.gpu.compiler import compile_source, device_arch
from mgxir.targets.gpu.driver import compile_for_gpu
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.verifier import verify

pytest.importorskip("cuda.core")

HAS_GPU = device_arch() is not None
gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no GPU")


def _attention(dtype: str) -> str:
    """BERT's attention over q, k, v sliced from one (batch 2, sequence 8, 3, 4 heads, 16) qkv
    product: softmax(q k^T / 4) v, heads moved back beside each other."""
    return f"""
qkv = @param:qkv -> {dtype}, {{2, 8, 3, 4, 16}}, {{1536, 192, 64, 16, 1}}
@1 = @literal{{0.25}} -> {dtype}, {{1}}, {{0}}
@2 = transpose[permutation={{2, 0, 3, 1, 4}}](qkv)
@3 = slice[axes={{0}},starts={{0}},ends={{1}}](@2)
@4 = slice[axes={{0}},starts={{1}},ends={{2}}](@2)
@5 = slice[axes={{0}},starts={{2}},ends={{3}}](@2)
@6 = squeeze[axes={{0}}](@3)
@7 = squeeze[axes={{0}}](@4)
@8 = squeeze[axes={{0}}](@5)
@9 = transpose[permutation={{0, 1, 3, 2}}](@7)
@10 = dot(@6,@9)
@11 = multibroadcast[out_lens={{2, 4, 8, 8}}](@1)
@12 = mul(@10,@11)
@13 = softmax[axis=3](@12)
@14 = dot(@13,@8)
@15 = transpose[permutation={{0, 2, 1, 3}}](@14)
@16 = reshape[dims={{2, 8, 64}}](@15)
@17 = @return(@16)
"""


# name -> program text: each exercises one kind of kernel or library call
PROGRAMS: dict[str, str] = {
    "pointwise_broadcast": """
x = @param:x -> float_type, {8, 1000}, {1000, 1}
b = @param:b -> float_type, {1000}, {1}
@2 = broadcast[axis=1,out_lens={8, 1000}](b)
@3 = add(x,@2)
@4 = tanh(@3)
@5 = mul(@4,x)
@6 = @return(@5)
""",
    "pointwise_transposed_input": """
x = @param:x -> float_type, {64, 48}, {48, 1}
y = @param:y -> float_type, {48, 64}, {64, 1}
@2 = transpose[permutation={1, 0}](y)
@3 = sub(x,@2)
@4 = exp(@3)
@5 = @return(@4)
""",
    "pointwise_half_scalar": """
@0 = @literal{0.5} -> half_type, {1}, {0}
x = @param:x -> half_type, {4, 130}, {130, 1}
@2 = multibroadcast[out_lens={4, 130}](@0)
@3 = mul(x,@2)
@4 = sigmoid(@3)
@5 = @return(@4)
""",
    "pointwise_int": """
x = @param:x -> int32_type, {5, 7}, {7, 1}
y = @param:y -> int32_type, {5, 7}, {7, 1}
@2 = mul(x,y)
@3 = sub(@2,x)
@4 = @return(@3)
""",
    "softmax": """
x = @param:x -> float_type, {16, 300}, {300, 1}
@1 = softmax[axis=1](x)
@2 = @return(@1)
""",
    "layernorm_like": """
x = @param:x -> float_type, {6, 768}, {768, 1}
@1 = reduce_mean[axes={1}](x)
@2 = multibroadcast[out_lens={6, 768}](@1)
@3 = sub(x,@2)
@4 = mul(@3,@3)
@5 = reduce_mean[axes={1}](@4)
@6 = multibroadcast[out_lens={6, 768}](@5)
@7 = div(@3,@6)
@8 = @return(@7)
""",
    "layernorm_half_gamma": """
x = @param:x -> half_type, {2, 3, 768}, {2304, 768, 1}
r = @param:r -> half_type, {2, 3, 768}, {2304, 768, 1}
g = @param:g -> half_type, {768}, {1}
@3 = add(x,r)
@4 = convert[target_type=2](@3)
@5 = reduce_mean[axes={2}](@4)
@6 = multibroadcast[out_lens={2, 3, 768}](@5)
@7 = sub(@4,@6)
@8 = mul(@7,@7)
@9 = reduce_mean[axes={2}](@8)
@10 = multibroadcast[out_lens={2, 3, 768}](@9)
@11 = sqrt(@10)
@12 = div(@7,@11)
@13 = convert[target_type=1](@12)
@14 = broadcast[axis=2,out_lens={2, 3, 768}](g)
@15 = mul(@13,@14)
@16 = @return(@15)
""",
    "softmax_half_rows_of_128": """
x = @param:x -> half_type, {2, 12, 9, 128}, {13824, 1152, 128, 1}
@1 = softmax[axis=3](x)
@2 = @return(@1)
""",
    "reduce_long_row_block_kernel": """
x = @param:x -> float_type, {3, 5000}, {5000, 1}
@1 = reduce_sum[axes={1}](x)
@2 = @return(@1)
""",
    "reduce_middle_axis": """
x = @param:x -> float_type, {3, 50, 7}, {350, 7, 1}
@1 = reduce_max[axes={1}](x)
@2 = @return(@1)
""",
    "gemm_bias_relu": """
x = @param:x -> float_type, {32, 64}, {64, 1}
w = @param:w -> float_type, {64, 48}, {48, 1}
b = @param:b -> float_type, {48}, {1}
@3 = dot(x,w)
@4 = broadcast[axis=1,out_lens={32, 48}](b)
@5 = add(@3,@4)
@6 = relu(@5)
@7 = @return(@6)
""",
    "gemm_batched_transposed": """
a = @param:a -> float_type, {3, 16, 24}, {384, 24, 1}
b = @param:b -> float_type, {3, 40, 24}, {960, 24, 1}
@2 = transpose[permutation={0, 2, 1}](b)
@3 = dot(a,@2)
@4 = @return(@3)
""",
    # K long against the output (64 x 192): cuBLASLt accepts split-K variants of its algorithms
    "gemm_long_k": """
a = @param:a -> float_type, {64, 1536}, {1536, 1}
b = @param:b -> float_type, {1536, 192}, {192, 1}
@2 = dot(a,b)
@3 = @return(@2)
""",
    "gemm_half": """
a = @param:a -> half_type, {64, 32}, {32, 1}
b = @param:b -> half_type, {32, 16}, {16, 1}
@2 = dot(a,b)
@3 = @return(@2)
""",
    "concat_gather_pad": """
x = @param:x -> float_type, {4, 5}, {5, 1}
y = @param:y -> float_type, {4, 3}, {3, 1}
i = @param:i -> int64_type, {6}, {1}
@3 = concat[axis=1](x,y)
@4 = gather[axis=1](@3,i)
@5 = pad[pads={1, 0, 0, 2},value=-1](@4)
@6 = @return(@5)
""",
    "pooling": """
x = @param:x -> float_type, {2, 3, 9, 9}, {243, 81, 9, 1}
@1 = pooling[mode=max,padding={1, 1},stride={2, 2},lengths={3, 3}](x)
@2 = pooling[mode=average,padding={1, 1},stride={1, 1},lengths={3, 3}](x)
@3 = @return(@1,@2)
""",
    "conv_bias_residual_relu": """
x = @param:x -> float_type, {2, 8, 10, 10}, {800, 100, 10, 1}
w = @param:w -> float_type, {16, 8, 3, 3}, {72, 9, 3, 1}
b = @param:b -> float_type, {16}, {1}
r = @param:r -> float_type, {2, 16, 10, 10}, {1600, 100, 10, 1}
@4 = convolution[padding={1, 1},stride={1, 1},dilation={1, 1},group=1](x,w)
@5 = broadcast[axis=1,out_lens={2, 16, 10, 10}](b)
@6 = add(@4,@5)
@7 = add(@6,r)
@8 = relu(@7)
@9 = @return(@8)
""",
    "conv_strided_half": """
x = @param:x -> half_type, {1, 16, 15, 15}, {3600, 225, 15, 1}
w = @param:w -> half_type, {32, 16, 1, 1}, {16, 1, 1, 1}
@2 = convolution[padding={0, 0},stride={2, 2},dilation={1, 1},group=1](x,w)
@3 = @return(@2)
""",
    # ResNet's shape after MIGraphX's find_add_convs: a convolution's relu result pooled, and a step
    # of it concatenated with the next convolution's result as one convolution's input; all of it
    # channels-last, no copy of any computed value
    "conv_pool_step_concat_conv": """
x = @param:x -> float_type, {2, 8, 10, 10}, {800, 100, 10, 1}
w0 = @param:w0 -> float_type, {8, 8, 3, 3}, {72, 9, 3, 1}
w1 = @param:w1 -> float_type, {16, 8, 1, 1}, {8, 1, 1, 1}
w2 = @param:w2 -> float_type, {12, 24, 1, 1}, {24, 1, 1, 1}
@4 = convolution[padding={1, 1},stride={1, 1},dilation={1, 1},group=1](x,w0)
@5 = relu(@4)
@6 = pooling[mode=max,padding={1, 1},stride={2, 2},lengths={3, 3}](@5)
@7 = convolution[padding={0, 0},stride={1, 1},dilation={1, 1},group=1](@6,w1)
@8 = step[axes={2, 3},steps={2, 2}](@5)
@9 = concat[axis=1](@7,@8)
@10 = convolution[padding={0, 0},stride={1, 1},dilation={1, 1},group=1](@9,w2)
@11 = @return(@10)
""",
    "conv_then_exp": """
x = @param:x -> float_type, {1, 4, 9, 9}, {324, 81, 9, 1}
w = @param:w -> float_type, {8, 4, 3, 3}, {36, 9, 3, 1}
@2 = convolution[padding={1, 1, 0, 0},stride={1, 1},dilation={2, 2},group=1](x,w)
@3 = exp(@2)
@4 = @return(@3)
""",
    # a reshape the runtime aliases must stay a view for memory_coloring (as reshape_lazy): the
    # copy of one slice must not be planned over the product the other slice still reads
    "qkv_split_reshape_view": """
x = @param:x -> float_type, {8, 16}, {16, 1}
w = @param:w -> float_type, {16, 48}, {48, 1}
@2 = dot(x,w)
@3 = reshape[dims={8, 3, 16}](@2)
@4 = transpose[permutation={1, 0, 2}](@3)
@5 = slice[axes={0},starts={0},ends={1}](@4)
@6 = slice[axes={0},starts={1},ends={2}](@4)
@7 = contiguous(@5)
@8 = exp(@7)
@9 = contiguous(@6)
@10 = add(@9,@8)
@11 = @return(@10)
""",
    # attention's q @ k^T from one qkv product: k^T is read down its columns, so its copy is a
    # transposed (layout) one the gemm reads transposed
    "attention_scores_from_qkv": """
qkv = @param:qkv -> half_type, {2, 8, 3, 4, 16}, {1536, 192, 64, 16, 1}
@1 = transpose[permutation={2, 0, 3, 1, 4}](qkv)
@2 = slice[axes={0},starts={0},ends={1}](@1)
@3 = slice[axes={0},starts={1},ends={2}](@1)
@4 = squeeze[axes={0}](@2)
@5 = squeeze[axes={0}](@3)
@6 = transpose[permutation={0, 1, 3, 2}](@5)
@7 = dot(@4,@6)
@8 = @return(@7)
""",
    # BERT's attention: q, k, v views of one qkv product, scaled softmax: one cuDNN attention that
    # reads the views where they are and writes heads interleaved (the reshape after it a view)
    "attention_half": _attention("half_type"),
    # cuDNN attends in half and bf16 only: float32 stays two gemms around the softmax kernel
    "attention_float_unfused": _attention("float_type"),
    "transpose_copy_and_host_step": """
x = @param:x -> float_type, {4, 6}, {6, 1}
@1 = transpose[permutation={1, 0}](x)
@2 = contiguous(@1)
@3 = nonzero(@2)
@4 = @return(@2,@3)
""",
}


def _program(text: str):
    program = parse_program('module: "main"\n' + text.strip() + "\n")
    verify(program, DiagnosticSink())
    return program


def _inputs(program, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = {}
    for p in program.main.parameters():
        shape = p.shape
        if shape.dtype.is_integral:
            bound = min(shape.lens) if p.param_name == "i" else 5
            values[p.param_name] = rng.integers(-2 if p.param_name == "i" else -bound, bound, shape.lens).astype(
                shape.dtype.numpy
            )
        else:
            values[p.param_name] = rng.uniform(-1, 1, shape.lens).astype(shape.dtype.numpy)
    return values


def _assert_matches_reference(
    program, params: dict[str, np.ndarray], outputs: list, tolerance: float, half_tolerance: float | None = None
) -> None:
    """A run's `outputs` against the reference interpreter's, each of the same shape and within
    `tolerance` (`half_tolerance` for a float16 output, where given) by MIGraphX's rms rule,
    computed in float64."""
    from mgxir.drivers.run import flatten_outputs, rms_error

    got = flatten_outputs(outputs)
    with np.errstate(all="ignore"):
        want = flatten_outputs(Interpreter(program).run(params))
    assert got.keys() == want.keys()
    for key in want:
        assert np.shape(got[key]) == np.shape(want[key]), key
        limit = half_tolerance if half_tolerance is not None and want[key].dtype == np.float16 else tolerance
        assert rms_error(np.asarray(got[key], np.float64), np.asarray(want[key], np.float64)) <= limit, key


@pytest.fixture(scope="module")
def lowered() -> dict[str, object]:
    return {name: compile_for_gpu(_program(text), arch="sm_90") for name, text in PROGRAMS.items()}


def test_every_kernel_compiles_for_sm90(lowered: dict) -> None:
    kernels = 0
    for program in lowered.values():
        for ins in program.main:
            if ins.op.defn.name == "gpu::code_object":
                code = ins.op["code_object"]
                assert code.size > 1000 and code.binary.startswith(b"\x7fELF")
                ptx = compile_source(code.source, ins.op["symbol_name"], "sm_90", "ptx")
                assert b".entry " + ins.op["symbol_name"].encode() in ptx
                kernels += 1
    assert kernels >= 12


def test_lowered_shapes(lowered: dict) -> None:
    names = {n: [i.op.defn.name for i in p.main] for n, p in lowered.items()}
    assert names["gemm_bias_relu"].count("gpu::gemm") == 1
    gemm = next(i for i in lowered["gemm_bias_relu"].main if i.op.defn.name == "gpu::gemm")
    assert gemm.op["epilogue"] == "relu_bias"
    assert "gpu::code_object" not in names["gemm_bias_relu"]
    assert names["softmax"].count("gpu::code_object") == 1  # one fused kernel
    assert names["transpose_copy_and_host_step"].count("nonzero") == 1  # no kernel: left for the host
    # one scratch buffer, every lowered result a load from it
    for program in lowered.values():
        allocations = [i for i in program.main if i.op.defn.name == "allocate"]
        assert len(allocations) <= 1


def _kernel_sources(program) -> list[str]:
    return [i.op["code_object"].source for i in program.main if i.op.defn.name == "gpu::code_object"]


@pytest.mark.parametrize(
    ("name", "rows_per_warp", "vector"),
    [
        ("layernorm_half_gamma", True, "mgx_vec<mgx_half, 8>"),  # 768 = 3 x 32 lanes x 8 halves
        ("softmax_half_rows_of_128", True, "mgx_vec<mgx_half, 4>"),  # every lane busy: 32 x 4
        ("softmax", True, "mgx_vec<float, 4>"),  # 300: a ragged last vector of lanes
        ("reduce_middle_axis", True, None),  # the row is strided: scalar loads
        ("reduce_long_row_block_kernel", False, None),  # 5000 > 32 per lane: one block per row
    ],
)
def test_reduction_kernel_shape(lowered: dict, name: str, rows_per_warp: bool, vector: str | None) -> None:
    (source,) = _kernel_sources(lowered[name])
    assert ("MGX_SHFL_XOR(acc" in source) == rows_per_warp
    assert ("mgx_block_reduce(acc" in source) != rows_per_warp
    if vector is not None:
        assert vector in source
    elif rows_per_warp:
        assert "mgx_vec<" not in source.split("extern")[1]


def test_transposed_gemm_operand_is_copied_transposed(lowered: dict) -> None:
    program = lowered["attention_scores_from_qkv"]
    copies = {i.op["symbol_name"]: i for i in program.main if i.op.defn.name == "gpu::code_object"}
    assert set(copies) == {"contiguous_kernel", "layout_kernel"}
    k_copy = copies["layout_kernel"]
    assert k_copy.shape.strides == (512, 128, 1, 16)  # packed, transposed
    assert "mgx_vec<mgx_half, 8>" in k_copy.op["code_object"].source  # walked in its memory order
    gemm = next(i for i in program.main if i.op.defn.name == "gpu::gemm")
    assert gemm.args[1] is k_copy


def test_attention_is_one_library_call(lowered: dict) -> None:
    program = lowered["attention_half"]
    names = [i.op.defn.name for i in program.main]
    assert names.count("gpu::attention") == 1 and "gpu::gemm" not in names and "gpu::code_object" not in names
    attention = next(i for i in program.main if i.op.defn.name == "gpu::attention")
    assert attention.op["scale"] == 0.25
    assert attention.shape.strides == (512, 16, 64, 1)  # (batch, seq, heads, d) in memory
    assert "reshape_lazy" in names
    unfused = [i.op.defn.name for i in lowered["attention_float_unfused"].main]
    assert unfused.count("gpu::gemm") == 2 and "gpu::attention" not in unfused


def test_softmax_scale_is_read_from_the_module() -> None:
    from mgxir.passes.manager import PassManager
    from mgxir.passes.registry import parse_pipeline
    from mgxir.targets.gpu.lowering import GPU_PIPELINE, find_attention, softmax_scale

    program = _program(PROGRAMS["attention_half"])
    PassManager(parse_pipeline(GPU_PIPELINE.split(",gpu_lowering")[0])).run(program, DiagnosticSink())
    dots = [i for i in program.main if i.op.defn.name == "dot"]
    softmax, second = find_attention(dots[0])
    assert second is dots[1] and softmax_scale(softmax) == 0.25
    assert find_attention(dots[1]) is None


COPY_KERNELS = ("layout_kernel", "contiguous_kernel")


def test_channels_last_results_are_never_copied(lowered: dict) -> None:
    """Pooling and concat keep their input's channels-last layout and the step is a view of the
    NHWC convolution result: the only copies are of parameters (layout copies for the library) and
    the returned result's (standard)."""
    main = compile_for_gpu(_program(PROGRAMS["conv_pool_step_concat_conv"]), arch="sm_90", fp32_math="tf32").main
    nhwc = (1, 3)  # channels innermost, then width
    for symbol in ("pooling_kernel", "concat_kernel"):
        result = next(i for i in main if i.op.defn.name == "gpu::code_object" and i.op["symbol_name"] == symbol)
        assert [result.shape.strides[d] for d in nhwc] == [1, result.shape.lens[1]], symbol
    step = next(i for i in main if i.op.defn.name == "step")
    assert step.args[0].op.defn.name == "gpu::convolution" and step.shape.strides[1] == 1
    copies = [i for i in main if i.op.defn.name == "gpu::code_object" and i.op["symbol_name"] in COPY_KERNELS]
    returned = main.last.args[0]  # the return
    computed = [c for c in copies if not c.args[0].is_param and c is not returned]
    assert len(copies) == 3 and not computed, [c.args[0].op.defn.name for c in computed]
    convolutions = [i for i in main if i.op.defn.name == "gpu::convolution"]
    assert convolutions[-1].args[0].op["symbol_name"] == "concat_kernel"


def test_only_tensor_core_convolutions_run_channels_last(lowered: dict) -> None:
    """float32 convolutions multiplied as float32 stay channels-first (cuDNN's float32 engines for
    NHWC graphs are slow): no layout copy at all; half ones and TF32 ones run NHWC."""
    ieee = lowered["conv_pool_step_concat_conv"].main
    assert all(i.shape.standard for i in ieee if i.op.defn.name == "gpu::convolution")
    assert not [i for i in ieee if i.op.defn.name == "gpu::code_object" and i.op["symbol_name"] == "layout_kernel"]
    for name, math in (("conv_strided_half", "ieee"), ("conv_then_exp", "tf32")):
        main = compile_for_gpu(_program(PROGRAMS[name]), arch="sm_90", fp32_math=math).main
        (conv,) = [i for i in main if i.op.defn.name == "gpu::convolution"]
        assert conv.shape.strides[1] == 1, math


def test_indexed_kernels_walk_the_output_in_memory_order() -> None:
    """A channels-last output's threads step through channels first (coalesced writes)."""
    from mgxir.ir.dtype import DType
    from mgxir.targets.gpu.kernels import Tensor, concat_kernel

    nhwc = Tensor(DType.half, (2, 6, 4, 5), (120, 1, 30, 6))
    source = concat_kernel([Tensor(DType.half, (2, 3, 4, 5), (60, 1, 15, 3))] * 2, 1, nhwc).source
    splits = [line.split("=")[0].split()[-1] for line in source.splitlines() if "rest %" in line]
    assert splits == ["c1", "c3", "c2"]
    assert "unsigned rest" in source  # 32-bit divisions below 2^32 elements, 64-bit above
    huge = Tensor(DType.half, (2, 1 << 31), (1 << 31, 1))
    assert "long long rest" in concat_kernel([huge], 0, huge).source


@pytest.mark.parametrize(("channels", "width"), [((16, 32), 8), ((16, 12), 4), ((16, 3), 1)])
def test_channels_last_concat_moves_vectors(channels: tuple[int, int], width: int) -> None:
    """A concat along the channels of channels-last half tensors moves 16-byte vectors where every
    channel count allows, narrower ones where one needs them, elements otherwise."""
    from mgxir.ir.dtype import DType
    from mgxir.ir.shape import Shape
    from mgxir.targets.gpu.kernels import Tensor, concat_kernel

    def nhwc(c: int) -> Tensor:
        return Tensor.of(Shape.from_permutation(DType.half, (2, c, 4, 5), (0, 2, 3, 1)))

    out = nhwc(sum(channels))
    kernel = concat_kernel([nhwc(c) for c in channels], 1, out)
    assert kernel.global_size == -(-out.elements // width // 256) * 256
    assert (f"mgx_vec<mgx_half, {width}>" in kernel.source) == (width > 1)
    assert compile_source(kernel.source, kernel.symbol, "sm_90", "ptx")


def test_fp32_math_marks_float_library_calls() -> None:
    """float32 gemms and convolutions multiply in float32 unless fp32_math=tf32 marks them (half
    ones never); the mark survives printing and reading back."""
    program = _program(
        PROGRAMS["conv_bias_residual_relu"].replace("@9 = @return(@8)", "")
        + """
a = @param:a -> half_type, {64, 32}, {32, 1}
h = @param:h -> half_type, {32, 16}, {16, 1}
@12 = dot(a,h)
@13 = @return(@8,@12)
"""
    )
    for math, marked in (("ieee", set()), ("tf32", {"gpu::convolution"})):
        lowered = compile_for_gpu(program, arch="sm_90", fp32_math=math)
        calls = [i for i in lowered.main if i.op.defn.name in ("gpu::convolution", "gpu::gemm")]
        assert {i.op.defn.name for i in calls} == {"gpu::convolution", "gpu::gemm"}
        assert {i.op.defn.name for i in calls if i.op["tf32"]} == marked, math
        text = print_program(lowered)
        assert ("tf32=1" in text) == bool(marked) and "tf32=0" not in text
        assert print_program(parse_program(text)) == text
    tf32_gemm = compile_for_gpu(_program(PROGRAMS["gemm_bias_relu"]), arch="sm_90", fp32_math="tf32")
    assert "epilogue=relu_bias,tf32=1]" in print_program(tf32_gemm)


def test_fp32_math_is_ieee_or_tf32() -> None:
    with pytest.raises(Exception, match="fp32_math is one of ieee, tf32"):
        compile_for_gpu(_program(PROGRAMS["gemm_bias_relu"]), arch="sm_90", fp32_math="fast")


def test_lowered_program_prints_and_reads_back(lowered: dict) -> None:
    for program in lowered.values():
        text = print_program(program)
        assert "gpu::" in text
        again = parse_program(text)
        assert print_program(again) == text
        assert "load[offset=" in text


def test_aliased_reshape_becomes_a_view(lowered: dict) -> None:
    names = [i.op.defn.name for i in lowered["qkv_split_reshape_view"].main]
    assert "reshape_lazy" in names and "reshape" not in names


def test_kernel_cache_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(compiler.CACHE_ENV, str(tmp_path))
    compiler._memory.clear()
    source = PROGRAMS["pointwise_int"]
    before = dict(compiler.statistics)
    compile_for_gpu(_program(source), arch="sm_90")
    assert compiler.statistics["compiled"] > before["compiled"]
    assert list(tmp_path.glob("*.cubin"))
    compiler._memory.clear()
    middle = dict(compiler.statistics)
    compile_for_gpu(_program(source), arch="sm_90")
    assert compiler.statistics["compiled"] == middle["compiled"]
    assert compiler.statistics["disk hits"] > middle["disk hits"]


@pytest.mark.skipif(HAS_GPU, reason="a GPU is present")
def test_no_gpu_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "p.mgx"
    path.write_text('module: "main"\n' + PROGRAMS["pointwise_int"].strip() + "\n")
    run = subprocess.run(
        [sys.executable, "-m", "mgxir.tools.mgx_run", str(path), "--target=gpu", "--fill=random"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("error: no usable NVIDIA GPU")


@gpu
@needs_gpu
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gpu_matches_reference(name: str) -> None:
    from mgxir.drivers.run import flatten_outputs
    from mgxir.targets.gpu.driver import load_on_gpu

    program = _program(PROGRAMS[name])
    params = _inputs(program)
    executable = load_on_gpu(program, DiagnosticSink())
    outputs = executable.run(params)
    again = flatten_outputs(executable.run(params))  # a second replay of the same graphs
    # float32 convolutions and gemms multiply in float32 (no TF32 engine) unless --fp32-math=tf32
    _assert_matches_reference(program, params, outputs, 1e-4, half_tolerance=1e-2)
    for key, got in flatten_outputs(outputs).items():
        assert np.array_equal(got, again[key])


@gpu
@needs_gpu
@pytest.mark.parametrize("name", ["conv_bias_residual_relu", "conv_pool_step_concat_conv", "gemm_bias_relu"])
def test_gpu_tf32_matches_reference(name: str) -> None:
    """--fp32-math=tf32: float32 convolutions and gemms within TF32's error (10-bit mantissas)."""
    from mgxir.targets.gpu.driver import load_on_gpu

    program = _program(PROGRAMS[name])
    params = _inputs(program)
    executable = load_on_gpu(program, DiagnosticSink(), fp32_math="tf32")
    assert "tf32=1" in print_program(executable.program)
    _assert_matches_reference(program, params, executable.run(params), 2e-3)


@gpu
@needs_gpu
def test_exhaustive_tune_records_winners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mgxir.drivers.run import rms_error
    from mgxir.targets.gpu.driver import load_on_gpu

    monkeypatch.setenv(compiler.CACHE_ENV, str(tmp_path / "kernels"))
    text = PROGRAMS["conv_bias_residual_relu"].replace("@9 = @return(@8)", "@9 = exp(r)\n@10 = @return(@8,@9)")
    program = _program(text)
    params = _inputs(program)
    executable = load_on_gpu(program, DiagnosticSink(), exhaustive_tune=True)
    printed = print_program(executable.program)
    assert "solution_id=-1" not in printed  # the convolution's plan was chosen by timing
    assert (tmp_path / "problems.json").exists()
    with np.errstate(all="ignore"):
        want = Interpreter(program).run(params)
    for got, expected in zip(executable.run(params), want):
        assert rms_error(np.asarray(got), expected) <= 2e-3
    again = load_on_gpu(program, DiagnosticSink(), exhaustive_tune=True)  # winners from the problem cache
    assert print_program(again.program) == printed


@gpu
@needs_gpu
def test_every_gemm_candidate_computes_the_product() -> None:
    """--exhaustive-tune's gemm candidates (cuBLASLt's offered algorithms and their split-K
    variants) each compute the product, into an output poisoned with NaN before each."""
    from mgxir.drivers.run import rms_error
    from mgxir.targets.gpu.driver import load_on_gpu

    program = _program(PROGRAMS["gemm_long_k"])
    params = _inputs(program)
    executable = load_on_gpu(program, DiagnosticSink())
    executable.run(params)  # the parameters uploaded
    ((gemm, plan),) = executable.gemm_plans.items()
    assert len(plan.algorithms) > plan.offered  # split-K variants were accepted
    want = params["a"].astype(np.float64) @ params["b"].astype(np.float64)
    poison = np.full(gemm.shape.lens, np.nan, np.float32)
    for choice in range(len(plan.algorithms)):
        plan.choice = choice
        executable._upload(executable.pointer[gemm], poison, gemm.shape)
        executable.gemm_call(gemm)()
        got = executable._download(executable.pointer[gemm], gemm.shape)
        assert rms_error(got, want) <= 1e-5, f"candidate {choice}"


@gpu
@needs_gpu
def test_mgx_run_target_gpu_verify_and_perf(tmp_path: Path) -> None:
    path = tmp_path / "p.mgx"
    path.write_text('module: "main"\n' + PROGRAMS["gemm_bias_relu"].strip() + "\n")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mgxir.tools.mgx_run",
            str(path),
            "--target=gpu",
            "--fill=random",
            "--verify",
            "--perf",
            "-q",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "out0: ok" in run.stdout
    assert "gpu::gemm" in run.stdout and "Summary:" in run.stdout and "Rate:" in run.stdout


# what hiprtc's built-in HIP headers give a kernel, declared for plain clang (clang's own HIP wrapper
# gives the math functions)
HIP_SHIM = """
struct mgx_hip_dim { unsigned x; };
#define threadIdx (mgx_hip_dim{__builtin_amdgcn_workitem_id_x()})
#define blockIdx (mgx_hip_dim{__builtin_amdgcn_workgroup_id_x()})
#define blockDim (mgx_hip_dim{__builtin_amdgcn_workgroup_size_x()})
#define __launch_bounds__(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
__device__ void __syncthreads();
template <class T> __device__ T __shfl_xor(T v, int lane);
__device__ float __uint_as_float(unsigned);
__device__ unsigned __float_as_uint(float);
"""
CLANG = next((c for c in ("clang++", "clang++-19", "clang++-18", "clang++-17", "clang++-14") if shutil.which(c)), None)


@pytest.mark.skipif(CLANG is None, reason="no clang with the AMDGPU target")
def test_kernel_sources_compile_as_hip_for_gfx90a(lowered: dict, tmp_path: Path) -> None:
    """The HIP flavour of every kernel source (as hiprtc would see it) passes clang's checks for an
    MI200 (gfx90a); no ROCm is needed, so nothing runs."""
    shim = tmp_path / "hiprtc_shim.h"
    shim.write_text(HIP_SHIM)
    sources = {
        ins.op["symbol_name"]: ins.op["code_object"].source
        for program in lowered.values()
        for ins in program.main
        if ins.op.defn.name == "gpu::code_object"
    }
    for symbol, source in sources.items():
        path = tmp_path / f"{symbol}.hip"
        path.write_text(source)
        command = [CLANG, "-x", "hip", "--cuda-device-only", "--offload-arch=gfx90a", "-nogpulib", "-nogpuinc"]
        command += ["-D__HIPCC_RTC__", "-include", "__clang_hip_runtime_wrapper.h", "-include", str(shim)]
        run = subprocess.run([*command, "-fsyntax-only", "-std=c++17", str(path)], capture_output=True, text=True)
        assert run.returncode == 0, f"{symbol}: {run.stderr[:2000]}"


# -- platforms: CUDA and HIP behind one interface -------------------------------------------------


def test_device_names_a_platform() -> None:
    from mgxir.diagnostics import MgxError
    from mgxir.targets.gpu.platforms import PLATFORMS, parse_device

    assert set(PLATFORMS) == {"cuda", "hip"}
    assert parse_device(None) == ("cuda", 0)
    assert parse_device("2") == ("cuda", 2)
    assert parse_device("cuda:1") == ("cuda", 1)
    assert parse_device("hip:3") == ("hip", 3)
    for bad in ("metal:0", "hip:", "hip:one"):
        with pytest.raises(MgxError, match="is N, cuda:N or hip:N"):
            parse_device(bad)


def test_kernel_compiler_follows_the_architecture() -> None:
    from mgxir.diagnostics import MgxError

    source = PROGRAMS["pointwise_int"]
    with pytest.raises(MgxError, match="no kernel compiler for architecture 'vega'"):
        compile_source(source, "k", arch="vega")
    # AMD architectures go to hiprtc, which needs ROCm: one clear error here
    with pytest.raises(MgxError, match="hip"):
        compile_source('extern "C" __global__ void k() {}', "k", arch="gfx942")


CONVOLUTIONS = ("conv_bias_residual_relu", "conv_strided_half", "conv_then_exp")


@pytest.fixture(scope="module")
def generated_convolutions() -> dict[str, object]:
    return {
        name: compile_for_gpu(_program(PROGRAMS[name]), arch="sm_90", library_convolution=False)
        for name in CONVOLUTIONS
    }


def test_convolutions_without_a_library_are_generated_kernels(generated_convolutions: dict) -> None:
    for name, program in generated_convolutions.items():
        names = [i.op.defn.name for i in program.main]
        assert "gpu::convolution" not in names, name
        symbols = [i.op["symbol_name"] for i in program.main if i.op.defn.name == "gpu::code_object"]
        assert "convolution_kernel" in symbols, name


@gpu
@needs_gpu
@pytest.mark.parametrize("name", CONVOLUTIONS)
def test_generated_convolutions_match_reference(generated_convolutions: dict, name: str) -> None:
    from mgxir.targets.gpu.runtime import GpuExecutable

    program = _program(PROGRAMS[name])
    params = _inputs(program)
    _assert_matches_reference(program, params, GpuExecutable(generated_convolutions[name]).run(params), 1e-3)


def _has_rocm() -> bool:
    from mgxir.diagnostics import MgxError
    from mgxir.targets.gpu.platforms import open_platform

    try:
        open_platform("hip", 0)
    except MgxError:
        return False
    return True


@pytest.mark.rocm
@pytest.mark.skipif(not _has_rocm(), reason="no AMD GPU with ROCm (the hip platform is tested where ROCm is)")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_hip_matches_reference(name: str) -> None:  # pragma: no cover - needs ROCm
    from mgxir.targets.gpu.driver import load_on_gpu

    program = _program(PROGRAMS[name])
    params = _inputs(program)
    outputs = load_on_gpu(program, DiagnosticSink(), platform_name="hip").run(params)
    _assert_matches_reference(program, params, outputs, 1e-3)
