"""Loading a compiled module with iree.runtime and calling its `main`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mgxir.diagnostics import MgxError
from mgxir.ir.dtype import DType
from mgxir.targets.iree.devices import Device


class LoadedModule:
    def __init__(self, path: Path, device: Device) -> None:
        import iree.runtime as rt  # only when running

        try:
            config = rt.Config(device.driver)
        except (RuntimeError, ValueError) as e:
            raise MgxError(f"IREE device '{device.name}' is not available here: {e}") from None
        self.context = rt.SystemContext(config=config)
        self.context.add_vm_module(rt.VmModule.mmap(config.vm_instance, str(path)))
        self.main = self.context.modules.module["main"]
        self.demotes_f64 = device.demotes_f64

    def __call__(self, inputs: list[np.ndarray], types: list[DType]) -> list[np.ndarray]:
        """Runs `main`; unsigned arrays travel as the signed type of their width (MLIR's integers
        are signless) and come back as `types`."""
        args = [_signless(np.ascontiguousarray(a)) for a in inputs]
        if self.demotes_f64:
            args = [a.astype(np.float32) if a.dtype == np.float64 else a for a in args]
        try:
            results = self.main(*args)
        except RuntimeError as e:
            raise MgxError(f"IREE failed to run the program: {e}") from None
        if not isinstance(results, tuple | list):
            results = [results]
        outputs = []
        for value, t in zip(results, types):
            host = np.asarray(value.to_host())
            if host.dtype != t.numpy:
                host = host.astype(t.numpy) if host.dtype.itemsize != t.numpy.itemsize else host.view(t.numpy)
            outputs.append(host)
        return outputs


def _signless(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "u":
        return a.view(np.dtype(f"i{a.dtype.itemsize}"))
    return a
