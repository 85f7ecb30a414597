"""lit's skips are counted and say why: each missing feature gets a note from test/lit.cfg.py, and
`--show-unsupported` (CI passes it) lists the tests that REQUIRE it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_missing_gpu_is_a_listed_skip_with_its_reason(tmp_path: Path) -> None:
    # a PATH without nvidia-smi, rocm-smi or dot: those features are missing whatever the machine
    env = {**os.environ, "PATH": str(Path(sys.executable).parent), "MGXIR_LIT_OUTPUT": str(tmp_path)}
    gpu_test = REPO / "test" / "targets" / "iree" / "gpu.test"
    run = subprocess.run(
        [sys.executable, "-c", "from lit.main import main; main()", "--show-unsupported", str(gpu_test)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "note: tests that REQUIRE 'gpu' are unsupported here: no working nvidia-smi" in output
    assert "note: tests that REQUIRE 'graphviz' are unsupported here: no graphviz 'dot' on PATH" in output
    assert "Unsupported Tests (1):\n  mgxir :: targets/iree/gpu.test" in output
    assert "Unsupported: 1" in output
