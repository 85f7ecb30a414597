"""The agreement test's IREE column: every case of test/unit/scalar_cases.py (every elementwise
operator x every type it takes x edge values) as a `pointwise` module translated to MLIR, its body
the op's scalar meaning on the arith/math emitter (mgxir/translate/mlir/arith_emitter.py), compiled
by IREE for the CPU (local-task) and run, against the reference interpreter's compute: bit for bit,
NaNs equal, math functions within ULP_BOUND ulp.

All cases go into one program (one `pointwise` per operand signature, at most 16 outputs each), so
the column costs one IREE compile (about 30 s of CPU; with `-k`, only the selected cases).

Where the column stands (IREE 3.13, llvm-cpu on x86-64), of the 900 cases the reference and the
numpy emitter compute:
  agree .................................................................... 865
  no lowering (the MLIR emitter refuses what the meaning asks) ............... 0
  not compiled: f64 functions IREE's CPU does not link (F64_UNLINKED_ON_CPU:
    sin, erf, fmod, ... of double, also inside integer meanings such as erf
    of int32 and mod of int64) .............................................. 34
  beyond 4 ulp: f64 pow (F64_INACCURATE, xfail) .............................. 1
  other ...................................................................... 0
Elements with denormal operands or results are compared as flushed: IREE's CPU runtime reads and
writes them as zero (DAZ + FTZ; docs/mlir-emitter.md).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("iree.compiler")
pytest.importorskip("iree.runtime")

from scalar_cases import Case, cases, disagreement, is_inexact, numpy_meaning, reference

from mgxir import DiagnosticSink, Program
from mgxir.ops.scalar import Arithmetic, BinaryFunction, MathFunction, emit
from mgxir.ops.scalar_numpy import NumpyEmitter
from mgxir.targets.iree import IreeOptions, run_on_iree
from mgxir.text.parser import parse_program
from mgxir.translate.mlir.math_functions import F64_UNLINKED_ON_CPU
from mgxir.verifier import verify

CASES = [c for c in cases() if reference(c) is not None and numpy_meaning(c) is not None]


class _DoubleMath(NumpyEmitter):
    """The numpy emitter, noting the libm functions a meaning calls on f64 values (fmod for `rem`)."""

    def __init__(self) -> None:
        super().__init__()
        self.double_functions: set[str] = set()

    def _note(self, function: str, x: np.ndarray) -> None:
        if np.asarray(x).dtype == np.float64:
            self.double_functions.add(function)

    def math(self, function: MathFunction, x: np.ndarray) -> np.ndarray:
        self._note(function, x)
        return super().math(function, x)

    def binary_math(self, function: BinaryFunction, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        self._note(function, a)
        return super().binary_math(function, a, b)

    def arithmetic(self, op: Arithmetic, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if op == "rem":
            self._note("fmod", a)
        return super().arithmetic(op, a, b)


# f64 functions IREE's llvm-cpu computes but not within 4 ulp: its f64 powf is exp(y log x) good to
# about 1e-13 (pow(0.5, 100) 16 ulp off), and the emitter has no wider type to compute f64 in
F64_INACCURATE = frozenset({"pow"})


def _double_functions(case: Case) -> set[str]:
    em = _DoubleMath()
    with np.errstate(all="ignore"):
        emit(em, case.op, list(case.operands), case.out)
    return em.double_functions


def _uses_double_libm(case: Case) -> bool:
    """Whether the case computes an f64 math function other than the ones LLVM lowers to
    instructions (llvm-cpu then needs libm's sin, erf, ... which IREE does not link)."""
    return bool(_double_functions(case) & (F64_UNLINKED_ON_CPU | {"remainder"}))


def _group_text(groups: list[list[Case]]) -> str:
    """`main` applying one `pointwise` per group to the group's parameters, every case an output."""
    main, modules, outputs = ['module: "main"'], [], []
    for g, batch in enumerate(groups):
        types, n = batch[0].types, batch[0].operands[0].size
        names = [f"g{g}x{k}" for k in range(len(types))]
        main += [f"{name} = @param:{name} -> {t.type_name}, {{{n}}}" for name, t in zip(names, types)]
        main.append(f"@p{g} = pointwise({','.join(names)}), [m{g}]")
        if len(batch) == 1:  # one output: not a tuple
            outputs.append(f"@p{g}")
        else:
            main += [f"@p{g}r{k} = get_tuple_elem[index={k}](@p{g})" for k in range(len(batch))]
            outputs += [f"@p{g}r{k}" for k in range(len(batch))]
        body = [f'module: "m{g}"']
        body += [f"m{g}:{name} = @param:{name} -> {t.type_name}, {{1}}, {{0}}" for name, t in zip(names, types)]
        arguments = ",".join(f"m{g}:{name}" for name in names)
        body += [f"m{g}:@{k} = {c.op.text}({arguments})" for k, c in enumerate(batch)]
        body.append(f"m{g}:@ret = @return({','.join(f'm{g}:@{k}' for k in range(len(batch)))})")
        modules.append("\n".join(body))
    main.append(f"@ret = @return({','.join(outputs)})")
    return "\n\n".join(["\n".join(main), *modules]) + "\n"


def _parsed(text: str) -> Program:
    program = parse_program(text)
    verify(program, DiagnosticSink())
    return program


# a pointwise's inputs and outputs are one dispatch's bindings, of which IREE's HAL takes 32
OUTPUTS_PER_DISPATCH = 16


@pytest.fixture(scope="module")
def iree_results(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    """Each compiled case's result on IREE local-task, by case name (the cases this session runs)."""
    selected = {
        item.callspec.params["case"].name
        for item in request.session.items
        if item.path == request.path
        and hasattr(item, "callspec")
        and isinstance(item.callspec.params.get("case"), Case)
    }
    by_types: dict[tuple, list[Case]] = defaultdict(list)
    for case in CASES:
        if case.name in selected and not _uses_double_libm(case):
            by_types[case.types].append(case)
    groups = [
        batch[start : start + OUTPUTS_PER_DISPATCH]
        for batch in by_types.values()
        for start in range(0, len(batch), OUTPUTS_PER_DISPATCH)
    ]
    program = _parsed(_group_text(groups))
    params = {f"g{g}x{k}": x for g, batch in enumerate(groups) for k, x in enumerate(batch[0].operands)}
    options = IreeOptions(device="local-task", cache_dir=tmp_path_factory.mktemp("iree"))
    with np.errstate(all="ignore"):
        got = run_on_iree(program, params, DiagnosticSink(), options)
    flat = [c for batch in groups for c in batch]
    return {case.name: np.asarray(value) for case, value in zip(flat, got, strict=True)}


def _denormal(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "biu":
        return np.zeros(x.shape, bool)
    magnitude = np.abs(x.astype(np.float64))
    return (magnitude > 0) & (magnitude < float(ml_dtypes.finfo(x.dtype).tiny))


def _at_most_smallest_normal(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x).reshape(-1)
    if x.dtype.kind in "biu":
        return np.zeros(x.shape, bool)
    magnitude = np.abs(x.astype(np.float64))
    return (magnitude > 0) & (magnitude <= float(ml_dtypes.finfo(x.dtype).tiny))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_mlir_on_iree_agrees(case: Case, iree_results: dict[str, np.ndarray]) -> None:
    if case.name not in iree_results:
        why = "f64 math functions need libm" if _uses_double_libm(case) else "no lowering for these types"
        pytest.skip(f"IREE's llvm-cpu: {why}")
    want = reference(case)
    meant = numpy_meaning(case)
    assert want is not None and meant is not None
    # IREE's CPU runtime reads denormal operands as zero (DAZ) and writes denormal results as zero
    # (FTZ), also where the result rounds up to the smallest normal from a value just below it
    # (sin(-1.1754944e-38)): those elements are not compared
    kept = ~np.logical_or.reduce([_denormal(x) for x in case.operands] + [_at_most_smallest_normal(want)])
    flushed = dataclasses.replace(case, operands=[x[kept] for x in case.operands])
    got = iree_results[case.name].reshape(-1)[kept]
    problem = disagreement(
        flushed, got, want.reshape(-1)[kept], inexact=is_inexact(meant[1]), exact_zeros_and_denormals=False
    )
    if problem is not None and _double_functions(case) & F64_INACCURATE:
        pytest.xfail(f"IREE's f64 math functions: {problem}")
    assert problem is None, problem


def test_greater_or_equal_runs_on_iree_from_its_definition_alone(tmp_path: Path) -> None:
    """`greater_or_equal` has no MLIR-specific code: its one definition (mgxir/ops/elementwise.py)
    lowers through its scalar meaning and runs."""
    text = 'module: "main"\nx = @param:x -> int32_type, {4}\ny = @param:y -> int32_type, {4}\n'
    text += "@0 = greater_or_equal(x,y)\n@ret = @return(@0)\n"
    x, y = np.array([1, 2, 3, -5], np.int32), np.array([2, 2, 1, -4], np.int32)
    (got,) = run_on_iree(_parsed(text), {"x": x, "y": y}, DiagnosticSink(), IreeOptions(cache_dir=tmp_path))
    assert np.asarray(got).tolist() == [0, 1, 1, 0]
