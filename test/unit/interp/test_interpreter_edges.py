"""The interpreter on programs it can only partly run: literals printed elided get deterministic
stand-in data with one warning, and an operator it does not know fails when reached, naming it.
And the operators that run submodules (if, loop, pointwise, fused_reduce, split_fused_reduce): their
shape rules and results on whole programs, against the semantics of MIGraphX's op/*.hpp."""

from __future__ import annotations

import numpy as np
import pytest

from mgxir import DiagnosticSink, MgxError, parse_program, verify
from mgxir.interp import Interpreter
from mgxir.ir.dtype import DType
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape

ELIDED = """module: "main"
@0 = @literal{ ... } -> float_type, {2, 3}, {3, 1}
@1 = @literal{ ... } -> int64_type, {4}, {1}
@2 = @literal{ ... } -> bool_type, {3}, {1}
@3 = @return(@0,@1,@2)
"""


def test_elided_literals_get_deterministic_data_and_a_warning() -> None:
    runs = []
    for _ in range(2):
        sink = DiagnosticSink()
        runs.append([np.asarray(v) for v in Interpreter(parse_program(ELIDED), sink).run({})])
        assert len(sink.warnings) == 3
        assert "was printed elided ({ ... }); using deterministic generated values" in sink.warnings[0].message
    floats, ints, flags = runs[0]
    assert floats.dtype == np.float32 and np.all(np.abs(floats) <= 1) and len(np.unique(floats)) == 6
    assert ints.dtype == np.int64 and set(ints.tolist()) <= {0, 1}
    assert flags.dtype == bool
    for a, b in zip(*runs):
        assert np.array_equal(a, b)


def test_an_unknown_operator_fails_when_reached() -> None:
    text = """module: "main"
x = @param:x -> float_type, {2}, {1}
@1 = no_such_op(x) -> float_type, {2}, {1}
@2 = @return(@1)
"""
    program = parse_program(text, "prog.mgx", sink=DiagnosticSink())
    with pytest.raises(MgxError, match=r"no reference implementation for 'no_such_op' \(unknown operator\)"):
        Interpreter(program).run({"x": np.zeros(2, np.float32)})


# -- operators with submodules: if, loop, pointwise, fused_reduce, split_fused_reduce ---------------


def _checked(text: str) -> Program:
    program = parse_program(text, "prog.mgx", sink=DiagnosticSink())
    verify(program)
    return program


def _result_shapes(text: str) -> list[Shape]:
    """The shapes the shape rules give the main module's results."""
    return _checked(text).main.output_shapes()


def _run(text: str, **params: np.ndarray) -> list[np.ndarray]:
    return [np.asarray(v) if not isinstance(v, tuple) else v for v in Interpreter(_checked(text)).run(params)]


def _shape_error(text: str) -> str:
    with pytest.raises(MgxError) as caught:
        _checked(text)
    return str(caught.value)


F23 = Shape.make(DType.float, (2, 3))

IF_BOUND = """module: "main"
c = @param:c -> bool_type, {1, 2}
x = @param:x -> float_type, {2, 3}
y = @param:y -> float_type, {2, 3}
@3 = if(c,x,y), [then, else]
@4 = get_tuple_elem[index=0](@3)
@5 = get_tuple_elem[index=1](@3)
@6 = @return(@4,@5)

module: "then"
a = @param:a -> float_type, {2, 3}
b = @param:b -> float_type, {2, 3}
then:@2 = sub(a,b)
then:@3 = @return(then:@2,b)

module: "else"
b = @param:b -> float_type, {2, 3}
else:@1 = neg(b)
else:@2 = @return(else:@1,b)
"""


@pytest.mark.parametrize("condition", [[[True, False]], [[False, True]]])
def test_if_takes_its_branch_from_the_first_condition_element_and_binds_inputs_by_sorted_name(
    condition: list[list[bool]],
) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 10, np.float32)
    first, second = _run(IF_BOUND, c=np.array(condition), x=x, y=y)
    # a (the first name of both branches' parameters, sorted) takes x, b takes y
    want = (x - y, y) if condition[0][0] else (-y, y)
    np.testing.assert_array_equal(first, want[0])
    np.testing.assert_array_equal(second, want[1])


def test_if_with_fewer_inputs_than_its_branches_parameters_fails_naming_the_counts() -> None:
    text = IF_BOUND.replace("if(c,x,y)", "if(c,x)")
    with pytest.raises(MgxError, match=r"if: the modules take 2 parameters but get 1 inputs$"):
        _run(text, c=np.array([[True, True]]), x=np.zeros((2, 3), np.float32), y=np.zeros((2, 3), np.float32))


def test_if_branches_returning_different_shapes_are_refused_naming_both() -> None:
    text = IF_BOUND.replace("else:@1 = neg(b)", "else:@1 = reduce_sum[axes={0}](b)")
    assert "if: modules 'then' and 'else' return different shapes" in _shape_error(text)
    assert _result_shapes(IF_BOUND) == [F23, F23]


LOOP = """module: "main"
trip = @param:trip -> int32_type, {1}, {0}
go = @param:go -> bool_type, {1}, {0}
b = @param:b -> float_type, {2}, {1}
n = @param:n -> int32_type, {1}, {0}
a = @param:a -> float_type, {2}, {1}
@5 = loop[max_iterations=5,scan_output_directions={0, 1}](trip,go,b,n), [body]
@6 = get_tuple_elem[index=0](@5)
@7 = get_tuple_elem[index=1](@5)
@8 = get_tuple_elem[index=2](@5)
@9 = get_tuple_elem[index=3](@5)
@10 = get_tuple_elem[index=4](@5)
@11 = @return(@6,@7,@8,@9,@10)

module: "body"
body:n_in = @param:n_in -> int32_type, {1}, {0}
body:b_in = @param:b_in -> float_type, {2}, {1}
body:cond_in = @param:cond_in -> bool_type, {1}, {0}
body:i = @param:i -> int32_type, {1}, {0}
body:@4 = add(a,body:b_in)
body:@5 = convert[target_type=float_type](body:i)
body:@6 = multibroadcast[out_lens={2}](body:@5)
body:@7 = mul(body:@4,body:@6)
body:@8 = reduce_sum[axes={0}](body:@7)
body:@9 = @literal{20} -> float_type, {1}, {0}
body:@10 = less(body:@8,body:@9)
body:@11 = convert[target_type=bool_type](body:@10)
body:@12 = @return(body:@11,body:@7,body:i,body:@4,body:@8,body:i)
"""


def _loop_reference(trip: int, go: bool, b: np.ndarray, n: int, a: np.ndarray) -> list[np.ndarray]:
    """ONNX Loop written out: carried b and n (the last iteration number, in the trip count's type),
    scan outputs a + b forward, the sum reversed, the iteration number forward (it has no direction)."""
    sums_forward, totals, iterations = [], [], []
    i = 0
    while i < trip and go:
        step = a + b
        b = step * np.float32(i)
        total = b.sum(dtype=np.float32)
        go = bool(total < 20)
        n = i
        sums_forward.append(step)
        totals.append([total])
        iterations.append([i])
        i += 1
    scans = [np.zeros((5, 2), np.float32), np.zeros((5, 1), np.float32), np.zeros((5, 1), np.int32)]
    for k in range(i):
        scans[0][k] = sums_forward[k]
        scans[1][trip - 1 - k] = totals[k]
        scans[2][k] = iterations[k]
    return [b, np.array([n], np.int32), *scans]


@pytest.mark.parametrize(
    ("trip", "go", "a"),
    [(5, True, [0.25, 0.5]), (4, True, [0.25, 0.5]), (5, True, [2.0, 3.0]), (5, False, [0.25, 0.5]), (0, True, [1, 2])],
    ids=["five-trips", "four-trips", "stops-on-the-condition", "condition-false-at-entry", "zero-trips"],
)
def test_loop_carries_values_and_stacks_scan_outputs_in_their_directions(trip: int, go: bool, a: list[float]) -> None:
    b = [1.0, 2.0]
    b_array = np.array(b, np.float32)
    got = _run(
        LOOP,
        trip=np.array([trip], np.int32),
        go=np.array([go]),
        b=b_array,
        n=np.array([3], np.int32),
        a=np.array(a, np.float32),
    )
    want = _loop_reference(trip, go, b_array, 3, np.array(a, np.float32))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_loop_result_is_the_carried_values_then_scan_outputs_of_max_iterations_rows() -> None:
    i32 = Shape.make(DType.int32, (1,), (0,))
    assert _result_shapes(LOOP) == [
        Shape.make(DType.float, (2,)),
        i32,
        Shape.make(DType.float, (5, 2)),
        Shape.make(DType.float, (5, 1)),
        Shape.make(DType.int32, (5, 1)),
    ]


def test_loop_without_scan_outputs_returns_the_carried_values() -> None:
    text = LOOP.replace(
        "@return(body:@11,body:@7,body:i,body:@4,body:@8,body:i)", "@return(body:@11,body:@7,body:i)"
    ).replace(
        "@8 = get_tuple_elem[index=2](@5)\n@9 = get_tuple_elem[index=3](@5)\n@10 = get_tuple_elem[index=4](@5)\n"
        "@11 = @return(@6,@7,@8,@9,@10)",
        "@11 = @return(@6,@7)",
    )
    assert _result_shapes(text) == [Shape.make(DType.float, (2,)), Shape.make(DType.int32, (1,), (0,))]
    a = np.array([0.25, 0.5], np.float32)
    got = _run(
        text,
        trip=np.array([3], np.int32),
        go=np.array([True]),
        b=np.ones(2, np.float32),
        n=np.array([1], np.int32),
        a=a,
    )
    # b: (1 + a) * 0, then (0 + a) * 1, then (a + a) * 2; n: the last iteration number
    np.testing.assert_allclose(got[0], 4 * a)
    assert got[1].dtype == np.int32
    np.testing.assert_array_equal(got[1], np.array([2], np.int32))


def test_loop_body_returning_fewer_values_than_the_carried_ones_is_refused() -> None:
    text = LOOP.replace("@return(body:@11,body:@7,body:i,body:@4,body:@8,body:i)", "@return(body:@11,body:@7)")
    assert "loop: body 'body' returns 2 values, needs at least 3" in _shape_error(text)


def test_loop_body_with_a_parameter_per_input_missing_fails_naming_the_counts() -> None:
    program = _checked(LOOP.replace("(trip,go,b,n), [body]", "(trip,go,b), [body]"))
    with pytest.raises(MgxError, match=r"loop body 'body' has 4 parameters but gets 3 values$"):
        Interpreter(program).run(
            {"trip": np.array([1], np.int32), "go": np.array([True]), "b": np.ones(2, np.float32)}
            | {"n": np.array([0], np.int32), "a": np.ones(2, np.float32)}
        )


POINTWISE = """module: "main"
x = @param:x -> float_type, {2, 3}, {1, 2}
z = @param:z -> float_type, {2, 3}, {1, 2}
w = @param:w -> float_type, {2, 3}, {3, 1}
y = @param:y -> float_type, {2, 3}, {0, 1}
@4 = pointwise(x,y,z,w), [pw]
@5 = @return(@4)

module: "pw"
pw:x3 = @param:x3 -> float_type, {1}, {0}
pw:x2 = @param:x2 -> float_type, {1}, {0}
pw:x1 = @param:x1 -> float_type, {1}, {0}
pw:x0 = @param:x0 -> float_type, {1}, {0}
pw:@4 = @literal{2} -> float_type, {1}, {0}
pw:@5 = add(pw:x0,pw:x1)
pw:@6 = mul(pw:@5,pw:@4)
pw:@7 = @return(pw:@6,pw:@4,pw:x1,pw:x3)
"""


def test_pointwise_lays_out_broadcast_inputs_in_the_most_common_permutation() -> None:
    """MIGraphX's pointwise::compute_shape: broadcast inputs take the inputs' most common memory
    order, scalar constants take the inputs' lengths (stride 0), other inputs keep their own layout."""
    transposed = Shape.make(DType.float, (2, 3), (1, 2))
    (result,) = _result_shapes(POINTWISE)
    assert result == Shape.tuple_of(
        [transposed, Shape.make(DType.float, (2, 3), (0, 0)), transposed, Shape.make(DType.float, (2, 3), (3, 1))]
    )


def test_pointwise_of_rank_one_keeps_a_broadcast_input_as_it_is() -> None:
    text = """module: "main"
x = @param:x -> float_type, {3}, {0}
y = @param:y -> float_type, {3}, {1}
@2 = pointwise(x,y), [pw]
@3 = @return(@2)

module: "pw"
pw:x1 = @param:x1 -> float_type, {1}, {0}
pw:x0 = @param:x0 -> float_type, {1}, {0}
pw:@2 = @return(pw:x0)
"""
    assert _result_shapes(text) == [Shape.make(DType.float, (3,), (0,))]


def test_pointwise_of_dynamic_inputs_keeps_scalar_constants_scalar() -> None:
    text = """module: "main"
x = @param:x -> dynamic, float_type, {[ 1, 4, {} ], 3}
@1 = pointwise(x), [pw]
@2 = @return(@1)

module: "pw"
pw:x0 = @param:x0 -> float_type, {1}, {0}
pw:@1 = @literal{2} -> float_type, {1}, {0}
pw:@2 = @return(pw:@1,pw:x0)
"""
    (result,) = _result_shapes(text)
    assert result.sub_shapes[0] == Shape.make(DType.float, (1,), (0,))
    assert result.sub_shapes[1].is_dynamic


def test_pointwise_computes_each_output_at_the_inputs_lengths() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([1, 2, 3], np.float32)
    y_broadcast = np.broadcast_to(y, (2, 3))
    doubled, constant, y_out, w_out = _run(POINTWISE, x=x.T.copy().T, y=y_broadcast, z=x, w=-x)[0]
    np.testing.assert_array_equal(doubled, (x + y) * 2)
    np.testing.assert_array_equal(constant, np.full((2, 3), 2, np.float32))
    np.testing.assert_array_equal(y_out, y_broadcast)
    np.testing.assert_array_equal(w_out, -x)


def test_pointwise_with_one_output_gives_an_array_not_a_tuple() -> None:
    text = POINTWISE.replace("@return(pw:@6,pw:@4,pw:x1,pw:x3)", "@return(pw:@6)")
    assert _result_shapes(text) == [Shape.make(DType.float, (2, 3), (1, 2))]
    x = np.ones((2, 3), np.float32)
    (got,) = _run(text, x=x, y=x, z=x, w=x)
    assert isinstance(got, np.ndarray) and got.shape == (2, 3)
    np.testing.assert_array_equal(got, np.full((2, 3), 4, np.float32))


def test_pointwise_refusals_name_the_input_or_parameter() -> None:
    mismatched = POINTWISE.replace("w = @param:w -> float_type, {2, 3}, {3, 1}", "w = @param:w -> float_type, {3}")
    assert "pointwise: input 3 has rank 1, input 0 has rank 2" in _shape_error(mismatched)
    too_few = POINTWISE.replace("pointwise(x,y,z,w)", "pointwise(x,y,z)")
    assert "module 'pw' has 4 parameters but gets 3 inputs" in _shape_error(too_few)
    wrong_type = POINTWISE.replace("y = @param:y -> float_type, {2, 3}, {0, 1}", "y = @param:y -> half_type, {2, 3}")
    assert "pointwise: parameter 'x1' of 'pw' is float_type but gets half_type" in _shape_error(wrong_type)
    no_rule = POINTWISE.replace(
        "pw:@5 = add(pw:x0,pw:x1)", "pw:@5 = broadcast_for_dot(pw:x0,pw:x1) -> float_type, {1}, {0}"
    )
    assert "'broadcast_for_dot' in 'pw' has no shape rule" in _shape_error(no_rule)
    no_return = POINTWISE.replace("pw:@7 = @return(pw:@6,pw:@4,pw:x1,pw:x3)\n", "")
    assert "module 'pw' has no @return" in _shape_error(no_return)


FUSED_REDUCE = """module: "main"
x = @param:x -> float_type, {2, 3}, {1, 2}
y = @param:y -> float_type, {2, 3}, {1, 2}
@2 = fused_reduce[axes={1}](x,y), [fr]
@3 = @return(@2)

module: "fr"
fr:x1 = @param:x1 -> float_type, {2, 3}
fr:x0 = @param:x0 -> float_type, {2, 3}
fr:@2 = sub(fr:x0,fr:x1)
fr:@3 = reduce_sum[axes={1}](fr:@2)
fr:@4 = @return(fr:@3)
"""


def test_fused_reduce_runs_its_body_and_lays_out_the_result_as_its_inputs() -> None:
    # the body's {2, 1} result in the inputs' (transposed) memory order
    assert _result_shapes(FUSED_REDUCE) == [Shape.make(DType.float, (2, 1), (1, 2))]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([[1, 0, 0], [0, 0, 5]], np.float32)
    (got,) = _run(FUSED_REDUCE, x=x, y=y)
    np.testing.assert_array_equal(got, (x - y).sum(axis=1, keepdims=True))


def test_fused_reduce_refusals() -> None:
    two_results = FUSED_REDUCE.replace("@return(fr:@3)", "@return(fr:@3,fr:@2)")
    assert "fused_reduce: body 'fr' must return one value, returns 2" in _shape_error(two_results)
    ranks = FUSED_REDUCE.replace("y = @param:y -> float_type, {2, 3}, {1, 2}", "y = @param:y -> float_type, {6}")
    assert "fused_reduce: input 1 has rank 1, input 0 has rank 2" in _shape_error(ranks)


SPLIT_FUSED_REDUCE = """module: "main"
x = @param:x -> float_type, {2, 3}
y = @param:y -> float_type, {2, 3}
@2 = split_fused_reduce[axes={1},assign=assign_add](x,y), [sfr]
@3 = @return(@2)

module: "sfr"
sfr:x1 = @param:x1 -> float_type, {2, 3}
sfr:x0 = @param:x0 -> float_type, {2, 3}
sfr:@2 = pointwise(sfr:x0,sfr:x1), [add_pw]
sfr:@3 = pointwise(sfr:x0,sfr:x1), [greater_pw]
sfr:@4 = @literal{0.5} -> float_type, {1}, {0}
sfr:@5 = multibroadcast[out_lens={2, 3}](sfr:@4)
sfr:@6 = mul(sfr:@2,sfr:@5)
sfr:@7 = reduce_sum[axes={1}](sfr:@6)
sfr:@8 = @return(sfr:@7,sfr:@3)

module: "add_pw"
add_pw:x1 = @param:x1 -> float_type, {1}, {0}
add_pw:x0 = @param:x0 -> float_type, {1}, {0}
add_pw:@2 = add(add_pw:x0,add_pw:x1)
add_pw:@3 = @return(add_pw:@2)

module: "greater_pw"
greater_pw:x1 = @param:x1 -> float_type, {1}, {0}
greater_pw:x0 = @param:x0 -> float_type, {1}, {0}
greater_pw:@2 = greater(greater_pw:x0,greater_pw:x1)
greater_pw:@3 = convert[target_type=bool_type](greater_pw:@2)
greater_pw:@4 = @return(greater_pw:@3)
"""


def test_split_fused_reduce_returns_its_bodys_results() -> None:
    # two pointwise calls on the same inputs with different bodies have different result types
    assert _result_shapes(SPLIT_FUSED_REDUCE) == [
        Shape.tuple_of([Shape.make(DType.float, (2, 1)), Shape.make(DType.bool, (2, 3))])
    ]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([[1, 0, 9], [0, 9, 5]], np.float32)
    (partial, greater) = _run(SPLIT_FUSED_REDUCE, x=x, y=y)[0]
    np.testing.assert_array_equal(partial, ((x + y) * 0.5).sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(greater, x > y)
    one = SPLIT_FUSED_REDUCE.replace("@return(sfr:@7,sfr:@3)", "@return(sfr:@7)")
    assert _result_shapes(one) == [Shape.make(DType.float, (2, 1))]
    (single,) = _run(one, x=x, y=y)
    assert isinstance(single, np.ndarray)
    np.testing.assert_array_equal(single, partial)


def test_split_fused_reduce_refuses_inputs_of_different_ranks() -> None:
    text = SPLIT_FUSED_REDUCE.replace("y = @param:y -> float_type, {2, 3}", "y = @param:y -> float_type, {6}")
    assert "split_fused_reduce: input 1 has rank 1, input 0 has rank 2" in _shape_error(text)


def test_outline_and_get_tuple_elem_refusals() -> None:
    outline = 'module: "main"\n@0 = outline()\n@1 = @return(@0)\n'
    assert "outline: needs a shape attribute" in _shape_error(outline)
    not_tuple = 'module: "main"\nx = @param:x -> float_type, {2}\n@1 = get_tuple_elem[index=0](x)\n@2 = @return(@1)\n'
    assert "get_tuple_elem: the input is not a tuple" in _shape_error(not_tuple)


def test_loop_reads_the_first_element_of_its_trip_count_and_of_each_condition() -> None:
    """MIGraphX reads them with argument::at<T>(): the first element, whatever the shape; the body sees
    a one-element condition."""
    text = """module: "main"
trip = @param:trip -> int64_type, {1, 2}
go = @param:go -> bool_type, {1, 2}
x = @param:x -> float_type, {1}
@3 = loop[max_iterations=6](trip,go,x), [body]
@4 = get_tuple_elem[index=0](@3)
@5 = get_tuple_elem[index=1](@3)
@6 = @return(@4,@5)

module: "body"
body:x_in = @param:x_in -> float_type, {1}
body:c = @param:c -> bool_type, {1}
body:i = @param:i -> int64_type, {1}
body:@3 = @literal{1} -> float_type, {1}
body:@4 = add(body:x_in,body:@3)
body:@5 = @literal{3.5} -> float_type, {1}
body:@6 = less(body:@4,body:@5)
body:@7 = convert[target_type=bool_type](body:@6)
body:@8 = not(body:@7)
body:@9 = concat[axis=0](body:@7,body:@8)
body:@10 = reshape[dims={1, 2}](body:@9)
body:@11 = @return(body:@10,body:@4,body:c)
"""
    got = _run(text, trip=np.array([[5, 0]]), go=np.array([[True, False]]), x=np.array([0], np.float32))
    # x + 1 while below 3.5: 1, 2, 3, 4, and the condition each iteration saw
    np.testing.assert_array_equal(got[0], [4])
    np.testing.assert_array_equal(got[1], [[True], [True], [True], [True], [False], [False]])


def test_a_fused_body_reads_and_returns_values_of_its_enclosing_module() -> None:
    text = """module: "main"
x = @param:x -> float_type, {2, 3}
@1 = @literal{1, 2, 3, 4, 5, 6} -> float_type, {2, 3}
@2 = split_fused_reduce[axes={1}](x), [sfr]
@3 = @return(@2)

module: "sfr"
sfr:x0 = @param:x0 -> float_type, {2, 3}
sfr:@1 = mul(sfr:x0,@1)
sfr:@2 = reduce_sum[axes={1}](sfr:@1)
sfr:@3 = @return(sfr:@2,@1)
"""
    assert _result_shapes(text) == [Shape.tuple_of([Shape.make(DType.float, (2, 1)), F23])]
    weights = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    x = np.array([[1, 0, 1], [0, 2, 0]], np.float32)
    (total, returned) = _run(text, x=x)[0]
    np.testing.assert_array_equal(total, [[4], [10]])
    np.testing.assert_array_equal(returned, weights)
