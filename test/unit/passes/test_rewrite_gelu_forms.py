"""rewrite_gelu on the GELU forms the lit tests leave out (the cube as pow(x, 3), erf of x / sqrt 2,
a scaled argument used twice): what changes, and that the rewritten program computes the same on
the reference interpreter."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mgxir.interp.interpreter import run_program
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.text.parser import parse_program
from mgxir.verifier import verify


def _gelu_program(dtype: str, constants: dict[str, float], body: list[str]) -> str:
    lines = ['module: "main"', f"x = @param:x -> {dtype}, {{16}}, {{1}}"]
    for name, value in constants.items():
        lines.append(f"{name}_s = @literal{{{value!r}}} -> {dtype}, {{1}}, {{0}}")
        lines.append(f"{name} = multibroadcast[out_lens={{16}}]({name}_s)")
    lines += body
    return "\n".join(lines) + "\n"


TANH_WITH_POW = _gelu_program(
    "half_type",
    {"three": 3.0, "c": 0.044715, "k": math.sqrt(2 / math.pi), "one": 1.0, "half": 0.5},
    [
        "cube = pow(x,three)",
        "scaled_cube = mul(cube,c)",
        "inner = add(x,scaled_cube)",
        "arg = mul(k,inner)",
        "t = tanh(arg)",
        "one_plus = add(t,one)",
        "half_x = mul(half,x)",
        "y = mul(half_x,one_plus)",
        "@r = @return(y)",
    ],
)

ERF_OF_DIV = _gelu_program(
    "half_type",
    {"root2": math.sqrt(2.0), "one": 1.0, "half": 0.5},
    [
        "scaled = div(x,root2)",
        "e = erf(scaled)",
        "one_plus = add(e,one)",
        "half_x = mul(x,half)",
        "y = mul(half_x,one_plus)",
        "@r = @return(y)",
    ],
)

# the erf's argument has a second user: not a GELU that can be replaced whole
ERF_ARGUMENT_SHARED = ERF_OF_DIV.replace("@r = @return(y)", "z = add(y,scaled)\n@r = @return(z)")


@pytest.mark.parametrize(
    ("text", "pipeline", "removed", "changes"),
    [
        (TANH_WITH_POW, "rewrite_gelu", "tanh", True),
        # with fast_math (the default) a float tanh GELU is left alone; without, MIGraphX's form
        (TANH_WITH_POW.replace("half_type", "float_type"), "rewrite_gelu", "tanh", False),
        (TANH_WITH_POW.replace("half_type", "float_type"), "rewrite_gelu{fast_math=false}", "tanh", True),
        (ERF_OF_DIV, "rewrite_gelu", "erf", True),
        (ERF_ARGUMENT_SHARED, "rewrite_gelu", "erf", False),
    ],
    ids=["tanh_with_pow", "tanh_float_fast_math", "tanh_float_exact", "erf_of_div", "erf_argument_shared"],
)
def test_gelu_forms(text: str, pipeline: str, removed: str, changes: bool) -> None:
    program = parse_program(text)
    verify(program)
    dtype = np.float16 if "half_type" in text else np.float32
    x = np.linspace(-4, 4, 16).astype(dtype)
    (before,) = run_program(program, {"x": x})
    context = PassContext()
    for p in parse_pipeline(f"{pipeline},dce"):
        p.apply(program, context)
    verify(program)
    names = [ins.op.defn.name for ins in program.main]
    assert (removed not in names) == changes, names
    assert context.statistics["gelu rewritten"] == int(changes)
    if changes:
        assert "exp" in names and "div" in names, names  # x / (1 + exp(...)), MIGraphX's form
    (after,) = run_program(program, {"x": x})
    tolerance = 2e-3 if dtype is np.float16 else 1e-5
    np.testing.assert_allclose(
        np.asarray(after, np.float32), np.asarray(before, np.float32), rtol=tolerance, atol=tolerance
    )
