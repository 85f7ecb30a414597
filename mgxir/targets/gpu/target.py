"""`--target=gpu`: MIGraphX's GPU target on NVIDIA (CUDA) or AMD (HIP) GPUs.

`compile` runs the `gpu` pipeline for the device's architecture (or `arch`, which needs no GPU:
NVRTC compiles anywhere); `load` puts a compiled program on a GPU (buffers, kernels, library
plans, captured graphs); the executable's `run` replays it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mgxir.diagnostics import DiagnosticSink
from mgxir.targets.base import CompiledProgram, Target
from mgxir.targets.gpu.driver import compile_for_gpu, compile_on_platform
from mgxir.targets.gpu.platforms import open_platform, parse_device, platform_class
from mgxir.targets.gpu.runtime import GpuExecutable

if TYPE_CHECKING:
    import numpy as np

    from mgxir.ir.operation import RuntimeValue
    from mgxir.ir.program import Program


@dataclass(frozen=True)
class GpuOptions:
    device: str | None = field(
        default=None, metadata={"help": "N (CUDA's GPU N), cuda:N or hip:N (default: CUDA's GPU 0)."}
    )
    perf: bool = field(
        default=False, metadata={"help": "Print per-instruction times and shares after the run.", "run_only": True}
    )
    perf_iterations: int = field(default=100, metadata={"help": "Replays timed for --perf.", "run_only": True})
    exhaustive_tune: bool = field(
        default=False,
        metadata={"help": "Time kernel launch configurations and library algorithms; keep the fastest."},
    )
    fp32_math: str = field(
        default="ieee",
        metadata={"help": "float32 gemms and convolutions multiply in float32 (ieee) or TF32 (tf32)."},
    )
    arch: str | None = field(
        default=None,
        metadata={"help": "Compile for this architecture (sm_90, gfx942) instead of the device's; needs no GPU."},
    )


class GpuRun:
    """A compiled program loaded on a GPU; `run` prints the per-instruction times with `perf`."""

    def __init__(self, executable: GpuExecutable, options: GpuOptions) -> None:
        self.executable = executable
        self.options = options

    def run(self, params: Mapping[str, np.ndarray]) -> list[RuntimeValue]:  # no cover: needs a GPU
        outputs = self.executable.run(dict(params))
        if self.options.perf:
            print(self.executable.perf(self.options.perf_iterations), end="")
        return outputs


class GpuTarget(Target):
    name = "gpu"
    options_type = GpuOptions

    def compile(self, program: Program, options: GpuOptions, sink: DiagnosticSink) -> CompiledProgram:
        platform_name, index = parse_device(options.device)
        if options.arch is not None and not options.exhaustive_tune:
            kind = platform_class(platform_name)
            lowered = compile_for_gpu(
                program, options.arch, sink, library_convolution=kind.library_convolution, fp32_math=options.fp32_math
            )
        else:
            # one clear line before any compilation where there is no GPU
            platform = open_platform(platform_name, index)
            lowered = compile_on_platform(
                program, platform, sink, options.exhaustive_tune, fp32_math=options.fp32_math
            )  # no cover: needs a GPU
        return CompiledProgram(self.name, lowered, options)

    def load(self, compiled: CompiledProgram, device: str | None, sink: DiagnosticSink) -> GpuRun:
        options: GpuOptions = compiled.options
        platform_name, index = parse_device(device if device is not None else options.device)
        platform = open_platform(platform_name, index)
        return GpuRun(GpuExecutable(compiled.program, index, sink, platform), options)  # no cover: needs a GPU
