"""Every one of MIGraphX's ONNX test models (../shared/onnx-models) that mgxir imports and
onnxruntime runs gives onnxruntime's numbers on the reference interpreter, for the same generated
inputs (bench/onnx_oracle.py's check_model: MIGraphX's rms rule for floats; integer and bool results
and quantized models against onnx.reference, exactly, since onnxruntime's CPU kernels depend on the
machine; onnxruntime's integers within one unit only where onnx.reference has no implementation).

Known differences are listed in data/onnx_model_differences.txt, a reason each: a model that stops
matching fails, and so does a listed model that matches again (its line is to go). Models mgxir
refuses are test_onnx_conformance's; models onnxruntime refuses have no oracle here (issue 23)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[4]
MODELS = ROOT.parent / "shared" / "onnx-models"
DIFFERENCES = Path(__file__).parents[2] / "data" / "onnx_model_differences.txt"
# a listed model of this kind is not run: its size makes it minutes of arithmetic on CI's machine
NOT_RUN = "size"
KINDS = ("migraphx", "random", NOT_RUN)

sys.path.insert(0, str(ROOT / "bench"))


def listed_differences() -> dict[str, tuple[str, str]]:
    """model -> (kind, reason) from the data file (`model  kind  reason`, # comments)."""
    out: dict[str, tuple[str, str]] = {}
    for line in DIFFERENCES.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            model, kind, reason = line.split(maxsplit=2)
            out[model] = (kind, reason)
    return out


LISTED = listed_differences()
PATHS = sorted(MODELS.glob("*.onnx")) if MODELS.is_dir() else []


def test_the_list_is_well_formed() -> None:
    assert all(kind in KINDS for kind, _ in LISTED.values()), {m: k for m, (k, _) in LISTED.items() if k not in KINDS}
    if PATHS:
        names = {p.stem for p in PATHS}
        assert not set(LISTED) - names, f"listed models that are not in {MODELS}: {sorted(set(LISTED) - names)}"


@pytest.mark.skipif(not PATHS, reason=f"MIGraphX's ONNX models are not at {MODELS}")
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_model_gives_onnxruntimes_numbers(path: Path) -> None:
    from onnx_oracle import check_model

    kind, reason = LISTED.get(path.stem, ("", ""))
    if kind == NOT_RUN:
        pytest.skip(reason)
    result = check_model(str(path))
    if result.status in ("import-error", "ort-error"):
        return  # refused by mgxir as by MIGraphX (test_onnx_conformance), or no oracle
    if kind:
        assert result.status == "mismatch", f"listed as a difference ({reason}) but {result.status}: drop its line"
    else:
        assert result.status == "match", f"{result.status}: {result.message}"


def test_onnxruntime_is_never_the_exact_oracle_of_integers_or_quantized_models() -> None:
    """Its CPU kernels differ between AVX2 and AVX-512 machines: integer and bool results, and any
    model with a quantized operator, take their expectation from onnx.reference."""
    from onnx_oracle import needs_exact_oracle

    floats, integers = [np.zeros(2, np.float32)], [np.zeros(2, np.float32), np.zeros(2, np.int64)]
    assert not needs_exact_oracle({"Add", "Relu"}, floats)
    assert needs_exact_oracle({"TopK"}, integers)
    assert needs_exact_oracle({"Less"}, [np.zeros(2, bool)])
    for op in ("QuantizeLinear", "DequantizeLinear", "QLinearAdd", "MatMulInteger", "DynamicQuantizeLinear"):
        assert needs_exact_oracle({op}, floats), op
