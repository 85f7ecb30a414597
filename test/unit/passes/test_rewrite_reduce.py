"""rewrite_reduce: which variance forms it recognises, when a mean accumulates in a wider type,
and the types and axes of what it writes."""

from __future__ import annotations

import numpy as np
import pytest

from mgxir.interp.interpreter import run_program
from mgxir.ir.program import Program
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.verifier import verify

X = "float_type, {2, 8}, {8, 1}"
M = "float_type, {2, 1}, {1, 1}"
MB = "float_type, {2, 8}, {1, 0}"


def rewritten(source: str) -> tuple[Program, PassContext]:
    program = parse_program('module: "main"\n' + source)
    context = PassContext()
    for p in parse_pipeline("rewrite_reduce,dce"):
        p.apply(program, context)
    verify(program)
    return program, context


def op_names(program: Program) -> list[str]:
    return [ins.op.defn.name for ins in program.main if not (ins.is_param or ins.is_literal or ins.is_return)]


def variance(square: str, mean_axes: str = "{1}") -> str:
    """reduce_mean over axis 1 of `square`, which reads x, the mean @1 and its broadcast @2."""
    mean_shape = M if mean_axes == "{1}" else "float_type, {1, 8}, {8, 1}"
    broadcast_strides = "{1, 0}" if mean_axes == "{1}" else "{0, 1}"
    return f"""x = @param:x -> {X}
two = @literal{{2}} -> float_type, {{1}}, {{0}}
three = @literal{{3}} -> float_type, {{1}}, {{0}}
@1 = reduce_mean[axes={mean_axes}](x) -> {mean_shape}
@2 = multibroadcast[out_lens={{2, 8}}](@1) -> float_type, {{2, 8}}, {broadcast_strides}
@3 = sub(x,@2) -> {X}
@4 = add(x,@2) -> {X}
@5 = multibroadcast[out_lens={{2, 8}}](two) -> float_type, {{2, 8}}, {{0, 0}}
@6 = multibroadcast[out_lens={{2, 8}}](three) -> float_type, {{2, 8}}, {{0, 0}}
@7 = {square} -> {X}
@8 = reduce_mean[axes={{1}}](@7) -> {M}
@9 = @return(@8)
"""


@pytest.mark.parametrize(
    ("square", "recognised"),
    [
        ("pow(@3,@5)", True),
        ("mul(@3,@3)", True),
        ("sqdiff(x,@2)", True),
        ("sqdiff(@2,x)", True),
        ("pow(@3,@6)", False),
        ("mul(@3,@4)", False),
        ("mul(@4,@4)", False),
        ("pow(@4,@5)", False),
        ("sqdiff(x,@4)", False),
        ("add(x,@2)", False),
        ("add(@3,@3)", False),
        ("sub(@3,@2)", False),
    ],
)
def test_variance_forms(square: str, recognised: bool) -> None:
    program, context = rewritten(variance(square))
    assert context.statistics["variance rewritten"] == int(recognised), print_program(program)


def test_variance_of_another_mean_stays() -> None:
    for square in ("mul(@3,@3)", "sqdiff(x,@2)", "sqdiff(@2,x)"):
        program, context = rewritten(variance(square, mean_axes="{0}"))
        assert context.statistics["variance rewritten"] == 0, print_program(program)


def mean_program(dtype: str, count: int, lens: str = "") -> str:
    return f"""x = @param:x -> {dtype}, {{{lens}{count}}}, {{{count if lens else 1}{", 1" if lens else ""}}}
@1 = reduce_mean[axes={{{1 if lens else 0}}}](x) -> {dtype}, {{{lens}1}}, {{{"1, 1" if lens else "1"}}}
@2 = @return(@1)
"""


@pytest.mark.parametrize(
    ("dtype", "count", "widened"),
    [
        ("half_type", 16376, True),
        ("half_type", 16375, False),
        ("int16_type", 8192, True),
        ("int16_type", 8191, False),
        ("float_type", 16376, False),
        ("double_type", 16376, False),
        ("int32_type", 70000, False),
        ("bf16_type", 64, False),  # ml_dtypes' finfo (numpy's refuses bf16)
    ],
)
def test_mean_accumulates_wider_over_many_elements(dtype: str, count: int, widened: bool) -> None:
    program, _ = rewritten(mean_program(dtype, count))
    assert ("convert" in op_names(program)) == widened, print_program(program)
    x = np.full(count, 3, dtype=program.main.get_parameter("x").shape.dtype.numpy)
    np.testing.assert_allclose(run_program(program, {"x": x})[0].astype(np.float64), [3.0], rtol=2e-3)


def test_half_mean_widens_to_float() -> None:
    program, _ = rewritten(mean_program("half_type", 16376))
    x = np.full(16376, 0.5, np.float16)
    np.testing.assert_allclose(run_program(program, {"x": x})[0].astype(np.float64), [0.5], rtol=2e-3)


def test_integer_mean_over_one_axis() -> None:
    program, _ = rewritten(mean_program("int8_type", 4, lens="3, "))
    x = np.arange(12, dtype=np.int8).reshape(3, 4)
    np.testing.assert_array_equal(run_program(program, {"x": x})[0], x.sum(axis=1, keepdims=True) // 4)


@pytest.mark.parametrize("dtype", ["double_type", "half_type", "bf16_type"])
def test_softmax_result_keeps_its_type(dtype: str) -> None:
    program, _ = rewritten(
        f"x = @param:x -> {dtype}, {{2, 8}}, {{8, 1}}\n@1 = softmax[axis=1](x) -> {dtype}, {{2, 8}}, {{8, 1}}\n"
        "@2 = @return(@1)\n"
    )
    out = program.main.return_instruction.args[0]
    assert out.shape.dtype.name == dtype.removesuffix("_type")
    assert ("convert" in op_names(program)) == (dtype != "double_type"), print_program(program)


def test_logsoftmax_keeps_its_axis() -> None:
    program, _ = rewritten(f"x = @param:x -> {X}\n@1 = logsoftmax[axis=0](x) -> {X}\n@2 = @return(@1)\n")
    x = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    expected = x - np.log(np.exp(x).sum(axis=0, keepdims=True))
    np.testing.assert_allclose(run_program(program, {"x": x})[0], expected, rtol=1e-5, atol=1e-6)


def test_statistics_name_each_rewrite() -> None:
    _, context = rewritten(
        variance("mul(@3,@3)").replace(
            "@9 = @return(@8)",
            f"@10 = logsoftmax[axis=1](x) -> {X}\n@11 = softmax[axis=0](x) -> {X}\n@12 = @return(@8,@10,@11)",
        )
    )
    assert {k: v for k, v in context.statistics.items() if k.endswith("rewritten")} == {
        "logsoftmax rewritten": 1,
        "softmax rewritten": 2,
        "variance rewritten": 1,
        "reduce_mean rewritten": 2,
    }
