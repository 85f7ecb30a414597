"""Runs a lowered program's generated kernels on the CPU, for tests on machines without a GPU.

Each kernel source is compiled by the host's C++ compiler through its HIP branch (half through
`_Float16`), with the CUDA keywords defined away and `blockIdx`/`threadIdx` as globals that a loop
over the launch's blocks and threads sets: exact for kernels whose threads are independent (one
output element each: copies, data movement, depthwise convolutions, pointwise modules), not for
kernels whose threads cooperate (shared memory, barriers, warp shuffles: reductions).
Library calls (gpu::gemm, gpu::convolution, gpu::attention) are not emulated.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mgxir.interp import Interpreter
from mgxir.ir.shape import Shape
from mgxir.targets.gpu.views import view_offset

COMPILER = shutil.which("g++")
COOPERATING = ("__shared__", "__syncthreads", "MGX_SHFL_XOR(")  # in a kernel's own code, not the prelude

SHIM = r"""
#include <cmath>
#include <cstring>
#include <utility>
#define __HIP__ 1
#define __global__
#define __device__
#define __launch_bounds__(n)
#define __shared__ static
#define __syncthreads()
#define __shfl_xor(v, o) (v)
struct mgx_dim3 { unsigned x, y, z; };
static mgx_dim3 threadIdx, blockIdx, blockDim;
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
"""

LAUNCHER = r"""
template <class... P, std::size_t... I> static void mgx_call(void (*k)(P...), void** a, std::index_sequence<I...>) {
  k(static_cast<P>(a[I])...);
}
extern "C" void mgx_emulate(void** args, long long blocks, int local) {
  blockDim = {(unsigned)local, 1, 1};
  for (long long b = 0; b < blocks; ++b)
    for (int t = 0; t < local; ++t) {
      blockIdx.x = (unsigned)b;
      threadIdx.x = (unsigned)t;
      mgx_call(&SYMBOL, args, std::make_index_sequence<COUNT>{});
    }
}
"""

_LIBRARIES: dict[str, ctypes.CDLL] = {}
_BUILD = Path(tempfile.mkdtemp(prefix="mgxir-emulator-"))


def _library(source: str, symbol: str, count: int) -> ctypes.CDLL:
    text = SHIM + source + LAUNCHER.replace("SYMBOL", symbol).replace("COUNT", str(count))
    key = hashlib.sha256(text.encode()).hexdigest()[:24]
    if key not in _LIBRARIES:
        cpp, so = _BUILD / f"{key}.cpp", _BUILD / f"{key}.so"
        cpp.write_text(text)
        subprocess.run([COMPILER, "-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-o", str(so), str(cpp)], check=True)
        _LIBRARIES[key] = ctypes.CDLL(str(so))
    return _LIBRARIES[key]


def _staged(array: np.ndarray, shape: Shape) -> np.ndarray:
    staged = np.zeros(max(shape.element_space, 1), shape.dtype.numpy)
    view = as_strided(staged, shape.lens, [s * staged.itemsize for s in shape.strides])
    array = np.asarray(array)
    view[...] = np.broadcast_to(array.reshape(view.shape) if array.size == view.size else array, view.shape)
    return staged


def run_emulated(program, params: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The outputs of a lowered program whose steps are all generated kernels (and views)."""
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
            source, symbol = ins.op["code_object"].source, ins.op["symbol_name"]
            body = source[source.index('extern "C"') :]
            if any(word in body for word in COOPERATING):
                raise NotImplementedError(f"{symbol}: its threads cooperate")
            library = _library(source, symbol, len(ins.args))
            args = (ctypes.c_void_p * len(ins.args))(*[pointer[a] for a in ins.args])
            global_size, local_size = ins.op["global"], ins.op["local"]
            library.mgx_emulate(args, ctypes.c_longlong(global_size // local_size), ctypes.c_int(local_size))
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
