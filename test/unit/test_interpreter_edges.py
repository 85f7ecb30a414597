"""The interpreter on programs it can only partly run: literals printed elided get deterministic
stand-in data with one warning, and an operator it does not know fails when reached, naming it."""

from __future__ import annotations

import numpy as np
import pytest

from mgxir import DiagnosticSink, MgxError, parse_program
from mgxir.interp import Interpreter

ELIDED = """module: "main"
@0 = @literal{ ... } -> float_type, {2, 3}, {3, 1}
@1 = @literal{ ... } -> int64_type, {4}, {1}
@2 = @literal{ ... } -> bool_type, {3}, {1}
@3 = @return(@0,@1,@2)
"""


def test_elided_literals_get_deterministic_data_and_a_warning() -> None:
    runs = []
    for _ in range(2):
        sink = DiagnosticSink()
        runs.append([np.asarray(v) for v in Interpreter(parse_program(ELIDED), sink).run({})])
        assert len(sink.warnings) == 3
        assert "was printed elided ({ ... }); using deterministic generated values" in sink.warnings[0].message
    floats, ints, flags = runs[0]
    assert floats.dtype == np.float32 and np.all(np.abs(floats) <= 1) and len(np.unique(floats)) == 6
    assert ints.dtype == np.int64 and set(ints.tolist()) <= {0, 1}
    assert flags.dtype == bool
    for a, b in zip(*runs):
        assert np.array_equal(a, b)


def test_an_unknown_operator_fails_when_reached() -> None:
    text = """module: "main"
x = @param:x -> float_type, {2}, {1}
@1 = no_such_op(x) -> float_type, {2}, {1}
@2 = @return(@1)
"""
    program = parse_program(text, "prog.mgx", sink=DiagnosticSink())
    with pytest.raises(MgxError, match=r"no reference implementation for 'no_such_op' \(unknown operator\)"):
        Interpreter(program).run({"x": np.zeros(2, np.float32)})
