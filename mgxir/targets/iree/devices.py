"""IREE devices: which compiler backend and runtime driver each uses, and the flags that make the
compiled module run there."""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass

from mgxir.diagnostics import MgxError


@dataclass(frozen=True)
class Device:
    name: str  # what --device takes
    backend: str  # iree-compile's --iree-hal-target-backends
    driver: str  # iree.runtime's driver
    flags: tuple[str, ...]  # compiler flags for this device
    # IREE demotes f64 to f32 by default (then inputs and outputs are f32 at the boundary)
    demotes_f64: bool = False
    # element types (DType names) the device's target computes wrongly: refused before compiling,
    # with the reason
    refused: tuple[tuple[str, str], ...] = ()


KEEP_F64 = "--iree-input-demote-f64-to-f32=false"
# IREE 3.13's reduction vector-distribution pipeline miscompiles ResNet-50's strided 1x1 convolution
# fused with the residual add on CUDA (docs/mlir.md "IREE's CUDA reductions"); its TileAndFuse
# pipeline computes them right, and faster
NO_REDUCTION_DISTRIBUTION = "--iree-codegen-llvmgpu-use-reduction-vector-distribution=false"
DEVICES: dict[str, Device] = {
    d.name: d
    for d in (
        Device("local-task", "llvm-cpu", "local-task", ("--iree-llvmcpu-target-cpu=host", KEEP_F64)),
        Device("local-sync", "llvm-cpu", "local-sync", ("--iree-llvmcpu-target-cpu=host", KEEP_F64)),
        # IREE 3.13 has no sm_90 target description ("missing GPU target"): sm_89's PTX (ISA 8.4),
        # which the driver JIT-compiles for the GPU at hand, runs on Hopper.
        Device("cuda", "cuda", "cuda", ("--iree-cuda-target=sm_89", KEEP_F64, NO_REDUCTION_DISTRIBUTION)),
        Device("hip", "rocm", "hip", ("--iree-hip-target=gfx942", KEEP_F64)),
        # the Vulkan target comes from the device at hand (vulkan_target)
        Device("vulkan", "vulkan-spirv", "vulkan", ()),
    )
}


@dataclass(frozen=True)
class VulkanTarget:
    name: str  # --iree-vulkan-target
    refused: tuple[tuple[str, str], ...] = ()  # as Device.refused
    demotes_f64: bool = False


# IREE's SPIR-V code emulates bf16 and the fp8 types (in f32, rounding where the reference does not):
# on an H100 (`pascal`) 9 of the 18 bf16 ONNX tests that ran and 1 of the 7 fp8 ones differed from
# the reference (norms, losses and products; rms up to 5e-2)
EMULATED = tuple(
    (name, f"emulates {name} in f32, rounding otherwise than the reference")
    for name in ("bf16", "fp8e4m3fnuz", "fp8e4m3fn", "fp8e5m2", "fp8e5m2fnuz", "fp4x2")
)
# the baseline profile has no 16-bit float arithmetic (IREE compiles f16 programs for it all the
# same, and they compute garbage: seen on lavapipe) and no 64-bit floats (IREE demotes them to f32:
# values past f32's range become inf)
BASELINE = VulkanTarget(
    "vp_android_baseline_2022",
    refused=(("half", "has no 16-bit float arithmetic"), ("double", "demotes f64 to f32"), *EMULATED),
    demotes_f64=True,
)
# by a word of the Vulkan device's name: IREE's target description for that driver. `llvmpipe` is
# Mesa's lavapipe (subgroups of 8); `pascal` is the NVIDIA description without cooperative matrices
# (subgroups of 32), which every NVIDIA GPU since Pascal takes
VULKAN_TARGETS = {"llvmpipe": VulkanTarget("llvmpipe", EMULATED), "NVIDIA": VulkanTarget("pascal", EMULATED)}
TARGET_ENV = "MGXIR_VULKAN_TARGET"  # a name of VULKAN_TARGETS' targets, for compiling without the device


@functools.cache
def vulkan_device_name() -> str | None:
    """The name of the first device IREE's Vulkan driver finds, None where it finds none."""
    try:
        import iree.runtime as rt

        found = rt.get_driver("vulkan").query_available_devices()
    except (ImportError, RuntimeError, ValueError):
        return None
    return found[0]["name"] if found else None


def vulkan_target() -> VulkanTarget:
    """$MGXIR_VULKAN_TARGET's target, else the one for the Vulkan device here, else the baseline."""
    wanted = os.environ.get(TARGET_ENV)
    if wanted:
        by_name = {t.name: t for t in (*VULKAN_TARGETS.values(), BASELINE)}
        if wanted not in by_name:
            raise MgxError(f"${TARGET_ENV}: unknown Vulkan target '{wanted}' (known: {', '.join(by_name)})")
        return by_name[wanted]
    return target_for_device(vulkan_device_name() or "")


def target_for_device(name: str) -> VulkanTarget:
    """The target for a Vulkan device of this name (the baseline for devices mgxir does not know)."""
    return next((t for word, t in VULKAN_TARGETS.items() if word in name), BASELINE)


def device(name: str) -> Device:
    found = DEVICES.get(name)
    if found is None:
        raise MgxError(f"unknown IREE device '{name}' (available: {', '.join(DEVICES)})")
    if found.driver == "vulkan":
        target = vulkan_target()
        flags = (f"--iree-vulkan-target={target.name}", *(() if target.demotes_f64 else (KEEP_F64,)))
        return dataclasses.replace(found, flags=flags, demotes_f64=target.demotes_f64, refused=target.refused)
    return found


def check_types(device: Device, types: set[str]) -> None:
    """One clear error where the program has an element type the device's target gets wrong."""
    for name, why in device.refused:
        if name in types:
            target = next((f.split("=", 1)[1] for f in device.flags if f.startswith("--iree-vulkan-target=")), "")
            raise MgxError(
                f"IREE device '{device.name}' (target {target}) {why}: refusing a program with {name} values"
            )
