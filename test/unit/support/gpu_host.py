"""The GPU generator's kernels compiled for the host with clang behind a thin shim header, so that
the tests check the generated C++'s numbers without a GPU: kernels on their own (`HostKernels`) and
whole lowered programs whose steps are generated kernels and views (`run_emulated`).

The shim makes CUDA/HIP spellings plain C++ (`__global__`, `__device__`, thread and block indices
as globals), takes the kernel prelude's HIP branch (64-lane warps) and gives it a software
`_Float16` (clang 14 has none on x86) that converts with round-to-nearest-even. A launch runs the
grid's blocks one after another. Where the kernel's threads are independent, a block's threads
are loop iterations; where they cooperate (shared memory, barriers, warp shuffles: reductions),
each thread of the block is a fiber (ucontext) on its own stack: a barrier returns to the
scheduler, which resumes every live thread once per round, so no thread passes a barrier before
every thread still running has reached it; a shuffle writes the lane's value to a slot, waits at
a barrier, reads its partner's slot and waits again. Threads that return early take no further
part (their lanes read as their last value, which well-formed kernels never use).

Every kernel of a batch goes into one shared library (one compile), cached by the source's hash in
the temporary directory.
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
from numpy.lib.stride_tricks import as_strided

from mgxir.interp import Interpreter
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.targets.gpu.kernels import PRELUDE, Kernel, Tensor
from mgxir.targets.gpu.views import view_offset

SHIM = r"""
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <utility>
#define __HIP__ 1
#define __device__
#define __global__
#define __launch_bounds__(n)
#define __shared__ static
struct mgx_dim3 { unsigned int x, y, z; };
static mgx_dim3 threadIdx, blockIdx, blockDim;
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

// cooperating threads: one fiber each, on one host thread
enum { MGX_MAX_THREADS = 1024, MGX_STACK = 128 * 1024 };
static ucontext_t mgx_scheduler, mgx_threads[MGX_MAX_THREADS];
static bool mgx_fibers, mgx_returned;
static void (*mgx_body)();
static void** mgx_buffers;
static unsigned long long mgx_lanes[MGX_MAX_THREADS];
static inline void __syncthreads() {
  if (mgx_fibers) swapcontext(&mgx_threads[threadIdx.x], &mgx_scheduler);
}
template <class T> T __shfl_xor(T v, int mask) {
  static_assert(sizeof(T) <= sizeof(unsigned long long), "a shuffled value fits a lane's slot");
  memcpy(&mgx_lanes[threadIdx.x], &v, sizeof(T));
  __syncthreads();
  memcpy(&v, &mgx_lanes[threadIdx.x ^ (unsigned)mask], sizeof(T));
  __syncthreads();
  return v;
}
static void mgx_fiber() { mgx_body(); mgx_returned = true; }
static void mgx_launch(void (*body)(), void** buffers, long long blocks, unsigned local, bool cooperating) {
  static char* stacks = (char*)malloc((size_t)MGX_MAX_THREADS * MGX_STACK);
  static bool live[MGX_MAX_THREADS];
  mgx_body = body;
  mgx_buffers = buffers;
  blockDim = {local, 1, 1};
  for (long long b = 0; b < blocks; ++b) {
    blockIdx.x = (unsigned)b;
    if (!cooperating) {
      for (unsigned t = 0; t < local; ++t) { threadIdx.x = t; body(); }
      continue;
    }
    for (unsigned t = 0; t < local; ++t) {
      getcontext(&mgx_threads[t]);
      mgx_threads[t].uc_stack.ss_sp = stacks + (size_t)t * MGX_STACK;
      mgx_threads[t].uc_stack.ss_size = MGX_STACK;
      mgx_threads[t].uc_link = &mgx_scheduler;
      makecontext(&mgx_threads[t], mgx_fiber, 0);
      live[t] = true;
    }
    mgx_fibers = true;
    for (bool running = true; running;) {  // one round: every live thread to its next barrier
      running = false;
      for (unsigned t = 0; t < local; ++t) {
        if (!live[t]) continue;
        threadIdx.x = t;
        mgx_returned = false;
        swapcontext(&mgx_scheduler, &mgx_threads[t]);
        live[t] = !mgx_returned;
        running = running || live[t];
      }
    }
    mgx_fibers = false;
  }
}
template <class... P, std::size_t... I> static void mgx_call(void (*k)(P...), std::index_sequence<I...>) {
  k(static_cast<P>(mgx_buffers[I])...);
}
"""

# words in a kernel's own code (not the prelude) by which its threads cooperate
COOPERATING = ("__shared__", "__syncthreads", "MGX_SHFL_XOR(", "mgx_block_reduce(")

COMPILER = shutil.which("clang++")


def have_clang() -> bool:
    return COMPILER is not None


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
        subprocess.run([COMPILER or "clang++", *flags, "-o", str(partial), str(source_file)], check=True)
        partial.replace(library)
    return ctypes.CDLL(str(library))


def _entry(name: str, symbol: str, arguments: int, cooperating: bool) -> str:
    """`extern "C" void name(void** buffers, long long blocks, int local)`: launches `symbol`."""
    return (
        f"static void {name}_body() {{ mgx_call(&{symbol}, std::make_index_sequence<{arguments}>{{}}); }}\n"
        f'extern "C" void {name}(void** b, long long blocks, int local) {{\n'
        f"  mgx_launch({name}_body, b, blocks, (unsigned)local, {'true' if cooperating else 'false'});\n}}\n"
    )


def _cooperating(source: str) -> bool:
    body = source[source.index('extern "C"') :]
    return any(word in body for word in COOPERATING)


def _launch(function: ctypes._CFuncPtr, pointers: Sequence[int], global_size: int, local_size: int) -> None:
    buffers = (ctypes.c_void_p * len(pointers))(*pointers)
    function(buffers, ctypes.c_longlong(global_size // local_size), ctypes.c_int(local_size))


class HostKernels:
    """A batch of generated kernels, compiled together for the host."""

    def __init__(self, kernels: Sequence[tuple[Kernel, Sequence[Tensor], Tensor]]) -> None:
        parts = [SHIM, PRELUDE]
        self.kernels = [kernel for kernel, _, _ in kernels]
        for index, (kernel, inputs, _) in enumerate(kernels):
            symbol = f"k{index}"
            parts.append(kernel.source.replace(PRELUDE, "").replace(f"{kernel.symbol}(", f"{symbol}(", 1))
            parts.append(_entry(f"run_{symbol}", symbol, len(inputs) + 1, _cooperating(kernel.source)))
        self.library = _compile("\n".join(parts))

    def run(self, index: int, inputs: Sequence[np.ndarray], out: np.ndarray) -> np.ndarray:
        arrays = [np.ascontiguousarray(a) for a in inputs]
        kernel = self.kernels[index]
        function = getattr(self.library, f"run_k{index}")
        _launch(function, [*(a.ctypes.data for a in arrays), out.ctypes.data], kernel.global_size, kernel.local_size)
        return out


_LIBRARIES: dict[str, ctypes.CDLL] = {}


def kernel_library(source: str, symbol: str, arguments: int) -> ctypes.CDLL:
    """One kernel's source compiled for the host, launched by its `mgx_emulate(buffers, blocks,
    local)`."""
    text = SHIM + source + _entry("mgx_emulate", symbol, arguments, _cooperating(source))
    if text not in _LIBRARIES:
        _LIBRARIES[text] = _compile(text)
    return _LIBRARIES[text]


def _staged(array: np.ndarray, shape: Shape) -> np.ndarray:
    staged = np.zeros(max(shape.element_space, 1), shape.dtype.numpy)
    view = as_strided(staged, shape.lens, [s * staged.itemsize for s in shape.strides])
    array = np.asarray(array)
    view[...] = np.broadcast_to(array.reshape(view.shape) if array.size == view.size else array, view.shape)
    return staged


def run_emulated(program: Program, params: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The outputs of a lowered program whose steps are all generated kernels (and views);
    library calls (gpu::gemm, gpu::convolution, gpu::attention) are not emulated."""
    module = program.main
    buffers: list[np.ndarray] = []  # kept alive while their addresses are used
    pointer: dict = {}
    literal_values = Interpreter(program)

    def hold(array: np.ndarray) -> int:
        buffers.append(array)
        return array.ctypes.data

    outputs = []
    for ins in module:
        name = ins.op.defn.name
        if ins.is_param:
            pointer[ins] = hold(_staged(params[ins.param_name], ins.shape))
        elif ins.is_literal:
            pointer[ins] = hold(_staged(literal_values._literal_value(module, ins, 0), ins.shape))
        elif ins.is_return:
            outputs = list(ins.args)
            break
        elif name == "allocate":
            pointer[ins] = hold(np.zeros(max(ins.shape.bytes, 1) + 64, np.uint8))
        elif name == "load":
            pointer[ins] = pointer[ins.args[0]] + ins.op["offset"]
        elif name == "gpu::code_object":
            library = kernel_library(ins.op["code_object"].source, ins.op["symbol_name"], len(ins.args))
            _launch(library.mgx_emulate, [pointer[a] for a in ins.args], ins.op["global"], ins.op["local"])
            pointer[ins] = pointer[ins.args[-1]]
        elif (offset := view_offset(ins, 0)) is not None and ins.args and ins.args[0] in pointer:
            pointer[ins] = pointer[ins.args[0]] + offset * ins.shape.dtype.itemsize
        else:
            raise NotImplementedError(f"{name} is not emulated")
    results = []
    for out in outputs:
        shape = out.shape
        raw = (ctypes.c_char * (max(shape.element_space, 1) * shape.dtype.itemsize)).from_address(pointer[out])
        staged = np.frombuffer(bytes(raw), shape.dtype.numpy)
        results.append(np.array(as_strided(staged, shape.lens, [s * staged.itemsize for s in shape.strides])))
    return results


class DeviceKernels:
    """The same batch on the GPU (tests marked gpu): one source, every kernel renamed, compiled
    once by NVRTC, each kernel launched on copies of its arrays."""

    def __init__(self, kernels: Sequence[tuple[Kernel, Sequence[Tensor], Tensor]]) -> None:
        from mgxir.targets.gpu.compiler import compile_source
        from mgxir.targets.gpu.platforms import open_platform

        self.platform = open_platform("cuda", 0)
        parts = [PRELUDE]
        self.kernels = [kernel for kernel, _, _ in kernels]
        for index, kernel in enumerate(self.kernels):
            parts.append(kernel.source.replace(PRELUDE, "").replace(f"{kernel.symbol}(", f"k{index}(", 1))
        self.binary = compile_source("\n".join(parts), "agreement", self.platform.arch())

    def run(self, index: int, inputs: Sequence[np.ndarray], out: np.ndarray) -> np.ndarray:
        kernel, platform = self.kernels[index], self.platform
        pointers = []
        for array in [*inputs, out]:
            pointers.append(platform.allocate(max(array.nbytes, 1)))
            platform.copy_to_device(pointers[-1], np.ascontiguousarray(array))
        blocks = max(1, kernel.global_size // kernel.local_size)
        platform.launcher(self.binary, f"k{index}", blocks, kernel.local_size, pointers)()
        platform.synchronize()
        platform.copy_to_host(out, pointers[-1])
        return out
