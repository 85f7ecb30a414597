"""IREE devices: the Vulkan target chosen for the device at hand, the types a target refuses, and the
CUDA flags that keep IREE off the pipeline that miscompiles ResNet-50's strided convolutions."""

from __future__ import annotations

from pathlib import Path

import pytest

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.targets.iree import element_types
from mgxir.targets.iree.devices import BASELINE, TARGET_ENV, check_types, device, target_for_device
from mgxir.text.parser import parse_program

INPUTS = Path(__file__).resolve().parents[3] / "targets" / "iree" / "Inputs"


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("llvmpipe (LLVM 15.0.6, 256 bits) (llvmpipe Mesa 22.3.6 (LLVM 15.0.6))", "llvmpipe"),
        ("NVIDIA H100 80GB HBM3", "pascal"),
        ("AMD Radeon Graphics (RADV GFX1100)", BASELINE.name),
        ("", BASELINE.name),
    ],
)
def test_vulkan_target_by_device_name(name: str, target: str) -> None:
    assert target_for_device(name).name == target


def test_vulkan_flags_follow_the_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TARGET_ENV, "pascal")
    pascal = device("vulkan")
    assert pascal.flags == ("--iree-vulkan-target=pascal", "--iree-input-demote-f64-to-f32=false")
    assert not pascal.demotes_f64
    monkeypatch.setenv(TARGET_ENV, BASELINE.name)
    baseline = device("vulkan")
    assert baseline.flags == (f"--iree-vulkan-target={BASELINE.name}",) and baseline.demotes_f64
    with pytest.raises(MgxError, match=r"target vp_android_baseline_2022\) has no 16-bit float arithmetic"):
        check_types(baseline, {"float", "half"})
    with pytest.raises(MgxError, match="demotes f64 to f32: refusing a program with double values"):
        check_types(baseline, {"double"})
    check_types(baseline, {"float", "int64", "int8"})
    check_types(pascal, {"half", "double", "int64"})
    for emulated in ("bf16", "fp8e4m3fn", "fp8e5m2"):
        with pytest.raises(MgxError, match=f"emulates {emulated} in f32, rounding otherwise than the reference"):
            check_types(pascal, {"float", emulated})


def test_element_types_include_tuple_elements_and_submodules() -> None:
    program = parse_program((INPUTS / "mixed.mgx").read_text(), "mixed.mgx")
    assert element_types(program) == {"float", "int32"}


def test_cuda_keeps_strided_convolutions_off_reduction_vector_distribution(tmp_path: Path) -> None:
    """ResNet-50's strided 1x1 convolution fused with the residual add is a 'reduction' dispatch
    for IREE; its VectorDistribute pipeline computed it wrongly on an H100 (docs/mlir.md)."""
    pytest.importorskip("iree.compiler")
    from mgxir.targets.iree.compile import compile_module
    from mgxir.translate.mlir.api import mlir_bytecode

    text = (INPUTS / "strided_conv_add.mgx").read_text()
    mlir = mlir_bytecode(parse_program(text, "strided_conv_add.mgx"), None, DiagnosticSink())
    cuda = device("cuda")
    compile_module(mlir, cuda, [*cuda.flags, f"--iree-hal-dump-executable-configurations-to={tmp_path}"])
    configured = "".join(p.read_text() for p in tmp_path.glob("*.mlir"))
    assert "_reduction_" in configured and "TileAndFuse" in configured
    assert "pipeline<VectorDistribute>" not in configured
