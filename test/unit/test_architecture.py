"""The layout the README describes holds: layers import only downward, no package has an import
cycle (deferred imports included), and the code is ruff clean."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if found is None:
        pytest.fail(f"'{name}' is not installed: it comes with the dev extra")
    return found


def test_import_contracts_hold() -> None:
    result = subprocess.run(
        [_tool("lint-imports"), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_import_linter_sees_a_layer_break(tmp_path: Path) -> None:
    """The contract is live: a module of `ir` importing `passes` breaks it."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "mgxir", copy / "mgxir", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    shape = copy / "mgxir" / "ir" / "dtype.py"
    shape.write_text(shape.read_text() + "\nimport mgxir.passes.manager  # noqa\n")
    result = subprocess.run(
        [_tool("lint-imports"), "--no-cache"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(copy), "PATH": str(BIN)},
    )
    assert result.returncode != 0
    assert "mgxir.ir is not allowed to import mgxir.passes" in result.stdout


def test_ruff_clean() -> None:
    paths = [p for p in ("mgxir", "tools", "test", "bench") if (REPO / p).exists()]
    for command in (["check"], ["format", "--check"]):
        result = subprocess.run(
            [_tool("ruff"), *command, *paths], cwd=REPO, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout[-4000:]
