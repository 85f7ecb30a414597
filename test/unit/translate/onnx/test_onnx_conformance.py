"""Every one of MIGraphX's 1142 ONNX test models imports and verifies, or is refused with one line
(issue 9): no traceback, no other exception, and no model that imported before stops importing."""

from __future__ import annotations

from pathlib import Path

import pytest

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.translate.onnx import import_model
from mgxir.verifier import verify

MODELS = Path(__file__).resolve().parents[5] / "shared" / "onnx-models"
# models that import today (bench/onnx_oracle.py: 892 of 1142); the rest lack a parser or are refused
IMPORTED_AT_LEAST = 892


@pytest.fixture(scope="module")
def outcomes() -> dict[str, str | None]:
    if not MODELS.is_dir():
        pytest.skip(f"MIGraphX's ONNX models are not at {MODELS} (../shared beside the repository)")
    results: dict[str, str | None] = {}
    for path in sorted(MODELS.glob("*.onnx")):
        sink = DiagnosticSink()
        try:
            verify(import_model(str(path), None, sink), sink)
            results[path.name] = None
        except MgxError as e:
            results[path.name] = str(e)
    return results


def test_all_models_are_tried(outcomes: dict[str, str | None]) -> None:
    assert len(outcomes) == 1142


def test_refusals_are_one_line_naming_the_model(outcomes: dict[str, str | None]) -> None:
    for name, message in outcomes.items():
        if message is not None:
            assert "\n" not in message.strip(), f"{name}: {message}"
            assert name in message, f"{name}: {message}"


def test_no_model_that_imported_stops_importing(outcomes: dict[str, str | None]) -> None:
    imported = sum(message is None for message in outcomes.values())
    assert imported >= IMPORTED_AT_LEAST, f"{imported} of {len(outcomes)} models import"


def test_missing_parsers_say_so(outcomes: dict[str, str | None]) -> None:
    """A model refused for an operator without a parser says which operator."""
    unknown = [m for m in outcomes.values() if m is not None and "Unknown operator" in m]
    assert unknown, "expected some models to use operators without a parser today"
    assert all("Unknown operator: " in m for m in unknown)
