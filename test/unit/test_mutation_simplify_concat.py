"""simplify_algebra's concat and split rewrites: the helpers behind find_splits (which fused bodies
match, which members depend on which, what moves before the split input), exactly (written against
the mutants scripts/mutation.py found surviving)."""

from __future__ import annotations

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.program import Program
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.passes.rewrite import Rewriter
from mgxir.passes.simplify_algebra import concat
from mgxir.text.parser import parse_program

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
