"""Compiling MLIR for an IREE device with IREE's compiler API."""

from __future__ import annotations

from mgxir.diagnostics import MgxError
from mgxir.targets.iree.devices import Device


def compile_module(mlir: bytes | str, device: Device, flags: list[str]) -> bytes:
    """The `.vmfb` of a module (MLIR text or bytecode) for `device`; compiler errors become one
    MgxError holding the compiler's first diagnostics."""
    from iree.compiler import CompilerToolError, compile_str  # heavy: only when compiling

    try:
        return compile_str(mlir, target_backends=[device.backend], extra_args=flags)
    except CompilerToolError as e:
        lines = [line for line in str(e).splitlines() if "error" in line][:3]
        detail = "; ".join(lines) or str(e).splitlines()[0]
        raise MgxError(f"IREE could not compile the program for {device.name}: {detail}") from None
