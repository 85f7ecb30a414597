"""The Vulkan target: fused kernels as SPIR-V on a Vulkan device, the rest on the reference."""

from mgxir.targets.vulkan.runner import run_on_vulkan

__all__ = ["run_on_vulkan"]
