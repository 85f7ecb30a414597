"""The GPU generator's kernels compiled for the host with clang behind a thin shim header, so that
the tests check the generated C++'s numbers without a GPU.

The shim makes CUDA/HIP spellings plain C++ (`__global__`, `__device__`, thread and block indices
as thread-local variables, `__syncthreads` a no-op), takes the kernel prelude's HIP branch and gives
it a software `_Float16` (clang 14 has none on x86) that converts with round-to-nearest-even. Every
kernel of a batch goes into one shared library (one compile), cached by the source's hash in the
temporary directory; each kernel gets a `run_<symbol>(buffers)` entry that runs its whole grid
sequentially, which a pointwise kernel (no shared memory, no shuffles) permits.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mgxir.targets.gpu.kernels import PRELUDE, Kernel, Tensor, storage_type

SHIM = r"""
#include <math.h>
#include <string.h>
#define __HIP__ 1
#define __device__
#define __global__
#define __launch_bounds__(n)
#define __shared__ static
struct mgx_dim3 { unsigned int x, y, z; };
static thread_local mgx_dim3 threadIdx, blockIdx, blockDim;
static inline void __syncthreads() {}
template <class T> T __shfl_xor(T v, int) { return v; }
static inline float __uint_as_float(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
static inline unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
static inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
static inline int __float_as_int(float f) { int u; memcpy(&u, &f, 4); return u; }
static inline double __longlong_as_double(long long u) { double f; memcpy(&f, &u, 8); return f; }
static inline long long __double_as_longlong(double f) { long long u; memcpy(&u, &f, 8); return u; }
struct mgx_soft_half {
  unsigned short bits;
  mgx_soft_half() = default;
  explicit mgx_soft_half(float f) {
    unsigned int x = __float_as_uint(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) { bits = (unsigned short)(sign | 0x7e00u); return; }
    if (ax >= 0x477ff000u) { bits = (unsigned short)(sign | 0x7c00u); return; }
    if (ax < 0x38800000u) {  // a half subnormal: the value in units of 2^-24, rounded to even
      bits = (unsigned short)(sign | (unsigned int)rintf(__uint_as_float(ax) * 16777216.0f));
      return;
    }
    ax += 0xc8000fffu + ((ax >> 13) & 1u);
    bits = (unsigned short)(sign | (ax >> 13));
  }
  explicit operator float() const {
    unsigned int sign = (bits & 0x8000u) << 16, e = (bits >> 10) & 0x1fu, m = bits & 0x3ffu;
    if (e == 0) { float r = (float)m * 5.9604644775390625e-8f; return sign ? -r : r; }
    if (e == 31) return __uint_as_float(sign | 0x7f800000u | (m << 13));
    return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
  }
};
#define _Float16 mgx_soft_half
"""


def _compile(source: str) -> ctypes.CDLL:
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    directory = Path(tempfile.gettempdir()) / "mgxir-host-kernels"
    directory.mkdir(exist_ok=True)
    library = directory / f"{digest}.so"
    if not library.exists():
        source_file = directory / f"{digest}.cc"
        source_file.write_text(source)
        partial = directory / f"{digest}.{id(source)}.so"
        flags = ["-std=c++17", "-O1", "-ffp-contract=off", "-fPIC", "-shared", "-w"]
        subprocess.run(["clang++", *flags, "-o", str(partial), str(source_file)], check=True, capture_output=True)
        partial.replace(library)
    return ctypes.CDLL(str(library))


def have_clang() -> bool:
    return shutil.which("clang++") is not None


class HostKernels:
    """A batch of generated kernels, compiled together for the host."""

    def __init__(self, kernels: Sequence[tuple[Kernel, Sequence[Tensor], Tensor]]) -> None:
        parts = [SHIM, PRELUDE]
        self.symbols: list[str] = []
        for index, (kernel, inputs, output) in enumerate(kernels):
            symbol = f"k{index}"
            body = kernel.source.replace(PRELUDE, "").replace(f"{kernel.symbol}(", f"{symbol}(", 1)
            casts = [f"(const {storage_type(t.dtype)}*)b[{k}]" for k, t in enumerate(inputs)]
            casts.append(f"({storage_type(output.dtype)}*)b[{len(inputs)}]")
            blocks = kernel.global_size // kernel.local_size
            parts.append(body)
            parts.append(
                f'extern "C" void run_{symbol}(void** b) {{\n'
                f"  blockDim.x = {kernel.local_size};\n"
                f"  for (unsigned int g = 0; g < {blocks}u; ++g)\n"
                f"    for (unsigned int t = 0; t < {kernel.local_size}u; ++t) {{\n"
                f"      blockIdx.x = g; threadIdx.x = t; {symbol}({', '.join(casts)});\n"
                "    }\n}\n"
            )
            self.symbols.append(symbol)
        self.library = _compile("\n".join(parts))

    def run(self, index: int, inputs: Sequence[np.ndarray], out: np.ndarray) -> np.ndarray:
        arrays = [np.ascontiguousarray(a) for a in inputs]
        pointers = (ctypes.c_void_p * (len(arrays) + 1))(*(a.ctypes.data for a in arrays), out.ctypes.data)
        getattr(self.library, f"run_{self.symbols[index]}")(pointers)
        return out
