"""`--target=vulkan`: the fused kernels as SPIR-V on a Vulkan device (lavapipe will do), the rest on
the reference interpreter.

`compile` fuses a copy of the program as MIGraphX's GPU target does and makes one validated SPIR-V
kernel per fused instruction; `load` opens the device (one per process)."""

from __future__ import annotations

from dataclasses import dataclass

from mgxir.diagnostics import DiagnosticSink
from mgxir.ir.program import Program
from mgxir.targets.base import CompiledProgram, Target
from mgxir.targets.vulkan.runner import VulkanExecutable, shared_device
from mgxir.translate.spirv import binary, translate_program


@dataclass(frozen=True)
class VulkanOptions:
    """The Vulkan target has no options of its own (`--timing` lists where each instruction ran)."""


class VulkanTarget(Target):
    name = "vulkan"
    options_type = VulkanOptions

    def compile(self, program: Program, options: VulkanOptions, sink: DiagnosticSink) -> CompiledProgram:
        translation = translate_program(program, sink)
        binaries = {kernel.name: binary(kernel) for kernel in translation.kernels.values()}
        return CompiledProgram(self.name, translation.program, options, (translation, binaries))

    def load(self, compiled: CompiledProgram, device: str | None, sink: DiagnosticSink) -> VulkanExecutable:
        translation, binaries = compiled.artifact
        return VulkanExecutable(translation, shared_device(), sink, binaries)
