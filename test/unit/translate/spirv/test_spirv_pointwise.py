"""Every pointwise operator of the catalogue as SPIR-V on the Vulkan device (lavapipe in CI), in
float, half and int32 (and bool where numpy computes it), against the reference interpreter;
every kernel passes spirv-val for Vulkan 1.1.

lavapipe compiles each kernel at its first dispatch, about 0.2 s whatever its size, so operators
of one signature share a kernel: one `pointwise` whose body applies each of them to the same
parameters and returns all results (a tuple), up to the outputs that fit in push constants."""

from __future__ import annotations

import functools
from collections import defaultdict

import numpy as np
import pytest
from spirv_support import assert_matches, program, require_vulkan, run_reference, run_vulkan, translate

from mgxir.diagnostics import MgxError
from mgxir.ir.dtype import DType
from mgxir.ir.registry import all_ops
from mgxir.translate.spirv.kernels import KernelOptions

POINTWISE = sorted(name for name, defn in all_ops().items() if defn.pointwise)
DTYPES = [DType.float, DType.half, DType.int32, DType.bool]
LENS = (4, 16)
SPECIAL_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 2.0, 3.0, -3.0, np.inf, -np.inf, np.nan, 0.25]
OUTPUTS_PER_KERNEL = 10

# operators whose arguments are not all of the tested type, or that need attributes set:
# (argument types, None standing for the tested type), attribute text
SIGNATURES: dict[str, list[tuple[list[DType | None], str]]] = {
    "where": [([DType.bool, None, None], ""), ([None, None, None], "")],
    "convert": [([None], f"[target_type={t.value}]") for t in DTYPES],
    "bit_cast": [([None], f"[target_type={t.value}]") for t in DTYPES],
    "quantizelinear": [
        ([None, None], f"[out_type={DType.int32.value}]"),
        ([None, None, DType.int32], ""),
        ([None, None, DType.half], ""),
        ([None, None], f"[out_type={DType.float.value}]"),
    ],
    "dequantizelinear": [([None, DType.float], ""), ([None, DType.half, None], "")],
    "leaky_relu": [([None], ""), ([None], "[alpha=1.5]")],
    "elu": [([None], ""), ([None], "[alpha=0.5]")],
}

Case = tuple[str, tuple[DType, ...], str]  # operator, argument types, attributes


def _values(dtype: DType, rng: np.random.Generator) -> np.ndarray:
    if dtype is DType.bool:
        return rng.integers(0, 2, size=LENS).astype(bool)
    if dtype is DType.int32:
        return rng.integers(-3, 4, size=LENS).astype(np.int32)
    values = rng.uniform(-3.0, 3.0, size=LENS)
    values.reshape(-1)[: len(SPECIAL_FLOATS)] = rng.permutation(SPECIAL_FLOATS)
    return values.astype(dtype.numpy)


def _inputs(types: tuple[DType, ...], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"x{i}": _values(t, rng) for i, t in enumerate(types)}


def _program_text(cases: list[Case]) -> str:
    """`main` with one `pointwise` whose body applies each case's operator to the parameters."""
    types = cases[0][1]
    n = len(types)
    names = ",".join(f"x{i}" for i in range(n))
    lines = ['module: "main"']
    lines += [f"x{i} = @param:x{i} -> {t.type_name}, {{4, 16}}" for i, t in enumerate(types)]
    lines.append(f"@{n} = pointwise({names}), [m]")
    if len(cases) == 1:
        lines.append(f"@{n + 1} = @return(@{n})")
    else:
        lines += [f"@{n + 1 + k} = get_tuple_elem[index={k}](@{n})" for k in range(len(cases))]
        lines.append(f"@{n + 1 + len(cases)} = @return({','.join(f'@{n + 1 + k}' for k in range(len(cases)))})")
    lines += ["", 'module: "m"']
    lines += [f"m:x{i} = @param:x{i} -> {t.type_name}, {{1}}, {{0}}" for i, t in enumerate(types)]
    arguments = ",".join(f"m:x{i}" for i in range(n))
    lines += [f"m:@{n + k} = {op}{attributes}({arguments})" for k, (op, _, attributes) in enumerate(cases)]
    lines.append(f"m:@{n + len(cases)} = @return({','.join(f'm:@{n + k}' for k in range(len(cases)))})")
    return "\n".join(lines) + "\n"


def _describe(case: Case) -> str:
    op, types, attributes = case
    return f"{op}{attributes}({', '.join(t.type_name for t in types)})"


@functools.cache
def _cases(dtype: DType) -> tuple[dict[tuple[DType, ...], list[Case]], list[str]]:
    """The cases numpy computes for `dtype`, grouped by argument types; and those without a kernel."""
    groups: dict[tuple[DType, ...], list[Case]] = defaultdict(list)
    unsupported = []
    for op in POINTWISE:
        defn = all_ops()[op]
        for types, attributes in SIGNATURES.get(op, [([None] * defn.arity[0], "")]):
            case = (op, tuple(dtype if t is None else t for t in types), attributes)
            try:
                prog = program(_program_text([case]))
                run_reference(prog, _inputs(case[1], 0))
            except (MgxError, TypeError):
                continue  # the shape rule or numpy rejects these types (float bitwise_and, ...)
            skipped = translate(prog, fuse=False, assemble=False).skipped
            if skipped:
                # numpy computes float functions of int32 in double, which GLSL.std.450 has not
                if not any("GLSL.std.450 has no 64-bit" in why for why in skipped.values()):
                    unsupported.append(_describe(case))
                continue
            groups[case[1]].append(case)
    return groups, unsupported


@pytest.mark.parametrize("dtype", [DType.float, DType.half, DType.int32])
def test_every_operator_has_a_kernel(dtype: DType) -> None:
    _, unsupported = _cases(dtype)
    assert not unsupported, f"no kernel for {unsupported}"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.type_name)
def test_pointwise_operators(dtype: DType) -> None:
    require_vulkan()
    groups, _ = _cases(dtype)
    failures = []
    checked = 0
    for types, cases in groups.items():
        for start in range(0, len(cases), OUTPUTS_PER_KERNEL):
            chunk = cases[start : start + OUTPUTS_PER_KERNEL]
            prog = program(_program_text(chunk))
            params = _inputs(types, start + 7 * int(dtype))
            want = run_reference(prog, params)
            translation = translate(prog, fuse=False, options=KernelOptions(unroll=1))
            assert len(translation.kernels) == 1, translation.skipped
            got = run_vulkan(translation, params)
            for case, g, w in zip(chunk, got, want, strict=True):
                tolerance = 2e-3 if w.dtype == np.float16 or DType.half in case[1] else 1e-3
                try:
                    assert_matches(g, w, tolerance, _describe(case))
                except AssertionError as e:
                    failures.append(str(e).splitlines()[0])
                checked += 1
    assert not failures, "\n".join(failures)
    assert checked > 0
