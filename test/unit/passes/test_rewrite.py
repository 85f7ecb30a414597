"""The rewriting API's pieces, called as a pass would at run time: the rewriter's module edits and
in-place edits whose users' shapes follow, `pattern`, the MATCHED_UNCHANGED outcome."""

from __future__ import annotations

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.ir.traits import ShapeTransform
from mgxir.passes import rewrite
from mgxir.passes.base import PassContext
from mgxir.passes.rewrite import MATCHED_UNCHANGED, Pattern, Rewriter, RootDispatch, find_matches, may_fire_on, pattern
from mgxir.text.parser import parse_program

SOURCE = (
    'module: "main"\nx = @param:x -> float_type, {2, 3}, {3, 1}\n'
    "@1 = neg(x) -> float_type, {2, 3}, {3, 1}\n"
    "@2 = tanh(@1) -> float_type, {2, 3}, {3, 1}\n"
    "@3 = @return(@2)\n"
)


def _main() -> tuple[Module, list[Instruction]]:
    main = parse_program(SOURCE).main
    return main, list(main)


def test_matched_unchanged_is_false_and_named() -> None:
    assert not MATCHED_UNCHANGED
    assert repr(MATCHED_UNCHANGED) == "MATCHED_UNCHANGED"


def test_a_module_edit_runs_on_the_rewriters_module_with_all_its_arguments() -> None:
    insert = rewrite._on_module(Module.insert)
    assert (insert.__name__, insert.__qualname__) == ("insert", "Rewriter.insert")
    main, (x, neg, _, ret) = _main()
    shape = Shape.make(x.shape.dtype, (6,))  # given, not computed
    added = insert(Rewriter(main), ret, make_op("neg"), [neg], shape=shape)
    assert list(main)[3] is added and added.args == [neg] and added.shape is shape


def test_an_in_place_edit_that_changes_a_shape_recomputes_the_users() -> None:
    replace = rewrite._users_follow(Module.replace)
    assert (replace.__name__, replace.__qualname__) == ("replace", "Rewriter.replace")
    main, (x, neg, tanh, _) = _main()
    result = replace(Rewriter(main), neg, make_op("transpose", permutation=[1, 0]), [x])
    assert result is neg and neg.op.name == "transpose"
    assert tanh.shape.lens == (3, 2)
    replace(Rewriter(main), tanh, make_op("transpose", permutation=[1, 0]), args=[x])
    assert tanh.args == [x] and tanh.shape.lens == (3, 2)


def test_set_args_recomputes_the_shape() -> None:
    main, (x, neg, tanh, _) = _main()
    transposed = main.insert(tanh, make_op("transpose", permutation=[1, 0]), [x])
    Rewriter(main).set_args(tanh, [transposed], [])
    assert tanh.args == [transposed] and tanh.shape.lens == (3, 2)
    Rewriter(main).set_args(tanh, [neg])
    assert tanh.args == [neg] and tanh.shape.lens == (2, 3)


def test_pattern_makes_a_named_pattern_that_calls_the_function() -> None:
    def where(defn: object) -> bool:
        return False

    def negate_twice(rewriter: Rewriter, ins: Instruction, extra: int) -> object:
        """Doc."""
        return (rewriter, ins, extra)

    made = pattern("neg", where=where)(negate_twice)
    assert (made.function, made.roots, made.where) == (negate_twice, ("neg",), where)
    assert (made.__name__, made.__doc__) == ("negate_twice", "Doc.")
    main, (_, neg, _, _) = _main()
    rewriter = Rewriter(main)
    assert made(rewriter, neg, 7) == (rewriter, neg, 7)


# the tanh's declared strides are not the ones its shape rule gives: only a shape change upstream
# recomputes it, as MIGraphX's instruction::replace recomputes outputs only when the result changed
STALE = (
    'module: "main"\nx = @param:x -> float_type, {2, 3}, {3, 1}\n'
    "@1 = neg(x) -> float_type, {2, 3}, {3, 1}\n"
    "@2 = tanh(@1) -> float_type, {2, 3}, {1, 2}\n"
    "@3 = foo(@1) -> float_type, {2, 3}, {3, 1}\n"
    "@4 = @return(@2)\n"
)
DECLARED = Shape.make(DType.float, (2, 3), (1, 2))


def test_an_edit_that_keeps_the_shape_leaves_the_users_alone() -> None:
    main = parse_program(STALE).main
    x, neg, tanh, _, _ = list(main)
    Rewriter(main).replace(neg, make_op("abs"), [x])
    assert neg.op.name == "abs" and tanh.shape == DECLARED
    Rewriter(main).rebind(neg, make_op("sin"), [x], [], Shape(DType.float, (2, 3)))  # equal, not the same
    assert neg.op.name == "sin" and tanh.shape == DECLARED
    Rewriter.recompute_shapes([neg])
    assert tanh.shape == DECLARED


def test_rebind_with_a_new_shape_recomputes_the_users() -> None:
    main = parse_program(STALE).main
    x, neg, tanh, _, _ = list(main)
    transposed = Shape.make(DType.float, (3, 2))
    Rewriter(main).rebind(neg, make_op("transpose", permutation=[1, 0]), [x], [], transposed)
    assert neg.op.name == "transpose" and neg.args == [x] and neg.shape == transposed
    assert tanh.shape == transposed


def test_recompute_shapes_passes_over_unknown_ops() -> None:
    main = parse_program(STALE).main
    _, _, tanh, unknown, _ = list(main)
    Rewriter.recompute_shapes([tanh, unknown])  # the unknown op is taken first
    assert tanh.shape == Shape.make(DType.float, (2, 3)) and unknown.shape.lens == (2, 3)


def test_insert_after_goes_into_the_instructions_own_module() -> None:
    program = parse_program(SOURCE)
    main = program.main
    other = program.create_module("other")
    _, neg, tanh, _ = list(main)
    added = Rewriter(other).insert_after(neg, make_op("abs"), [neg])
    assert added.parent is main and list(main)[2] is added and added.next is tanh
    assert list(other) == []


POINTWISE = """module: "main"
x = @param:x -> float_type, {2}, {1}
@1 = pointwise(x), [main:pointwise0] -> float_type, {2}, {1}
@2 = @return(@1)

module: "main:pointwise0"
main:pointwise0:x0 = @param:x0 -> float_type, {1}, {0}
main:pointwise0:@1 = neg(main:pointwise0:x0) -> float_type, {1}, {0}
main:pointwise0:@2 = @return(main:pointwise0:@1)

module: "main:pointwise1"
main:pointwise1:x0 = @param:x0 -> float_type, {1}, {0}
main:pointwise1:@1 = convert[target_type=1](main:pointwise1:x0) -> half_type, {1}, {0}
main:pointwise1:@2 = @return(main:pointwise1:@1)
"""


def test_set_args_takes_new_module_arguments() -> None:
    program = parse_program(POINTWISE)
    x, call, _ = list(program.main)
    to_half = program.modules["main:pointwise1"]
    Rewriter(program.main).set_args(call, [x], [to_half])
    assert call.module_args == [to_half] and call.shape.dtype == DType.half


class TanhToSin(Pattern):
    """A class pattern: matches a tanh whose extra argument says so, then rewrites it to sin."""

    roots = ("tanh",)

    def match(self, ins: Instruction, *args: object) -> object:
        return ins if args == ("go",) else None

    def rewrite(self, rewriter: Rewriter, ins: Instruction, binding: object) -> object:
        rewriter.replace(ins, make_op("sin"), ins.args)
        return True


def test_a_class_pattern_is_named_after_its_class_and_matches_with_the_extra_arguments() -> None:
    main, (_, _, tanh, _) = _main()
    rule = TanhToSin()
    assert rule.__name__ == "TanhToSin"
    assert rule(Rewriter(main), tanh, "stop") is False  # no match
    context = PassContext()
    assert find_matches(main, RootDispatch([rule]), context, "go") is True
    assert tanh.op.name == "sin" and context.statistics == {"TanhToSin applied": 1}
    assert find_matches(main, RootDispatch([rule]), context, "go") is False  # nothing left to do


def test_may_fire_on_roots_traits_and_where() -> None:
    neg, tanh, add = (make_op(name).defn for name in ("neg", "tanh", "add"))

    def anything(rewriter: Rewriter, ins: Instruction) -> object:
        return False

    assert may_fire_on(anything, neg)  # a plain function fires on any op
    assert pattern()(anything).may_fire_on(neg)
    views = pattern(ShapeTransform)(anything)
    assert views.may_fire_on(make_op("transpose", permutation=[1, 0]).defn) and not views.may_fire_on(add)
    named = pattern("add", where=lambda defn: defn.name == "tanh")(anything)
    assert named.may_fire_on(add) and named.may_fire_on(tanh) and not named.may_fire_on(neg)
    assert may_fire_on(named, tanh) and not may_fire_on(named, neg)


def test_root_dispatch_keeps_what_it_built_and_calls_function_patterns_directly() -> None:
    def on_neg(rewriter: Rewriter, ins: Instruction) -> object:
        return False

    neg_rule = pattern("neg")(on_neg)
    dispatch = RootDispatch([neg_rule, TanhToSin()])
    neg, tanh = make_op("neg").defn, make_op("tanh").defn
    assert dispatch(neg) == (neg_rule,) and dispatch(neg) is dispatch(neg)
    assert dispatch.calls(neg) == (("on_neg", on_neg),) and dispatch.calls(neg) is dispatch.calls(neg)
    assert [name for name, _ in dispatch.calls(None)] == ["on_neg", "TanhToSin"]
    assert dispatch.calls(tanh)[0][0] == "TanhToSin"


BRANCHES = """module: "main"
x = @param:x -> float_type, {2, 3}, {3, 1}
cond = @param:cond -> bool_type, {1}, {0}
@2 = if(cond), [then, then] -> [float_type, {2, 3}, {3, 1}]
@3 = if(cond), [then, else] -> [float_type, {2, 3}, {3, 1}]
@4 = @return(@2,@3)

module: "then"
then:@0 = neg(x) -> float_type, {2, 3}, {3, 1}
then:@1 = @return(then:@0)

module: "else"
else:@0 = exp(x) -> float_type, {2, 3}, {3, 1}
else:@1 = @return(else:@0)
"""


def test_a_changed_branch_result_reaches_every_if_whose_branches_agree() -> None:
    program = parse_program(BRANCHES)
    x, _, same, mixed, _ = list(program.main)
    then = program.modules["then"]
    Rewriter(then).replace(next(iter(then)), make_op("transpose", permutation=[1, 0]), [x])
    # the `if` over two different branches is left for the other branch's change; the other is recomputed
    assert same.shape.sub_shapes == (Shape.make(DType.float, (3, 2), (1, 3)),)
    assert mixed.shape.sub_shapes == (Shape.make(DType.float, (2, 3)),)
