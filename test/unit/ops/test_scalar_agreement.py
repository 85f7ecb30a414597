"""The agreement test: every elementwise operator x every type it takes x edge values, computed by
each code generator that runs here, against the reference interpreter's compute (test/unit/
support/scalar_cases.py generates the cases from the registry). Bit for bit, NaNs equal, except math
functions, which may differ by ULP_BOUND ulp of the result type.

- gpu-host: the GPU generator's pointwise kernels (mgxir/targets/gpu/kernels.py), compiled for the
  host with clang behind a thin shim (test/unit/support/gpu_host.py): all cases in one compile.
- spirv: the SPIR-V generator's kernels (mgxir/translate/spirv/) on the Vulkan device (lavapipe
  here); the cases of one operand signature share kernels (ten results each: lavapipe compiles a
  kernel in about 0.2 s whatever its size).

Reductions likewise: every reduce op x every type x rows of edge values (scalar_cases.py), one
fused_reduce kernel each, compared by `reduce_disagreement` (float sums within the rounding of
their accumulation order).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from gpu_host import DeviceKernels, HostKernels, have_clang
from scalar_cases import (
    Case,
    ReduceCase,
    cases,
    disagreement,
    is_inexact,
    numpy_meaning,
    reduce_cases,
    reduce_disagreement,
    reduce_reference,
    reference,
)
from spirv_support import program, require_vulkan, run_vulkan, translate

from mgxir.analysis.kernel_plan import accumulator_type
from mgxir.ir.dtype import DType
from mgxir.ir.module import Module
from mgxir.ir.shape import Shape
from mgxir.targets.gpu.compiler import device_arch
from mgxir.targets.gpu.kernels import (
    PRELUDE,
    Kernel,
    Tensor,
    Unsupported,
    pointwise_kernel,
    reduce_kernel,
    storage_type,
)

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


gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(device_arch() is None, reason="no GPU")


def _batch(kind: type, kernels: dict[str, tuple[Kernel, list[Tensor], Tensor] | None]) -> tuple[object, dict[str, int]]:
    """The generated kernels (by case name; None: no kernel) in one library of `kind` (HostKernels
    or DeviceKernels), with each case's index in it."""
    generated = [(name, k) for name, k in kernels.items() if k is not None]
    return kind([k for _, k in generated]), {name: i for i, (name, _) in enumerate(generated)}


@pytest.fixture(scope="module")
def host_kernels() -> tuple[HostKernels, dict[str, int]]:
    if not have_clang():
        pytest.skip("no clang++ to compile the GPU kernels for the host")
    return _batch(HostKernels, {c.name: _gpu_kernel(c) for c in CASES})


@pytest.fixture(scope="module")
def device_kernels() -> tuple[DeviceKernels, dict[str, int]]:
    return _batch(DeviceKernels, {c.name: _gpu_kernel(c) for c in CASES})


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gpu_kernel_on_host_agrees(case: Case, host_kernels: tuple[HostKernels, dict[str, int]]) -> None:
    _check_gpu_kernel(case, *host_kernels)


@gpu
@needs_gpu
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gpu_kernel_on_device_agrees(case: Case, device_kernels: tuple[DeviceKernels, dict[str, int]]) -> None:
    _check_gpu_kernel(case, *device_kernels)


def _check_gpu_kernel(case: Case, library: HostKernels | DeviceKernels, index: dict[str, int]) -> None:
    if case.name not in index:
        pytest.skip("the GPU generator leaves these types to the host")
    want = reference(case)
    meant = numpy_meaning(case)
    assert want is not None and meant is not None
    out = np.empty(case.operands[0].size, case.out.numpy)
    got = library.run(index[case.name], case.operands, out)
    problem = disagreement(case, got, want, inexact=is_inexact(meant[1]))
    assert problem is None, problem


def _spirv_text(batch: list[Case]) -> str:
    """`main` with one `pointwise` applying each case's operation to the same parameters."""
    types, n = batch[0].types, batch[0].operands[0].size
    names = ",".join(f"x{k}" for k in range(len(types)))
    lines = ['module: "main"', *(f"x{k} = @param:x{k} -> {t.type_name}, {{{n}}}" for k, t in enumerate(types))]
    lines.append(f"@p = pointwise({names}), [m]")
    if len(batch) == 1:
        lines.append("@ret = @return(@p)")
    else:
        lines += [f"@r{k} = get_tuple_elem[index={k}](@p)" for k in range(len(batch))]
        lines.append(f"@ret = @return({','.join(f'@r{k}' for k in range(len(batch)))})")
    lines += ["", 'module: "m"']
    lines += [f"m:x{k} = @param:x{k} -> {t.type_name}, {{1}}, {{0}}" for k, t in enumerate(types)]
    arguments = ",".join(f"m:x{k}" for k in range(len(types)))
    lines += [f"m:@{k} = {c.op.text}({arguments})" for k, c in enumerate(batch)]
    lines.append(f"m:@ret = @return({','.join(f'm:@{k}' for k in range(len(batch)))})")
    return "\n".join(lines) + "\n"


def _has_spirv_kernel(case: Case) -> bool:
    return not translate(program(_spirv_text([case])), fuse=False, assemble=False).skipped


SPIRV_OUTPUTS_PER_KERNEL = 10


@pytest.fixture(scope="module")
def spirv_results() -> dict[str, np.ndarray]:
    """Each case's result on the Vulkan device, by case name (cases without a kernel left out)."""
    require_vulkan()
    groups: dict[tuple, list[Case]] = defaultdict(list)
    for case in CASES:
        if _has_spirv_kernel(case):
            groups[case.types].append(case)
    results: dict[str, np.ndarray] = {}
    for group in groups.values():
        for start in range(0, len(group), SPIRV_OUTPUTS_PER_KERNEL):
            batch = group[start : start + SPIRV_OUTPUTS_PER_KERNEL]
            translation = translate(program(_spirv_text(batch)), fuse=False)
            params = {f"x{k}": x for k, x in enumerate(batch[0].operands)}
            for case, got in zip(batch, run_vulkan(translation, params), strict=True):
                results[case.name] = got
    return results


# GLSL.std.450 functions lavapipe computes beyond the ulp bound on some edge values (measured by
# this test: sin/cos/tan of 3e9 without argument reduction, pow a few ulp over); the emitter has its
# own accurate acos, acosh, asin, asinh, atan, atanh, erf, exp, expm1, sinh and tanh, these are not
# written yet
LAVAPIPE_INACCURATE = frozenset({"cos", "pow", "sin", "tan"})


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_spirv_kernel_agrees(case: Case, spirv_results: dict[str, np.ndarray]) -> None:
    if case.name not in spirv_results:
        pytest.skip("the SPIR-V generator leaves these types to the host")
    want = reference(case)
    meant = numpy_meaning(case)
    assert want is not None and meant is not None
    # Vulkan 1.1 without VK_KHR_shader_float_controls: denormals may flush, zeros lose their sign
    problem = disagreement(
        case, spirv_results[case.name], want, inexact=is_inexact(meant[1]), exact_zeros_and_denormals=False
    )
    if problem is not None and meant[1] & LAVAPIPE_INACCURATE:
        pytest.xfail(f"lavapipe's math functions: {problem}")
    assert problem is None, problem


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.float16])
def test_gpu_kernel_rounds_every_step(dtype: type) -> None:
    """A sum that overflows (8/16-bit ints) or rounds (half), compared before it is stored: the
    kernel holds it in int or float, so it must wrap or round it first, as the reference does."""
    if not have_clang():
        pytest.skip("no clang++ to compile the GPU kernels for the host")
    from mgxir.ir.dtype import DType
    from mgxir.ir.registry import make_op

    t = DType.from_numpy(np.dtype(dtype))
    module = Module("pointwise")
    n = 8
    x0, x1, x2 = (module.add_parameter(f"x{k}", Shape.make(t, (n,))) for k in range(3))
    total = module.insert(None, make_op("add"), [x0, x1])
    module.add_return([module.insert(None, make_op("less"), [x2, total])])
    tensors = [Tensor.of(Shape.make(t, (n,))) for _ in range(4)]
    kernel = pointwise_kernel(module, tensors[:3], tensors[3])
    if t.is_float:
        x = np.array([2048, 1, 0.5, 1000, 3, 2049, -7, 1e4], dtype)
        y = np.array([1, 2048, 0.25, 0.3, 1e-3, 1, 7, 1e4], dtype)
        z = x + y  # rounded to half: z < x + y is false, and true where the sum is not rounded
    else:
        info = np.iinfo(dtype)
        x = np.array([info.max, info.max // 2 + 1, 1, 0, info.max, 3, info.min, info.min], dtype)
        y, z = x.copy(), np.full(n, 1, dtype)
    operands = [np.ascontiguousarray(a) for a in (x, y, z)]
    got = HostKernels([(kernel, tensors[:3], tensors[3])]).run(0, operands, np.empty(n, dtype))
    with np.errstate(all="ignore"):
        want = (z < (x + y)).astype(dtype)
    assert got.tolist() == want.tolist()


# -- reductions ------------------------------------------------------------------------------------

REDUCE_CASES = list(reduce_cases())


def _accumulator(case: ReduceCase) -> DType:
    return accumulator_type(case.dtype, case.reducer)


def _reduce_gpu_kernel(case: ReduceCase) -> tuple[Kernel, list[Tensor], Tensor] | None:
    """The case as the fused_reduce module fuse_reduce makes: one parameter, the reduce op."""
    module = Module("fused_reduce")
    shape = Shape.make(case.dtype, case.rows.shape)
    module.add_return([module.insert(None, case.op, [module.add_parameter("x0", shape)])])
    inputs = [Tensor.of(shape)]
    output = Tensor.of(Shape.make(case.dtype, (case.rows.shape[0], 1)))
    try:
        return reduce_kernel(module, [1], inputs, output), inputs, output
    except Unsupported:
        return None


@pytest.fixture(scope="module")
def host_reduce_kernels() -> tuple[HostKernels, dict[str, int]]:
    if not have_clang():
        pytest.skip("no clang++ to compile the GPU kernels for the host")
    return _batch(HostKernels, {c.name: _reduce_gpu_kernel(c) for c in REDUCE_CASES})


@pytest.fixture(scope="module")
def device_reduce_kernels() -> tuple[DeviceKernels, dict[str, int]]:
    return _batch(DeviceKernels, {c.name: _reduce_gpu_kernel(c) for c in REDUCE_CASES})


@pytest.mark.parametrize("case", REDUCE_CASES, ids=[c.name for c in REDUCE_CASES])
def test_gpu_reduce_kernel_on_host_agrees(case: ReduceCase, host_reduce_kernels: tuple[HostKernels, dict]) -> None:
    _check_gpu_reduce_kernel(case, *host_reduce_kernels)


@gpu
@needs_gpu
@pytest.mark.parametrize("case", REDUCE_CASES, ids=[c.name for c in REDUCE_CASES])
def test_gpu_reduce_kernel_on_device_agrees(
    case: ReduceCase, device_reduce_kernels: tuple[DeviceKernels, dict]
) -> None:
    _check_gpu_reduce_kernel(case, *device_reduce_kernels)


def _check_gpu_reduce_kernel(case: ReduceCase, library: HostKernels | DeviceKernels, index: dict[str, int]) -> None:
    if case.name not in index:
        pytest.skip("the GPU generator leaves these types to the host")
    out = np.empty(case.rows.shape[0], case.dtype.numpy)
    got = library.run(index[case.name], [case.rows], out)
    problem = reduce_disagreement(case, got, reduce_reference(case), _accumulator(case))
    assert problem is None, problem


def _reduce_text(batch: list[ReduceCase]) -> str:
    """`main` with one fused_reduce per case over the same parameter (no fusion pass needed)."""
    t, (rows, n) = batch[0].dtype, batch[0].rows.shape
    lines = ['module: "main"', f"x = @param:x -> {t.type_name}, {{{rows}, {n}}}"]
    lines += [f"@{k} = fused_reduce[axes={{1}}](x), [m{k}]" for k in range(len(batch))]
    lines.append(f"@ret = @return({','.join(f'@{k}' for k in range(len(batch)))})")
    for k, case in enumerate(batch):
        lines += ["", f'module: "m{k}"', f"m{k}:x0 = @param:x0 -> {t.type_name}, {{{rows}, {n}}}"]
        lines += [f"m{k}:@1 = {case.op.text}(m{k}:x0)", f"m{k}:@2 = @return(m{k}:@1)"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def spirv_reduce_results() -> dict[str, np.ndarray]:
    """Each reduction case's result on the Vulkan device, by case name (those without a kernel
    left out): the cases of one type and row length in one program."""
    require_vulkan()
    groups: dict[tuple, list[ReduceCase]] = defaultdict(list)
    for case in REDUCE_CASES:
        groups[(case.dtype, case.rows.shape)].append(case)
    results: dict[str, np.ndarray] = {}
    for batch in groups.values():
        translation = translate(program(_reduce_text(batch)), fuse=False)
        outputs = translation.program.main.return_instruction.args
        with_kernels = [k for k, ins in enumerate(outputs) if ins in translation.kernels]
        if not with_kernels:
            continue
        got = run_vulkan(translation, {"x": batch[0].rows})
        for k in with_kernels:
            results[batch[k].name] = got[k]
    return results


@pytest.mark.parametrize("case", REDUCE_CASES, ids=[c.name for c in REDUCE_CASES])
def test_spirv_reduce_kernel_agrees(case: ReduceCase, spirv_reduce_results: dict[str, np.ndarray]) -> None:
    if case.name not in spirv_reduce_results:
        pytest.skip("the SPIR-V generator leaves these types to the host")
    want = reduce_reference(case)
    got = spirv_reduce_results[case.name]
    problem = reduce_disagreement(case, got, want, _accumulator(case))
    assert problem is None, problem


FP8_TYPES = [t for t in DType if t.is_fp8]


def _fp8_probe_values(t: DType) -> np.ndarray:
    """float32 values around every value of fp8 type `t`: the values, the midpoints between
    neighbours (ties round to even) and a float ulp either side, past the largest, infinities,
    NaN, zeros and values below the smallest subnormal."""
    every = np.arange(256, dtype=np.uint8).view(t.numpy).astype(np.float32)
    finite = np.unique(every[np.isfinite(every)])
    middles = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)
    largest = float(finite.max())
    beyond = np.array([largest * 1.03, largest * 1.07, largest * 2, 1e6, 3e38, np.inf, np.nan], np.float32)
    tiny = np.array([0.0, -0.0, 1e-30, -1e-30, float(finite[finite > 0].min()) / 2], np.float32)
    values = np.concatenate([finite, middles, np.nextafter(middles, np.inf), np.nextafter(middles, -np.inf), beyond])
    return np.concatenate([values, -values, tiny]).astype(np.float32)


def _conversion_kernel(source: DType, target: DType, n: int) -> tuple[Kernel, list[Tensor], Tensor]:
    """out[i] = x0[i] through the prelude's mgx_load and mgx_store alone (no operator's meaning)."""
    symbol = f"convert_{source.name}_{target.name}"
    code = (
        f'extern "C" __global__ void {symbol}(const {storage_type(source)}* __restrict__ x0, '
        f"{storage_type(target)}* __restrict__ out) {{\n"
        f"  const long long i = (long long)blockIdx.x * 256 + threadIdx.x;\n"
        f"  if (i < {n}LL) mgx_store(out + i, mgx_load(x0 + i));\n}}\n"
    )
    tensors = [Tensor.of(Shape.make(source, (n,))), Tensor.of(Shape.make(target, (n,)))]
    return Kernel(symbol, PRELUDE + code, -(-n // 256) * 256, 256), tensors[:1], tensors[1]


@pytest.mark.parametrize("t", FP8_TYPES, ids=lambda t: t.name)
def test_gpu_fp8_conversions(t: DType) -> None:
    """Every fp8 bit pattern into float, and float values around every fp8 value into fp8, as the
    GPU kernels load and store them (the prelude's mgx_load/mgx_store), against ml_dtypes."""
    if not have_clang():
        pytest.skip("no clang++ to compile the GPU kernels for the host")
    probes = _fp8_probe_values(t)
    library = HostKernels([_conversion_kernel(t, DType.float, 256), _conversion_kernel(DType.float, t, probes.size)])
    patterns = np.arange(256, dtype=np.uint8).view(t.numpy)
    decoded = library.run(0, [patterns], np.empty(256, np.float32))
    want = patterns.astype(np.float32)
    assert np.array_equal(decoded, want, equal_nan=True), np.flatnonzero(~((decoded == want) | np.isnan(want)))
    encoded = library.run(1, [probes], np.empty(probes.size, t.numpy)).view(np.uint8)
    want_bits = probes.astype(t.numpy).view(np.uint8)
    wrong = np.flatnonzero(encoded != want_bits)
    assert wrong.size == 0, [(float(probes[k]), hex(encoded[k]), hex(want_bits[k])) for k in wrong[:8]]
