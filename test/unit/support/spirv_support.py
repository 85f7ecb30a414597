"""What the SPIR-V and Vulkan tests share: building small programs, running them on the Vulkan
device and on the reference interpreter, and comparing the two."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.interp import Interpreter
from mgxir.ir.program import Program
from mgxir.targets.vulkan.runner import VulkanSession, shared_device
from mgxir.text.parser import parse_program
from mgxir.translate.spirv import Translation, binary, translate_program
from mgxir.translate.spirv.kernels import KernelOptions
from mgxir.verifier import verify


@functools.cache
def vulkan_missing() -> str | None:
    """Why no Vulkan device can be used here, or None."""
    try:
        shared_device()
    except MgxError as e:
        return e.message
    return None


def require_vulkan() -> None:
    reason = vulkan_missing()
    if reason is not None:
        pytest.skip(f"no Vulkan device ({reason}); install mesa-vulkan-drivers and libvulkan1 for lavapipe")


def program(text: str) -> Program:
    parsed = parse_program(text)
    verify(parsed, DiagnosticSink())
    return parsed


def translate(
    prog: Program, fuse: bool = True, options: KernelOptions | None = None, assemble: bool = True
) -> Translation:
    translation = translate_program(prog, DiagnosticSink(), options, fuse=fuse)
    for kernel in translation.kernels.values():
        if assemble:
            binary(kernel)  # assembles and validates for Vulkan 1.1
    return translation


def run_vulkan(translation: Translation, params: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = VulkanSession(translation, shared_device(), DiagnosticSink())
    try:
        with np.errstate(all="ignore"):
            return [np.asarray(session.to_host(o)) for o in session.run(params)]
    finally:
        session.close()


def run_reference(prog: Program, params: dict[str, np.ndarray]) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        return [np.asarray(o) for o in Interpreter(prog, DiagnosticSink()).run(params)]


def assert_matches(got: np.ndarray, want: np.ndarray, tolerance: float, what: str) -> None:
    """Same NaNs and infinities, ints and bools exactly, finite floats within `tolerance` relative
    to the largest magnitude (MIGraphX's rms rule) and each within a few times that."""
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} vs {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    if want.dtype.kind != "f":
        mismatch = np.argwhere(got != want)
        assert mismatch.size == 0, (
            f"{what}: at {mismatch[0].tolist()}: {got[tuple(mismatch[0])]} vs {want[tuple(mismatch[0])]}"
        )
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w)), f"{what}: NaN at different places:\n{g}\n{w}"
    infinite = np.isinf(w) | np.isinf(g)
    assert np.array_equal(g[infinite], w[infinite]), f"{what}: infinities differ:\n{g}\n{w}"
    finite = ~(np.isnan(w) | infinite)
    if not finite.any():
        return
    scale = max(float(np.max(np.abs(w[finite]))), float(np.max(np.abs(g[finite]))), 1e-30)
    error = np.abs(g[finite] - w[finite]) / scale
    worst = int(np.argmax(error))
    detail = f"{g[finite][worst]} vs {w[finite][worst]}"
    assert float(np.sqrt(np.mean(error**2))) <= tolerance, f"{what}: rms error {np.sqrt(np.mean(error**2))}: {detail}"
    assert float(error[worst]) <= 8 * tolerance, f"{what}: worst error {error[worst]}: {detail}"
