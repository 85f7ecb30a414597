"""simplify_algebra's concat and split rewrites keep results: every case of
test/opt/simplify_algebra_concat.mgx, and a few larger random programs, give the same outputs on the
interpreter before and after the pass, and every rewrite of the family fires somewhere. Two cases show
why the rewrites refuse what MIGraphX would do: its results would read other elements. Patterns that
match but decline change nothing, cost one round and stop the later rewrites."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from lit_cases import lit_cases
from test_pass_differential import parameter_values, rms_ok

from mgxir.interp.interpreter import run_program
from mgxir.ir.dtype import DType
from mgxir.ir.literal import Literal
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes import simplify_algebra
from mgxir.passes.base import PassContext
from mgxir.passes.rewrite import MATCHED_UNCHANGED
from mgxir.passes.simplify_algebra import SimplifyAlgebra, concat
from mgxir.text.parser import parse_program
from mgxir.text.printer import PrintOptions, print_program
from mgxir.verifier import verify

LIT_FILE = Path(__file__).resolve().parents[2] / "opt" / "simplify_algebra_concat.mgx"
FAMILY = [rewrite.__name__ for rewrite in concat.REWRITES]


def outputs(program: Program, params: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(o) for o in run_program(program, params)]


def check_same_results(program: Program, seed: int) -> Counter[str]:
    """Runs simplify_algebra on a copy; returns the pass statistics."""
    params = parameter_values(program, seed)
    before = outputs(program, params)
    transformed = parse_program(print_program(program, PrintOptions(lossless=True)))
    context = PassContext()
    SimplifyAlgebra().apply(transformed, context)
    verify(transformed)
    after = outputs(transformed, params)
    assert len(before) == len(after)
    for b, a in zip(before, after):
        assert b.shape == a.shape
        assert rms_ok(a, b), print_program(transformed)
    return context.statistics


@pytest.mark.parametrize("index", range(len(lit_cases(LIT_FILE))))
def test_lit_cases_keep_results(index: int) -> None:
    check_same_results(parse_program(lit_cases(LIT_FILE)[index]), index)


def random_program(build) -> Program:
    rng = np.random.default_rng(7)
    program = Program()
    main = program.create_module("main")

    def literal(*lens: int):
        data = rng.uniform(-1, 1, size=lens).astype(np.float32)
        return main.add_literal(Literal(Shape.make(DType.float, lens), data))

    build(main, literal)
    return program


def split_add_tanh(main, literal) -> None:
    x = main.add_parameter("x", Shape.make(DType.float, (2, 6, 5)))
    pieces = [main.add_instruction("slice", [x], axes=[1], starts=[s], ends=[s + 2]) for s in (0, 2, 4)]
    sums = [
        main.add_instruction("add", [literal(2, 2, 5), p] if i == 1 else [p, literal(2, 2, 5)])
        for i, p in enumerate(pieces)
    ]
    tanhs = [main.add_instruction("tanh", [s]) for s in sums]
    main.add_return([main.add_instruction("concat", tanhs, axis=1)])


def concat_of_muls(main, literal) -> None:
    x = main.add_parameter("x", Shape.make(DType.float, (3, 4)))
    y = main.add_parameter("y", Shape.make(DType.float, (3, 2)))
    mx = main.add_instruction("mul", [x, literal(3, 4)])
    my = main.add_instruction("mul", [y, literal(3, 2)])
    main.add_return([main.add_instruction("concat", [mx, my], axis=1)])


def reshape_slices(main, literal) -> None:
    x = main.add_parameter("x", Shape.make(DType.float, (2, 12, 4)))
    pieces = [main.add_instruction("slice", [x], axes=[1], starts=[s], ends=[s + 4]) for s in (0, 4, 8)]
    shaped = [
        main.add_instruction("reshape", [main.add_instruction("contiguous", [p])], dims=[2, 2, 2, 4]) for p in pieces
    ]
    main.add_return([main.add_instruction("sub", [shaped[0], shaped[2]]), shaped[1]])


def transpose_slices(main, literal) -> None:
    x = main.add_parameter("x", Shape.make(DType.float, (2, 3, 8)))
    pieces = [main.add_instruction("slice", [x], axes=[2], starts=[s], ends=[s + 4]) for s in (0, 4)]
    turned = [main.add_instruction("transpose", [p], permutation=[2, 0, 1]) for p in pieces]
    main.add_return([main.add_instruction("sub", turned)])


RANDOM_BUILDS = [split_add_tanh, concat_of_muls, reshape_slices, transpose_slices]


@pytest.mark.parametrize("build", RANDOM_BUILDS)
def test_random_programs_keep_results(build) -> None:
    statistics = check_same_results(random_program(build), 3)
    assert any(statistics[f"{name} applied"] for name in FAMILY)


def test_every_rewrite_fires() -> None:
    programs = [parse_program(text) for text in lit_cases(LIT_FILE)] + [random_program(b) for b in RANDOM_BUILDS]
    fired: Counter[str] = Counter()
    for program in programs:
        context = PassContext()
        SimplifyAlgebra().apply(program, context)
        fired.update({name: context.statistics[f"{name} applied"] for name in FAMILY})
    assert all(fired[name] > 0 for name in FAMILY), fired


def test_migraphx_reshape_len_1_result_differs() -> None:
    """MIGraphX turns reshape(contiguous(x[:, :, k:k+1])) to {1, 128} into reshape(x, {1, 384})[:, 128k:128(k+1)]."""
    x = np.arange(1 * 128 * 3, dtype=np.float32).reshape(1, 128, 3)
    original = np.ascontiguousarray(x[:, :, 0:1]).reshape(1, 128)
    migraphx = x.reshape(1, 384)[:, 0:128]
    assert not np.array_equal(original, migraphx)


def test_migraphx_split_concat_interleaved_result_differs() -> None:
    """concat(x[:, 0:2], y[:, 2:4], x[:, 2:4]) is not concat(x, x[:, 2:4]), which MIGraphX would make."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    original = np.concatenate([x[:, 0:2], y[:, 2:4], x[:, 2:4]], axis=1)
    migraphx = np.concatenate([x, x[:, 2:4]], axis=1)
    assert not np.array_equal(original, migraphx)


def run_recording(program: Program, watched: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[object], Counter[str]]:
    """Runs simplify_algebra on `program`, recording what the rewrite named `watched` returns on the
    returned concat; gives those outcomes and the pass statistics."""
    concat_ins = program.main.last.args[0]
    outcomes: list[object] = []

    def record(rewrite):
        def recorded(module, ins, constant):
            outcome = rewrite(module, ins, constant)
            if ins is concat_ins:
                outcomes.append(outcome)
            return outcome

        return recorded

    rewrites = tuple(record(r) if r.__name__ == watched else r for r in simplify_algebra.REWRITES)
    monkeypatch.setattr(simplify_algebra, "REWRITES", rewrites)
    context = PassContext()
    SimplifyAlgebra().apply(program, context)
    return outcomes, context.statistics


def test_declined_concat_op_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """concat(relu(x), tanh(y)) matches find_concat_op, which finds no run of like inputs to merge:
    one round, no change counted, the module unchanged."""
    program = Program()
    main = program.create_module("main")
    x = main.add_parameter("x", Shape.make(DType.float, (2, 3)))
    y = main.add_parameter("y", Shape.make(DType.float, (2, 4)))
    relu, tanh = main.add_instruction("relu", [x]), main.add_instruction("tanh", [y])
    main.add_return([main.add_instruction("concat", [relu, tanh], axis=1)])
    text_before = print_program(program)
    outcomes, statistics = run_recording(program, "find_concat_op", monkeypatch)
    assert outcomes == [MATCHED_UNCHANGED]
    assert not any(key.endswith(" applied") for key in statistics), dict(statistics)
    assert print_program(program) == text_before


def test_declined_concat_same_input_stops_concat_op(monkeypatch: pytest.MonkeyPatch) -> None:
    """concat(relu(x), relu(x)) along an axis of length 3 matches find_concat_same_input, which
    declines; as in MIGraphX find_concat_op is then not tried, so the concat stays."""
    program = Program()
    main = program.create_module("main")
    relu = main.add_instruction("relu", [main.add_parameter("x", Shape.make(DType.float, (2, 3)))])
    main.add_return([main.add_instruction("concat", [relu, relu], axis=1)])
    text_before = print_program(program)
    outcomes, statistics = run_recording(program, "find_concat_op", monkeypatch)
    assert outcomes == []
    assert not any(key.endswith(" applied") for key in statistics), dict(statistics)
    assert print_program(program) == text_before
