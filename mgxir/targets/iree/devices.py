"""IREE devices: which compiler backend and runtime driver each uses, and the flags that make the
compiled module run there."""

from __future__ import annotations

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


KEEP_F64 = "--iree-input-demote-f64-to-f32=false"
DEVICES: dict[str, Device] = {
    d.name: d
    for d in (
        Device("local-task", "llvm-cpu", "local-task", ("--iree-llvmcpu-target-cpu=host", KEEP_F64)),
        Device("local-sync", "llvm-cpu", "local-sync", ("--iree-llvmcpu-target-cpu=host", KEEP_F64)),
        # IREE 3.13 has no sm_90 target description ("missing GPU target"): sm_89's PTX (ISA 8.4),
        # which the driver JIT-compiles for the GPU at hand, runs on Hopper.
        Device("cuda", "cuda", "cuda", ("--iree-cuda-target=sm_89", KEEP_F64)),
        Device("hip", "rocm", "hip", ("--iree-hip-target=gfx942", KEEP_F64)),
        # a baseline SPIR-V profile that lavapipe and every desktop driver take
        Device(
            "vulkan", "vulkan-spirv", "vulkan", ("--iree-vulkan-target=vp_android_baseline_2022",), demotes_f64=True
        ),
    )
}


def device(name: str) -> Device:
    found = DEVICES.get(name)
    if found is None:
        raise MgxError(f"unknown IREE device '{name}' (available: {', '.join(DEVICES)})")
    return found
