"""rewrite_gelu: the GELU forms in other argument orders, intermediates with other users, and
near misses that are not a GELU; each rewritten or left as MIGraphX does, computing the same."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_rewrite_gelu_forms import ERF_OF_DIV, TANH_WITH_POW, _gelu_program

from mgxir.interp.interpreter import run_program
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.verifier import verify

# tanh(0.797885 x + 0.035677 x^3), the linear term first
TANH_EXPANDED = _gelu_program(
    "half_type",
    {"three": 3.0, "c": 0.035677, "k": 0.797885, "one": 1.0, "half": 0.5},
    [
        "cube = pow(x,three)",
        "scaled_cube = mul(cube,c)",
        "linear = mul(x,k)",
        "inner = add(linear,scaled_cube)",
        "t = tanh(inner)",
        "one_plus = add(t,one)",
        "half_x = mul(half,x)",
        "y = mul(half_x,one_plus)",
        "@r = @return(y)",
    ],
)

# x * (0.5 + 0.5 * tanh(...)), the constant second
TANH_HALF_PLUS_HALF = TANH_WITH_POW.replace(
    "one_plus = add(t,one)\nhalf_x = mul(half,x)\ny = mul(half_x,one_plus)",
    "half_t = mul(t,half)\nhalf_plus = add(half_t,half)\ny = mul(x,half_plus)",
)


def shared(text: str, name: str) -> str:
    """`name` gets a second user."""
    return text.replace("@r = @return(y)", f"z = add(y,{name})\n@r = @return(z)")


CASES = {
    "tanh_commuted_product": (TANH_WITH_POW.replace("y = mul(half_x,one_plus)", "y = mul(one_plus,half_x)"), 1),
    "tanh_commuted_sum": (TANH_WITH_POW.replace("inner = add(x,scaled_cube)", "inner = add(scaled_cube,x)"), 1),
    "tanh_expanded": (TANH_EXPANDED, 1),
    "tanh_half_plus_half": (TANH_HALF_PLUS_HALF, 1),
    "tanh_argument_shared": (shared(TANH_WITH_POW, "arg"), 1),
    "tanh_inner_sum_shared": (shared(TANH_WITH_POW, "inner"), 1),
    "cubic_term_shared": (shared(TANH_WITH_POW, "scaled_cube"), 1),
    "tanh_shared": (shared(TANH_WITH_POW, "t"), 0),
    "cube_shared": (shared(TANH_WITH_POW, "cube"), 0),
    "half_x_shared": (shared(TANH_WITH_POW, "half_x"), 0),
    "one_plus_shared": (shared(TANH_WITH_POW, "one_plus"), 0),
    "one_minus_tanh": (TANH_WITH_POW.replace("one_plus = add(t,one)", "one_plus = sub(t,one)"), 0),
    "half_plus_tanh": (TANH_WITH_POW.replace("one_plus = add(t,one)", "one_plus = add(t,half)"), 0),
    "x_times_x": (TANH_WITH_POW.replace("half_x = mul(half,x)", "half_x = mul(x,x)"), 0),
    "cube_as_product": (TANH_WITH_POW.replace("cube = pow(x,three)", "cube = mul(x,three)"), 0),
    "erf_commuted_product": (ERF_OF_DIV.replace("y = mul(half_x,one_plus)", "y = mul(one_plus,half_x)"), 1),
    "erf_half_first": (ERF_OF_DIV.replace("half_x = mul(x,half)", "half_x = mul(half,x)"), 1),
    "erf_shared": (shared(ERF_OF_DIV, "e"), 0),
    "erf_one_plus_shared": (shared(ERF_OF_DIV, "one_plus"), 0),
    "erf_of_product": (
        ERF_OF_DIV.replace(f"{math.sqrt(2.0)!r}", f"{math.sqrt(0.5)!r}").replace("div(x,root2)", "mul(root2,x)"),
        1,
    ),
    "erf_divisor_not_root2": (ERF_OF_DIV.replace("div(x,root2)", "div(x,half)"), 0),
    "erf_of_root2_over_x": (ERF_OF_DIV.replace("div(x,root2)", "div(root2,x)"), 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gelu_variants(name: str) -> None:
    text, rewrites = CASES[name]
    program = parse_program(text)
    verify(program)
    x = np.linspace(-4, 4, 16).astype(np.float16)
    (before,) = run_program(program, {"x": x})
    context = PassContext()
    for p in parse_pipeline("rewrite_gelu,dce"):
        p.apply(program, context)
    verify(program)
    assert context.statistics["gelu rewritten"] == rewrites, print_program(program)
    (after,) = run_program(program, {"x": x})
    np.testing.assert_allclose(np.asarray(after, np.float32), np.asarray(before, np.float32), rtol=2e-3, atol=2e-3)
