"""Kernel compilation, cached on disk by source, architecture and compiler version, as MIGraphX
caches compiled code objects: NVRTC for NVIDIA architectures (`sm_XY`), hiprtc for AMD ones
(`gfxNNN`, hip_platform.py), chosen by the architecture's prefix. NVRTC needs no GPU: CI compiles
every generated kernel for sm_90 without one."""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mgxir.diagnostics import MgxError
from mgxir.targets.gpu.kernels import Kernel
from mgxir.targets.gpu.ops import CodeObject
from mgxir.text.writer import user_cache_dir

CACHE_ENV = "MGXIR_KERNEL_CACHE"  # a directory; "off" disables the disk cache
DEFAULT_ARCH = "sm_90"
OPTIONS = ("std=c++17",)


def cache_dir() -> Path | None:
    return user_cache_dir(CACHE_ENV, "kernels")


@functools.cache
def compiler_version() -> str:
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        raise MgxError("the GPU target needs NVRTC: pip install 'mgxir[cuda]'") from None
    _, major, minor = nvrtc.nvrtcVersion()
    return f"nvrtc-{major}.{minor}"


@functools.cache
def device_arch(device: int = 0) -> str | None:
    """`sm_XY` of a visible GPU, or None where there is no GPU or no driver."""
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
    except (ImportError, RuntimeError, OSError):  # no cuda-bindings, or no driver library
        return None
    return _compute_capability(driver, err, device)


def _compute_capability(driver: Any, err: Any, device: int) -> str | None:  # no cover: needs a GPU driver
    if err != driver.CUresult.CUDA_SUCCESS:
        return None
    err, handle = driver.cuDeviceGet(device)
    if err != driver.CUresult.CUDA_SUCCESS:
        return None
    attrs = driver.CUdevice_attribute
    _, major = driver.cuDeviceGetAttribute(attrs.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle)
    _, minor = driver.cuDeviceGetAttribute(attrs.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle)
    return f"sm_{major}{minor}"


def _hiprtc(source: str, symbol: str, arch: str, output: str) -> bytes:
    from mgxir.targets.gpu.hiprtc import hiprtc_compile

    return hiprtc_compile(source, symbol, arch)


def _hiprtc_version() -> str:
    from mgxir.targets.gpu.hiprtc import hiprtc_version

    return hiprtc_version()


# architecture prefix -> (compile(source, symbol, arch, output) -> binary, compiler version, binary kind)
COMPILERS: dict[str, tuple[Callable[[str, str, str, str], bytes], Callable[[], str], str]] = {
    "sm_": (lambda *a: _nvrtc(*a), lambda: compiler_version(), "cubin"),
    "gfx": (_hiprtc, _hiprtc_version, "hsaco"),
}


def _compiler(arch: str) -> tuple[Callable[[str, str, str, str], bytes], Callable[[], str], str]:
    for prefix, compiler in COMPILERS.items():
        if arch.startswith(prefix):
            return compiler
    raise MgxError(f"no kernel compiler for architecture '{arch}' (sm_XY or gfxNNN)")


def cache_key(source: str, arch: str, output: str) -> str:
    text = "\0".join([source, arch, output, _compiler(arch)[1](), *OPTIONS])
    return hashlib.sha256(text.encode()).hexdigest()


_memory: dict[str, bytes] = {}
statistics = {"compiled": 0, "disk hits": 0, "memory hits": 0}


def compile_source(source: str, symbol: str, arch: str = DEFAULT_ARCH, output: str = "") -> bytes:
    """The compiled binary of one kernel source (NVRTC: `cubin`, the default, or `ptx`; hiprtc: its
    code object); raises MgxError on a compilation error with the compiler's log."""
    compile_binary, _, default_output = _compiler(arch)
    output = output or default_output
    key = cache_key(source, arch, output)
    if key in _memory:
        statistics["memory hits"] += 1
        return _memory[key]
    directory = cache_dir()
    path = directory / f"{symbol[:40]}-{key[:32]}.{output}" if directory else None
    if path is not None and path.exists():
        binary = path.read_bytes()
        statistics["disk hits"] += 1
    else:
        binary = compile_binary(source, symbol, arch, output)
        statistics["compiled"] += 1
        if path is not None:
            _write_atomically(path, binary)
    _memory[key] = binary
    return binary


def compile_kernel(kernel: Kernel, arch: str = DEFAULT_ARCH) -> CodeObject:
    binary = compile_source(kernel.source, kernel.symbol, arch)
    return CodeObject.compiled(binary, kernel.source, arch, "bin", toolchain_version(arch))


def toolchain_version(arch: str) -> str:
    """The compiler that makes binaries for `arch` (`nvrtc-12.8`, `hiprtc-...`)."""
    return _compiler(arch)[1]()


def _nvrtc(source: str, symbol: str, arch: str, output: str) -> bytes:
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        raise MgxError("the GPU target needs NVRTC: pip install 'mgxir[cuda]'") from None
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    err, program = nvrtc.nvrtcCreateProgram(source.encode(), f"{symbol}.cu".encode(), 0, [], [])
    if err != ok:
        raise MgxError(f"NVRTC cannot create a program for '{symbol}': {err}")
    try:
        options = [f"--gpu-architecture={arch}".encode(), *(f"--{o}".encode() for o in OPTIONS)]
        (err,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        if err != ok:
            _, size = nvrtc.nvrtcGetProgramLogSize(program)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(program, log)
            first = next((line for line in log.decode(errors="replace").splitlines() if "error" in line), "")
            raise MgxError(f"kernel '{symbol}' does not compile for {arch}: {first.strip()}")
        get_size, get = (
            (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
            if output == "cubin"
            else (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
        )
        _, size = get_size(program)
        binary = b" " * size
        (err,) = get(program, binary)
        if err != ok:
            raise MgxError(f"NVRTC gives no {output} for '{symbol}': {err}")
        return binary
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def _write_atomically(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temp, path)
    except OSError:
        pass  # a read-only cache directory only costs recompilation
