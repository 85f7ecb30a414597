"""Tuples and control flow in MLIR: each program goes to MLIR (text and bytecode), comes back and
computes the same on the reference interpreter, and runs through IREE on local-task with the
reference's outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("iree.compiler")
pytest.importorskip("iree.runtime")

from mgxir import DiagnosticSink, MgxError, parse_program, verify
from mgxir.drivers.run import flatten_outputs
from mgxir.interp import Interpreter
from mgxir.targets.iree import IreeOptions, run_on_iree
from mgxir.translate.mlir.api import mlir_bytecode, mlir_text, program_from_mlir

IF = """
module: "main"
x = @param:x -> float_type, {2, 3}
cond = @param:cond -> bool_type, {1}, {0}
@2 = @literal{2} -> float_type, {1}, {0}
@3 = if(cond), [then, else]
@4 = get_tuple_elem[index=0](@3)
@5 = get_tuple_elem[index=1](@3)
@6 = @return(@5,@4)

module: "then"
then:@0 = multibroadcast[out_lens={2, 3}](@2)
then:@1 = mul(x,then:@0)
then:@2 = neg(x)
then:@3 = @return(then:@1,then:@2)

module: "else"
else:@0 = exp(x)
else:@1 = relu(x)
else:@2 = @return(else:@1,else:@0)
"""

# the inputs after the condition are the branch modules' parameters, bound by sorted name (MIGraphX's
# if_op): a to the sum, b to y; a branch may return a parameter as it is
IF_PARAMETERS = """
module: "main"
c = @param:c -> bool_type, {1}
x = @param:x -> float_type, {2, 3}
y = @param:y -> float_type, {2, 3}
@3 = add(x,y)
@4 = if(c,@3,y), [then, else]
@5 = get_tuple_elem[index=0](@4)
@6 = get_tuple_elem[index=1](@4)
@7 = @return(@5,@6)

module: "then"
a = @param:a -> float_type, {2, 3}
then:@1 = relu(a)
then:@2 = @return(then:@1,a)

module: "else"
b = @param:b -> float_type, {2, 3}
a = @param:a -> float_type, {2, 3}
else:@2 = sub(a,b)
else:@3 = @return(b,else:@2)
"""

# unique (MIGraphX's op/unique.hpp: numpy's np.unique, or first-occurrence order unsorted): elements
# and rows, NaNs (one distinct value, after the numbers) and -0.0 == 0.0
UNIQUE = """
module: "main"
x = @param:x -> float_type, {6}
r = @param:r -> int32_type, {5, 2}
@2 = unique[sorted=1](x)
@3 = unique[sorted=0](x)
@4 = unique[axis=0,sorted=1](r)
@5 = unique[axis=0,sorted=0](r)
@6 = get_tuple_elem[index=0](@2)
@7 = get_tuple_elem[index=1](@2)
@8 = get_tuple_elem[index=2](@2)
@9 = get_tuple_elem[index=3](@2)
@10 = get_tuple_elem[index=0](@3)
@11 = get_tuple_elem[index=1](@3)
@12 = get_tuple_elem[index=2](@3)
@13 = get_tuple_elem[index=3](@3)
@14 = get_tuple_elem[index=0](@4)
@15 = get_tuple_elem[index=1](@4)
@16 = get_tuple_elem[index=2](@4)
@17 = get_tuple_elem[index=3](@4)
@18 = get_tuple_elem[index=0](@5)
@19 = get_tuple_elem[index=1](@5)
@20 = get_tuple_elem[index=2](@5)
@21 = get_tuple_elem[index=3](@5)
@22 = @return(@6,@7,@8,@9,@10,@11,@12,@13,@14,@15,@16,@17,@18,@19,@20,@21)
"""

LOOP = """
module: "main"
trip = @param:trip -> int64_type, {1}, {0}
go = @param:go -> bool_type, {1}, {0}
b = @param:b -> float_type, {2}, {1}
a = @param:a -> float_type, {2}, {1}
@4 = loop[max_iterations=5,scan_output_directions={0, 1}](trip,go,b), [body]
@5 = get_tuple_elem[index=0](@4)
@6 = get_tuple_elem[index=1](@4)
@7 = get_tuple_elem[index=2](@4)
@8 = @return(@5,@6,@7)

module: "body"
body:b_in = @param:b_in -> float_type, {2}, {1}
body:cond_in = @param:cond_in -> bool_type, {1}, {0}
body:i = @param:i -> int64_type, {1}, {0}
body:@3 = add(a,body:b_in)
body:@4 = convert[target_type=float_type](body:i)
body:@5 = multibroadcast[out_lens={2}](body:@4)
body:@6 = mul(body:@3,body:@5)
body:@7 = reduce_sum[axes={0}](body:@6)
body:@8 = @literal{20} -> float_type, {1}, {0}
body:@9 = less(body:@7,body:@8)
body:@10 = convert[target_type=bool_type](body:@9)
body:@11 = @return(body:@10,body:@6,body:@3,body:@7)
"""

TOPK_FLOAT = """
x = @param:x -> float_type, {4, 6}
@1 = topk[k=3,axis=-1,largest={largest}](x)
@2 = @return(@1)
"""

TOPK_INT = """
x = @param:x -> int32_type, {5, 2}
@1 = topk[k=4,axis=0,largest=0](x)
@2 = get_tuple_elem[index=1](@1)
@3 = get_tuple_elem[index=0](@1)
@4 = @return(@2,@3)
"""

POINTWISE = """
module: "main"
x = @param:x -> float_type, {2, 3}
y = @param:y -> float_type, {2, 3}
@2 = pointwise(x,y), [main:pointwise0]
@3 = get_tuple_elem[index=0](@2)
@4 = get_tuple_elem[index=1](@2)
@5 = get_tuple_elem[index=2](@2)
@6 = @return(@5,@3,@4)

module: "main:pointwise0"
main:pointwise0:x1 = @param:x1 -> float_type, {1}, {0}
main:pointwise0:x0 = @param:x0 -> float_type, {1}, {0}
main:pointwise0:@2 = add(main:pointwise0:x0,main:pointwise0:x1) -> float_type, {1}, {0}
main:pointwise0:@3 = mul(main:pointwise0:@2,main:pointwise0:x1) -> float_type, {1}, {0}
main:pointwise0:@4 = greater(main:pointwise0:@2,main:pointwise0:x0) -> float_type, {1}, {0}
main:pointwise0:@5 = convert[target_type=0](main:pointwise0:@4) -> bool_type, {1}, {0}
main:pointwise0:@6 = @return(main:pointwise0:@3,main:pointwise0:@5,main:pointwise0:x1)
"""

RUN_ON_TARGET = """
module: "main"
x = @param:x -> float_type, {2}, {1}
@1 = run_on_target[target_id=0](x), [sub] -> [float_type, {2}, {1}, float_type, {2}, {1}]
@2 = get_tuple_elem[index=1](@1) -> float_type, {2}, {1}
@3 = exp(@2)
@4 = @return(@3,@1)

module: "sub"
p = @param:p -> float_type, {2}, {1}
@1 = exp(p) -> float_type, {2}, {1}
@2 = neg(p) -> float_type, {2}, {1}
@3 = @return(@1,@2)
"""

RNG = np.random.default_rng(7)
X46 = RNG.uniform(-1, 1, (4, 6)).astype(np.float32)
X46[0, :3] = X46[0, 3:]  # ties
X46[1, 2] = np.nan
X46[2, [1, 4]] = np.nan


def _loop_inputs(trip: int, go: bool, b: list[float]) -> dict[str, np.ndarray]:
    a = np.array([0.25, 0.5], np.float32)
    return {"trip": np.array([trip]), "go": np.array([go]), "b": np.array(b, np.float32), "a": a}


CASES = {
    "if-then": (IF, {"x": RNG.uniform(-1, 1, (2, 3)).astype(np.float32), "cond": np.array([True])}),
    "if-else": (IF, {"x": RNG.uniform(-1, 1, (2, 3)).astype(np.float32), "cond": np.array([False])}),
    "if-parameters-then": (IF_PARAMETERS, {"c": np.array([True])}),
    "if-parameters-else": (IF_PARAMETERS, {"c": np.array([False])}),
    "unique-repeats": (
        UNIQUE,
        {
            "x": np.array([2, 1, 1, 3, 4, 3], np.float32),
            "r": np.array([[1, 2], [0, 5], [1, 2], [1, 1], [0, 5]], np.int32),
        },
    ),
    "unique-nan-zeros-one-row": (
        UNIQUE,
        {"x": np.array([np.nan, -0.0, 0.0, np.nan, -1, 5], np.float32), "r": np.full((5, 2), 3, np.int32)},
    ),
    "loop-condition": (LOOP, _loop_inputs(9, True, [1, 2])),
    "loop-trip-count": (LOOP, _loop_inputs(2, True, [0.5, 1])),
    "loop-not-entered": (LOOP, _loop_inputs(3, False, [1, 1])),
    "topk-largest": (TOPK_FLOAT.replace("{largest}", "1"), {"x": X46}),
    "topk-smallest": (TOPK_FLOAT.replace("{largest}", "0"), {"x": X46}),
    "topk-int": (TOPK_INT, {"x": np.array([[3, 1], [1, 1], [3, -2], [0, 1], [3, 5]], np.int32)}),
    "pointwise-outputs": (POINTWISE, {"x": X46[:2, :3].copy(), "y": X46[2:, 3:].copy()}),
    "run_on_target": (RUN_ON_TARGET, {"x": np.array([0.5, -1], np.float32)}),
}


def _program(text: str):
    program = parse_program(text)
    verify(program)
    return program


def _inputs(program, given: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    params = dict(given)
    for p in program.main.parameters():
        if p.param_name not in params:
            values = np.linspace(-1, 1, p.shape.elements).astype(p.shape.dtype.numpy)
            params[p.param_name] = values.reshape(p.shape.lens)
    return params


def _run(program, params) -> dict[str, np.ndarray]:
    with np.errstate(all="ignore"):
        return flatten_outputs(Interpreter(program).run(params))


@pytest.mark.parametrize("name", list(CASES))
def test_comes_back_computing_the_same(name: str) -> None:
    program = _program(CASES[name][0])
    params = _inputs(program, CASES[name][1])
    expected = list(_run(program, params).values())
    for data in (mlir_text(program).encode(), mlir_bytecode(program)):
        back = program_from_mlir(data, "x.mlir")
        verify(back)
        got = list(_run(back, params).values())  # tuple outputs come back flattened in place
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype and np.array_equal(g, e, equal_nan=True)


@pytest.fixture(scope="module")
def iree_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the module: cases of the same program compile once."""
    return tmp_path_factory.mktemp("iree-control")


@pytest.mark.parametrize("name", list(CASES))
def test_runs_on_iree_as_on_the_reference(name: str, iree_cache: Path) -> None:
    program = _program(CASES[name][0])
    params = _inputs(program, CASES[name][1])
    expected = _run(program, params)
    got = flatten_outputs(
        run_on_iree(program, params, DiagnosticSink(), IreeOptions(device="local-task", cache_dir=iree_cache))
    )
    assert list(got) == list(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-6, atol=1e-6, err_msg=f"{name}: {key}")


@pytest.mark.parametrize("go", [True, False])
def test_if_binds_its_inputs_to_the_sorted_parameter_names(go: bool) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 3
    y = np.full((2, 3), 0.5, np.float32)
    got = list(_run(_program(IF_PARAMETERS), {"c": np.array([go]), "x": x, "y": y}).values())
    expected = [np.maximum(x + y, 0), x + y] if go else [y, x + y - y]  # a: the sum, b: y
    for g, e in zip(got, expected, strict=True):
        assert np.array_equal(g, e)


def test_if_with_too_few_inputs_for_its_modules_is_refused() -> None:
    program = _program(
        """
module: "main"
x = @param:x -> float_type, {2}, {1}
c = @param:c -> bool_type, {1}, {0}
@2 = if(c,x), [t, e]
@3 = get_tuple_elem[index=0](@2)
@4 = @return(@3)

module: "t"
t:p = @param:p -> float_type, {2}, {1}
t:@1 = neg(t:p)
t:@2 = @return(t:@1)

module: "e"
e:q = @param:q -> float_type, {2}, {1}
e:@1 = exp(e:q)
e:@2 = @return(e:@1)
"""
    )
    with pytest.raises(
        MgxError, match=r"cannot lower 'if' \(@2\) to MLIR: the modules take 2 parameters but the if gets 1 inputs"
    ):
        mlir_text(program)


def test_a_literal_without_elements_is_refused() -> None:
    from mgxir.ir.dtype import DType
    from mgxir.ir.literal import Literal
    from mgxir.ir.program import Program
    from mgxir.ir.shape import Shape

    program = Program()
    empty = program.main.add_literal(Literal(Shape.make(DType.int64, ()), np.zeros(0, np.int64)))
    program.main.add_return([empty])
    with pytest.raises(MgxError, match=r"cannot lower '@literal' \(@0\) to MLIR: a literal without elements"):
        mlir_text(program)
