"""scripts/mutation.py's refusals (one line, exit 1, before any copy or mutmut run) and its
`--recheck` reset of a kept run's survivors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mutation.py"
sys.path.insert(0, str(SCRIPT.parent))
import mutation  # noqa: E402


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["mgxir/nope.py"], "error: mgxir/nope.py: not a Python module under mgxir/ops/, mgxir/passes/"),
        (["mgxir/ir/shape.py"], "error: mgxir/ir/shape.py: not a Python module under mgxir/ops/"),
        (["--recheck", "mgxir/passes/eliminate_identity.py"], "error: --recheck and --refresh go on in a kept"),
        (["--refresh", "mgxir/passes/eliminate_identity.py"], "error: --recheck and --refresh go on in a kept"),
    ],
)
def test_bad_arguments_give_one_line(arguments: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), *arguments], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1


def test_recheck_forgets_only_survivors_and_untested(tmp_path: Path) -> None:
    from mutmut.stats import status_by_exit_code

    code = {status: code for code, status in status_by_exit_code.items()}
    meta = tmp_path / "mutants" / "mgxir" / "passes" / "m.py.meta"
    meta.parent.mkdir(parents=True)
    codes = {"a": code["killed"], "b": code["survived"], "c": code["no tests"], "d": None, "e": code["timeout"]}
    meta.write_text(json.dumps({"exit_code_by_key": codes, "hash_by_function_name": {"f": "1"}}))
    assert mutation.reset_survivors(tmp_path, ["mgxir/passes/m.py", "mgxir/passes/absent.py"]) == 2
    data = json.loads(meta.read_text())
    assert data["exit_code_by_key"] == {**codes, "b": None, "c": None}
    assert data["hash_by_function_name"] == {"f": "1"}


def test_every_selected_test_file_exists() -> None:
    root = SCRIPT.parents[1]
    missing = [f for s in mutation.TEST_SELECTIONS.values() for f in s.files if not (root / f).is_file()]
    assert missing == []


@pytest.mark.parametrize(
    ("module", "test_file", "lit"),
    [
        (
            "mgxir/translate/onnx/parsers/nn.py",
            "test/unit/translate/onnx/test_onnx_parser_numerics.py",
            "(translate/onnx)",
        ),
        ("mgxir/targets/gpu/kernels.py", "test/unit/targets/gpu/test_gpu_data_kernels.py", None),
        ("mgxir/translate/mlir/emitter.py", "test/unit/translate/mlir/test_mlir_translate.py", "(translate/mlir)"),
    ],
)
def test_translate_and_targets_modules_have_their_own_tests(module: str, test_file: str, lit: str | None) -> None:
    assert module.startswith(mutation.MUTATED_PACKAGES)
    arguments = mutation.pytest_arguments([module])
    assert test_file in arguments and "test/unit" not in arguments
    assert arguments[-1].endswith(f"or {lit}") if lit else "-k" not in arguments, arguments
