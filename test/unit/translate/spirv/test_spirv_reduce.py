"""fused_reduce kernels (every reduce op, any axes, softmax- and layernorm-shaped bodies as
MIGraphX's fusion makes them) and pointwise kernels over broadcast, sliced and transposed
inputs, on the Vulkan device against the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from spirv_support import assert_matches, program, require_vulkan, run_reference, run_vulkan, translate

from mgxir.ir.dtype import DType
from mgxir.translate.spirv.kernels import KernelOptions

REDUCE_OPS = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"]


def _check(
    text: str,
    params: dict[str, np.ndarray],
    kernels: int,
    tolerance: float = 1e-4,
    options: KernelOptions | None = None,
) -> None:
    require_vulkan()
    prog = program(text)
    want = run_reference(prog, params)
    translation = translate(prog, options=options)
    assert not translation.skipped, translation.skipped
    assert len(translation.kernels) == kernels, [k.name for k in translation.kernels.values()]
    got = run_vulkan(translation, params)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_matches(g, w, tolerance, f"output {i}")


AXES = [(1,), (2,), (0, 2), (0, 1, 2), (1, 2)]


@pytest.mark.parametrize("dtype", [DType.float, DType.half, DType.int32], ids=lambda t: t.type_name)
def test_reductions_over_axes(dtype: DType) -> None:
    """Each reduce op over a different set of axes (rotating with the type), one program per type."""
    rng = np.random.default_rng(int(dtype))
    lens = (3, 37, 5)
    if dtype is DType.int32:
        x = rng.integers(-3, 4, size=lens).astype(np.int32)
    else:
        x = rng.uniform(0.5, 1.5, size=lens).astype(dtype.numpy)
    lines = [f"x = @param:x -> {dtype.type_name}, {{3, 37, 5}}"]
    for k, op in enumerate(REDUCE_OPS):
        axes = AXES[(k + int(dtype)) % len(AXES)]
        lines.append(f"@{k + 1} = {op}[axes={{{', '.join(map(str, axes))}}}](x)")
    lines.append(f"@{len(REDUCE_OPS) + 1} = @return({','.join(f'@{k + 1}' for k in range(len(REDUCE_OPS)))})")
    tolerance = 2e-3 if dtype is DType.half else 1e-5
    # prod over 185 values of [0.5, 1.5] stays finite; int prod wraps like numpy's
    _check("\n".join(lines) + "\n", {"x": x}, kernels=len(REDUCE_OPS), tolerance=tolerance)


def test_any_all_of_bools() -> None:
    x = np.random.default_rng(3).random((6, 40)) < 0.03
    x[0] = False
    x[1] = True
    text = """
x = @param:x -> bool_type, {6, 40}
@1 = reduce_any[axes={1}](x)
@2 = reduce_all[axes={1}](x)
@3 = @return(@1,@2)
"""
    _check(text, {"x": x}, kernels=2)


@pytest.mark.parametrize("lens", [(4, 16), (2, 5000)])
def test_softmax(lens: tuple[int, int]) -> None:
    x = np.random.default_rng(4).standard_normal(lens).astype(np.float32) * 4
    text = f"x = @param:x -> float_type, {{{lens[0]}, {lens[1]}}}\n@1 = softmax[axis=1](x)\n@2 = @return(@1)\n"
    _check(text, {"x": x}, kernels=1, tolerance=1e-5)


def test_softmax_transposed_input_and_logsoftmax() -> None:
    x = np.random.default_rng(5).standard_normal((8, 64)).astype(np.float32)
    text = """
x = @param:x -> float_type, {8, 64}
@1 = transpose[permutation={1, 0}](x)
@2 = softmax[axis=0](@1)
@3 = logsoftmax[axis=1](x)
@4 = @return(@2,@3)
"""
    _check(text, {"x": x}, kernels=2, tolerance=1e-5)


def test_layernorm_half() -> None:
    rng = np.random.default_rng(6)
    params = {
        "x": rng.standard_normal((2, 8, 96)).astype(np.float16),
        "g": rng.standard_normal(96).astype(np.float16),
        "b": rng.standard_normal(96).astype(np.float16),
    }
    text = """
x = @param:x -> half_type, {2, 8, 96}
g = @param:g -> half_type, {96}
b = @param:b -> half_type, {96}
@3 = @literal{1e-05} -> half_type, {1}, {0}
@4 = reduce_mean[axes={2}](x)
@5 = multibroadcast[out_lens={2, 8, 96}](@4)
@6 = sub(x,@5)
@7 = mul(@6,@6)
@8 = reduce_mean[axes={2}](@7)
@9 = multibroadcast[out_lens={2, 8, 1}](@3)
@10 = add(@8,@9)
@11 = rsqrt(@10)
@12 = multibroadcast[out_lens={2, 8, 96}](@11)
@13 = mul(@6,@12)
@14 = multibroadcast[out_lens={2, 8, 96}](g)
@15 = mul(@13,@14)
@16 = multibroadcast[out_lens={2, 8, 96}](b)
@17 = add(@15,@16)
@18 = @return(@17)
"""
    _check(text, params, kernels=1, tolerance=4e-3)


def test_reduction_past_the_cached_elements() -> None:
    """Elements past K per invocation are reloaded by a loop in every pass."""
    x = np.random.default_rng(7).standard_normal((3, 3000)).astype(np.float32)
    text = "x = @param:x -> float_type, {3, 3000}\n@1 = softmax[axis=1](x)\n@2 = @return(@1)\n"
    _check(text, {"x": x}, kernels=1, tolerance=1e-5, options=KernelOptions(workgroup_size=64, max_cached_elements=2))


def test_pointwise_over_broadcast_sliced_and_transposed_inputs() -> None:
    rng = np.random.default_rng(8)
    params = {
        "x": rng.standard_normal((6, 10)).astype(np.float32),
        "y": rng.standard_normal((10, 6)).astype(np.float32),
        "z": rng.standard_normal(10).astype(np.float32),
    }
    text = """
x = @param:x -> float_type, {6, 10}
y = @param:y -> float_type, {10, 6}
z = @param:z -> float_type, {10}
@3 = transpose[permutation={1, 0}](y)
@4 = multibroadcast[out_lens={6, 10}](z)
@5 = slice[axes={1},starts={2},ends={8}](x)
@6 = slice[axes={1},starts={2},ends={8}](@3)
@7 = slice[axes={1},starts={2},ends={8}](@4)
@8 = add(@5,@6)
@9 = mul(@8,@7)
@10 = exp(@9)
@11 = @return(@10)
"""
    _check(text, params, kernels=1, tolerance=1e-6)


def test_device_values_stay_on_the_device_between_kernels() -> None:
    """A kernel's result feeds the next kernel through a view (a transpose) without a download."""
    rng = np.random.default_rng(9)
    params = {"x": rng.standard_normal((16, 32)).astype(np.float32)}
    text = """
x = @param:x -> float_type, {16, 32}
@1 = exp(x)
@2 = reduce_sum[axes={1}](@1)
@3 = transpose[permutation={1, 0}](@1)
@4 = reduce_max[axes={1}](@3)
@5 = @return(@2,@4)
"""
    _check(text, params, kernels=3, tolerance=1e-5)
