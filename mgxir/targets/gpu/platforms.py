"""The GPU runtimes the executable runs on, behind one interface: a table from platform name to
its class. `cuda` is NVIDIA's (cuda-core and cuda-bindings; NVRTC; cuBLASLt through nvmath-python;
cuDNN's graph API), `hip` AMD's (hip-python: HIP and hiprtc; hipBLASLt; convolutions as generated
kernels, see hip_platform.py).

A platform holds one device, one stream and the device allocations; it loads compiled kernels and
returns launchers, captures launches into graphs and replays them, times work with events, and
builds gemm plans. `--device=N` is CUDA's GPU N, `--device=cuda:N` and `--device=hip:N` name the
platform.
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable, Sequence

import numpy as np

from mgxir.diagnostics import MgxError
from mgxir.ir.shape import Shape


class Platform(abc.ABC):
    """One GPU of one runtime, with one stream."""

    name: str
    index: int  # the GPU's number on its runtime
    graph_name: str  # "CUDA graph", "HIP graph"
    library_convolution: bool  # whether gpu::convolution has a library here; else generated kernels
    tunes: bool  # whether --exhaustive-tune times kernels and library algorithms here

    @abc.abstractmethod
    def arch(self) -> str:
        """The architecture kernels are compiled for (`sm_90`, `gfx942`)."""

    @abc.abstractmethod
    def allocate(self, nbytes: int) -> int: ...

    @abc.abstractmethod
    def copy_to_device(self, pointer: int, host: np.ndarray) -> None:
        """A synchronous copy of the contiguous `host` array to `pointer`."""

    @abc.abstractmethod
    def copy_to_host(self, host: np.ndarray, pointer: int) -> None: ...

    @abc.abstractmethod
    def synchronize(self) -> None: ...

    @abc.abstractmethod
    def launcher(self, binary: bytes, symbol: str, grid: int, block: int, args: Sequence[int]) -> Callable[[], None]:
        """A callable launching kernel `symbol` of the compiled `binary` on the stream."""

    @abc.abstractmethod
    def capture(self, steps: Sequence[Callable[[], None]]) -> object:
        """The steps' launches captured as one graph, instantiated."""

    @abc.abstractmethod
    def replay(self, graph: object) -> None: ...

    @abc.abstractmethod
    def time(self, body: Callable[[], None], iterations: int) -> float:
        """Milliseconds per call of `body`, by events on the stream (after one warm-up call)."""

    @abc.abstractmethod
    def gemm_plan(
        self,
        a: Shape,
        b: Shape,
        out: Shape,
        epilogue: str,
        alpha: float,
        beta: float,
        solution: int,
        tf32: bool = False,
    ) -> Callable[[int, int, int, int], None]:
        """A gemm: call it with the pointers of A, B, the output and the bias (0 without one);
        `tf32`: a float32 product may multiply in TF32 where the library has it."""

    @property
    @abc.abstractmethod
    def stream_handle(self) -> int: ...


def _driver():  # no cover: needs a GPU driver (libcuda), as CudaPlatform, its one user
    from cuda.bindings import driver

    return driver


def cuda_check(result: tuple) -> object:  # no cover: needs a GPU driver (libcuda), as CudaPlatform
    driver = _driver()
    err = result[0]
    if err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        raise MgxError(f"CUDA error: {name.decode() if isinstance(name, bytes) else name}")
    return result[1] if len(result) == 2 else result[1:]


def open_cuda_device(index: int):
    """The cuda-core Device, current; one clear MgxError where there is no GPU or no driver."""
    try:
        from cuda.core import Device
    except ImportError:
        raise MgxError("the GPU target needs cuda-core: pip install 'mgxir[cuda]'") from None
    try:
        count = Device.get_all_devices() if hasattr(Device, "get_all_devices") else None
        if count is not None and index >= len(count):
            raise MgxError(f"no GPU {index}: {len(count)} GPU{'s' if len(count) != 1 else ''} visible")
        device = Device(index)
        device.set_current()
    except MgxError:
        raise
    except Exception as e:  # cuda-core reports a missing driver or device in several exception types
        raise MgxError(f"no usable NVIDIA GPU or driver ({type(e).__name__}: {str(e).splitlines()[0]})") from None
    return device


class CudaPlatform(Platform):  # pragma: no cover - needs an NVIDIA GPU (tests marked gpu)
    name = "cuda"
    graph_name = "CUDA graph"
    library_convolution = True
    tunes = True

    def __init__(self, index: int = 0):
        from cuda.core import EventOptions, LaunchConfig, ObjectCode, launch

        self.device = open_cuda_device(index)
        self.index = index
        self.stream = self.device.create_stream()
        self._stream_handle = int(self.stream.handle)
        self._launch, self._config, self._object_code = launch, LaunchConfig, ObjectCode
        self._timing = EventOptions(timing_enabled=True)
        self.buffers: list[object] = []  # keeps device allocations alive
        self._kernels: dict[tuple[bytes, str], object] = {}
        self._blas: int | None = None
        self._workspace = 0

    @property
    def stream_handle(self) -> int:
        return self._stream_handle

    def arch(self) -> str:
        from mgxir.targets.gpu.compiler import DEFAULT_ARCH, device_arch

        return device_arch(self.index) or DEFAULT_ARCH

    def allocate(self, nbytes: int) -> int:
        buffer = self.device.allocate(max(nbytes, 16), stream=self.stream)
        self.buffers.append(buffer)
        return int(buffer.handle)

    def copy_to_device(self, pointer: int, host: np.ndarray) -> None:
        cuda_check(_driver().cuMemcpyHtoDAsync(pointer, host.ctypes.data, host.nbytes, self._stream_handle))
        self.stream.sync()

    def copy_to_host(self, host: np.ndarray, pointer: int) -> None:
        cuda_check(_driver().cuMemcpyDtoHAsync(host.ctypes.data, pointer, host.nbytes, self._stream_handle))
        self.stream.sync()

    def synchronize(self) -> None:
        self.stream.sync()

    def launcher(self, binary: bytes, symbol: str, grid: int, block: int, args: Sequence[int]) -> Callable[[], None]:
        key = (binary, symbol)
        if key not in self._kernels:
            self._kernels[key] = self._object_code.from_cubin(binary).get_kernel(symbol)
        kernel = self._kernels[key]
        config = self._config(grid=grid, block=block)
        values = tuple(np.uint64(a) for a in args)
        launch, stream = self._launch, self.stream
        return lambda: launch(stream, config, kernel, *values)

    def capture(self, steps: Sequence[Callable[[], None]]) -> object:
        driver = _driver()
        mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        cuda_check(driver.cuStreamBeginCapture(self._stream_handle, mode))
        try:
            for step in steps:
                step()
        except BaseException:
            driver.cuStreamEndCapture(self._stream_handle)  # the stream leaves capture mode
            raise
        graph = cuda_check(driver.cuStreamEndCapture(self._stream_handle))
        return cuda_check(driver.cuGraphInstantiate(graph, 0))

    def replay(self, graph: object) -> None:
        cuda_check(_driver().cuGraphLaunch(graph, self._stream_handle))

    def time(self, body: Callable[[], None], iterations: int) -> float:
        body()
        start = self.stream.record(options=self._timing)
        for _ in range(iterations):
            body()
        stop = self.stream.record(options=self._timing)
        stop.sync()
        return (stop - start) / iterations

    def gemm_plan(
        self,
        a: Shape,
        b: Shape,
        out: Shape,
        epilogue: str,
        alpha: float,
        beta: float,
        solution: int,
        tf32: bool = False,
    ) -> Callable[[int, int, int, int], None]:
        from mgxir.targets.gpu.blas import WORKSPACE_BYTES, GemmPlan, create_handle

        if self._blas is None:
            self._blas = create_handle()
            self._workspace = self.allocate(WORKSPACE_BYTES)
        plan = GemmPlan(self._blas, a, b, out, epilogue, alpha, beta, tf32)
        plan.choice = min(max(solution, 0), len(plan.algorithms) - 1)
        stream, workspace = self._stream_handle, self._workspace
        call = lambda pa, pb, po, bias: plan(stream, workspace, pa, pb, po, bias)  # noqa: E731
        call.plan = plan  # type: ignore[attr-defined]
        return call


# platform name -> "module:class", imported when asked for (hip-python only where ROCm is)
PLATFORMS: dict[str, str] = {
    "cuda": "mgxir.targets.gpu.platforms:CudaPlatform",
    "hip": "mgxir.targets.gpu.hip_platform:HipPlatform",
}


def parse_device(text: str | int | None) -> tuple[str, int]:
    """`--device`: `N` (CUDA's GPU N), `cuda:N` or `hip:N` -> (platform, index)."""
    if text is None or text == "":
        return "cuda", 0
    if isinstance(text, int):
        return "cuda", text
    name, _, number = str(text).rpartition(":")
    name = name or "cuda"
    if name not in PLATFORMS:
        raise MgxError(f"--device for --target=gpu is N, cuda:N or hip:N, not '{text}'")
    try:
        index = int(number)
    except ValueError:
        raise MgxError(f"--device for --target=gpu is N, cuda:N or hip:N, not '{text}'") from None
    return name, index


def platform_class(name: str) -> type[Platform]:
    """The platform's class, its GPU not opened (what compiling for a given architecture asks)."""
    if name not in PLATFORMS:
        raise MgxError(f"no GPU platform '{name}' (one of {', '.join(PLATFORMS)})")
    module, _, cls = PLATFORMS[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def open_platform(name: str, index: int) -> Platform:
    return platform_class(name)(index)
