"""The agreement test: every elementwise operator x every type it takes x edge values, computed by
each code generator that runs here, against the reference interpreter's compute (test/unit/
scalar_cases.py generates the cases from the registry). Bit for bit, NaNs equal, except math
functions, which may differ by ULP_BOUND ulp of the result type.

- gpu-host: the GPU generator's pointwise kernels (mgxir/targets/gpu/kernels.py), compiled for the
  host with clang behind a thin shim (test/unit/gpu_host.py): all cases in one compile.
"""

from __future__ import annotations

import numpy as np
import pytest
from gpu_host import HostKernels, have_clang
from scalar_cases import Case, cases, disagreement, is_inexact, numpy_meaning, reference

from mgxir.ir.module import Module
from mgxir.ir.shape import Shape
from mgxir.targets.gpu.kernels import Kernel, Tensor, Unsupported, pointwise_kernel

CASES = [c for c in cases() if reference(c) is not None and numpy_meaning(c) is not None]


def pointwise_module(case: Case) -> Module:
    """The case as the pointwise module fuse_pointwise makes: one parameter per operand, the op."""
    module = Module("pointwise")
    n = case.operands[0].size
    params = [module.add_parameter(f"x{k}", Shape.make(t, (n,))) for k, t in enumerate(case.types)]
    params.sort(key=lambda p: p.param_name)
    module.add_return([module.insert(None, case.op, params)])
    return module


def _gpu_kernel(case: Case) -> tuple[Kernel, list[Tensor], Tensor] | None:
    module = pointwise_module(case)
    n = case.operands[0].size
    inputs = [Tensor.of(Shape.make(t, (n,))) for t in case.types]
    output = Tensor.of(Shape.make(case.out, (n,)))
    try:
        return pointwise_kernel(module, inputs, output), inputs, output
    except Unsupported:
        return None


@pytest.fixture(scope="module")
def host_kernels() -> tuple[HostKernels, dict[str, int]]:
    if not have_clang():
        pytest.skip("no clang++ to compile the GPU kernels for the host")
    built = {c.name: _gpu_kernel(c) for c in CASES}
    generated = [(c.name, k) for c, k in zip(CASES, built.values()) if k is not None]
    return HostKernels([k for _, k in generated]), {name: i for i, (name, _) in enumerate(generated)}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gpu_kernel_on_host_agrees(case: Case, host_kernels: tuple[HostKernels, dict[str, int]]) -> None:
    library, index = host_kernels
    if case.name not in index:
        pytest.skip("the GPU generator leaves these types to the host")
    want = reference(case)
    meant = numpy_meaning(case)
    assert want is not None and meant is not None
    out = np.empty(case.operands[0].size, case.out.numpy)
    got = library.run(index[case.name], case.operands, out)
    problem = disagreement(case, got, want, inexact=is_inexact(meant[1]))
    assert problem is None, problem
