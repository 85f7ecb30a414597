"""Loading a compiled module with iree.runtime and calling its `main`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mgxir.diagnostics import MgxError
from mgxir.ir.dtype import DType
from mgxir.targets.iree.devices import Device


def runtime_config(device: Device) -> object:
    """iree.runtime's Config (the driver's device) for a device; one serves many modules."""
    import iree.runtime as rt  # only when running

    try:
        return rt.Config(device.driver)
    except (RuntimeError, ValueError) as e:
        raise MgxError(f"IREE device '{device.name}' is not available here: {e}") from None


class LoadedModule:
    def __init__(self, path: Path, device: Device, config: object | None = None) -> None:
        import iree.runtime as rt  # only when running

        config = config if config is not None else runtime_config(device)
        self.context = rt.SystemContext(config=config)
        self.context.add_vm_module(rt.VmModule.mmap(config.vm_instance, str(path)))
        self.main = self.context.modules.module["main"]
        self.demotes_f64 = device.demotes_f64
        self.device = config.device
        self.staged = device.driver == "vulkan"

    def _to_host(self, value: object) -> np.ndarray:
        if self.staged:
            return _staged_to_host(self.device, value)
        try:
            # a copy: to_host's array maps the result's buffer, which the module's context frees
            # when it goes (a uint8 result read after that came back as other values, now and then)
            return np.array(value.to_host())
        except ValueError:  # a host allocation the driver will not import (CUDA: some sizes and alignments)
            return _staged_to_host(self.device, value)

    def __call__(self, inputs: list[np.ndarray], types: list[DType]) -> list[np.ndarray]:
        """Runs `main`; unsigned arrays travel as the signed type of their width (MLIR's integers
        are signless) and come back as `types`."""
        args = [_signless(np.ascontiguousarray(a)) for a in inputs]
        if self.demotes_f64:
            args = [a.astype(np.float32) if a.dtype == np.float64 else a for a in args]
        args = [_page_aligned(a) for a in args]
        try:
            results = self.main(*args)
        except RuntimeError as e:
            raise MgxError(f"IREE failed to run the program: {e}") from None
        if not isinstance(results, tuple | list):
            results = [results]
        outputs = []
        for value, t in zip(results, types):
            host = self._to_host(value)
            if host.dtype != t.numpy:
                host = host.astype(t.numpy) if host.dtype.itemsize != t.numpy.itemsize else host.view(t.numpy)
            outputs.append(host)
        return outputs


PAGE = 4096


def _staged_to_host(device: object, value: object) -> np.ndarray:
    """A device array copied out through a host-visible staging buffer (iree.runtime's own copy
    imports an unaligned numpy allocation, which Vulkan drivers such as lavapipe refuse)."""
    import iree.runtime as rt

    view = value._buffer_view
    dtype = rt.HalElementType.map_to_dtype(view.element_type)
    if 0 in view.shape:
        return np.zeros(view.shape, dtype)
    source = view.get_buffer()
    staging = device.allocator.allocate_buffer(
        memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
        allowed_usage=int(rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING_SCOPED),
        allocation_size=source.byte_length(),
    )
    semaphore = device.create_semaphore(0)
    device.queue_copy(
        source,
        staging,
        wait_semaphores=rt.HalFence.create_at(semaphore, 0),
        signal_semaphores=rt.HalFence.create_at(semaphore, 1),
    )
    rt.HalFence.create_at(semaphore, 1).wait()
    return np.array(staging.map().asarray(view.shape, dtype))


def _page_aligned(a: np.ndarray) -> np.ndarray:
    """A copy starting on a page (Vulkan drivers import host memory only at their alignment)."""
    if a.ctypes.data % PAGE == 0:
        return a
    size = max(a.nbytes, 1)
    raw = np.empty(size + PAGE, np.uint8)
    start = (-raw.ctypes.data) % PAGE
    aligned = raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    aligned[...] = a
    return aligned


def _signless(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "u":
        return a.view(np.dtype(f"i{a.dtype.itemsize}"))
    return a
