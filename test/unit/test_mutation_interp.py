"""The interpreter's loop and its edges, checked exactly: outputs without @return, elided literals,
scalar literals, missing parameters, submodule arity, the errors of a failing op and the memory check
(written against the mutants scripts/mutation.py found surviving the run tests)."""

from __future__ import annotations

import numpy as np
import pytest

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.interp.interpreter import Interpreter, check_memory, generated_literal, memory_limit, run_program
from mgxir.ir.dtype import DType
from mgxir.ir.operation import ComputeError
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.text.parser import parse_program
from mgxir.verifier import verify


def _program(text: str) -> Program:
    program = parse_program(text)
    verify(program)
    return program


X = np.array([1.0, -2.0], np.float32)


def test_without_return_the_last_instruction_is_the_output() -> None:
    program = _program(
        'module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = neg(x)\n@2 = exp(x)\n@3 = add(@1,x)\n'
    )
    (out,) = run_program(program, {"x": X})
    np.testing.assert_array_equal(out, np.zeros(2, np.float32))


def test_return_gives_every_output_in_order_and_nothing_after_it_runs() -> None:
    program = _program(
        'module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = neg(x)\n@2 = abs(x)\n@3 = @return(@2,@1,x)\n'
    )
    outs = run_program(program, {"x": X})
    assert [o.tolist() for o in outs] == [[1.0, 2.0], [-1.0, 2.0], [1.0, -2.0]]


def test_missing_parameter_is_named() -> None:
    program = _program('module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = neg(x)\n')
    with pytest.raises(MgxError, match=r"^error: no value for parameter 'x' of module 'main'$"):
        run_program(program, {"y": X})


def test_elided_literal_warns_once_and_uses_generated_values() -> None:
    program = _program(
        'module: "main"\n@0 = @literal{ ... } -> float_type, {3}, {1}\nx = @param:x -> float_type, {3}, {1}\n'
        "@2 = add(@0,x)\n"
    )
    sink = DiagnosticSink()
    (out,) = Interpreter(program, sink).run({"x": np.zeros(3, np.float32)})
    np.testing.assert_array_equal(out, generated_literal(Shape.make(DType.float, [3]), 0))
    assert len(sink.warnings) == 1
    assert "literal '@literal' (line 2) in module 'main' was printed elided" in sink.warnings[0].render()


def test_generated_literals_are_small_deterministic_and_typed() -> None:
    floats = generated_literal(Shape.make(DType.float, [64]), 3)
    assert floats.dtype == np.float32 and np.all(floats >= -1) and np.all(floats < 1) and len(set(floats)) > 2
    np.testing.assert_array_equal(floats, generated_literal(Shape.make(DType.float, [64]), 3))
    assert not np.array_equal(floats, generated_literal(Shape.make(DType.float, [64]), 4))
    ints = generated_literal(Shape.make(DType.int64, [64]), 3)
    assert ints.dtype == np.int64 and set(ints.tolist()) == {0, 1}
    bools = generated_literal(Shape.make(DType.bool, [64]), 3)
    assert bools.dtype == np.bool_ and set(bools.tolist()) == {False, True}
    half = generated_literal(Shape.make(DType.half, [4, 2]), 1)
    assert half.dtype == np.float16 and half.shape == (4, 2)


def test_a_scalar_literal_is_one_value_with_stride_zero() -> None:
    program = _program(
        'module: "main"\n@0 = @literal{7} -> float_type, {1}, {0}\nx = @param:x -> float_type, {3}, {1}\n'
        "@2 = multibroadcast[out_lens={3}](@0)\n@3 = add(@2,x)\n"
    )
    interpreter = Interpreter(program)
    (out,) = interpreter.run({"x": np.ones(3, np.float32)})
    assert out.tolist() == [8.0, 8.0, 8.0]
    literal = next(v for ins, v in interpreter.env.items() if ins.is_literal)
    assert literal.strides == (0,) and literal.shape == (1,)


def test_a_submodule_given_the_wrong_number_of_values_says_so() -> None:
    program = _program(
        'module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = neg(x)\n\n'
        'module: "sub"\nsub:b = @param:b -> float_type, {2}, {1}\nsub:a = @param:a -> float_type, {2}, {1}\n'
        "sub:@2 = sub(sub:a,sub:b)\nsub:@3 = @return(sub:@2)\n"
    )
    interpreter = Interpreter(program)
    with pytest.raises(ComputeError, match=r"^module 'sub' has 2 parameters but gets 1 values$"):
        interpreter.run_module(program.modules["sub"], [X])
    # parameters sorted by name take the values: a = X, b = 2X
    (out,) = interpreter.run_module(program.modules["sub"], [X, 2 * X])
    assert out.tolist() == (X - 2 * X).tolist()


def test_a_failing_op_is_reported_with_its_name_and_line() -> None:
    program = _program('module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = exp(x)\n@2 = neg(@1)\n')
    with pytest.raises(MgxError, match=r"^error: 'exp' \(line 3\): exp failed: "):
        run_program(program, {"x": np.array(["a", "b"])})


def test_an_op_without_reference_compute_fails_when_reached() -> None:
    program = _program(
        'module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = no_such_op(x) -> float_type, {2}, {1}\n'
    )
    with pytest.raises(
        MgxError, match=r"^error: 'no_such_op' \(line 3\): no reference implementation for 'no_such_op' \(unknown"
    ):
        run_program(program, {"x": X})


def test_memory_check_refuses_values_larger_than_the_limit() -> None:
    program = _program('module: "main"\nx = @param:x -> float_type, {4, 5}, {5, 1}\n@1 = neg(x)\n')
    check_memory(program, 80)
    with pytest.raises(MgxError) as refused:
        check_memory(program, 79)
    assert str(refused.value) == (
        "error: '@param' (line 2) in module 'main' needs 80 bytes for float_type {4, 5}, "
        "more than this machine's 79 bytes of memory"
    )
    assert memory_limit() > 1 << 20
