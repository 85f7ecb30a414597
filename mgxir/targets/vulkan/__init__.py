"""The Vulkan target: fused kernels as SPIR-V on a Vulkan device, the rest on the reference
(`mgxir.targets.vulkan.target.VulkanTarget`)."""
