"""The GPU target's library functions: compile a program with the `gpu` pipeline, load it on a GPU.

`mgx-run --target=gpu` goes through `mgxir.targets.gpu.target.GpuTarget`, which calls these with
its options; the benchmarks and tests call them directly. Every option is an argument: nothing is
kept between calls."""

from __future__ import annotations

from mgxir.diagnostics import DiagnosticSink
from mgxir.ir.program import Program
from mgxir.passes.manager import PassManager
from mgxir.passes.registry import parse_pipeline
from mgxir.targets.gpu.lowering import GPU_PIPELINE, GpuLowering
from mgxir.targets.gpu.platforms import Platform, open_platform
from mgxir.targets.gpu.runtime import GpuExecutable
from mgxir.targets.gpu.tune import problem_cache, tune_library_calls


def compile_for_gpu(
    program: Program,
    arch: str = "",
    sink: DiagnosticSink | None = None,
    exhaustive_tune: bool = False,
    in_place: bool = False,
    library_convolution: bool = True,
    fp32_math: str = "ieee",
) -> Program:
    """A lowered copy of `program` (or `program` itself, lowered, with `in_place`): the `gpu`
    pipeline (fusion, lowering, memory planning); with `exhaustive_tune`, elementwise kernels are
    timed in their launch configurations; without `library_convolution` (a platform with no DNN
    library), convolutions become generated kernels; `fp32_math=tf32` lets float32 gemms and
    convolutions multiply in TF32."""
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


def compile_on_platform(
    program: Program,
    platform: Platform,
    sink: DiagnosticSink | None = None,
    exhaustive_tune: bool = False,
    in_place: bool = False,
    fp32_math: str = "ieee",
) -> Program:
    """`program` compiled for the platform's GPU; with exhaustive tuning (where the platform tunes),
    its library calls' winners are written into the compiled program."""
    tuning = exhaustive_tune and platform.tunes
    lowered = compile_for_gpu(
        program,
        arch=platform.arch(),
        sink=sink,
        exhaustive_tune=tuning,
        in_place=in_place,
        library_convolution=platform.library_convolution,
        fp32_math=fp32_math,
    )
    if tuning:  # no cover: needs a GPU
        tune_library_calls(GpuExecutable(lowered, platform.index, sink, platform), problem_cache())
    return lowered


def load_on_gpu(
    program: Program,
    sink: DiagnosticSink | None = None,
    device: int = 0,
    exhaustive_tune: bool = False,
    in_place: bool = False,
    fp32_math: str = "ieee",
    platform_name: str = "cuda",
) -> GpuExecutable:
    """`program` compiled and loaded on GPU `device` of the platform (cuda or hip)."""
    # one clear line before any compilation where there is no GPU
    platform = open_platform(platform_name, device)
    lowered = compile_on_platform(program, platform, sink, exhaustive_tune, in_place, fp32_math)
    return GpuExecutable(lowered, device, sink, platform)
