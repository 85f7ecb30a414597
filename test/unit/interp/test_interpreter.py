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
    with pytest.raises(MgxError) as refused:
        check_memory(program, 79)
    assert str(refused.value) == (
        "error: '@param' (line 2) in module 'main' needs 80 bytes for float_type {4, 5}, "
        "more than the 79 bytes this process can still allocate (under the given limit)"
    )
    assert memory_limit()[0] > 1 << 20


def test_memory_check_counts_all_values_and_a_float64_temporary() -> None:
    # x and neg(x) keep 80 bytes each; numpy may make a float64 copy of 20 values (160 bytes); the
    # transpose is a view of neg(x) and the literal is in memory already: 320 bytes in all
    program = _program(
        'module: "main"\nx = @param:x -> float_type, {4, 5}, {5, 1}\n@1 = neg(x)\n'
        "@2 = transpose[permutation={1, 0}](@1)\n@3 = @literal{1} -> float_type, {1}, {1}\n"
    )
    check_memory(program, 320)
    with pytest.raises(MgxError, match=r"^error: the program's values need 160 bytes together, and 160 more"):
        check_memory(program, 319)


# -- written against the survivors of the first mutation run (docs/mutation.md) ----------------


def test_a_module_of_parameters_only_has_no_outputs() -> None:
    program = _program('module: "main"\nx = @param:x -> float_type, {2}, {1}\n')
    assert run_program(program, {"x": X}) == []


def test_generated_values_are_the_same_for_every_float_type_and_pinned() -> None:
    as_float = generated_literal(Shape.make(DType.float, [8]), 2)
    as_double = generated_literal(Shape.make(DType.double, [8]), 2)
    assert as_double.dtype == np.float64
    np.testing.assert_array_equal(as_double, as_float.astype(np.float64))
    # lit outputs of programs with elided literals depend on these exact values
    assert generated_literal(Shape.make(DType.bool, [8]), 0).tolist() == [True] * 3 + [False] * 5
    assert np.packbits(generated_literal(Shape.make(DType.bool, [64]), 0)).tobytes().hex() == "e07ff66e5007677e"
    assert generated_literal(Shape.make(DType.int32, [8]), 0).tolist() == [1, 1, 1, 0, 0, 0, 0, 0]


def test_a_stride_zero_literal_reads_its_first_value_everywhere() -> None:
    program = _program(
        'module: "main"\n@0 = @literal{1, 2, 3, 4, 5, 6} -> float_type, {2, 3}, {0, 0}\n'
        "@1 = contiguous(@0) -> float_type, {2, 3}, {3, 1}\n"
    )
    (out,) = run_program(program, {})
    assert out.tolist() == [[1.0] * 3] * 2


def test_an_op_whose_reference_compute_refuses_fails_when_reached() -> None:
    import mgxir.targets.gpu.ops  # noqa: F401  (registers gpu::code_object: a compiled kernel has no reference)

    program = _program(
        'module: "main"\na = @param:a -> float_type, {2, 2}, {2, 1}\n'
        "@1 = gpu::code_object[code_object=8,symbol_name=k,global=4,local=4,](a,a) -> float_type, {2, 2}, {2, 1}\n"
        "@2 = neg(@1)\n"
    )
    with pytest.raises(MgxError) as failed:
        run_program(program, {"a": np.ones((2, 2), np.float32)})
    assert str(failed.value) == (
        "error: 'gpu::code_object' (line 3): 'k' is a compiled kernel: run the program with --target=auto, gpu, "
        "vulkan or cpu"
    )


# the failing add reads the elided literal through @3 -> @4; @2 is reached twice on the way
ELIDED_READ_BY_THE_FAILING_OP = (
    'module: "main"\nx = @param:x -> float_type, {2}, {1}\ny = @param:y -> float_type, {2}, {1}\n'
    "@2 = neg(x) -> float_type, {2}, {1}\n@3 = add(@2,@2) -> float_type, {2}, {1}\n"
    "@4 = @literal{ ... } -> float_type, {2}, {1}\n@5 = neg(@4) -> float_type, {2}, {1}\n"
    "@6 = add(@5,@3) -> float_type, {2}, {1}\n@7 = add(@6,y) -> float_type, {2}, {1}\n"
)
NOTE = (
    " (it reads literal '@literal' (line 6), printed elided ({ ... }) and run on generated values; "
    "print the program with --lossless to keep literal values)"
)


def test_an_error_after_an_elided_literal_names_the_literal_it_reads() -> None:
    program = _program(ELIDED_READ_BY_THE_FAILING_OP)
    sink = DiagnosticSink()
    with pytest.raises(MgxError) as failed:
        run_program(program, {"x": X, "y": np.array(["a", "b"])}, sink)
    assert str(failed.value).startswith("error: 'add' (line 9): add failed: ufunc 'add' did not contain a loop")
    assert str(failed.value).endswith(NOTE)
    (warning,) = sink.warnings
    assert warning.render() == (
        "warning: literal '@literal' (line 6) in module 'main' was printed elided ({ ... }); "
        "using deterministic generated values"
    )


def test_a_compute_error_after_an_elided_literal_names_it_too() -> None:
    program = _program(
        'module: "main"\n@0 = @literal{ ... } -> float_type, {2}, {1}\n@1 = no_such_op(@0) -> float_type, {2}, {1}\n'
    )
    with pytest.raises(MgxError) as failed:
        run_program(program, {})
    assert str(failed.value) == (
        "error: 'no_such_op' (line 3): no reference implementation for 'no_such_op' (unknown operator)"
        + NOTE.replace("line 6", "line 2")
    )


def test_the_note_search_visits_each_instruction_once() -> None:
    """60 levels of `add(d, d)`: a search that revisits would take 2**60 steps."""
    lines = ['module: "main"', "x = @param:x -> float_type, {2}, {1}", "y = @param:y -> float_type, {2}, {1}"]
    lines += ["@0 = @literal{ ... } -> float_type, {2}, {1}", "d0 = neg(x) -> float_type, {2}, {1}"]
    lines += [f"d{i} = add(d{i - 1},d{i - 1}) -> float_type, {{2}}, {{1}}" for i in range(1, 61)]
    lines += ["@9 = add(d60,y) -> float_type, {2}, {1}", "@10 = add(@9,@0) -> float_type, {2}, {1}", ""]
    program = _program("\n".join(lines))
    with pytest.raises(MgxError) as failed:
        run_program(program, {"x": X, "y": np.array(["a", "b"])})
    assert str(failed.value).startswith("error: 'add' (line 66): add failed: ") and "elided" not in str(failed.value)


def test_an_error_not_reading_the_elided_literal_has_no_note() -> None:
    program = _program(
        'module: "main"\n@0 = @literal{ ... } -> float_type, {2}, {1}\nx = @param:x -> float_type, {2}, {1}\n'
        "y = @param:y -> float_type, {2}, {1}\n@3 = add(@0,x)\n@4 = exp(y)\n"
    )
    with pytest.raises(MgxError) as failed:
        run_program(program, {"x": X, "y": np.array(["a", "b"])})
    assert str(failed.value).startswith("error: 'exp' (line 6): exp failed: ")
    assert str(failed.value).endswith("according to the casting rule ''safe''")  # numpy's, nothing after


def test_errors_name_an_instruction_by_its_symbols_or_without_a_line() -> None:
    program = _program(
        'module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = exp(x) -> float_type, {2}, {1} # onnx::Exp_1, E2\n'
    )
    with pytest.raises(MgxError, match=r"^error: 'onnx::Exp_1' \(line 3\): exp failed: "):
        run_program(program, {"x": np.array(["a", "b"])})
    for ins in program.main:
        ins.line = 0
    with pytest.raises(MgxError, match=r"^error: 'onnx::Exp_1': exp failed: "):
        run_program(program, {"x": np.array(["a", "b"])})
    list(program.main)[-1].symbols = ()
    with pytest.raises(MgxError, match=r"^error: 'exp': exp failed: "):
        run_program(program, {"x": np.array(["a", "b"])})


def test_memory_check_goes_on_past_dynamic_values_and_counts_bytes() -> None:
    program = _program(
        'module: "main"\nd = @param:d -> dynamic, float_type, {[1..4], [2..2]}\n'
        "b = @param:b -> bool_type, {40}, {1}\nx = @param:x -> float_type, {4, 5}, {5, 1}\n"
    )
    check_memory(program, 440)  # 40 + 80 bytes, and a float64 copy of the 40 booleans
    with pytest.raises(MgxError, match=r"^error: the program's values need 120 bytes together, and 320 more"):
        check_memory(program, 439)
    with pytest.raises(MgxError, match=r"^error: '@param' \(line 4\) in module 'main' needs 80 bytes for float_type"):
        check_memory(program, 79)


def test_run_program_passes_its_sink() -> None:
    program = _program('module: "main"\n@0 = @literal{ ... } -> float_type, {2}, {1}\n@1 = neg(@0)\n')
    sink = DiagnosticSink()
    run_program(program, {}, sink)
    assert len(sink.warnings) == 1
