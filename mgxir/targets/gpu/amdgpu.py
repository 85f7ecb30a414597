"""Generated kernel sources compiled for AMD GPUs where no ROCm is installed, as a check.

hiprtc compiles a kernel source with ROCm's clang and links ROCm's device libraries; neither is
here. What is: a system clang with the AMDGPU target (its HIP front end, given the few
declarations hiprtc provides implicitly, `HIPRTC_PRELUDE`) and ROCm's own LLVM from PyPI
(`rocm-bindings-compiler`: libLLVM with the AMDGPU back end, its C API in Python; no clang
library, no device libraries, no linker). So clang lowers the source to LLVM bitcode (for gfx90a,
the newest chip clang 14 knows), and ROCm's LLVM generates the machine code for the chip asked
(gfx942, an MI300, by default): instruction selection, register allocation and the kernel
descriptor, i.e. an AMDGPU ELF relocatable object. What stays unchecked: linking (the device
libraries' math functions, `__ocml_*`, remain undefined symbols, listed in the result) and
loading/running, which need ROCm (`REQUIRES: rocm`).

ROCm's libLLVM needs ROCm's renamed zlib and zstd (`librocm_sysdeps_z.so.1`, `..._zstd.so.1`,
shipped by ROCm's SDK wheels, not on PyPI): where they are missing, two forwarding libraries to the
system's zlib and zstd are built once with the C compiler and loaded first.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import os
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

from mgxir.diagnostics import MgxError

DEFAULT_ARCH = "gfx942"
FRONT_END_ARCH = "gfx90a"
TRIPLE = "amdgcn-amd-amdhsa"

# what hiprtc declares without an include, defined on clang's AMDGPU builtins
HIPRTC_PRELUDE = r"""
struct mgx_hip_dim { unsigned x; };
#define threadIdx (mgx_hip_dim{__builtin_amdgcn_workitem_id_x()})
#define blockIdx (mgx_hip_dim{__builtin_amdgcn_workgroup_id_x()})
#define blockDim (mgx_hip_dim{__builtin_amdgcn_workgroup_size_x()})
#define __launch_bounds__(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
__device__ inline void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
template <class T> __device__ inline T __shfl_xor(T v, int mask) {
  const int self = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
  const int from = (self ^ mask) << 2;
  int words[(sizeof(T) + 3) / 4] = {};
  __builtin_memcpy(words, &v, sizeof(T));
  for (unsigned k = 0; k < (sizeof(T) + 3) / 4; ++k) words[k] = __builtin_amdgcn_ds_bpermute(from, words[k]);
  __builtin_memcpy(&v, words, sizeof(T));
  return v;
}
__device__ inline float __uint_as_float(unsigned u) { float f; __builtin_memcpy(&f, &u, 4); return f; }
__device__ inline unsigned __float_as_uint(float f) { unsigned u; __builtin_memcpy(&u, &f, 4); return u; }
"""

_SYSDEPS_SHIM = r"""
#include <dlfcn.h>
#include <stddef.h>
static void* lib(const char* name) { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }
#define FWD(L, R, F, P, A) R F P { static R (*f) P; if (!f) f = (R (*) P)dlsym(lib(L), #F); return f A; }
"""
_SYSDEPS = {
    "librocm_sysdeps_z.so.1": (
        "libz.so.1",
        [
            ("int", "uncompress", "(unsigned char* d, unsigned long* n, const unsigned char* s, unsigned long m)"),
            (
                "int",
                "compress2",
                "(unsigned char* d, unsigned long* n, const unsigned char* s, unsigned long m, int l)",
            ),
            ("unsigned long", "compressBound", "(unsigned long n)"),
            ("unsigned long", "crc32", "(unsigned long c, const unsigned char* b, unsigned int n)"),
        ],
    ),
    "librocm_sysdeps_zstd.so.1": (
        "libzstd.so.1",
        [
            ("void*", "ZSTD_createCCtx", "(void)"),
            ("size_t", "ZSTD_freeCCtx", "(void* c)"),
            ("unsigned", "ZSTD_isError", "(size_t c)"),
            ("size_t", "ZSTD_decompress", "(void* d, size_t n, const void* s, size_t m)"),
            ("size_t", "ZSTD_compressBound", "(size_t n)"),
            ("const char*", "ZSTD_getErrorName", "(size_t c)"),
            ("size_t", "ZSTD_compress2", "(void* c, void* d, size_t n, const void* s, size_t m)"),
            ("size_t", "ZSTD_CCtx_setParameter", "(void* c, int p, int v)"),
        ],
    ),
}


@dataclasses.dataclass(frozen=True)
class AmdgpuObject:
    """One kernel compiled for an AMD GPU: the ELF object, its defined and undefined symbols."""

    arch: str
    elf: bytes
    defined: tuple[str, ...]
    undefined: tuple[str, ...]

    @property
    def machine_is_amdgpu(self) -> bool:
        return len(self.elf) > 20 and self.elf[:4] == b"\x7fELF" and struct.unpack_from("<H", self.elf, 18)[0] == 224


def find_clang() -> str | None:
    """A clang++ whose HIP front end targets AMDGPU (any clang 14 or newer)."""
    for name in ("clang++", "clang++-20", "clang++-19", "clang++-18", "clang++-17", "clang++-16", "clang++-14"):
        if shutil.which(name):
            return name
    return None


def _argument(name: str) -> str:
    return ", ".join(
        p.strip().rsplit(" ", 1)[-1].lstrip("*") for p in name.strip("()").split(",") if p.strip() != "void"
    )


def _build_sysdeps(directory: Path) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        raise MgxError("ROCm's LLVM needs librocm_sysdeps_z/zstd, and no C compiler is here to stand in for them")
    directory.mkdir(parents=True, exist_ok=True)
    version_script = directory / "sysdeps.map"
    version_script.write_text("AMDROCM_SYSDEPS_1.0 { global: *; };\n")
    for soname, (system, functions) in _SYSDEPS.items():
        target = directory / soname
        if target.exists():
            continue
        source = _SYSDEPS_SHIM + "".join(f'FWD("{system}", {r}, {f}, {p}, ({_argument(p)}))\n' for r, f, p in functions)
        c_file = directory / f"{soname}.c"
        c_file.write_text(source)
        with tempfile.NamedTemporaryFile(dir=directory, suffix=".so", delete=False) as out:
            temp = out.name
        command = [compiler, "-shared", "-fPIC", "-O1", f"-Wl,--version-script={version_script}"]
        command += [f"-Wl,-soname,{soname}", "-o", temp, str(c_file), "-ldl"]
        built = subprocess.run(command, capture_output=True, text=True)
        if built.returncode != 0:
            raise MgxError(f"cannot build a stand-in for {soname}: {built.stderr.strip().splitlines()[-1:]}")
        os.replace(temp, target)


@functools.cache
def rocm_llvm():
    """ROCm's LLVM C API (rocm-bindings-compiler), its targets initialised."""
    try:
        from rocm.bindings.llvm.c import analysis, bitreader, core, targetmachine
    except ImportError as first:
        if "rocm_sysdeps" not in str(first):
            raise MgxError("the AMDGPU check needs ROCm's LLVM: pip install rocm-bindings-compiler") from None
        from mgxir.targets.gpu.compiler import cache_dir

        directory = (cache_dir() or Path(tempfile.gettempdir()) / "mgxir") / "rocm-sysdeps"
        _build_sysdeps(directory)
        for soname in _SYSDEPS:
            ctypes.CDLL(str(directory / soname), mode=ctypes.RTLD_GLOBAL)
        from rocm.bindings.llvm.c import analysis, bitreader, core, targetmachine
    for init in ("TargetInfos", "Targets", "TargetMCs", "AsmPrinters"):
        getattr(targetmachine, f"LLVMInitializeAll{init}")()
    return core, bitreader, analysis, targetmachine


def hip_bitcode(source: str, clang: str) -> bytes:
    """LLVM bitcode of the HIP flavour of `source` (the source as hiprtc sees it)."""
    with tempfile.TemporaryDirectory() as tmp:
        prelude = Path(tmp) / "hiprtc_prelude.h"
        prelude.write_text(HIPRTC_PRELUDE)
        path = Path(tmp) / "kernel.hip"
        path.write_text(source)
        out = Path(tmp) / "kernel.bc"
        command = [clang, "-x", "hip", "--cuda-device-only", f"--offload-arch={FRONT_END_ARCH}", "-nogpulib"]
        command += ["-nogpuinc", "-D__HIPCC_RTC__", "-include", "__clang_hip_runtime_wrapper.h", "-include"]
        command += [str(prelude), "-std=c++17", "-O3", "-emit-llvm", "-c", "-o", str(out), str(path)]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            first = next((line for line in run.stderr.splitlines() if "error" in line), run.stderr.strip())
            raise MgxError(f"the HIP front end rejects the kernel: {first}")
        return out.read_bytes()


def compile_for_amdgpu(source: str, arch: str = DEFAULT_ARCH, clang: str | None = None) -> AmdgpuObject:
    """`source` compiled to an AMDGPU object for `arch`; MgxError where a step fails."""
    clang = clang or find_clang()
    if clang is None:
        raise MgxError("the AMDGPU check needs a clang++ with the AMDGPU target")
    bitcode = hip_bitcode(source, clang)
    core, bitreader, analysis, targetmachine = rocm_llvm()
    buffer = core.LLVMCreateMemoryBufferWithMemoryRangeCopy(bitcode, len(bitcode), b"kernel")
    failed, module = bitreader.LLVMParseBitcode2(buffer)
    if failed:
        raise MgxError("ROCm's LLVM cannot read the front end's bitcode")
    function_index = 0xFFFFFFFF  # LLVMAttributeFunctionIndex, as the unsigned the binding takes
    function = core.LLVMGetFirstFunction(module)
    while function:  # the front end's chip and features give way to the one asked for
        core.LLVMRemoveStringAttributeAtIndex(function, function_index, b"target-cpu", 10)
        core.LLVMRemoveStringAttributeAtIndex(function, function_index, b"target-features", 15)
        function = core.LLVMGetNextFunction(function)
    broken, message = analysis.LLVMVerifyModule(module, analysis.LLVMVerifierFailureAction.LLVMReturnStatusAction)
    if broken:
        raise MgxError(f"the kernel's LLVM IR does not verify: {message}")
    failed, target, message = targetmachine.LLVMGetTargetFromTriple(TRIPLE.encode())
    if failed:
        raise MgxError(f"ROCm's LLVM has no AMDGPU target: {message}")
    machine = targetmachine.LLVMCreateTargetMachine(
        target,
        TRIPLE.encode(),
        arch.encode(),
        b"",
        targetmachine.LLVMCodeGenOptLevel.LLVMCodeGenLevelDefault,
        targetmachine.LLVMRelocMode.LLVMRelocPIC,
        targetmachine.LLVMCodeModel.LLVMCodeModelDefault,
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.o"
        file_type = targetmachine.LLVMCodeGenFileType.LLVMObjectFile
        if targetmachine.LLVMTargetMachineEmitToFile(machine, module, str(path).encode(), file_type, None):
            raise MgxError(f"ROCm's LLVM cannot generate code for {arch}")
        elf = path.read_bytes()
    defined, undefined = elf_symbols(elf)
    return AmdgpuObject(arch, elf, defined, undefined)


def elf_symbols(elf: bytes) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(defined, undefined) global symbol names of a little-endian ELF64 object."""
    (section_offset,) = struct.unpack_from("<Q", elf, 0x28)
    entry_size, count = struct.unpack_from("<HH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, section_offset + k * entry_size) for k in range(count)]
    defined: list[str] = []
    undefined: list[str] = []
    for _, kind, _, _, offset, size, link, _, _, symbol_size in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strings = sections[link][4]
        for at in range(offset + symbol_size, offset + size, symbol_size):
            name_at, info, _, index = struct.unpack_from("<IBBH", elf, at)
            if info >> 4 == 0 or name_at == 0:  # local symbols
                continue
            end = elf.index(b"\0", strings + name_at)
            name = elf[strings + name_at : end].decode()
            (undefined if index == 0 else defined).append(name)
    return tuple(defined), tuple(undefined)
