"""A GPU platform on the CPU, for running whole lowered programs through GpuExecutable (its host
steps, its outer values, its memory plan) without a GPU: device memory is host memory, each kernel
launch runs the kernel's source compiled by gpu_host (cooperating threads as fibers), a graph is
its steps in order, and a gemm is numpy's product of the operands read through their strides. The
kernels' sources come from the program's code objects, by binary."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence

import numpy as np
from gpu_host import kernel_library
from numpy.lib.stride_tricks import as_strided

from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.targets.gpu.platforms import Platform


def _view(pointer: int, shape: Shape) -> np.ndarray:
    space = max(shape.element_space, 1) * shape.dtype.itemsize
    flat = np.frombuffer((ctypes.c_char * space).from_address(pointer), shape.dtype.numpy)
    return as_strided(flat, shape.lens, [s * shape.dtype.itemsize for s in shape.strides])


class EmulatedPlatform(Platform):
    name = "emulated"
    index = 0
    graph_name = "step list"
    library_convolution = False
    tunes = False

    def __init__(self, program: Program) -> None:
        self._buffers: list[np.ndarray] = []
        self._sources = {
            ins.op["code_object"].binary: ins.op["code_object"].source
            for module in program
            for ins in module
            if not ins.is_param and not ins.is_literal and ins.op.defn.name == "gpu::code_object"
        }

    def arch(self) -> str:
        return "sm_90"

    def allocate(self, nbytes: int) -> int:
        buffer = np.zeros(max(nbytes, 1) + 64, np.uint8)
        self._buffers.append(buffer)
        return buffer.ctypes.data

    def copy_to_device(self, pointer: int, host: np.ndarray) -> None:
        ctypes.memmove(pointer, np.ascontiguousarray(host).ctypes.data, host.nbytes)

    def copy_to_host(self, host: np.ndarray, pointer: int) -> None:
        ctypes.memmove(host.ctypes.data, pointer, host.nbytes)

    def synchronize(self) -> None:
        pass

    def launcher(self, binary: bytes, symbol: str, grid: int, block: int, args: Sequence[int]) -> Callable[[], None]:
        library = kernel_library(self._sources[binary], symbol, len(args))
        pointers = (ctypes.c_void_p * len(args))(*args)
        return lambda: library.mgx_emulate(pointers, ctypes.c_longlong(grid), ctypes.c_int(block))

    def capture(self, steps: Sequence[Callable[[], None]]) -> object:
        return list(steps)

    def replay(self, graph: object) -> None:
        for step in graph:  # type: ignore[attr-defined]
            step()

    def time(self, body: Callable[[], None], iterations: int) -> float:
        raise NotImplementedError("the emulated platform does not time")

    def gemm_plan(self, a, b, out, epilogue, alpha, beta, solution, tf32=False):  # type: ignore[no-untyped-def]
        def call(pa: int, pb: int, po: int, bias: int) -> None:
            product = alpha * np.matmul(_view(pa, a).astype(np.float64), _view(pb, b).astype(np.float64))
            if bias:
                product = product + _view(bias, Shape.make(out.dtype, out.lens[-1:])).astype(np.float64)
            if "relu" in epilogue:
                product = np.maximum(product, 0)
            _view(po, out)[...] = product.astype(out.dtype.numpy)

        call.plan = None  # type: ignore[attr-defined]  # the runtime keeps a library's plan; numpy has none
        return call

    @property
    def stream_handle(self) -> int:
        return 0
