"""The rewriting API's pieces, called as a pass would at run time: the rewriter's module edits and
in-place edits whose users' shapes follow, `pattern`, the MATCHED_UNCHANGED outcome."""

from __future__ import annotations

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.passes import rewrite
from mgxir.passes.rewrite import MATCHED_UNCHANGED, Rewriter, pattern
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
