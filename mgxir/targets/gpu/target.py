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
    reads_formats = frozenset({"mgx", "log", "mxr", "json"})  # a compiled program file runs as it is
    name = "gpu"
    options_type = GpuOptions

    def read(
        self, path: str, sink: DiagnosticSink, options: GpuOptions, from_log: bool, log_pass: str | None
    ) -> Program:
        """mgxir's text, or a program file (`.mxr`, `.json`: a compiled one runs as it was compiled)."""
        from mgxir.targets.gpu.compiled import read_program_file

        program = None if from_log else read_program_file(path, sink)
        if program is None:
            from mgxir.targets.gpu.compiled import attach_payloads

            program = super().read(path, sink, options, from_log, log_pass)
            if not from_log and path != "-":
                attach_payloads(program, path)
        program.filename = path  # type: ignore[attr-defined]  # what a refusal to load it names
        return program

    def run(
        self, program: Program, params: Mapping[str, np.ndarray], options: GpuOptions, sink: DiagnosticSink
    ) -> list[RuntimeValue]:
        """A compiled program (a program file `mgx-opt -p gpu` wrote) is loaded as it is: no pass
        runs, nothing compiles; its code objects must be for the device (one line says why not)."""
        from mgxir.targets.gpu.compiled import is_compiled

        if not is_compiled(program):
            return super().run(program, params, options, sink)
        return self.load(self.loadable(program, options), options.device, sink).run(params)

    def loadable(self, program: Program, options: GpuOptions) -> CompiledProgram:
        """The compiled `program` as this target loads it, once its code objects are checked
        against `options.arch` (where given: no GPU is opened) or the device's."""
        from mgxir.targets.gpu.compiled import check_runs_on, finish
        from mgxir.targets.gpu.ops import arch_platform

        filename = getattr(program, "filename", "the program")
        if options.arch is not None:
            arch = options.arch
            found = arch_platform(arch)
            platform_name = found[0] if found else "an unknown platform"
        else:
            platform = open_platform(*parse_device(options.device))  # one line where there is no GPU
            platform_name, arch = platform.name, platform.arch()  # no cover: needs a GPU
        check_runs_on(program, platform_name, arch, filename)
        finish(program, arch)  # a portable program's kernels, compiled for this GPU
        return CompiledProgram(self.name, program, options)

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
