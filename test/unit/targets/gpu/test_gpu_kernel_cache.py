"""The GPU kernel cache on disk: NVRTC's binaries are kept under MGXIR_KERNEL_CACHE (compiled here,
no GPU needed), and a cache folder that cannot be written only costs recompiling."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("cuda.bindings.nvrtc")
from mgxir.targets.gpu import compiler


def _source(tag: str) -> str:
    return f'extern "C" __global__ void {tag}(float* p) {{ p[threadIdx.x] = {len(tag)}.0f; }}\n'


def test_binaries_are_kept_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(compiler.CACHE_ENV, str(tmp_path))
    binary = compiler.compile_source(_source(f"kept_{tmp_path.name}"), "kept", "sm_90")
    assert binary[:4] == b"\x7fELF"
    (kept,) = tmp_path.iterdir()
    assert kept.name.startswith("kept-") and kept.suffix == ".cubin" and kept.read_bytes() == binary


def test_a_cache_folder_that_cannot_be_written_only_costs_recompiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv(compiler.CACHE_ENV, str(blocker / "kernels"))
    binary = compiler.compile_source(_source(f"unkept_{tmp_path.name}"), "unkept", "sm_90")
    assert binary[:4] == b"\x7fELF"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]
