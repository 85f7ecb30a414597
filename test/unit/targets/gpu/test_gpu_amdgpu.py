"""Every kind of generated kernel compiled for an MI300 (gfx942) without ROCm: the HIP front end of
a system clang, then ROCm's LLVM (rocm-bindings-compiler) generating the machine code, an AMDGPU
ELF object with the kernel and its descriptor. Loading and running need ROCm (`rocm` marker)."""

from __future__ import annotations

import pytest

from mgxir.diagnostics import MgxError
from mgxir.targets.gpu import amdgpu

pytest.importorskip("cuda.core")
from test_gpu_target import PROGRAMS, _program

from mgxir.targets.gpu.driver import compile_for_gpu

CLANG = amdgpu.find_clang()


def _rocm_llvm() -> str | None:
    try:
        amdgpu.rocm_llvm()
    except MgxError as e:
        return str(e)
    return None


ROCM_LLVM_MISSING = _rocm_llvm()

# one program per kind of kernel: pointwise, both reduction kernels, layernorm, softmax, gather +
# concat + pad, transpose copies, pooling, the generated convolution (the hip platform's)
REPRESENTATIVE = (
    "conv_bias_residual_relu",
    "pointwise_half_scalar",
    "pointwise_transposed_input",
    "pointwise_int",
    "layernorm_half_gamma",
    "softmax_half_rows_of_128",
    "reduce_long_row_block_kernel",
    "reduce_middle_axis",
    "concat_gather_pad",
    "qkv_split_reshape_view",
    "pooling",
)


@pytest.fixture(scope="module")
def kernel_sources() -> dict[str, str]:
    sources = {}
    for name in REPRESENTATIVE:
        for ins in compile_for_gpu(_program(PROGRAMS[name]), arch="sm_90", library_convolution=False).main:
            if ins.op.defn.name == "gpu::code_object":
                sources[f"{name}:{ins.op['symbol_name']}"] = ins.op["code_object"].source
    return sources


@pytest.mark.skipif(CLANG is None, reason="no clang++ with the AMDGPU target")
@pytest.mark.skipif(ROCM_LLVM_MISSING is not None, reason=f"{ROCM_LLVM_MISSING}")
def test_kernels_compile_to_gfx942_objects(kernel_sources: dict[str, str]) -> None:
    assert len(kernel_sources) >= 12
    for key, source in kernel_sources.items():
        symbol = key.split(":")[1]
        compiled = amdgpu.compile_for_amdgpu(source, "gfx942", CLANG)
        assert compiled.machine_is_amdgpu, key
        assert symbol in compiled.defined and f"{symbol}.kd" in compiled.defined, (key, compiled.defined)
        # only the device libraries' math stays for hiprtc's link
        assert all(name.startswith(("__ocml_", "__ockl_")) for name in compiled.undefined), (key, compiled.undefined)


@pytest.mark.skipif(CLANG is None, reason="no clang++ with the AMDGPU target")
def test_front_end_error_is_one_line() -> None:
    with pytest.raises(MgxError, match=r"the HIP front end rejects the kernel: .*error"):
        amdgpu.hip_bitcode('extern "C" __global__ void k(float* p) { p[0] = undeclared; }', CLANG)


def test_elf_symbols_of_a_non_amdgpu_object_says_so() -> None:
    compiled = amdgpu.AmdgpuObject("gfx942", b"\x7fELF" + bytes(60), (), ())
    assert not compiled.machine_is_amdgpu


def test_hiprtc_missing_is_one_plain_line() -> None:
    """hip-python quotes the library as bytes (b'libhiprtc.so'); the user reads its name plainly."""
    from mgxir.targets.gpu.hiprtc import _unusable

    error = OSError("failed to dlopen 'b'libhiprtc.so'': b'libhiprtc.so: cannot open shared object file'\nmore")
    assert str(_unusable(error)) == (
        "error: hiprtc is not usable here (ROCm's libhiprtc: failed to dlopen 'libhiprtc.so': "
        "libhiprtc.so: cannot open shared object file)"
    )
