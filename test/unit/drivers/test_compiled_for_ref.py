"""`mgx-run --verify` on the ref target compares the program as given with the program compiled by the
`ref` pipeline: the two evaluations agree on correct programs and disagree when a lowering is wrong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mgxir.drivers.compiled_for_ref import compile_for_ref, run_compiled_for_ref
from mgxir.interp.interpreter import run_program
from mgxir.text.parser import read_program
from mgxir.verifier import verify

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.mgx"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_compiled_for_ref_agrees_with_the_program_as_given(path: Path) -> None:
    program = read_program(str(path))
    verify(program)  # fills in the result shapes the examples leave out
    rng = np.random.default_rng(0)
    params = {p.param_name: rng.uniform(-1, 1, p.shape.lens).astype(np.float32) for p in program.main.parameters()}
    compiled = compile_for_ref(program)
    lowered = [ins.op.defn.name for ins in compiled.main if not ins.op.defn.is_builtin]
    assert lowered and all(name.startswith("ref::") for name in lowered), lowered
    assert not any(ins.op.defn.name.startswith("ref::") for ins in program.main), "the input was changed"
    for got, want in zip(run_compiled_for_ref(program, params), run_program(program, params), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
