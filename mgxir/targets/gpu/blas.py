"""`gpu::gemm` through cuBLASLt (nvmath-python's bindings), with its bias/relu epilogues.

cuBLASLt is column-major; a row-major product D = A @ B is computed as D^T = B^T @ A^T, which
reads the row-major buffers unchanged: cuBLASLt's A is our B, its B our A, its m our N. The bias
along the last axis of D is then a vector along cuBLASLt's rows, which its BIAS epilogues add.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mgxir.diagnostics import MgxError
from mgxir.ir.dtype import DType
from mgxir.ir.shape import Shape
from mgxir.targets.gpu.lowering import gemm_layout

WORKSPACE_BYTES = 32 << 20
HEURISTIC_CANDIDATES = 32  # algorithms asked of cuBLASLt's heuristic; --exhaustive-tune times them all
SPLIT_K = (2, 3, 4)  # ways of splitting K tried for each offered algorithm that can split it
REDUCTION_SCHEMES = (1, 2, 4)  # CUBLASLT_REDUCTION_SCHEME_INPLACE, _COMPUTE_TYPE, _OUTPUT_TYPE

# element type -> (cudaDataType, cublasComputeType, scale numpy type)
GEMM_TYPES: dict[DType, tuple[int, int, type]] = {
    DType.float: (0, 68, np.float32),  # CUDA_R_32F, CUBLAS_COMPUTE_32F
    DType.half: (2, 68, np.float32),  # CUDA_R_16F
    DType.bf16: (14, 68, np.float32),  # CUDA_R_16BF
    DType.double: (1, 70, np.float64),  # CUDA_R_64F, CUBLAS_COMPUTE_64F
}
COMPUTE_32F_FAST_TF32 = 77  # CUBLAS_COMPUTE_32F_FAST_TF32: float32 data multiplied in TF32 (--fp32-math=tf32)
EPILOGUE_IDS = {"none": 1, "relu": 2, "bias": 4, "relu_bias": 6, "gelu": 32, "gelu_bias": 36}


def _lt():
    try:
        from nvmath.bindings import cublasLt
    except ImportError:
        raise MgxError("gpu::gemm needs nvmath-python (cuBLASLt): pip install 'mgxir[cuda]'") from None
    return cublasLt


@dataclasses.dataclass
class Layout:
    transposed: bool
    ld: int
    batch: int
    batch_stride: int


def layout_of(shape: Shape) -> Layout:
    found = gemm_layout(shape)
    if found is None:
        raise MgxError(f"gpu::gemm: operand layout {shape.lens} / {shape.strides} is not a strided batch")
    return Layout(*found)


def fold_batch(a: Layout, b: Layout, out: Layout, rows: int) -> tuple[Layout, Layout, Layout, int] | None:
    """A batched product whose B is one matrix for every batch and whose A and output batches
    follow one another row after row is one product of batch x `rows` rows, as torch runs a
    Linear layer on a 3-d input (BERT's projections: 32 x 128 rows become 4096): (A, B, output,
    rows) of that single product, or None where the batches do not fold."""
    batch = out.batch
    if batch == 1 or (b.batch != 1 and b.batch_stride != 0):
        return None
    if any(x.transposed or x.batch != batch or x.batch_stride != rows * x.ld for x in (a, out)):
        return None
    a, b, out = (dataclasses.replace(x, batch=1, batch_stride=0) for x in (a, b, out))
    return a, b, out, rows * batch


class GemmPlan:
    """One gemm's cuBLASLt descriptors and chosen algorithm; call it with pointers and a stream."""

    def __init__(
        self,
        handle: int,
        a: Shape,
        b: Shape,
        out: Shape,
        epilogue: str,
        alpha: float,
        beta: float,
        tf32: bool = False,
    ):
        lt = _lt()
        self.lt = lt
        self.handle = handle
        if out.dtype not in GEMM_TYPES or a.dtype != out.dtype or b.dtype != out.dtype:
            raise MgxError(f"gpu::gemm: no cuBLASLt type for {out.dtype.type_name}")
        data_type, compute_type, scale = GEMM_TYPES[out.dtype]
        if tf32 and out.dtype is DType.float:
            compute_type = COMPUTE_32F_FAST_TF32
        la, lb, lo = layout_of(a), layout_of(b), layout_of(out)
        if lo.transposed:
            raise MgxError("gpu::gemm: the output must be row-major")
        m, n, k = out.lens[-1], out.lens[-2], a.lens[-1]
        batch = max(la.batch, lb.batch, lo.batch)
        folded = fold_batch(la, lb, lo, n)
        if folded is not None:
            (la, lb, lo, n), batch = folded, 1
        self.alpha = np.array([alpha], scale)
        self.beta = np.array([beta], scale)
        self.desc = lt.matmul_desc_create(compute_type, 0 if scale is np.float32 else 1)
        self._set(lt.matmul_desc_set_attribute, self.desc, lt.MatmulDescAttribute.TRANSA, int(lb.transposed), np.int32)
        self._set(lt.matmul_desc_set_attribute, self.desc, lt.MatmulDescAttribute.TRANSB, int(la.transposed), np.int32)
        self._set(
            lt.matmul_desc_set_attribute, self.desc, lt.MatmulDescAttribute.EPILOGUE, EPILOGUE_IDS[epilogue], np.int32
        )
        self.with_bias = epilogue.endswith("bias")
        # cuBLASLt's A: our B, stored (K x N row-major) = (N x K column-major) unless transposed
        self.a_desc = self._layout(data_type, (m, k) if not lb.transposed else (k, m), lb, batch)
        self.b_desc = self._layout(data_type, (k, n) if not la.transposed else (n, k), la, batch)
        self.d_desc = self._layout(data_type, (m, n), lo, batch)
        preference = lt.matmul_preference_create()
        self._set(
            lt.matmul_preference_set_attribute,
            preference,
            lt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES,
            WORKSPACE_BYTES,
            np.uint64,
        )
        results = np.zeros(HEURISTIC_CANDIDATES, lt.matmul_heuristic_result_dtype)
        count = np.zeros(1, np.int32)
        lt.matmul_algo_get_heuristic(
            handle,
            self.desc,
            self.a_desc,
            self.b_desc,
            self.d_desc,
            self.d_desc,
            preference,
            len(results),
            results.ctypes.data,
            count.ctypes.data,
        )
        lt.matmul_preference_destroy(preference)
        if count[0] == 0:
            raise MgxError(f"gpu::gemm: cuBLASLt has no algorithm for {a.lens} x {b.lens} ({epilogue})")
        offered = results[: int(count[0])]
        # the heuristic's algorithms first (choice 0 is its pick), then their split-K variants
        self.offered = len(offered)
        self.algorithms = np.concatenate([offered, self._split_k_variants(offered)])
        self.choice = 0

    def _split_k_variants(self, offered: np.ndarray) -> np.ndarray:
        """Each offered algorithm that supports split-K, splitting K in SPLIT_K ways with every
        reduction scheme it has, where cuBLASLt accepts the configuration for this problem within
        the workspace. A gemm whose output tiles fill the GPU's multiprocessors unevenly (BERT's
        768-wide down projection: 192 tiles of 128x128 on 132 SMs) runs more tiles this way."""
        lt = self.lt
        variants = []
        checked = np.zeros(1, lt.matmul_heuristic_result_dtype)
        for candidate in offered:
            algo = np.zeros(1, lt.matmul_heuristic_result_dtype)
            algo[0] = candidate
            pointer = algo.ctypes.data  # the result record starts with its algorithm
            if not self._capability(pointer, lt.MatmulAlgoCapAttribute.SPLITK_SUPPORT, np.int32):
                continue
            mask = self._capability(pointer, lt.MatmulAlgoCapAttribute.REDUCTION_SCHEME_MASK, np.uint32)
            schemes = [bit for bit in REDUCTION_SCHEMES if mask & bit]
            for split in SPLIT_K:
                for scheme in schemes:
                    variant = algo.copy()
                    at = variant.ctypes.data
                    self._set(
                        lt.matmul_algo_config_set_attribute,
                        at,
                        lt.MatmulAlgoConfigAttribute.SPLITK_NUM,
                        split,
                        np.uint32,
                    )
                    self._set(
                        lt.matmul_algo_config_set_attribute,
                        at,
                        lt.MatmulAlgoConfigAttribute.REDUCTION_SCHEME,
                        scheme,
                        np.uint32,
                    )
                    try:
                        lt.matmul_algo_check(
                            self.handle,
                            self.desc,
                            self.a_desc,
                            self.b_desc,
                            self.d_desc,
                            self.d_desc,
                            at,
                            checked.ctypes.data,
                        )
                    except Exception:  # cuBLASLt refuses this split for this problem
                        continue
                    if int(checked[0]["workspace_size"]) <= WORKSPACE_BYTES:
                        variants.append(variant[0])
        return np.array(variants, lt.matmul_heuristic_result_dtype)

    def _capability(self, algo: int, attribute: int, dtype: type) -> int:
        buf = np.zeros(1, dtype)
        written = np.zeros(1, np.uint64)
        self.lt.matmul_algo_cap_get_attribute(algo, attribute, buf.ctypes.data, buf.nbytes, written.ctypes.data)
        return int(buf[0])

    def _set(self, setter, target: int, attribute: int, value: int, dtype: type) -> None:
        buf = np.array([value], dtype)
        setter(target, attribute, buf.ctypes.data, buf.nbytes)

    def _layout(self, data_type: int, rows_cols: tuple[int, int], layout: Layout, batch: int) -> int:
        lt = self.lt
        rows, cols = rows_cols
        desc = lt.matrix_layout_create(data_type, rows, cols, layout.ld)
        if batch > 1:
            self._set(lt.matrix_layout_set_attribute, desc, lt.MatrixLayoutAttribute.BATCH_COUNT, batch, np.int32)
            self._set(
                lt.matrix_layout_set_attribute,
                desc,
                lt.MatrixLayoutAttribute.STRIDED_BATCH_OFFSET,
                layout.batch_stride if layout.batch > 1 else 0,
                np.int64,
            )
        return desc

    def __call__(self, stream: int, workspace: int, a: int, b: int, out: int, bias: int = 0) -> None:
        lt = self.lt
        if self.with_bias:
            self._set(lt.matmul_desc_set_attribute, self.desc, lt.MatmulDescAttribute.BIAS_POINTER, bias, np.uint64)
        algo = self.algorithms[self.choice : self.choice + 1]
        lt.matmul(
            self.handle,
            self.desc,
            self.alpha.ctypes.data,
            b,
            self.a_desc,
            a,
            self.b_desc,
            self.beta.ctypes.data,
            out,
            self.d_desc,
            out,
            self.d_desc,
            algo.ctypes.data,
            workspace,
            WORKSPACE_BYTES,
            stream,
        )


def create_handle() -> int:
    return _lt().create()
