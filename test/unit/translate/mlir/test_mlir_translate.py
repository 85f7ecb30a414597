"""MLIR translation in-process: every bytecode version, and programs of the test suite go to MLIR,
come back, and compute what they computed (bit for bit on the reference interpreter)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("iree.compiler")

from mgxir import DiagnosticSink, MgxError, parse_program, verify
from mgxir.drivers.diagnostics_check import split_input
from mgxir.drivers.run import flatten_outputs, gather_inputs
from mgxir.interp import Interpreter
from mgxir.translate.mlir.api import mlir_bytecode, mlir_text, program_from_mlir
from mgxir.translate.mlir.bytecode import VERSIONS, read_header
from mgxir.translate.mlir.registry import TENSOR_RULES

ROOT = Path(__file__).resolve().parents[4]
PROGRAMS = sorted((ROOT / "test" / "run").glob("*.mgx")) + sorted((ROOT / "test" / "opt").glob("fuse_*.mgx"))


def _chunks() -> list[tuple[str, int, str]]:
    out = []
    for path in PROGRAMS:
        for chunk in split_input(path.read_text()):
            out.append((path.name, chunk.first_line, chunk.text))
    return out


def _run(program, params):
    with np.errstate(all="ignore"):
        return flatten_outputs(Interpreter(program).run(params))


@pytest.mark.parametrize("version", list(VERSIONS))
def test_every_bytecode_version_reads_back(version: int) -> None:
    program = parse_program((ROOT / "test/translate/mlir/Inputs/fused_reduce.mgx").read_text())
    verify(program)
    data = mlir_bytecode(program, version)
    assert read_header(data)[0] == version
    back = program_from_mlir(data, "x.mlirbc")
    params = gather_inputs(program, [], "random", 0)
    assert _run(back, params)["out0"].tobytes() == _run(program, params)["out0"].tobytes()


def test_programs_come_back_computing_the_same() -> None:
    translated = 0
    for name, line, text in _chunks():
        try:
            program = parse_program(text, name)
            verify(program)
            params = gather_inputs(program, [], "random", 0)
            expected = _run(program, params)
        except Exception:  # programs the interpreter cannot run with random inputs
            continue
        try:
            mlir = mlir_text(program, DiagnosticSink())
        except MgxError as e:
            assert "cannot lower" in str(e), f"{name}:{line}: {e}"
            continue
        back = program_from_mlir(mlir.encode(), name)
        verify(back)
        got = _run(back, params)
        for key, value in expected.items():
            assert np.array_equal(got[key], value, equal_nan=True), f"{name}:{line}: {key} differs"
        translated += 1
    assert translated >= 20


def test_rules_are_keyed_by_definitions() -> None:
    from mgxir.ir.operation import OpDef

    assert all(issubclass(cls, OpDef) for cls in TENSOR_RULES)
