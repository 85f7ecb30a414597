"""The `hip` platform: AMD GPUs through hip-python (HIP for memory, modules, launches, streams,
graphs and events; hiprtc for the kernel sources, the same sources NVRTC compiles; hipBLASLt for
gemms, with the same epilogues as cuBLASLt). Convolutions have no library call here (MIOpen has no
Python bindings on PyPI): the lowering makes them generated kernels.

Only runs where ROCm is installed; everywhere else opening it is one clear error. Never install
hip-python-interop beside cuda-bindings: both install a package named `cuda`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from mgxir.diagnostics import MgxError
from mgxir.ir.dtype import DType
from mgxir.ir.shape import Shape
from mgxir.targets.gpu.hiprtc import bindings as _bindings
from mgxir.targets.gpu.hiprtc import ok as _ok
from mgxir.targets.gpu.platforms import Platform

WORKSPACE_BYTES = 32 << 20
# element type -> (hipDataType, hipblasComputeType_t, scale numpy type)
HIPBLASLT_TYPES: dict[DType, tuple[int, int, type]] = {
    DType.float: (0, 2, np.float32),  # HIP_R_32F, HIPBLAS_COMPUTE_32F
    DType.half: (2, 2, np.float32),  # HIP_R_16F
    DType.bf16: (14, 2, np.float32),  # HIP_R_16BF
    DType.double: (1, 7, np.float64),  # HIP_R_64F, HIPBLAS_COMPUTE_64F
}
# hipBLASLt numbers its epilogues as cuBLASLt does
EPILOGUE_IDS = {"none": 1, "relu": 2, "bias": 4, "relu_bias": 6, "gelu": 32, "gelu_bias": 36}


class HipPlatform(Platform):  # pragma: no cover - needs an AMD GPU and ROCm (tests marked rocm)
    name = "hip"
    graph_name = "HIP graph"
    library_convolution = False
    tunes = False  # tune.py times with CUDA events

    def __init__(self, index: int = 0):
        hip, _ = _bindings()
        self.hip = hip
        try:
            count = _ok(hip.hipGetDeviceCount(), "hipGetDeviceCount")
        except (RuntimeError, OSError, MgxError) as e:
            # hip-python's loader quotes byte strings as 'b'name''
            reason = re.sub(r"'?b'([^']*)''?", r"'\1'", str(e).splitlines()[0])
            raise MgxError(f"no usable AMD GPU or ROCm runtime ({reason})") from None
        if index >= count:
            raise MgxError(f"no GPU {index}: {count} AMD GPU{'s' if count != 1 else ''} visible")
        _ok(hip.hipSetDevice(index), "hipSetDevice")
        self.index = index
        self.stream = _ok(hip.hipStreamCreate(), "hipStreamCreate")
        self.buffers: list[object] = []
        self._modules: dict[bytes, object] = {}
        self._functions: dict[tuple[bytes, str], object] = {}
        self._blas: object | None = None
        self._workspace = 0
        self._start = _ok(hip.hipEventCreate(), "hipEventCreate")
        self._stop = _ok(hip.hipEventCreate(), "hipEventCreate")

    @property
    def stream_handle(self) -> int:
        return int(self.stream)

    def arch(self) -> str:
        properties = _ok(self.hip.hipGetDeviceProperties(self.index), "hipGetDeviceProperties")
        name = properties.gcnArchName
        return (name.decode() if isinstance(name, bytes) else str(name)).split(":")[0]

    def allocate(self, nbytes: int) -> int:
        pointer = _ok(self.hip.hipMalloc(max(nbytes, 16)), "hipMalloc")
        self.buffers.append(pointer)
        return int(pointer)

    def copy_to_device(self, pointer: int, host: np.ndarray) -> None:
        _ok(self.hip.hipMemcpyHtoDAsync(pointer, host.ctypes.data, host.nbytes, self.stream), "hipMemcpyHtoDAsync")
        self.synchronize()

    def copy_to_host(self, host: np.ndarray, pointer: int) -> None:
        _ok(self.hip.hipMemcpyDtoHAsync(host.ctypes.data, pointer, host.nbytes, self.stream), "hipMemcpyDtoHAsync")
        self.synchronize()

    def synchronize(self) -> None:
        _ok(self.hip.hipStreamSynchronize(self.stream), "hipStreamSynchronize")

    def launcher(self, binary: bytes, symbol: str, grid: int, block: int, args: Sequence[int]) -> Callable[[], None]:
        import ctypes

        hip = self.hip
        if binary not in self._modules:
            self._modules[binary] = _ok(hip.hipModuleLoadData(binary), "hipModuleLoadData")
        key = (binary, symbol)
        if key not in self._functions:
            self._functions[key] = _ok(
                hip.hipModuleGetFunction(self._modules[binary], symbol.encode()), "hipModuleGetFunction"
            )
        function = self._functions[key]
        extra = tuple(ctypes.c_void_p(a) for a in args)
        stream = self.stream

        def launch() -> None:
            _ok(
                hip.hipModuleLaunchKernel(
                    function, grid, 1, 1, block, 1, 1, sharedMemBytes=0, stream=stream, kernelParams=None, extra=extra
                ),
                symbol,
            )

        return launch

    def capture(self, steps: Sequence[Callable[[], None]]) -> object:
        hip = self.hip
        _ok(hip.hipStreamBeginCapture(self.stream, hip.hipStreamCaptureMode.hipStreamCaptureModeThreadLocal), "capture")
        for step in steps:
            step()
        graph = _ok(hip.hipStreamEndCapture(self.stream), "hipStreamEndCapture")
        executable, _, _ = _ok(hip.hipGraphInstantiate(graph, None, 0), "hipGraphInstantiate")
        return executable

    def replay(self, graph: object) -> None:
        _ok(self.hip.hipGraphLaunch(graph, self.stream), "hipGraphLaunch")

    def time(self, body: Callable[[], None], iterations: int) -> float:
        hip = self.hip
        body()
        _ok(hip.hipEventRecord(self._start, self.stream), "hipEventRecord")
        for _ in range(iterations):
            body()
        _ok(hip.hipEventRecord(self._stop, self.stream), "hipEventRecord")
        _ok(hip.hipEventSynchronize(self._stop), "hipEventSynchronize")
        return float(_ok(hip.hipEventElapsedTime(self._start, self._stop), "hipEventElapsedTime")) / iterations

    def gemm_plan(
        self,
        a: Shape,
        b: Shape,
        out: Shape,
        epilogue: str,
        alpha: float,
        beta: float,
        solution: int,
        tf32: bool = False,  # float32 gemms multiply in float32 here (hipBLASLt's XF32 is not asked for)
    ) -> Callable[[int, int, int, int], None]:
        from hip import hipblaslt

        if self._blas is None:
            self._blas = _ok(hipblaslt.hipblasLtCreate(), "hipblasLtCreate")
            self._workspace = self.allocate(WORKSPACE_BYTES)
        plan = HipGemmPlan(hipblaslt, self._blas, a, b, out, epilogue, alpha, beta)
        plan.choice = min(max(solution, 0), plan.count - 1)
        stream, workspace = self.stream, self._workspace
        call = lambda pa, pb, po, bias: plan(stream, workspace, pa, pb, po, bias)  # noqa: E731
        call.plan = plan  # type: ignore[attr-defined]
        return call


class HipGemmPlan:  # pragma: no cover - needs ROCm's hipBLASLt
    """One gemm's hipBLASLt descriptors and algorithm, laid out as blas.GemmPlan lays out cuBLASLt's
    (row-major D = A @ B as column-major D^T = B^T @ A^T)."""

    def __init__(self, lt, handle, a: Shape, b: Shape, out: Shape, epilogue: str, alpha: float, beta: float):
        from mgxir.targets.gpu.blas import layout_of

        self.lt, self.handle = lt, handle
        if out.dtype not in HIPBLASLT_TYPES or a.dtype != out.dtype or b.dtype != out.dtype:
            raise MgxError(f"gpu::gemm: no hipBLASLt type for {out.dtype.type_name}")
        data_type, compute_type, scale = HIPBLASLT_TYPES[out.dtype]
        la, lb, lo = layout_of(a), layout_of(b), layout_of(out)
        if lo.transposed:
            raise MgxError("gpu::gemm: the output must be row-major")
        m, n, k = out.lens[-1], out.lens[-2], a.lens[-1]
        batch = max(la.batch, lb.batch, lo.batch)
        self.alpha, self.beta = np.array([alpha], scale), np.array([beta], scale)
        attrs = lt.hipblasLtMatmulDescAttributes_t
        self.desc = _ok(lt.hipblasLtMatmulDescCreate(compute_type, 0 if scale is np.float32 else 1), "MatmulDescCreate")
        self._set(lt.hipblasLtMatmulDescSetAttribute, self.desc, attrs.HIPBLASLT_MATMUL_DESC_TRANSA, int(lb.transposed))
        self._set(lt.hipblasLtMatmulDescSetAttribute, self.desc, attrs.HIPBLASLT_MATMUL_DESC_TRANSB, int(la.transposed))
        self._set(
            lt.hipblasLtMatmulDescSetAttribute, self.desc, attrs.HIPBLASLT_MATMUL_DESC_EPILOGUE, EPILOGUE_IDS[epilogue]
        )
        self.with_bias = epilogue.endswith("bias")
        self.a_desc = self._layout(data_type, (m, k) if not lb.transposed else (k, m), lb, batch)
        self.b_desc = self._layout(data_type, (k, n) if not la.transposed else (n, k), la, batch)
        self.d_desc = self._layout(data_type, (m, n), lo, batch)
        preference = _ok(lt.hipblasLtMatmulPreferenceCreate(), "MatmulPreferenceCreate")
        self._set(
            lt.hipblasLtMatmulPreferenceSetAttribute,
            preference,
            lt.hipblasLtMatmulPreferenceAttributes_t.HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
            WORKSPACE_BYTES,
            np.uint64,
        )
        result_type = lt.hipblasLtMatmulHeuristicResult_t
        self.result_size = result_type.c_sizeof()
        self.results = np.zeros(8 * self.result_size, np.uint8)
        self.count: int = int(
            _ok(
                lt.hipblasLtMatmulAlgoGetHeuristic(
                    handle, self.desc, self.a_desc, self.b_desc, self.d_desc, self.d_desc, preference, 8,
                    self.results.ctypes.data,
                ),
                "MatmulAlgoGetHeuristic",
            )
        )  # fmt: skip
        if self.count == 0:
            raise MgxError(f"gpu::gemm: hipBLASLt has no algorithm for {a.lens} x {b.lens} ({epilogue})")
        self.choice = 0

    @property
    def algorithms(self) -> range:
        return range(self.count)

    def _set(self, setter, target, attribute, value: int, dtype: type = np.int32) -> None:
        buffer = np.array([value], dtype)
        _ok(setter(target, attribute, buffer.ctypes.data, buffer.nbytes), "SetAttribute")

    def _layout(self, data_type: int, rows_cols: tuple[int, int], layout, batch: int):
        lt = self.lt
        attrs = lt.hipblasLtMatrixLayoutAttribute_t
        desc = _ok(lt.hipblasLtMatrixLayoutCreate(data_type, rows_cols[0], rows_cols[1], layout.ld), "LayoutCreate")
        if batch > 1:
            self._set(lt.hipblasLtMatrixLayoutSetAttribute, desc, attrs.HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch)
            self._set(
                lt.hipblasLtMatrixLayoutSetAttribute,
                desc,
                attrs.HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                layout.batch_stride if layout.batch > 1 else 0,
                np.int64,
            )
        return desc

    def __call__(self, stream, workspace: int, a: int, b: int, out: int, bias: int = 0) -> None:
        lt = self.lt
        if self.with_bias:
            attribute = lt.hipblasLtMatmulDescAttributes_t.HIPBLASLT_MATMUL_DESC_BIAS_POINTER
            self._set(lt.hipblasLtMatmulDescSetAttribute, self.desc, attribute, bias, np.uint64)
        algo = self.results.ctypes.data + self.choice * self.result_size  # the algo leads the result struct
        _ok(
            lt.hipblasLtMatmul(
                self.handle, self.desc, self.alpha.ctypes.data, b, self.a_desc, a, self.b_desc,
                self.beta.ctypes.data, out, self.d_desc, out, self.d_desc, algo, workspace, WORKSPACE_BYTES, stream,
            ),
            "hipblasLtMatmul",
        )  # fmt: skip
