"""Where programs run besides the reference interpreter: IREE, Vulkan, the native GPU target."""
