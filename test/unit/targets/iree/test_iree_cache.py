"""The compiled-module cache's key: a module compiled by an older lowering of the same program (an
earlier mgxir, or a working tree edited since) is never taken for the current one's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mgxir.targets.iree import cache


def _copy_lowering(destination: Path) -> Path:
    for package in cache.LOWERING_PACKAGES:
        shutil.copytree(cache.MGXIR_ROOT / package, destination / package, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def test_editing_the_lowering_changes_the_fingerprint(tmp_path: Path) -> None:
    root = _copy_lowering(tmp_path / "mgxir")
    before = cache.lowering_fingerprint(root)
    assert cache.lowering_fingerprint(root) == before
    lowering = root / "translate" / "mlir" / "families" / "nn.py"
    lowering.write_text(lowering.read_text() + "\n# edited\n")
    cache.lowering_fingerprint.cache_clear()
    assert cache.lowering_fingerprint(root) != before


def test_the_key_holds_the_lowering(monkeypatch: pytest.MonkeyPatch) -> None:
    key = cache.cache_key(b"program", "local-task", ["-O2"], host_tuned=False)
    assert cache.cache_key(b"program", "local-task", ["-O2"], host_tuned=False) == key
    monkeypatch.setattr(cache, "lowering_fingerprint", lambda: "another lowering")
    assert cache.cache_key(b"program", "local-task", ["-O2"], host_tuned=False) != key
