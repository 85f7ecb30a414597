"""The GPU target's entry points: compile a program with the `gpu` pipeline and run it on a GPU.

`run_on_gpu` has the reference runner's signature (`mgx-run --target=gpu`); `gpu_options` holds
what the command line adds (`--device` N, cuda:N or hip:N, `--perf`, `--exhaustive-tune`,
`--fp32-math`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from mgxir.diagnostics import DiagnosticSink
from mgxir.ir.operation import RuntimeValue
from mgxir.ir.program import Program
from mgxir.passes.manager import PassManager
from mgxir.passes.registry import parse_pipeline
from mgxir.targets.gpu.lowering import GPU_PIPELINE, GpuLowering
from mgxir.targets.gpu.platforms import Platform, open_platform, parse_device
from mgxir.targets.gpu.runtime import GpuExecutable
from mgxir.targets.gpu.tune import problem_cache, tune_library_calls


@dataclasses.dataclass
class GpuOptions:
    device: int = 0
    platform: str = "cuda"
    perf: bool = False
    perf_iterations: int = 100
    exhaustive_tune: bool = False
    fp32_math: str = "ieee"


gpu_options = GpuOptions()


def select_device(text: str | None) -> None:
    """`--device`: N (CUDA's GPU N), cuda:N or hip:N."""
    gpu_options.platform, gpu_options.device = parse_device(text)


def compile_for_gpu(
    program: Program,
    arch: str = "",
    sink: DiagnosticSink | None = None,
    exhaustive_tune: bool = False,
    in_place: bool = False,
    library_convolution: bool = True,
    fp32_math: str = "ieee",
) -> Program:
    """A lowered copy of `program` (or `program` itself, lowered, with `in_place`): the `gpu` pipeline (fusion,
    lowering, memory planning); with `exhaustive_tune`, elementwise kernels are timed in their
    launch configurations; without `library_convolution` (a platform with no DNN library),
    convolutions become generated kernels; `fp32_math=tf32` lets float32 gemms and convolutions
    multiply in TF32."""
    lowered = program if in_place else program.clone()
    passes = parse_pipeline(GPU_PIPELINE)
    for p in passes:
        if isinstance(p, GpuLowering):
            p.arch = arch or p.arch
            p.exhaustive_tune = exhaustive_tune
            p.fp32_math = fp32_math
            p.library_convolution = p.fuse_attention = library_convolution
    PassManager(passes).run(lowered, sink)
    return lowered


def load_on_gpu(
    program: Program,
    sink: DiagnosticSink | None = None,
    device: int | None = None,
    exhaustive_tune: bool | None = None,
    in_place: bool = False,
    fp32_math: str | None = None,
) -> GpuExecutable:
    """`program` compiled and loaded on a GPU; with exhaustive tuning, its library calls' winners
    are written into the compiled program, which is then loaded again with them."""
    device = gpu_options.device if device is None else device
    tuning = gpu_options.exhaustive_tune if exhaustive_tune is None else exhaustive_tune
    # one clear line before any compilation where there is no GPU
    platform: Platform = open_platform(gpu_options.platform, device)
    lowered = compile_for_gpu(
        program,
        arch=platform.arch(),
        sink=sink,
        exhaustive_tune=tuning and platform.tunes,
        in_place=in_place,
        library_convolution=platform.library_convolution,
        fp32_math=gpu_options.fp32_math if fp32_math is None else fp32_math,
    )
    if not (tuning and platform.tunes):
        return GpuExecutable(lowered, device, sink, platform)
    tune_library_calls(GpuExecutable(lowered, device, sink, platform), problem_cache())
    return GpuExecutable(lowered, device, sink, platform)


def run_on_gpu(  # no cover: needs a GPU (without one load_on_gpu stops at opening it)
    program: Program, params: dict[str, np.ndarray], sink: DiagnosticSink
) -> list[RuntimeValue]:
    executable = load_on_gpu(program, sink)
    outputs = executable.run(params)
    if gpu_options.perf:
        print(executable.perf(gpu_options.perf_iterations), end="")
    return outputs
