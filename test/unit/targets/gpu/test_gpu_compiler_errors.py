"""NVRTC runs without a GPU: a kernel that does not compile is one MgxError naming the kernel, the
architecture and NVRTC's first error, and nothing is cached."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("cuda.bindings.nvrtc")

from mgxir import MgxError
from mgxir.targets.gpu import compiler


def test_a_kernel_that_does_not_compile_gives_nvrtcs_first_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(compiler.CACHE_ENV, str(tmp_path))
    source = 'extern "C" __global__ void broken(float* out) { out[0] = no_such_function(); }'
    with pytest.raises(MgxError) as raised:
        compiler.compile_source(source, "broken", "sm_80")
    message = str(raised.value)
    assert message.startswith("error: kernel 'broken' does not compile for sm_80: "), message
    assert 'identifier "no_such_function" is undefined' in message and "\n" not in message
    assert list(tmp_path.iterdir()) == []


def test_the_cache_directory_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(compiler.CACHE_ENV, "off")
    assert compiler.cache_dir() is None
    monkeypatch.delenv(compiler.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compiler.cache_dir() == tmp_path / "mgxir" / "kernels"
