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
from simplify_cases import module, params, reprinted, simplified
from test_pass_differential import parameter_values, rms_ok

from mgxir.interp.interpreter import run_program
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.program import Program
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.passes import simplify_algebra
from mgxir.passes.base import PassContext
from mgxir.passes.rewrite import MATCHED_UNCHANGED, Rewriter
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


# simplify_algebra's concat and split rewrites: the helpers behind find_splits (which fused bodies
# match, which members depend on which, what moves before the split input), exactly (written against
# the mutants scripts/mutation.py found surviving).

SAME_BODIES = """module: "main"
input = @param:input -> float_type, {3, 2, 4}, {8, 4, 1}
@1 = slice[axes={1},starts={0},ends={1}](input) -> float_type, {3, 1, 4}, {8, 4, 1}
@2 = slice[axes={1},starts={1},ends={2}](input) -> float_type, {3, 1, 4}, {8, 4, 1}
@3 = pointwise(@1), [main:pointwise0] -> float_type, {3, 1, 4}, {4, 4, 1}
@4 = pointwise(@2), [main:pointwise1] -> float_type, {3, 1, 4}, {4, 4, 1}
@5 = @return(@3,@4)

module: "main:pointwise0"
x0 = @param:x0 -> float_type, {1}, {0}
@1 = sigmoid(x0) -> float_type, {1}, {0}
@2 = @return(@1)

module: "main:pointwise1"
x0 = @param:x0 -> float_type, {1}, {0}
@1 = sigmoid(x0) -> float_type, {1}, {0}
@2 = @return(@1)
"""


def test_same_module_body_compares_printed_bodies_and_plain_ops_have_none() -> None:
    program = parse_program(SAME_BODIES)
    _, first, second, fused_a, fused_b, _ = list(program.main)
    printed: dict[int, str] = {}
    assert concat._same_module_body(fused_a, fused_b, printed)
    assert not concat._same_module_body(fused_a, first, printed)
    assert not concat._same_module_body(first, fused_b, printed)
    assert concat._same_module_body(first, second, printed)


class Chain:
    def __init__(self) -> None:
        self.program = Program()
        self.main = self.program.create_module("main")

    def param(self, name: str, *lens: int) -> Instruction:
        return self.main.add_parameter(name, Shape.make(DType.float, lens))

    def op(self, name: str, *args: Instruction, **attributes: object) -> Instruction:
        return self.main.add_instruction(name, list(args), **attributes)


def _span_chain() -> tuple[Chain, Instruction, list[Instruction], Instruction]:
    c = Chain()
    root = c.param("r", 2)
    a = c.op("neg", root)
    t = c.op("abs", a)
    b = c.op("add", t, root)  # depends on a through t
    e = c.op("neg", root)
    c.op("relu", e)  # after the last member: outside the span
    return c, root, [a, b, e], t


def test_span_records_bits_masks_positions_and_stops_at_the_last_member() -> None:
    c, root, (a, b, e), t = _span_chain()
    span = concat._Span(Rewriter(c.main), root, [a, b, e])
    assert span.bit == {a: 1, b: 2, e: 4}
    assert span.position == {a: 1, b: 3, e: 4}
    assert span.mask == {a: 1, t: 1, b: 3, e: 4}
    assert span.after == {a, t, b, e}
    assert span.bits([a, e]) == 5


def test_span_interdependent_every_member_but_the_earliest_depends_on_another() -> None:
    c, root, (a, b, e), _ = _span_chain()
    span = concat._Span(Rewriter(c.main), root, [a, b, e])
    assert span.interdependent([b])
    assert span.interdependent([a, b])
    assert span.interdependent([b, a])
    assert not span.interdependent([a, e])
    assert not span.interdependent([a, b, e])


def test_span_groups_dependent_when_one_group_reaches_another() -> None:
    c, root, (a, b, e), _ = _span_chain()
    span = concat._Span(Rewriter(c.main), root, [a, b, e])
    assert span.groups_dependent([[b, e], [a]])
    assert span.groups_dependent([[a], [e, b]])
    assert not span.groups_dependent([[a], [e]])


def test_replace_with_slice_updates_the_users_shapes() -> None:
    c = Chain()
    x = c.param("x", 4, 4)
    ins = c.op("neg", x)
    user = c.op("abs", ins)
    concat._replace_with_slice(Rewriter(c.main), ins, make_op("slice", axes=(0,), starts=(0,), ends=(1,)), x)
    assert ins.shape.lens == (1, 4)
    assert user.shape.lens == (1, 4)


def test_plan_moves_back_moves_a_shared_input_once_before_its_users() -> None:
    c = Chain()
    q = c.param("q", 2)
    pos = c.op("tanh", q)
    shared = c.op("neg", q)
    left, right = c.op("abs", shared), c.op("relu", shared)
    weight = c.op("add", left, right)
    after = {shared, left, right, weight}
    assert concat._plan_moves_back(Rewriter(c.main), pos, [weight], after) == [shared, left, right, weight]


# -- whole-pass cases: simplify_algebra's output text, exactly, and the same results ---------------


KEPT = {
    # find_concat_op matches a concat of multibroadcasts used elsewhere too, merges nothing, and so
    # (as in MIGraphX's find_matches) find_split_concat is never tried on it
    "concat_op_matched_stops_split_concat": module(
        *params("x 2,1", "y 2,1"),
        "@2 = multibroadcast[out_lens={2, 3},out_dyn_dims={}](x) -> float_type, {2, 3}, {1, 0}",
        "@3 = multibroadcast[out_lens={2, 3},out_dyn_dims={}](y) -> float_type, {2, 3}, {1, 0}",
        "@4 = concat[axis=1](@2,@3) -> float_type, {2, 6}, {6, 1}",
        "@5 = slice[axes={1},starts={0},ends={3}](@4) -> float_type, {2, 3}, {6, 1}",
        "@6 = slice[axes={1},starts={3},ends={6}](@4) -> float_type, {2, 3}, {6, 1}",
        "@7 = concat[axis=1](@5,@6) -> float_type, {2, 6}, {6, 1}",
        "@8 = @return(@7,@2,@3)",
    ),
    # one slice is no split: the concat keeps it
    "single_slice_is_no_split": module(
        *params("x 2,3", "y 2,2"),
        "@2 = slice[axes={1},starts={0},ends={3}](x) -> float_type, {2, 3}, {3, 1}",
        "@3 = concat[axis=1](y,@2) -> float_type, {2, 5}, {5, 1}",
        "@4 = @return(@3)",
    ),
    # slices along different axes are no split: each relu stays on its slice
    "slices_along_other_axes": module(
        *params("x 4,4"),
        "@1 = slice[axes={0},starts={0},ends={2}](x) -> float_type, {2, 4}, {4, 1}",
        "@2 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {4, 2}, {4, 1}",
        "@3 = relu(@1) -> float_type, {2, 4}, {4, 1}",
        "@4 = relu(@2) -> float_type, {4, 2}, {2, 1}",
        "@5 = @return(@3,@4)",
    ),
    # slices that stop short of the end are no split: concatenated they are not x
    "slices_short_of_the_end": module(
        *params("x 6,2"),
        "@1 = slice[axes={0},starts={0},ends={2}](x) -> float_type, {2, 2}, {2, 1}",
        "@2 = slice[axes={0},starts={2},ends={4}](x) -> float_type, {2, 2}, {2, 1}",
        "@3 = concat[axis=0](@1,@2) -> float_type, {4, 2}, {2, 1}",
        "@4 = @return(@3)",
    ),
    # three non-constant inputs each: MIGraphX's rejected_inputs keeps the clips apart
    "concat_op_rejects_three_variable_inputs": module(
        *params("a 2,2", "b 2,2", "c 2,2", "d 2,2", "e 2,2", "f 2,2"),
        "@6 = clip(a,b,c) -> float_type, {2, 2}, {2, 1}",
        "@7 = clip(d,e,f) -> float_type, {2, 2}, {2, 1}",
        "@8 = concat[axis=1](@6,@7) -> float_type, {2, 4}, {4, 1}",
        "@9 = @return(@8)",
    ),
    # an input used elsewhere too is not merged
    "concat_op_keeps_an_input_used_twice": module(
        *params("x 2,2", "y 2,3"),
        "@2 = relu(x) -> float_type, {2, 2}, {2, 1}",
        "@3 = relu(y) -> float_type, {2, 3}, {3, 1}",
        "@4 = concat[axis=1](@2,@3) -> float_type, {2, 5}, {5, 1}",
        "@5 = @return(@4,@2)",
    ),
    # MIGraphX checks only the first multibroadcast's stride on the axis, and throws where another
    # one repeats its input along it: its input is too short to concatenate
    "concat_op_keeps_multibroadcasts_when_one_repeats_along_the_axis": module(
        *params("a 2,3", "b 1,3"),
        "@2 = multibroadcast[out_lens={2, 3},out_dyn_dims={}](a) -> float_type, {2, 3}, {3, 1}",
        "@3 = multibroadcast[out_lens={2, 3},out_dyn_dims={}](b) -> float_type, {2, 3}, {0, 1}",
        "@4 = concat[axis=0](@2,@3) -> float_type, {4, 3}, {3, 1}",
        "@5 = @return(@4)",
    ),
    # both inputs used elsewhere too: no merge
    "concat_op_keeps_inputs_used_twice": module(
        *params("x 2,2", "y 2,3"),
        "@2 = relu(x) -> float_type, {2, 2}, {2, 1}",
        "@3 = relu(y) -> float_type, {2, 3}, {3, 1}",
        "@4 = concat[axis=1](@2,@3) -> float_type, {2, 5}, {5, 1}",
        "@5 = @return(@4,@2,@3)",
    ),
    # slices on two axes: find_splits does not fuse binary ops over them
    "splits_leave_binary_ops_on_slices_of_two_axes": module(
        "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
        "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
        *params("x 2,4"),
        "@3 = slice[axes={0, 1},starts={0, 0},ends={2, 2}](x) -> float_type, {2, 2}, {4, 1}",
        "@4 = slice[axes={0, 1},starts={0, 2},ends={2, 4}](x) -> float_type, {2, 2}, {4, 1}",
        "@5 = add(@3,@0) -> float_type, {2, 2}, {2, 1}",
        "@6 = add(@4,@1) -> float_type, {2, 2}, {2, 1}",
        "@7 = @return(@5,@6)",
    ),
    # find_splits matches, cannot fuse a non-commutative op with the split on both sides, and (as in
    # MIGraphX's find_matches) so stops find_pow2 on the same instruction
    "splits_matched_but_mixed_sides_stops_pow2": module(
        "@0 = @literal{2, 2, 2, 2, 2, 2, 2, 2} -> float_type, {2, 4}, {4, 1}",
        "a = @param:a -> float_type, {2, 4}, {4, 1}",
        "p = @param:p -> float_type, {2, 2}, {2, 1}",
        "q = @param:q -> float_type, {2, 2}, {2, 1}",
        "@4 = pow(a,@0) -> float_type, {2, 4}, {4, 1}",
        "@5 = slice[axes={1},starts={0},ends={2}](@4) -> float_type, {2, 2}, {4, 1}",
        "@6 = slice[axes={1},starts={2},ends={4}](@4) -> float_type, {2, 2}, {4, 1}",
        "@7 = sub(@5,p) -> float_type, {2, 2}, {2, 1}",
        "@8 = sub(q,@6) -> float_type, {2, 2}, {2, 1}",
        "@9 = @return(@7,@8)",
    ),
    # ... nor a binary op over slices on two axes
    "splits_matched_on_two_axes_stops_pow2": module(
        "@0 = @literal{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2} -> float_type, {4, 4}, {4, 1}",
        "@1 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
        "@2 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
        "a = @param:a -> float_type, {4, 4}, {4, 1}",
        "@4 = pow(a,@0) -> float_type, {4, 4}, {4, 1}",
        "@5 = slice[axes={0, 1},starts={0, 0},ends={2, 2}](@4) -> float_type, {2, 2}, {4, 1}",
        "@6 = slice[axes={0, 1},starts={2, 2},ends={4, 4}](@4) -> float_type, {2, 2}, {4, 1}",
        "@7 = add(@5,@1) -> float_type, {2, 2}, {2, 1}",
        "@8 = add(@6,@2) -> float_type, {2, 2}, {2, 1}",
        "@9 = @return(@7,@8)",
    ),
    # ... nor one over constants broadcast along the split axis (they would fold into a large literal)
    "splits_matched_over_broadcast_constants_stops_pow2": module(
        "@0 = @literal{2, 2, 2, 2, 2, 2, 2, 2} -> float_type, {2, 4}, {4, 1}",
        "@1 = @literal{1, 2} -> float_type, {2, 1}, {1, 1}",
        "@2 = @literal{3, 4} -> float_type, {2, 1}, {1, 1}",
        "a = @param:a -> float_type, {2, 4}, {4, 1}",
        "@4 = pow(a,@0) -> float_type, {2, 4}, {4, 1}",
        "@5 = multibroadcast[out_lens={2, 2},out_dyn_dims={}](@1) -> float_type, {2, 2}, {1, 0}",
        "@6 = multibroadcast[out_lens={2, 2},out_dyn_dims={}](@2) -> float_type, {2, 2}, {1, 0}",
        "@7 = slice[axes={1},starts={0},ends={2}](@4) -> float_type, {2, 2}, {4, 1}",
        "@8 = slice[axes={1},starts={2},ends={4}](@4) -> float_type, {2, 2}, {4, 1}",
        "@9 = add(@7,@5) -> float_type, {2, 2}, {2, 1}",
        "@10 = add(@8,@6) -> float_type, {2, 2}, {2, 1}",
        "@11 = @return(@9,@10)",
    ),
    # MIGraphX's find_concat_op takes every pointwise op but quantizelinear
    "concat_op_leaves_quantizelinear": module(
        "@0 = @literal{0.5} -> float_type, {1}, {0}",
        "@1 = multibroadcast[out_lens={2, 2},out_dyn_dims={}](@0) -> float_type, {2, 2}, {0, 0}",
        "x = @param:x -> float_type, {2, 2}, {2, 1}",
        "y = @param:y -> float_type, {2, 2}, {2, 1}",
        "@4 = quantizelinear(x,@1) -> uint8_type, {2, 2}, {2, 1}",
        "@5 = quantizelinear(y,@1) -> uint8_type, {2, 2}, {2, 1}",
        "@6 = concat[axis=1](@4,@5) -> uint8_type, {2, 4}, {4, 1}",
        "@7 = @return(@6)",
    ),
    # slices on axis 1 concatenated on axis 0 are not x
    "split_concat_needs_the_concat_along_the_split_axis": module(
        "x = @param:x -> float_type, {2, 4}, {4, 1}",
        "@1 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
        "@2 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
        "@3 = concat[axis=0](@1,@2) -> float_type, {4, 2}, {2, 1}",
        "@4 = @return(@3)",
    ),
    "split_transpose_leaves_slices_on_two_axes": module(
        "x = @param:x -> float_type, {4, 4}, {4, 1}",
        "@1 = slice[axes={0, 1},starts={0, 0},ends={2, 2}](x) -> float_type, {2, 2}, {4, 1}",
        "@2 = slice[axes={0, 1},starts={2, 2},ends={4, 4}](x) -> float_type, {2, 2}, {4, 1}",
        "@3 = transpose[permutation={1, 0}](@1) -> float_type, {2, 2}, {1, 4}",
        "@4 = transpose[permutation={1, 0}](@2) -> float_type, {2, 2}, {1, 4}",
        "@5 = @return(@3,@4)",
    ),
    # reshape(contiguous(transpose(x))): nothing to do, nothing counted
    "split_reshape_needs_a_slice": module(
        "x = @param:x -> float_type, {2, 4}, {4, 1}",
        "@1 = transpose[permutation={1, 0}](x) -> float_type, {4, 2}, {1, 4}",
        "@2 = contiguous(@1) -> float_type, {4, 2}, {2, 1}",
        "@3 = reshape[dims={8}](@2) -> float_type, {8}, {1}",
        "@4 = @return(@3)",
    ),
}


@pytest.mark.parametrize("name", KEPT)
def test_simplify_algebra_keeps(name: str) -> None:
    text = KEPT[name]
    assert simplified(text) == (reprinted(text), {})


REWRITTEN = {
    # find_splits sees slices feeding a dot (no pointwise op, no reduction): pow(x, 2) still becomes x * x
    "pow_of_sliced_input_still_squares": (
        module(
            "@0 = @literal{2, 2, 2, 2, 2, 2, 2, 2} -> float_type, {2, 4}, {4, 1}",
            *params("x 2,4"),
            "@2 = pow(x,@0) -> float_type, {2, 4}, {4, 1}",
            "@3 = slice[axes={1},starts={0},ends={2}](@2) -> float_type, {2, 2}, {4, 1}",
            "@4 = slice[axes={1},starts={2},ends={4}](@2) -> float_type, {2, 2}, {4, 1}",
            "@5 = dot(@3,@4) -> float_type, {2, 2}, {2, 1}",
            "@6 = @return(@5)",
        ),
        module(
            *params("x 2,4"),
            "@1 = mul(x,x) -> float_type, {2, 4}, {4, 1}",
            "@2 = slice[axes={1},starts={0},ends={2}](@1) -> float_type, {2, 2}, {4, 1}",
            "@3 = slice[axes={1},starts={2},ends={4}](@1) -> float_type, {2, 2}, {4, 1}",
            "@4 = dot(@2,@3) -> float_type, {2, 2}, {2, 1}",
            "@5 = @return(@4)",
        ),
        {"find_pow2": 1},
    ),
    # two of three inputs variable: the clips merge into one on concatenated inputs
    "concat_op_merges_two_variable_inputs": (
        module(
            "@0 = @literal{1, 1, 1, 1} -> float_type, {2, 2}, {2, 1}",
            *params("a 2,2", "b 2,2", "d 2,2", "e 2,2"),
            "@5 = clip(a,b,@0) -> float_type, {2, 2}, {2, 1}",
            "@6 = clip(d,e,@0) -> float_type, {2, 2}, {2, 1}",
            "@7 = concat[axis=1](@5,@6) -> float_type, {2, 4}, {4, 1}",
            "@8 = @return(@7)",
        ),
        module(
            "@0 = @literal{1, 1, 1, 1} -> float_type, {2, 2}, {2, 1}",
            *params("a 2,2", "b 2,2", "d 2,2", "e 2,2"),
            "@5 = concat[axis=1](a,d) -> float_type, {2, 4}, {4, 1}",
            "@6 = concat[axis=1](b,e) -> float_type, {2, 4}, {4, 1}",
            "@7 = concat[axis=1](@0,@0) -> float_type, {2, 4}, {4, 1}",
            "@8 = clip(@5,@6,@7) -> float_type, {2, 4}, {4, 1}",
            "@9 = @return(@8)",
        ),
        {"find_concat_op": 1},
    ),
    # a run of like inputs stops at one used elsewhere too
    "concat_op_run_stops_at_an_input_used_twice": (
        module(
            *params("a 2,2", "b 2,2", "c 2,2"),
            "@3 = relu(a) -> float_type, {2, 2}, {2, 1}",
            "@4 = relu(b) -> float_type, {2, 2}, {2, 1}",
            "@5 = relu(c) -> float_type, {2, 2}, {2, 1}",
            "@6 = concat[axis=1](@3,@4,@5) -> float_type, {2, 6}, {6, 1}",
            "@7 = @return(@6,@5)",
        ),
        module(
            *params("a 2,2", "b 2,2", "c 2,2"),
            "@3 = relu(c) -> float_type, {2, 2}, {2, 1}",
            "@4 = concat[axis=1](a,b) -> float_type, {2, 4}, {4, 1}",
            "@5 = relu(@4) -> float_type, {2, 4}, {4, 1}",
            "@6 = concat[axis=1](@5,@3) -> float_type, {2, 6}, {6, 1}",
            "@7 = @return(@6,@3)",
        ),
        {"find_concat_op": 1},
    ),
    # ... and at another op
    "concat_op_run_stops_at_another_op": (
        module(
            *params("a 2,2", "b 2,2", "c 2,2"),
            "@3 = relu(a) -> float_type, {2, 2}, {2, 1}",
            "@4 = relu(b) -> float_type, {2, 2}, {2, 1}",
            "@5 = tanh(c) -> float_type, {2, 2}, {2, 1}",
            "@6 = concat[axis=1](@3,@4,@5) -> float_type, {2, 6}, {6, 1}",
            "@7 = @return(@6)",
        ),
        module(
            *params("a 2,2", "b 2,2", "c 2,2"),
            "@3 = tanh(c) -> float_type, {2, 2}, {2, 1}",
            "@4 = concat[axis=1](a,b) -> float_type, {2, 4}, {4, 1}",
            "@5 = relu(@4) -> float_type, {2, 4}, {4, 1}",
            "@6 = concat[axis=1](@5,@3) -> float_type, {2, 6}, {6, 1}",
            "@7 = @return(@6)",
        ),
        {"find_concat_op": 1},
    ),
    # find_splits: sub(c0, x[:, 0:2]), sub(c1, x[:, 2:4]) is sub(concat(c0, c1), x), sliced
    "splits_fuse_a_non_commutative_op_with_the_split_second": (
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            *params("x 2,4"),
            "@3 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
            "@4 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
            "@5 = sub(@0,@3) -> float_type, {2, 2}, {2, 1}",
            "@6 = sub(@1,@4) -> float_type, {2, 2}, {2, 1}",
            "@7 = @return(@5,@6)",
        ),
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            "@2 = concat[axis=1](@0,@1) -> float_type, {2, 4}, {4, 1}",
            *params("x 2,4"),
            "@4 = sub(@2,x) -> float_type, {2, 4}, {4, 1}",
            "@5 = slice[axes={1},starts={0},ends={2}](@4) -> float_type, {2, 2}, {4, 1}",
            "@6 = slice[axes={1},starts={2},ends={4}](@4) -> float_type, {2, 2}, {4, 1}",
            "@7 = @return(@5,@6)",
        ),
        {"find_splits": 1},
    ),
    # a commutative op with the split on either side: the arguments are swapped first
    "splits_fuse_a_commutative_op_with_the_split_on_either_side": (
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            *params("x 2,4"),
            "@3 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
            "@4 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
            "@5 = add(@3,@0) -> float_type, {2, 2}, {2, 1}",
            "@6 = add(@1,@4) -> float_type, {2, 2}, {2, 1}",
            "@7 = @return(@5,@6)",
        ),
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            "@2 = concat[axis=1](@0,@1) -> float_type, {2, 4}, {4, 1}",
            *params("x 2,4"),
            "@4 = add(x,@2) -> float_type, {2, 4}, {4, 1}",
            "@5 = slice[axes={1},starts={0},ends={2}](@4) -> float_type, {2, 2}, {4, 1}",
            "@6 = slice[axes={1},starts={2},ends={4}](@4) -> float_type, {2, 2}, {4, 1}",
            "@7 = @return(@5,@6)",
        ),
        {"find_splits": 1},
    ),
    # variable other arguments: swapped to put the split first, and no further
    "splits_swap_but_do_not_fuse_variable_arguments": (
        module(
            *params("x 2,4", "p 2,2", "q 2,2"),
            "@3 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
            "@4 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
            "@5 = add(@3,p) -> float_type, {2, 2}, {2, 1}",
            "@6 = add(q,@4) -> float_type, {2, 2}, {2, 1}",
            "@7 = @return(@5,@6)",
        ),
        module(
            *params("x 2,4", "p 2,2", "q 2,2"),
            "@3 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
            "@4 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
            "@5 = add(@3,p) -> float_type, {2, 2}, {2, 1}",
            "@6 = add(@4,q) -> float_type, {2, 2}, {2, 1}",
            "@7 = @return(@5,@6)",
        ),
        {"find_splits": 1},
    ),
    # the slices also feed a dot and another slice, which find_splits passes over
    "splits_fuse_past_other_users": (
        module(
            *params("x 2,4"),
            "@1 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
            "@2 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
            "@3 = slice[axes={1},starts={0},ends={1}](@1) -> float_type, {2, 1}, {4, 1}",
            "@4 = dot(@1,@2) -> float_type, {2, 2}, {2, 1}",
            "@5 = relu(@1) -> float_type, {2, 2}, {2, 1}",
            "@6 = relu(@2) -> float_type, {2, 2}, {2, 1}",
            "@7 = @return(@3,@4,@5,@6)",
        ),
        module(
            *params("x 2,4"),
            "@1 = relu(x) -> float_type, {2, 4}, {4, 1}",
            "@2 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
            "@3 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
            "@4 = slice[axes={1},starts={0},ends={1}](@2) -> float_type, {2, 1}, {4, 1}",
            "@5 = dot(@2,@3) -> float_type, {2, 2}, {2, 1}",
            "@6 = slice[axes={1},starts={0},ends={2}](@1) -> float_type, {2, 2}, {4, 1}",
            "@7 = slice[axes={1},starts={2},ends={4}](@1) -> float_type, {2, 2}, {4, 1}",
            "@8 = @return(@4,@5,@6,@7)",
        ),
        {"find_splits": 1},
    ),
    # a group of three-argument ops is passed over, and the relus after it fuse
    "splits_pass_over_three_argument_ops": (
        module(
            "@0 = @literal{0} -> float_type, {1}, {0}",
            "@1 = @literal{1} -> float_type, {1}, {0}",
            "@2 = multibroadcast[out_lens={2, 2},out_dyn_dims={}](@0) -> float_type, {2, 2}, {0, 0}",
            "@3 = multibroadcast[out_lens={2, 2},out_dyn_dims={}](@1) -> float_type, {2, 2}, {0, 0}",
            "x = @param:x -> float_type, {2, 4}, {4, 1}",
            "@5 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
            "@6 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
            "@7 = clip(@5,@2,@3) -> float_type, {2, 2}, {4, 1}",
            "@8 = clip(@6,@2,@3) -> float_type, {2, 2}, {4, 1}",
            "@9 = relu(@5) -> float_type, {2, 2}, {2, 1}",
            "@10 = relu(@6) -> float_type, {2, 2}, {2, 1}",
            "@11 = @return(@7,@8,@9,@10)",
        ),
        module(
            "@0 = @literal{0} -> float_type, {1}, {0}",
            "@1 = @literal{1} -> float_type, {1}, {0}",
            "@2 = multibroadcast[out_lens={2, 2},out_dyn_dims={}](@0) -> float_type, {2, 2}, {0, 0}",
            "@3 = multibroadcast[out_lens={2, 2},out_dyn_dims={}](@1) -> float_type, {2, 2}, {0, 0}",
            "x = @param:x -> float_type, {2, 4}, {4, 1}",
            "@5 = relu(x) -> float_type, {2, 4}, {4, 1}",
            "@6 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
            "@7 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
            "@8 = clip(@6,@2,@3) -> float_type, {2, 2}, {4, 1}",
            "@9 = clip(@7,@2,@3) -> float_type, {2, 2}, {4, 1}",
            "@10 = slice[axes={1},starts={0},ends={2}](@5) -> float_type, {2, 2}, {4, 1}",
            "@11 = slice[axes={1},starts={2},ends={4}](@5) -> float_type, {2, 2}, {4, 1}",
            "@12 = @return(@8,@9,@10,@11)",
        ),
        {"find_splits": 1},
    ),
    # a group of dots (not pointwise) is passed over, and the relus after it fuse
    "splits_pass_over_non_pointwise_users": (
        module(
            "x = @param:x -> float_type, {2, 4}, {4, 1}",
            "w = @param:w -> float_type, {2, 2}, {2, 1}",
            "@2 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
            "@3 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
            "@4 = dot(@2,w) -> float_type, {2, 2}, {2, 1}",
            "@5 = dot(@3,w) -> float_type, {2, 2}, {2, 1}",
            "@6 = relu(@2) -> float_type, {2, 2}, {2, 1}",
            "@7 = relu(@3) -> float_type, {2, 2}, {2, 1}",
            "@8 = @return(@4,@5,@6,@7)",
        ),
        module(
            "x = @param:x -> float_type, {2, 4}, {4, 1}",
            "@1 = relu(x) -> float_type, {2, 4}, {4, 1}",
            "w = @param:w -> float_type, {2, 2}, {2, 1}",
            "@3 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
            "@4 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
            "@5 = dot(@3,w) -> float_type, {2, 2}, {2, 1}",
            "@6 = dot(@4,w) -> float_type, {2, 2}, {2, 1}",
            "@7 = slice[axes={1},starts={0},ends={2}](@1) -> float_type, {2, 2}, {4, 1}",
            "@8 = slice[axes={1},starts={2},ends={4}](@1) -> float_type, {2, 2}, {4, 1}",
            "@9 = @return(@5,@6,@7,@8)",
        ),
        {"find_splits": 1},
    ),
    # the split with the fewest users also feeds a slice, which starts no group
    "splits_pass_over_a_slice_of_a_slice": (
        module(
            "x = @param:x -> float_type, {2, 4}, {4, 1}",
            "@1 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
            "@2 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
            "@3 = slice[axes={1},starts={0},ends={1}](@2) -> float_type, {2, 1}, {4, 1}",
            "@4 = tanh(@1) -> float_type, {2, 2}, {2, 1}",
            "@5 = exp(@1) -> float_type, {2, 2}, {2, 1}",
            "@6 = relu(@1) -> float_type, {2, 2}, {2, 1}",
            "@7 = relu(@2) -> float_type, {2, 2}, {2, 1}",
            "@8 = @return(@3,@4,@5,@6,@7)",
        ),
        module(
            "x = @param:x -> float_type, {2, 4}, {4, 1}",
            "@1 = relu(x) -> float_type, {2, 4}, {4, 1}",
            "@2 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
            "@3 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
            "@4 = slice[axes={1},starts={0},ends={1}](@3) -> float_type, {2, 1}, {4, 1}",
            "@5 = tanh(@2) -> float_type, {2, 2}, {2, 1}",
            "@6 = exp(@2) -> float_type, {2, 2}, {2, 1}",
            "@7 = slice[axes={1},starts={0},ends={2}](@1) -> float_type, {2, 2}, {4, 1}",
            "@8 = slice[axes={1},starts={2},ends={4}](@1) -> float_type, {2, 2}, {4, 1}",
            "@9 = @return(@4,@5,@6,@7,@8)",
        ),
        {"find_splits": 1},
    ),
    # fused pointwise modules of two arguments with the same body: one on x and the concatenated constants
    "splits_fuse_binary_pointwise_modules": (
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            "x = @param:x -> float_type, {2, 4}, {4, 1}",
            "@3 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2}, {4, 1}",
            "@4 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2}, {4, 1}",
            "@5 = pointwise(@3,@0), [main:pointwise0] -> float_type, {2, 2}, {2, 1}",
            "@6 = pointwise(@4,@1), [main:pointwise1] -> float_type, {2, 2}, {2, 1}",
            "@7 = @return(@5,@6)",
            "",
            'module: "main:pointwise0"',
            "x0 = @param:x0 -> float_type, {1}, {0}",
            "x1 = @param:x1 -> float_type, {1}, {0}",
            "@2 = mul(x0,x1) -> float_type, {1}, {0}",
            "@3 = @return(@2)",
            "",
            'module: "main:pointwise1"',
            "x0 = @param:x0 -> float_type, {1}, {0}",
            "x1 = @param:x1 -> float_type, {1}, {0}",
            "@2 = mul(x0,x1) -> float_type, {1}, {0}",
            "@3 = @return(@2)",
        ),
        module(
            "@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {2, 1}",
            "@1 = @literal{5, 6, 7, 8} -> float_type, {2, 2}, {2, 1}",
            "@2 = concat[axis=1](@0,@1) -> float_type, {2, 4}, {4, 1}",
            "x = @param:x -> float_type, {2, 4}, {4, 1}",
            "@4 = pointwise(x,@2), [main:pointwise0] -> float_type, {2, 4}, {4, 1}",
            "@5 = slice[axes={1},starts={0},ends={2}](@4) -> float_type, {2, 2}, {4, 1}",
            "@6 = slice[axes={1},starts={2},ends={4}](@4) -> float_type, {2, 2}, {4, 1}",
            "@7 = @return(@5,@6)",
            "",
            'module: "main:pointwise0"',
            "main:pointwise0:x0 = @param:x0 -> float_type, {1}, {0}",
            "main:pointwise0:x1 = @param:x1 -> float_type, {1}, {0}",
            "main:pointwise0:@2 = mul(main:pointwise0:x0,main:pointwise0:x1) -> float_type, {1}, {0}",
            "main:pointwise0:@3 = @return(main:pointwise0:@2)",
            "",
            'module: "main:pointwise1"',
            "main:pointwise1:x0 = @param:x0 -> float_type, {1}, {0}",
            "main:pointwise1:x1 = @param:x1 -> float_type, {1}, {0}",
            "main:pointwise1:@2 = mul(main:pointwise1:x0,main:pointwise1:x1) -> float_type, {1}, {0}",
            "main:pointwise1:@3 = @return(main:pointwise1:@2)",
        ),
        {"find_splits": 1},
    ),
    # the concat axis moves to the inputs' own axes
    "concat_op_merges_multibroadcasts_that_add_axes": (
        module(
            "a = @param:a -> float_type, {3}, {1}",
            "b = @param:b -> float_type, {3}, {1}",
            "@2 = multibroadcast[out_lens={2, 3},out_dyn_dims={}](a) -> float_type, {2, 3}, {0, 1}",
            "@3 = multibroadcast[out_lens={2, 3},out_dyn_dims={}](b) -> float_type, {2, 3}, {0, 1}",
            "@4 = concat[axis=1](@2,@3) -> float_type, {2, 6}, {6, 1}",
            "@5 = @return(@4)",
        ),
        module(
            "a = @param:a -> float_type, {3}, {1}",
            "b = @param:b -> float_type, {3}, {1}",
            "@2 = concat[axis=0](a,b) -> float_type, {6}, {1}",
            "@3 = multibroadcast[out_lens={2, 6},out_dyn_dims={}](@2) -> float_type, {2, 6}, {0, 1}",
            "@4 = @return(@3)",
        ),
        {"find_concat_op": 1},
    ),
    "split_reshape_reshapes_x_once_and_slices_it": (
        module(
            "x = @param:x -> float_type, {2, 12, 4}, {48, 4, 1}",
            "@1 = slice[axes={1},starts={0},ends={4}](x) -> float_type, {2, 4, 4}, {48, 4, 1}",
            "@2 = slice[axes={1},starts={4},ends={8}](x) -> float_type, {2, 4, 4}, {48, 4, 1}",
            "@3 = slice[axes={1},starts={8},ends={12}](x) -> float_type, {2, 4, 4}, {48, 4, 1}",
            "@4 = contiguous(@1) -> float_type, {2, 4, 4}, {16, 4, 1}",
            "@5 = contiguous(@2) -> float_type, {2, 4, 4}, {16, 4, 1}",
            "@6 = contiguous(@3) -> float_type, {2, 4, 4}, {16, 4, 1}",
            "@7 = reshape[dims={2, 2, 2, 4}](@4) -> float_type, {2, 2, 2, 4}, {16, 8, 4, 1}",
            "@8 = reshape[dims={2, 2, 2, 4}](@5) -> float_type, {2, 2, 2, 4}, {16, 8, 4, 1}",
            "@9 = reshape[dims={2, 2, 2, 4}](@6) -> float_type, {2, 2, 2, 4}, {16, 8, 4, 1}",
            "@10 = @return(@7,@8,@9)",
        ),
        module(
            "x = @param:x -> float_type, {2, 12, 4}, {48, 4, 1}",
            "@1 = reshape[dims={2, 6, 2, 4}](x) -> float_type, {2, 6, 2, 4}, {48, 8, 4, 1}",
            "@2 = slice[axes={1},starts={0},ends={2}](@1) -> float_type, {2, 2, 2, 4}, {48, 8, 4, 1}",
            "@3 = slice[axes={1},starts={2},ends={4}](@1) -> float_type, {2, 2, 2, 4}, {48, 8, 4, 1}",
            "@4 = slice[axes={1},starts={4},ends={6}](@1) -> float_type, {2, 2, 2, 4}, {48, 8, 4, 1}",
            "@5 = @return(@2,@3,@4)",
        ),
        {"find_split_reshape": 1},
    ),
    "split_reshape_of_a_vector": (
        module(
            "x = @param:x -> float_type, {8}, {1}",
            "@1 = slice[axes={0},starts={0},ends={4}](x) -> float_type, {4}, {1}",
            "@2 = slice[axes={0},starts={4},ends={8}](x) -> float_type, {4}, {1}",
            "@3 = contiguous(@1) -> float_type, {4}, {1}",
            "@4 = contiguous(@2) -> float_type, {4}, {1}",
            "@5 = reshape[dims={2, 2}](@3) -> float_type, {2, 2}, {2, 1}",
            "@6 = reshape[dims={2, 2}](@4) -> float_type, {2, 2}, {2, 1}",
            "@7 = @return(@5,@6)",
        ),
        module(
            "x = @param:x -> float_type, {8}, {1}",
            "@1 = reshape[dims={4, 2}](x) -> float_type, {4, 2}, {2, 1}",
            "@2 = slice[axes={0},starts={0},ends={2}](@1) -> float_type, {2, 2}, {2, 1}",
            "@3 = slice[axes={0},starts={2},ends={4}](@1) -> float_type, {2, 2}, {2, 1}",
            "@4 = @return(@2,@3)",
        ),
        {"find_split_reshape": 1},
    ),
}


@pytest.mark.parametrize("name", REWRITTEN)
def test_simplify_algebra_rewrites(name: str) -> None:
    text, expected, applied = REWRITTEN[name]
    assert simplified(text) == (reprinted(expected), applied)
