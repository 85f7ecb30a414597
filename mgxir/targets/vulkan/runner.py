"""Runs a program with its fused kernels on a Vulkan device and everything else on the reference
interpreter.

The program is copied and fused as MIGraphX's GPU target fuses (see mgxir.translate.spirv) when it
is compiled (`mgxir.targets.vulkan.target`); `main` then runs instruction by instruction through
the shared host fallback (`mgxir.targets.host`). A `pointwise` or `fused_reduce` with a kernel runs
on the device; its result stays in device memory, so the next kernel reads it there. Views of
device values (broadcast, transpose, slice, ...) stay on the device as new strides and offsets; any
other instruction gets host copies of its arguments (downloaded once each) and runs on the
reference interpreter."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mgxir.diagnostics import DiagnosticSink
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.names import instruction_names
from mgxir.ir.operation import RuntimeValue
from mgxir.targets.host import HostFallback
from mgxir.targets.timing import record
from mgxir.targets.vulkan.device import Buffer, Device, Pipeline
from mgxir.translate.spirv import Translation, binary, fusable
from mgxir.translate.spirv.kernels import Kernel
from mgxir.translate.spirv.layout import View


@functools.cache
def shared_device() -> Device:
    """One device per process (creating a Vulkan device takes a while)."""
    return Device()


@dataclass
class DeviceTensor:
    """A value in device memory: a buffer and the view of it that holds the value's elements."""

    buffer: Buffer
    view: View
    dtype: DType
    host: np.ndarray | None = None


def span(view: View) -> int:
    """Elements from the buffer's start to one past the view's last element."""
    if any(n == 0 for n in view.lens):
        return view.offset
    return view.offset + 1 + sum((n - 1) * s for n, s in zip(view.lens, view.strides))


class VulkanSession:
    """One run's state on the device: fused instructions of main run as device kernels, the rest on
    the reference interpreter (through the shared host fallback), views of device values stay on
    the device."""

    def __init__(
        self,
        translation: Translation,
        device: Device,
        sink: DiagnosticSink,
        binaries: Mapping[str, bytes] | None = None,
    ) -> None:
        self.translation = translation
        self.device = device
        self.binaries = binaries or {}  # kernel name -> SPIR-V assembled already
        self.pipelines: dict[str, Pipeline] = {}
        self.uploaded: dict[int, tuple[np.ndarray, DeviceTensor]] = {}
        self.buffers: list[Buffer] = []
        self.names = instruction_names(translation.program)
        self.fallback = HostFallback(translation.program, sink, self._device_kernel, self._on_host)

    def run(self, params: Mapping[str, np.ndarray]) -> list[RuntimeValue]:
        """main's outputs (device values among them: `to_host` brings them home)."""
        return self.fallback.run(params)

    def _device_kernel(self, ins: Instruction) -> Callable[..., RuntimeValue] | None:
        kernel = self.translation.kernels.get(ins)
        return None if kernel is None else self._on_device(ins, kernel)

    def _on_device(self, ins: Instruction, kernel: Kernel) -> Callable[..., RuntimeValue]:
        def run(*args: RuntimeValue) -> RuntimeValue:
            return self.launch(ins, kernel, args)

        return run

    def _on_host(self, ins: Instruction, reference: Callable[..., RuntimeValue]) -> Callable[..., RuntimeValue]:
        name = self.names.get(ins, ins.op.name)
        note = self.translation.skipped.get(ins, "") if fusable(ins) else ""

        def run(*args: RuntimeValue) -> RuntimeValue:
            start = time.perf_counter()
            if ins.op.defn.is_view and args and isinstance(args[0], DeviceTensor):
                viewed = self._device_view(args[0], reference, args[1:])
                if viewed is not None:
                    record(name, ins.op.name, "vulkan", time.perf_counter() - start, "a view of device memory")
                    return viewed
            if ins.module_args:
                self._bring_all_home()  # bodies of if/loop read main's values directly
            result = reference(*[self.to_host(a) for a in args])
            record(name, ins.op.name, "ref", time.perf_counter() - start, note)
            return result

        return run

    # -- device values -----------------------------------------------------------------------------

    def to_host(self, value: Any) -> Any:
        if isinstance(value, tuple):
            return tuple(self.to_host(v) for v in value)
        if not isinstance(value, DeviceTensor):
            return value
        if value.host is None:
            itemsize = value.dtype.numpy.itemsize
            raw = self.device.download(value.buffer, span(value.view) * itemsize).view(f"u{itemsize}")
            strided = np.lib.stride_tricks.as_strided(  # as unsigned words: see to_device
                raw[value.view.offset :], value.view.lens, [s * itemsize for s in value.view.strides]
            )
            value.host = np.array(strided).view(value.dtype.numpy)
        return value.host

    def _bring_all_home(self) -> None:
        env = self.fallback.env
        for ins, value in list(env.items()):
            if isinstance(value, DeviceTensor | tuple):
                env[ins] = self.to_host(value)

    def to_device(self, value: Any) -> DeviceTensor:
        if isinstance(value, DeviceTensor):
            return value
        array = np.asarray(value)
        cached = self.uploaded.get(id(value))
        if cached is not None and cached[0] is value:
            return cached[1]
        itemsize = array.dtype.itemsize
        if array.ndim == 0:
            array = array.reshape(1)
        if array.size and all(s >= 0 and s % itemsize == 0 for s in array.strides):
            view = View(tuple(array.shape), tuple(s // itemsize for s in array.strides))
            # strided as unsigned words: numpy's as_strided does not know ml_dtypes' float8_e5m2
            words = array.view(np.dtype(f"u{itemsize}")) if itemsize in (1, 2, 4, 8) else array
            compact = np.lib.stride_tricks.as_strided(words, (span(view),), (itemsize,)).view(array.dtype)
        else:
            compact = np.ascontiguousarray(array).reshape(-1)
            view = View(tuple(array.shape), tuple(s // itemsize for s in np.ascontiguousarray(array).strides))
        buffer = self.device.upload(compact)
        self.buffers.append(buffer)
        tensor = DeviceTensor(buffer, view, DType.from_numpy(array.dtype), host=array)
        self.uploaded[id(value)] = (value, tensor)
        return tensor

    def _device_view(
        self, source: DeviceTensor, reference: Callable[..., RuntimeValue], rest: Sequence[RuntimeValue]
    ) -> DeviceTensor | None:
        """The view op run on an array of element positions: if its result is a view of them, the
        positions it picks give the new offset and strides on the same buffer."""
        extent = span(source.view)
        positions = np.arange(max(extent, 1), dtype=np.int64)
        probe = np.lib.stride_tricks.as_strided(
            positions[source.view.offset :], source.view.lens, [8 * s for s in source.view.strides]
        )
        try:
            result = reference(probe, *[self.to_host(a) for a in rest])
        except Exception:
            return None
        if not isinstance(result, np.ndarray) or result.size == 0 or not np.shares_memory(result, positions):
            return None
        if any(s < 0 or s % 8 for s in result.strides):
            return None
        offset = (result.__array_interface__["data"][0] - positions.__array_interface__["data"][0]) // 8
        view = View(tuple(result.shape), tuple(s // 8 for s in result.strides), offset)
        return DeviceTensor(source.buffer, view, source.dtype)

    # -- kernels -----------------------------------------------------------------------------------

    def pipeline(self, kernel: Kernel) -> Pipeline:
        found = self.pipelines.get(kernel.name)
        if found is None:
            layout = kernel.layout
            code = self.binaries.get(kernel.name) or binary(kernel)
            found = self.device.pipeline(code, len(layout.bindings), 4 * len(layout.push_names))
            self.pipelines[kernel.name] = found
        return found

    def launch(self, ins: Instruction, kernel: Kernel, args: Sequence[RuntimeValue]) -> RuntimeValue:
        layout = kernel.layout
        inputs = [self.to_device(a) for a in args]
        shapes = list(ins.shape.sub_shapes) if ins.shape.is_tuple else [ins.shape]
        outputs = []
        for shape in shapes:
            view = View(tuple(shape.lens), tuple(shape.strides))
            buffer = self.device.allocate(span(view) * shape.dtype.itemsize)
            self.buffers.append(buffer)
            outputs.append(DeviceTensor(buffer, view, shape.dtype))
        tensors = inputs + outputs
        lens = ins.args[0].shape.lens if layout.kind == "reduce" else shapes[0].lens
        push = layout.push_values([t.view for t in tensors], lens)
        limit = int(self.device.limits.maxComputeWorkGroupCount[0])
        if layout.kind == "reduce":
            groups = min(push[0], limit)
        else:
            per_group = layout.workgroup_size * max(layout.elements_per_invocation, 1)
            groups = min(math.ceil(push[0] / per_group), limit)
        seconds = 0.0
        if groups > 0:
            pipeline = self.pipeline(kernel)
            descriptor = self.device.descriptor_set(pipeline, [t.buffer for t in tensors])
            try:
                seconds = self.device.dispatch(pipeline, descriptor, push, groups)
            finally:
                self.device.release_set(descriptor)
        record(self.names.get(ins, ins.op.name), f"{ins.op.name} {kernel.name}", "vulkan", seconds)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def close(self) -> None:
        for buffer in self.buffers:
            self.device.free(buffer)
        self.buffers.clear()
        for pipeline in self.pipelines.values():
            self.device.destroy_pipeline(pipeline)
        self.pipelines.clear()


class VulkanExecutable:
    """A translation loaded on a Vulkan device: each run has its own buffers, freed after it."""

    def __init__(
        self, translation: Translation, device: Device, sink: DiagnosticSink, binaries: Mapping[str, bytes]
    ) -> None:
        self.translation = translation
        self.device = device
        self.sink = sink
        self.binaries = binaries

    def run(self, params: Mapping[str, np.ndarray]) -> list[RuntimeValue]:
        session = VulkanSession(self.translation, self.device, self.sink, self.binaries)
        try:
            return [session.to_host(o) for o in session.run(params)]
        finally:
            session.close()
