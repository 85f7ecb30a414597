"""mgx-reduce's delta passes, each on a small program: what its candidates are, that they verify,
that their inputs hold the values cut out; the kind of error `--crash` compares; the engine's cache
and the window of workers (mgxir.drivers.reduce)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.drivers.reduce import strategies
from mgxir.drivers.reduce.candidate import Candidate, instruction_count
from mgxir.drivers.reduce.engine import Reducer, prepare
from mgxir.drivers.reduce.interesting import Crash, ShellCommand, error_kind, outputs_differ
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.verifier import verify

CHAIN = """
module: "main"
x = @param:x -> float_type, {2, 3}, {3, 1}
@1 = exp(x)
@2 = tanh(@1)
@3 = neg(@2)
@4 = @return(@3)
"""


def candidate(text: str, **inputs: np.ndarray) -> Candidate:
    program = parse_program(textwrap.dedent(text))
    verify(program, DiagnosticSink())
    rng = np.random.default_rng(0)
    values = {
        p.param_name: inputs.get(p.param_name, rng.standard_normal(p.shape.lens).astype(p.shape.dtype.numpy))
        for p in program.main.parameters()
    }
    return prepare(program, values)


def all_candidates(strategy: strategies.Chunked, current: Candidate) -> list[Candidate]:
    out = list(strategy.candidates(current))
    for c in out:
        verify(c.program, DiagnosticSink())
    return out


def ops(c: Candidate) -> list[str]:
    return [i.name for i in c.program.main if not (i.is_param or i.is_return)]


def test_remove_instructions_cuts_values_into_parameters_with_their_values():
    current = candidate(CHAIN)
    x = current.inputs["x"]
    found = all_candidates(strategies.RemoveInstructions(), current)
    # the whole list, then (3 // 2 = 1) one at a time: cutting tanh leaves exp unused, so it dies
    assert [ops(c) for c in found] == [[], ["tanh", "neg"], ["neg"], []]
    everything = found[0]
    (name,) = everything.inputs
    np.testing.assert_allclose(everything.inputs[name], -np.tanh(np.exp(x)), rtol=1e-6)
    only_neg = found[2]
    (name,) = only_neg.inputs
    np.testing.assert_allclose(only_neg.inputs[name], np.tanh(np.exp(x)), rtol=1e-6)
    assert found[1].inputs.keys() == {"cut0"}  # x is read by nothing left: dropped with its input
    np.testing.assert_allclose(found[1].inputs["cut0"], np.exp(x), rtol=1e-6)
    assert current.size()[0] == 3 and ops(current) == ["exp", "tanh", "neg"]  # the current one untouched


def test_remove_instructions_goes_on_from_the_chunk_taken():
    current = candidate(CHAIN)
    strategy = strategies.RemoveInstructions()
    made = strategy.candidates(current)
    next(made)
    next(made)
    taken = next(made)
    next(made)  # made after it (tried by another worker): does not move where the pass goes on
    strategy.taken(taken)  # the second single instruction: the next call starts there, not at the whole list
    assert (strategy.chunk_size, strategy.position) == (1, 1)
    again = list(strategy.candidates(current))
    assert [ops(c) for c in again] == [["neg"], []]
    strategy.reset()
    assert len(list(strategy.candidates(current))) == 4


def test_truncate_tail_returns_the_instruction_halfway_then_further():
    found = all_candidates(strategies.TruncateTail(), candidate(CHAIN))
    assert [ops(c) for c in found] == [["exp"], ["exp", "tanh"]]
    assert [c.program.main.return_instruction.args[0].name for c in found] == ["exp", "tanh"]
    assert all(c.inputs.keys() == {"x"} for c in found)


def test_return_earlier_truncates_the_tail():
    found = all_candidates(strategies.ReturnEarlier(), candidate(CHAIN))
    assert [ops(c) for c in found] == [["exp", "tanh"]]
    assert found[0].program.main.return_instruction.args[0].name == "tanh"


def test_bypass_replaces_an_instruction_by_its_argument_of_the_same_shape():
    found = all_candidates(strategies.BypassInstructions(), candidate(CHAIN))
    assert [ops(c) for c in found] == [[], ["tanh", "neg"], ["exp", "neg"], ["exp", "tanh"]]
    assert all(not c.inputs.keys() - {"x"} for c in found)  # no parameter made


def test_drop_outputs_keeps_one():
    text = """
    module: "main"
    x = @param:x -> float_type, {2}, {1}
    @1 = exp(x)
    @2 = neg(x)
    @3 = @return(@1,@2)
    """
    found = all_candidates(strategies.DropOutputs(), candidate(text))
    assert [ops(c) for c in found] == [["neg"], ["exp"]]
    assert all_candidates(strategies.DropOutputs(), found[0]) == []


def test_inline_submodules_puts_a_pointwise_body_into_main():
    text = """
    module: "main"
    x = @param:x -> float_type, {2, 3}, {3, 1}
    y = @param:y -> float_type, {2, 3}, {3, 1}
    @2 = pointwise(x,y), [main:pointwise0] -> float_type, {2, 3}, {3, 1}
    @3 = @return(@2)

    module: "main:pointwise0"
    main:pointwise0:x1 = @param:x1 -> float_type, {1}, {0}
    main:pointwise0:x0 = @param:x0 -> float_type, {1}, {0}
    main:pointwise0:@2 = sub(main:pointwise0:x0,main:pointwise0:x1) -> float_type, {1}, {0}
    main:pointwise0:@3 = relu(main:pointwise0:@2) -> float_type, {1}, {0}
    main:pointwise0:@4 = @return(main:pointwise0:@3)
    """
    current = candidate(text)
    (inlined,) = all_candidates(strategies.InlineSubmodules(), current)
    assert ops(inlined) == ["sub", "relu"]
    assert list(inlined.program.modules) == ["main"]
    sub = next(i for i in inlined.program.main if i.name == "sub")
    assert [a.param_name for a in sub.args] == ["x", "y"]  # x0 is the first argument, by name
    assert inlined.program.main.last.args[0].shape.lens == (2, 3)


def test_shrink_shapes_slices_inputs_and_recomputes_shapes():
    current = candidate(CHAIN)
    found = all_candidates(strategies.ShrinkShapes(), current)
    assert [c.program.main.get_parameter("x").shape.lens for c in found] == [(1, 1), (1, 3), (2, 1)]
    np.testing.assert_array_equal(found[1].inputs["x"], current.inputs["x"][:1])
    assert all(i.shape.lens == (1, 3) for i in found[1].program.main)


def test_shrink_shapes_skips_what_a_shape_rule_refuses():
    text = """
    module: "main"
    x = @param:x -> float_type, {2, 3}, {3, 1}
    @1 = reshape[dims={6}](x)
    @2 = @return(@1)
    """
    assert all_candidates(strategies.ShrinkShapes(), candidate(text)) == []


def test_shrink_literals_makes_splats():
    text = """
    module: "main"
    x = @param:x -> float_type, {3}, {1}
    @1 = @literal{1, 2, 3} -> float_type, {3}, {1}
    @2 = add(x,@1)
    @3 = @return(@2)
    """
    current = candidate(text)
    found = all_candidates(strategies.ShrinkLiterals(), current)
    values = [next(i for i in c.program.main if i.is_literal).literal.data.tolist() for c in found]
    assert values == [[1, 1, 1], [0, 0, 0]]
    assert all(c.size() < current.size() for c in found)


def test_reset_attributes_goes_back_to_defaults():
    text = """
    module: "main"
    x = @param:x -> float_type, {2, 3}, {3, 1}
    @1 = softmax[axis=0](x)
    @2 = @return(@1)
    """
    (reset,) = all_candidates(strategies.ResetAttributes(), candidate(text))
    assert "softmax[axis=1]" in print_program(reset.program)
    assert reset.size()[3] == 0


def test_every_strategy_has_a_name_and_leaves_the_current_candidate_alone():
    current = candidate(CHAIN)
    before = print_program(current.program)
    for cls in strategies.STRATEGIES:
        assert cls.name
        list(cls().candidates(current))
    assert print_program(current.program) == before
    assert len(set(strategies.strategy_names())) == len(strategies.STRATEGIES)


def test_error_kind_keeps_the_pass_and_the_class_and_drops_what_changes():
    def failure(message: str) -> MgxError:
        try:
            try:
                raise ValueError(message)
            except ValueError as e:
                raise MgxError(f"pass 'simplify_algebra' failed: ValueError: {message}") from e
        except MgxError as wrapped:
            return wrapped

    one = error_kind(failure("dimension 3 of {2, 3} in 'main:@4' is not 7"))
    two = error_kind(failure("dimension 1 of {5} in 'x' is not 2"))
    assert one == two
    assert one.exception == "ValueError"
    assert one.message.startswith("pass 'simplify_algebra' failed: ")
    assert error_kind(failure("another message")) != one


def test_outputs_differ_by_the_rms_rule():
    a = {"out0": np.ones(4, np.float32)}
    assert not outputs_differ(a, {"out0": np.ones(4, np.float32) * (1 + 1e-5)}, 1e-3)
    assert outputs_differ(a, {"out0": np.zeros(4, np.float32)}, 1e-3)
    assert outputs_differ(a, {"out0": np.ones(5, np.float32)}, 1e-3)
    nan = {"out0": np.array([np.nan, 1], np.float32)}
    assert not outputs_differ(nan, {"out0": np.array([np.nan, 1], np.float32)}, 1e-3)


def test_crash_holds_only_for_the_same_kind(monkeypatch):
    # the test-only pass filed for this test alone (a reload of the registry would drop the passes
    # that targets filed, the GPU target's gpu_lowering, for the tests after it)
    from mgxir.passes.registry import PASSES

    monkeypatch.setitem(PASSES._places, "test_fail", "mgxir.passes.testing:TestFail")
    current = candidate(CHAIN)
    crash = Crash("dce,test_fail{on=tanh}")
    kind = crash.failure(current.program.clone())
    assert kind is not None and "test_fail" in kind.message
    crash = Crash(crash.pipeline, kind)
    assert crash.holds(current.program.clone(), current.inputs, "")
    without_tanh = parse_program(CHAIN.replace("tanh", "abs"))
    assert not crash.holds(without_tanh, current.inputs, "")
    assert not Crash(crash.pipeline, error_kind(ValueError("other"))).holds(current.program.clone(), {}, "")


@pytest.mark.parametrize("jobs", [1, 2])
def test_reducer_finds_the_instruction_and_answers_repeats_from_the_cache(tmp_path, jobs):
    text = """
    module: "main"
    x = @param:x -> float_type, {4, 3}, {3, 1}
    @1 = exp(x)
    @2 = tanh(@1)
    @3 = sin(@2)
    @4 = neg(@3)
    @5 = abs(@4)
    @6 = @return(@5)
    """
    test = ShellCommand("grep -q 'sin(' {}", 60)
    with Reducer(test, jobs, 60, str(tmp_path)) as reducer:
        result = reducer.reduce(candidate(text))
        assert ops(result) == ["sin"]
        assert result.program.main.get_parameter("x") is None  # the input of sin was cut
        tried = reducer.statistics.tried
        assert reducer.statistics.cache_hits > 0
        again = reducer.reduce(candidate(text))
        assert ops(again) == ["sin"]
        assert reducer.statistics.tried == tried  # every candidate of the second run was in the cache
        assert instruction_count(again.program) == 1


class _Sleeps:
    def holds(self, program, inputs, folder):
        import time

        time.sleep(5)
        return True


def test_a_test_past_its_time_does_not_hold(tmp_path):
    import time

    from mgxir.drivers.reduce.engine import evaluate, lossless_text

    text = lossless_text(candidate(CHAIN).program)
    began = time.monotonic()
    assert not evaluate(_Sleeps(), text, {}, str(tmp_path), 0.3)
    assert not evaluate(ShellCommand("sleep 5", 0.3), text, {}, str(tmp_path), 0)
    assert evaluate(ShellCommand("grep -q tanh {}", 5), text, {}, str(tmp_path), 0)
    assert time.monotonic() - began < 3


def test_cache_keys_of_bf16_programs_and_inputs():
    from mgxir.drivers.reduce.engine import fingerprint

    text = """
    module: "main"
    x = @param:x -> bf16_type, {2}, {1}
    @1 = @literal{1, 2} -> bf16_type, {2}, {1}
    @2 = add(x,@1)
    @3 = @return(@2)
    """
    one, two = candidate(text), candidate(text)
    assert fingerprint(one) == fingerprint(two)
    two.inputs["x"] = two.inputs["x"] + two.inputs["x"].dtype.type(1)
    assert fingerprint(one) != fingerprint(two)
    three = candidate(text.replace("{1, 2}", "{1, 3}"))
    three.inputs = one.inputs
    assert fingerprint(one) != fingerprint(three)


def test_reproducer_keeps_every_value_and_names_its_sidecars(tmp_path):
    from mgxir.drivers.reduce.reproducer import inputs_path, replay_header, write_reproducer
    from mgxir.ir.literal import Literal
    from mgxir.ir.shape import Shape
    from mgxir.text.parser import read_program

    current = candidate(CHAIN)
    big = np.arange(300_000, dtype=np.float32).reshape(300_000) * np.float32(1.0000001)
    current.program.main.add_literal(Literal(Shape.make(current.program.main.first.shape.dtype, [300_000]), big))
    out = str(tmp_path / "bug.mgx")
    write_reproducer(current.program, current.inputs, out, replay_header("dce", ["mgx-opt --run-reproducer x"], "s"))
    text = open(out).read()
    assert text.splitlines()[:3] == ["// mgx-opt -p 'dce'", "// s", "// replay: mgx-opt --run-reproducer x"]
    assert inputs_path(out) == str(tmp_path / "bug.inputs.npz")
    assert (tmp_path / "bug.npz").exists()  # the large literal's data, named by the text
    again = read_program(out, DiagnosticSink())
    literal = next(i for i in again.main if i.is_literal)
    np.testing.assert_array_equal(literal.literal.data, big)
    with np.load(inputs_path(out)) as saved:
        np.testing.assert_array_equal(saved["x"], current.inputs["x"])
    write_reproducer(current.program, {}, out, [])
    assert not (tmp_path / "bug.inputs.npz").exists()  # no stale inputs beside a reproducer without any
