"""SPIR-V corners the catalogue-wide tests leave out: int32 pow (square-and-multiply, C's truncated
pow for negative exponents), pointwise bodies the translator leaves to the reference interpreter
(each says why), and the grammar and SPIRV-Tools refusing what is not SPIR-V."""

from __future__ import annotations

import numpy as np
import pytest
from spirv_support import program, require_vulkan, run_reference, run_vulkan, translate

from mgxir.translate.spirv.grammar import SpirvToolError, assemble, grammar
from mgxir.translate.spirv.kernels import KernelOptions


def _pointwise(types: list[str], body: list[str], lens: str = "{8}") -> str:
    """`main` with one pointwise over parameters of `types`; `body` uses m:x0, m:x1, ... ."""
    n = len(types)
    lines = ['module: "main"']
    lines += [f"x{i} = @param:x{i} -> {t}, {lens}" for i, t in enumerate(types)]
    lines += [f"@{n} = pointwise({','.join(f'x{i}' for i in range(n))}), [m]", f"@{n + 1} = @return(@{n})", ""]
    lines += ['module: "m"'] + [f"m:x{i} = @param:x{i} -> {t}, {{1}}, {{0}}" for i, t in enumerate(types)]
    lines += body
    return "\n".join(lines) + "\n"


def test_int32_pow_wraps_like_numpy_and_truncates_negative_exponents_like_c() -> None:
    require_vulkan()
    prog = program(_pointwise(["int32_type", "int32_type"], ["m:@2 = pow(m:x0,m:x1)", "m:@3 = @return(m:@2)"]))
    base = np.array([3, -3, 2, 7, 1, -1, -1, 2], np.int32)
    exponent = np.array([4, 3, 31, 12, -5, -3, -2, -1], np.int32)
    translation = translate(prog, fuse=False, options=KernelOptions(unroll=1))
    (got,) = run_vulkan(translation, {"x0": base, "x1": exponent})
    with np.errstate(all="ignore"):
        wrapped = (base[:4].astype(np.int64) ** exponent[:4]).astype(np.int32)  # numpy's int32 power
    # C's (int)pow(b, e) for e < 0: 1 for b == 1, +-1 for b == -1, 0 otherwise
    assert got.tolist() == [*wrapped.tolist(), 1, -1, 1, 0]
    positive = {"x0": base[:4], "x1": exponent[:4]}
    prog4 = program(_pointwise(["int32_type", "int32_type"], ["m:@2 = pow(m:x0,m:x1)", "m:@3 = @return(m:@2)"], "{4}"))
    assert run_reference(prog4, positive)[0].tolist() == wrapped.tolist()


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.uint32, np.int64])
def test_narrow_integers_wrap_after_every_operation(dtype: type) -> None:
    """A sum that overflows the type, compared before it is stored: computed in a wider int (32-bit;
    uint32 in 64-bit), it is wrapped first (int8: 100 + 100 is -56, less than 1), as the reference
    computes."""
    require_vulkan()
    name = f"{np.dtype(dtype).name}_type"
    body = ["m:@3 = add(m:x0,m:x1)", "m:@4 = less(m:@3,m:x2)", "m:@5 = @return(m:@4)"]
    prog = program(_pointwise([name] * 3, body))
    info = np.iinfo(dtype)
    x = np.array([info.max, info.max // 2 + 1, 1, 0, info.max, 3, info.min, info.min], dtype)
    params = {"x0": x, "x1": x.copy(), "x2": np.full(8, 1, dtype)}
    (got,) = run_vulkan(translate(prog, fuse=False), params)
    (want,) = run_reference(prog, params)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize(
    ("types", "body", "why"),
    [
        (
            ["bool_type"],
            ["m:@1 = sqdiff(m:x0,m:x0)"],
            "'sqdiff' of bool_type has no scalar meaning (numpy has no such operation)",
        ),
        (
            ["half_type"],
            ["m:@1 = bit_cast[target_type=int16_type](m:x0)"],
            "no bit cast from half_type to int16_type in SPIR-V",
        ),
    ],
)
def test_bodies_without_a_kernel_say_why(types: list[str], body: list[str], why: str) -> None:
    last = body[-1].split(" = ")[0]
    text = _pointwise(types, [*body, f"m:@9 = @return({last})"])
    translation = translate(program(text), fuse=False, assemble=False)
    assert not translation.kernels
    assert list(translation.skipped.values()) == [why]


def test_the_grammar_refuses_names_it_does_not_have() -> None:
    g = grammar()
    assert g.instruction("OpIAdd").has_result
    assert g.flags("MemorySemantics", "Acquire", "Release") == 0x2 | 0x4
    assert g.value("StorageClass", "StorageBuffer") == 12
    assert g.glsl_instruction("FMix") == "FMix"
    for call, message in [
        (lambda: g.instruction("OpNope"), "'OpNope' is not a SPIR-V instruction"),
        (lambda: g.enumerant("StorageClass", "Nowhere"), "'Nowhere' is not a SPIR-V StorageClass"),
        (lambda: g.flags("StorageClass", "Uniform"), "'StorageClass' is not a SPIR-V bit enum"),
        (lambda: g.glsl_instruction("Frobnicate"), "'Frobnicate' is not a GLSL.std.450 instruction"),
    ]:
        with pytest.raises(KeyError) as caught:
            call()
        assert caught.value.args[0] == message


def test_spirv_tools_rejections_are_reported_with_the_tool_name() -> None:
    with pytest.raises(SpirvToolError, match=r"^spirv-as: .*OpNotAnInstruction"):
        assemble("OpNotAnInstruction %1\n")
    # assembles, but is not a valid Vulkan module (no memory model, no entry point)
    with pytest.raises(SpirvToolError, match=r"^spirv-val: "):
        assemble("OpCapability Shader\n")


@pytest.mark.parametrize("name", ["fp8e4m3fn", "fp8e4m3fnuz", "fp8e5m2", "fp8e5m2fnuz"])
def test_fp8_values_load_and_round_as_ml_dtypes(name: str) -> None:
    """fp8 is bytes computed in float: every bit pattern read into float, and float values around
    every fp8 value converted into fp8 (rounded to nearest even, saturated as MIGraphX's convert
    saturates), bit for bit as the reference's convert computes them."""
    from mgxir.ir.dtype import DType
    from mgxir.ops.elementwise import convert_values

    require_vulkan()
    t = DType[name]
    patterns = np.arange(256, dtype=np.uint8).view(t.numpy)
    finite = np.unique(patterns.astype(np.float32)[np.isfinite(patterns.astype(np.float32))])
    middles = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)
    probes = np.concatenate([finite, middles, np.nextafter(middles, np.inf), np.nextafter(middles, -np.inf)])
    probes = np.concatenate([probes, [np.inf, -np.inf, np.nan, 1e-30, -1e-30, 3e38]]).astype(np.float32)
    for source, target, values in ((t, DType.float, patterns), (DType.float, t, probes)):
        body = [f"m:@1 = convert[target_type={int(target)}](m:x0)", "m:@2 = @return(m:@1)"]
        prog = program(_pointwise([source.type_name], body, f"{{{values.size}}}"))
        (got,) = run_vulkan(translate(prog, fuse=False), {"x0": values})
        want = convert_values(values, target)
        nan = np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))
        same = (got.view(target.bits_dtype) == want.view(target.bits_dtype)) | nan
        assert same.all(), [(values[k], got[k], want[k]) for k in np.flatnonzero(~same)[:6]]
