"""simplify_reshapes' view rewrites (nested.py, views.py) keep what programs compute: every case of
their lit tests runs on the reference interpreter before and after the pass (rms rule), each rewrite
changes at least one of those programs, and random chains of views, slices, reductions and pointwise
ops (which the shape-transform descriptor collapses or moves ops through) compute the same after the
pass."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from lit_cases import lit_cases
from test_pass_differential import copy_of, fill_elided_literals
from test_simplify_reshapes_concat_gather import _run, check_values

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes import simplify_reshapes
from mgxir.passes.rewrite import Rewriter
from mgxir.passes.simplify_reshapes import nested, views
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program

LIT_TESTS = Path(__file__).resolve().parents[2] / "opt"
LIT_FILES = ("simplify_reshapes.mgx", "simplify_reshapes_views.mgx")
VIEWS_PIPELINE = "simplify_reshapes{enable_op_shape_transform_op=true}"


CASES = [(name, index, case) for name in LIT_FILES for index, case in enumerate(lit_cases(name))]
SIZE_LIMIT = 1 << 20


@pytest.mark.parametrize(("name", "index", "text"), CASES, ids=[f"{n}-{i}" for n, i, _ in CASES])
def test_lit_cases_keep_values(name: str, index: int, text: str) -> None:
    program = parse_program(text)
    if any(ins.shape.elements > SIZE_LIMIT for ins in program.main if not ins.is_return):
        pytest.skip("values too large for the interpreter in a unit test")
    check_values(program, VIEWS_PIPELINE, seed=index)


def test_each_rewrite_changes_some_program() -> None:
    changed_by: set[str] = set()
    for _, _, text in CASES:
        program = parse_program(text)
        fill_elided_literals(program)
        transformed, context = _run(program, VIEWS_PIPELINE)
        if print_program(transformed) == print_program(program):
            continue
        changed_by.update(key.removesuffix(" applied") for key in context.statistics)
    wanted = {rewrite.__name__ for rewrite in (*nested.REWRITES, *views.REWRITES)}
    assert wanted <= changed_by


def _random_view(rng: np.random.Generator, main, x: Instruction) -> Instruction:
    lens = list(x.shape.lens)
    rank = len(lens)
    choice = int(rng.integers(0, 10))
    if choice == 0 and rank > 1:
        return main.add_instruction("transpose", [x], permutation=[int(p) for p in rng.permutation(rank)])
    if choice == 1 and rank > 1:
        at = int(rng.integers(0, rank - 1))
        dims = [*lens[:at], lens[at] * lens[at + 1], *lens[at + 2 :]]
        return main.add_instruction("reshape", [x], dims=dims)
    if choice == 2:
        at = int(rng.integers(0, rank))
        divisors = [d for d in range(2, lens[at]) if lens[at] % d == 0]
        if divisors:
            d = int(rng.choice(divisors))
            return main.add_instruction("reshape", [x], dims=[*lens[:at], d, lens[at] // d, *lens[at + 1 :]])
    if choice == 3 and rank < 6:
        return main.add_instruction("unsqueeze", [x], axes=[int(rng.integers(0, rank + 1))])
    if choice == 4 and 1 in lens and rank > 1:
        return main.add_instruction("squeeze", [x], axes=[lens.index(1)])
    if choice == 5 and 1 in lens:
        out = [n if n != 1 or rng.random() < 0.5 else int(rng.integers(2, 4)) for n in lens]
        return main.add_instruction("multibroadcast", [x], out_lens=out)
    if choice == 6 and rank < 5:
        return main.add_instruction("multibroadcast", [x], out_lens=[int(rng.integers(1, 4)), *lens])
    if choice == 7:
        at = int(rng.integers(0, rank))
        if lens[at] > 1:
            start = int(rng.integers(0, lens[at] - 1))
            end = int(rng.integers(start + 1, lens[at] + 1))
            return main.add_instruction("slice", [x], axes=[at], starts=[start], ends=[end])
    if choice == 8:
        return main.add_instruction("reduce_sum", [x], axes=[int(rng.integers(0, rank))])
    if choice == 9:
        other = main.add_parameter(f"y{len(main.parameters())}", Shape.make(DType.float, lens))
        return main.add_instruction("add", [x, other])
    return main.add_instruction("neg", [x])


@pytest.mark.parametrize("seed", range(100))
def test_random_view_chains(seed: int) -> None:
    rng = np.random.default_rng(seed)
    program = Program()
    main = program.create_module("main")
    lens = [int(n) for n in rng.choice([1, 2, 3, 4, 6], size=int(rng.integers(1, 4)))]
    x = main.add_parameter("x", Shape.make(DType.float, lens))
    outputs = []
    for _ in range(int(rng.integers(3, 9))):
        x = _random_view(rng, main, x)
        if rng.random() < 0.2:
            outputs.append(x)
    outputs.append(main.add_instruction("relu", [x]))
    main.add_return(list(dict.fromkeys(outputs)))
    check_values(program, VIEWS_PIPELINE, seed)


def test_nested_rewrites_count_one_change_each() -> None:
    """The last case of simplify_reshapes.mgx: two nop reshapes and one rewrite of the transpose
    chain (at its end only: rewriting the inner pair first would count two); the dynamic
    transposes count nothing."""
    program = parse_program(lit_cases("simplify_reshapes.mgx")[-1])
    _, context = _run(program, "simplify_reshapes")
    assert dict(context.statistics) == {
        "find_nop_reshapes applied": 2,
        "find_nested_shape_transforms applied": 1,
        "instructions removed": 6,  # the pass's DCE: the reshape, the reduction, the four transposes
    }


def test_insert_auto_reshape_picks_squeeze_unsqueeze_or_reshape() -> None:
    """MIGraphX's insert_auto_reshape: the source itself for equal lens, squeeze or unsqueeze when
    only size-1 axes differ, else reshape (also when dropping the size-1 axes would not leave the
    target, as {1, 2, 1, 1} -> {2, 1} where they are 0, 2 and 3)."""
    program = Program()
    main = program.create_module("main")
    rewriter = Rewriter(main)

    def auto(lens: tuple[int, ...], dims: list[int]) -> str:
        source = main.add_parameter(f"p{len(list(main))}", Shape.make(DType.float, lens))
        result = nested.insert_auto_reshape(rewriter, None, dims, source)
        return "source" if result is source else repr(result.op).removeprefix("Operation(")[:-1]

    assert auto((2, 3), [2, 3]) == "source"
    assert auto((1, 2, 1, 3), [2, 3]) == "squeeze[axes={0, 2}]"
    assert auto((2, 3), [2, 1, 3, 1]) == "unsqueeze[axes={1, 3},steps={}]"
    assert auto((1, 2, 1, 1), [2, 1]) == "reshape[dims={2, 1}]"
    assert auto((2, 3), [3, 2]) == "reshape[dims={3, 2}]"
    assert auto((2, 3), [6]) == "reshape[dims={6}]"
    assert auto((6,), [2, 3]) == "reshape[dims={2, 3}]"


ARGMAX_SQUEEZE = """module: "main"
x = @param:x -> float_type, {X_LENS}, {X_STRIDES}
y = @param:y -> int64_type, {Y_LENS}, {Y_STRIDES}
@2 = argmax[axis=AXIS](x) -> int64_type, {R_LENS}, {R_STRIDES}
@3 = squeeze[axes={SQUEEZED}](@2) -> int64_type, {Y_LENS}, {Y_STRIDES}
@4 = add(@3,y) -> int64_type, {Y_LENS}, {Y_STRIDES}
@5 = @return(@4)
"""


def _argmax_squeeze(x: tuple[int, ...], axis: int) -> str:
    """argmax over `axis` of x, its axis squeezed, plus y."""
    positive = axis % len(x)
    reduced = tuple(1 if i == positive else n for i, n in enumerate(x))
    y = tuple(n for i, n in enumerate(x) if i != positive)
    fields = {
        "X_LENS": x,
        "X_STRIDES": Shape(DType.float, x).strides,
        "R_LENS": reduced,
        "R_STRIDES": Shape(DType.int64, reduced).strides,
        "Y_LENS": y,
        "Y_STRIDES": Shape(DType.int64, y).strides,
    }
    text = ARGMAX_SQUEEZE.replace("AXIS", str(axis)).replace("SQUEEZED", str(positive))
    for key, dims in fields.items():
        text = text.replace(key, ", ".join(map(str, dims)))
    return text


@pytest.mark.parametrize(("x", "axis"), [((1, 8, 4, 6), -3), ((1, 8, 4, 6), 1), ((8, 4, 6), 0)])
def test_op_shape_transform_op_moves_a_squeeze_after_an_argmax(x: tuple[int, ...], axis: int) -> None:
    """find_op_shape_transform_op: the squeeze after argmax (negative axis counted from the end)
    moves below the add, y is unsqueezed at the argmax's axis, and argmax keeps that axis."""
    pipeline = "simplify_reshapes{enable_op_shape_transform_op=true}"
    program = parse_program(_argmax_squeeze(x, axis))
    transformed, _ = _run(program, pipeline)
    main = [ins for ins in transformed.main if not ins.is_param]
    assert [ins.op.defn.name for ins in main] == ["argmax", "unsqueeze", "add", "squeeze", "@return"]
    positive = axis % len(x)
    assert main[0].op["axis"] == positive
    assert list(main[1].op["axes"]) == [positive]
    check_values(program, pipeline, 0)


DYNAMIC_VIEWS = """module: "main"
d = @param:d -> dynamic, float_type, {[1..4], 3, 1}
@1 = flatten[axis=1](d) -> dynamic, float_type, {[1..4], 3}
@2 = transpose[permutation={1, 0}](@1) -> dynamic, float_type, {3, [1..4]}
@3 = transpose[permutation={1, 0}](@2) -> dynamic, float_type, {[1..4], 3}
@4 = squeeze[axes={2}](d) -> dynamic, float_type, {[1..4], 3}
@5 = unsqueeze[axes={0},steps={}](@4) -> dynamic, float_type, {1, [1..4], 3}
@6 = squeeze[axes={0}](@5) -> dynamic, float_type, {[1..4], 3}
@7 = neg(@6) -> dynamic, float_type, {[1..4], 3}
@8 = @return(@3,@7)
"""


@pytest.mark.parametrize("by_root", [True, False])
def test_dynamic_views_left_alone(by_root: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """As in MIGraphX, views of dynamic shapes (a flatten, transposes that cancel, a squeeze undone by
    an unsqueeze) stay, and no rewrite says it applied, also when every rewrite is tried on every op."""
    monkeypatch.setattr(simplify_reshapes, "DISPATCH_BY_ROOT", by_root)
    program = parse_program(DYNAMIC_VIEWS)
    transformed, context = _run(program, VIEWS_PIPELINE)
    assert print_program(transformed) == print_program(program)
    assert not context.statistics


VIEWS_LEFT_ALONE = {
    # MIGraphX's find_unary_shape_transforms leaves layout out: its strides are its point
    "layout between views": """module: "main"
x = @param:x -> float_type, {2, 3, 4}, {12, 4, 1}
@1 = reshape[dims={6, 4}](x) -> float_type, {6, 4}, {4, 1}
@2 = layout[permutation={1, 0}](@1) -> float_type, {6, 4}, {1, 6}
@3 = transpose[permutation={1, 0}](@2) -> float_type, {4, 6}, {6, 1}
@4 = reshape[dims={24}](@3) -> float_type, {24}, {1}
@5 = @return(@4)
""",
    # find_slice_shape_transforms wants a slice of a source used once and not constant
    "views of slices of a shared and a constant source": """module: "main"
x = @param:x -> float_type, {4, 6}, {6, 1}
@1 = slice[axes={1},starts={0},ends={4}](x) -> float_type, {4, 4}, {6, 1}
@2 = transpose[permutation={1, 0}](@1) -> float_type, {4, 4}, {1, 6}
@3 = neg(x) -> float_type, {4, 6}, {6, 1}
@4 = @literal{ ... } -> float_type, {4, 6}, {6, 1}
@5 = slice[axes={1},starts={0},ends={4}](@4) -> float_type, {4, 4}, {6, 1}
@6 = transpose[permutation={1, 0}](@5) -> float_type, {4, 4}, {1, 6}
@7 = @return(@2,@3,@6)
""",
    # find_reshape_cont wants a reshape of a non-standard source
    "pointwise of a reshape of a standard source": """module: "main"
x = @param:x -> float_type, {3, 8}, {8, 1}
y = @param:y -> float_type, {6, 4}, {4, 1}
@2 = reshape[dims={6, 4}](x) -> float_type, {6, 4}, {4, 1}
@3 = add(y,@2) -> float_type, {6, 4}, {4, 1}
@4 = @return(@3)
""",
    # find_transpose_slice wants slices of one width that divides the sliced axis
    "slices of a transpose of unequal widths or not dividing the axis": """module: "main"
x = @param:x -> float_type, {2, 3, 6}, {18, 6, 1}
@1 = transpose[permutation={0, 2, 1}](x) -> float_type, {2, 6, 3}, {18, 1, 6}
@2 = slice[axes={1},starts={0},ends={2}](@1) -> float_type, {2, 2, 3}, {18, 1, 6}
@3 = slice[axes={1},starts={2},ends={6}](@1) -> float_type, {2, 4, 3}, {18, 1, 6}
y = @param:y -> float_type, {2, 3, 5}, {15, 5, 1}
@5 = transpose[permutation={0, 2, 1}](y) -> float_type, {2, 5, 3}, {15, 1, 5}
@6 = slice[axes={1},starts={0},ends={2}](@5) -> float_type, {2, 2, 3}, {15, 1, 5}
@7 = slice[axes={1},starts={2},ends={4}](@5) -> float_type, {2, 2, 3}, {15, 1, 5}
@8 = @return(@2,@3,@6,@7)
""",
    # find_reshape_dot wants the dot used once
    "dot of a reshape used twice": """module: "main"
x = @param:x -> float_type, {2, 3, 4}, {12, 4, 1}
w = @param:w -> float_type, {4, 5}, {5, 1}
@2 = reshape[dims={6, 4}](x) -> float_type, {6, 4}, {4, 1}
@3 = dot(@2,w) -> float_type, {6, 5}, {5, 1}
@4 = neg(@3) -> float_type, {6, 5}, {5, 1}
@5 = @return(@3,@4)
""",
}


@pytest.mark.parametrize("by_root", [True, False])
@pytest.mark.parametrize("text", VIEWS_LEFT_ALONE.values(), ids=VIEWS_LEFT_ALONE.keys())
def test_views_left_alone(text: str, by_root: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Left alone also when every rewrite is tried on every op (a rewrite must check its root)."""
    monkeypatch.setattr(simplify_reshapes, "DISPATCH_BY_ROOT", by_root)
    program = parse_program(text)
    transformed, context = _run(program, VIEWS_PIPELINE)
    assert print_program(transformed) == print_program(program)
    assert not context.statistics


def test_reshape_dot_moves_the_reshape_after_the_dot() -> None:
    """MIGraphX's find_reshape_dot: dot(reshape(x), w) becomes reshape(dot(x, broadcast w))."""
    program = parse_program("""module: "main"
x = @param:x -> float_type, {2, 3, 4}, {12, 4, 1}
w = @param:w -> float_type, {4, 5}, {5, 1}
@2 = reshape[dims={6, 4}](x) -> float_type, {6, 4}, {4, 1}
@3 = dot(@2,w) -> float_type, {6, 5}, {5, 1}
@4 = @return(@3)
""")
    check_values(copy_of(program), VIEWS_PIPELINE, seed=0)
    assert print_program(_run(program, VIEWS_PIPELINE)[0]).splitlines()[3:6] == [
        "@2 = multibroadcast[out_lens={2, 4, 5},out_dyn_dims={}](w) -> float_type, {2, 4, 5}, {0, 5, 1}",
        "@3 = dot(x,@2) -> float_type, {2, 3, 5}, {15, 5, 1}",
        "@4 = reshape[dims={6, 5}](@3) -> float_type, {6, 5}, {5, 1}",
    ]


def test_reshape_cont_as_second_input_of_same_rank() -> None:
    """MIGraphX's find_reshape_cont on add(y, reshape(contiguous(transpose x))): the add runs on
    the transposed view's dims (the other input reshaped to them), the result reshaped back."""
    program = parse_program("""module: "main"
x = @param:x -> float_type, {2, 3, 4}, {12, 4, 1}
y = @param:y -> float_type, {6, 2, 2}, {4, 2, 1}
@2 = transpose[permutation={1, 0, 2}](x) -> float_type, {3, 2, 4}, {4, 12, 1}
@3 = contiguous(@2) -> float_type, {3, 2, 4}, {8, 4, 1}
@4 = reshape[dims={6, 2, 2}](@3) -> float_type, {6, 2, 2}, {4, 2, 1}
@5 = add(y,@4) -> float_type, {6, 2, 2}, {4, 2, 1}
@6 = @return(@5)
""")
    check_values(copy_of(program), VIEWS_PIPELINE, seed=0)
    transformed, context = _run(program, VIEWS_PIPELINE)
    assert print_program(transformed).splitlines()[3:8] == [
        "@2 = reshape[dims={2, 3, 2, 2}](x) -> float_type, {2, 3, 2, 2}, {12, 4, 2, 1}",
        "@3 = transpose[permutation={1, 0, 2, 3}](@2) -> float_type, {3, 2, 2, 2}, {4, 12, 2, 1}",
        "@4 = reshape[dims={3, 2, 2, 2}](y) -> float_type, {3, 2, 2, 2}, {8, 4, 2, 1}",
        "@5 = add(@4,@3) -> float_type, {3, 2, 2, 2}, {8, 4, 2, 1}",
        "@6 = reshape[dims={6, 2, 2}](@5) -> float_type, {6, 2, 2}, {4, 2, 1}",
    ]
    assert context.statistics["find_reshape_cont applied"] == 1


SPLITS_THEN_TRANSPOSES = {
    "three splits, two permutations": (
        """module: "main"
x = @param:x -> float_type, {2, 6, 4}, {24, 4, 1}
@1 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2, 4}, {24, 4, 1}
@2 = transpose[permutation={2, 0, 1}](@1) -> float_type, {4, 2, 2}, {1, 24, 4}
@3 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2, 4}, {24, 4, 1}
@4 = transpose[permutation={2, 0, 1}](@3) -> float_type, {4, 2, 2}, {1, 24, 4}
@5 = slice[axes={1},starts={4},ends={6}](x) -> float_type, {2, 2, 4}, {24, 4, 1}
@6 = transpose[permutation={0, 2, 1}](@5) -> float_type, {2, 4, 2}, {24, 1, 4}
@7 = @return(@2,@4,@6)
""",
        """module: "main"
x = @param:x -> float_type, {2, 6, 4}, {24, 4, 1}
@1 = reshape[dims={2, 3, 2, 4}](x) -> float_type, {2, 3, 2, 4}, {24, 8, 4, 1}
@2 = transpose[permutation={1, 3, 0, 2}](@1) -> float_type, {3, 4, 2, 2}, {8, 1, 24, 4}
@3 = slice[axes={0},starts={0},ends={1}](@2) -> float_type, {1, 4, 2, 2}, {8, 1, 24, 4}
@4 = squeeze[axes={0}](@3) -> float_type, {4, 2, 2}, {1, 24, 4}
@5 = slice[axes={0},starts={1},ends={2}](@2) -> float_type, {1, 4, 2, 2}, {8, 1, 24, 4}
@6 = squeeze[axes={0}](@5) -> float_type, {4, 2, 2}, {1, 24, 4}
@7 = slice[axes={0},starts={2},ends={3}](@2) -> float_type, {1, 4, 2, 2}, {8, 1, 24, 4}
@8 = transpose[permutation={2, 0, 1, 3}](@7) -> float_type, {2, 1, 4, 2}, {24, 8, 1, 4}
@9 = squeeze[axes={1}](@8) -> float_type, {2, 4, 2}, {24, 1, 4}
@10 = @return(@4,@6,@9)
""",
    ),
    "two splits": (
        """module: "main"
x = @param:x -> float_type, {2, 4, 3}, {12, 3, 1}
@1 = slice[axes={1},starts={0},ends={2}](x) -> float_type, {2, 2, 3}, {12, 3, 1}
@2 = transpose[permutation={2, 0, 1}](@1) -> float_type, {3, 2, 2}, {1, 12, 3}
@3 = slice[axes={1},starts={2},ends={4}](x) -> float_type, {2, 2, 3}, {12, 3, 1}
@4 = transpose[permutation={2, 0, 1}](@3) -> float_type, {3, 2, 2}, {1, 12, 3}
@5 = @return(@2,@4)
""",
        """module: "main"
x = @param:x -> float_type, {2, 4, 3}, {12, 3, 1}
@1 = reshape[dims={2, 2, 2, 3}](x) -> float_type, {2, 2, 2, 3}, {12, 6, 3, 1}
@2 = transpose[permutation={1, 3, 0, 2}](@1) -> float_type, {2, 3, 2, 2}, {6, 1, 12, 3}
@3 = slice[axes={0},starts={0},ends={1}](@2) -> float_type, {1, 3, 2, 2}, {6, 1, 12, 3}
@4 = squeeze[axes={0}](@3) -> float_type, {3, 2, 2}, {1, 12, 3}
@5 = slice[axes={0},starts={1},ends={2}](@2) -> float_type, {1, 3, 2, 2}, {6, 1, 12, 3}
@6 = squeeze[axes={0}](@5) -> float_type, {3, 2, 2}, {1, 12, 3}
@7 = @return(@4,@6)
""",
    ),
}


@pytest.mark.parametrize(("text", "expected"), SPLITS_THEN_TRANSPOSES.values(), ids=SPLITS_THEN_TRANSPOSES.keys())
def test_slices_then_transposes_share_one_transpose(text: str, expected: str) -> None:
    """MIGraphX's find_slice_transpose: slices of x each followed by a transpose become slices of
    one transpose of x (the permutation most of them use; the others keep a transpose of their own),
    which find_transpose_slice and the nested-view rewrite then turn into one reshape and transpose."""
    program = parse_program(text)
    check_values(copy_of(program), VIEWS_PIPELINE, seed=0)
    assert print_program(_run(program, VIEWS_PIPELINE)[0]).split("\n\n")[0] + "\n" == expected


def _flipped_reshape_dot(x_lens: str, x_strides: str, dims: str) -> str:
    return f"""module: "main"
w = @param:w -> float_type, {{5, 4}}, {{4, 1}}
x = @param:x -> float_type, {x_lens}, {x_strides}
@2 = reshape[dims={dims}](x) -> float_type, {{4, 6}}, {{6, 1}}
@3 = dot(w,@2) -> float_type, {{5, 6}}, {{6, 1}}
@4 = @return(@3)
"""


def test_reshape_dot_leaves_columns_that_mix_the_batch() -> None:
    """A deliberate difference from MIGraphX: in dot(w{5, 4}, reshape(x{2, 4, 3} -> {4, 6})) the
    columns hold x's batch, which a batched dot over x cannot give, so the reshape stays (MIGraphX's
    find_reshape_dot checks only the kept rows and rewrites it, with other values). A reshape that
    keeps the batch's size as well, x{1, 4, 6} -> {4, 6}, still moves below the dot."""
    mixed = parse_program(_flipped_reshape_dot("{2, 4, 3}", "{12, 3, 1}", "{4, 6}"))
    transformed, context = _run(mixed, "simplify_reshapes")
    assert print_program(transformed) == print_program(mixed)
    assert not context.statistics
    check_values(mixed, "simplify_reshapes", 0)
    kept = parse_program(_flipped_reshape_dot("{1, 4, 6}", "{24, 6, 1}", "{4, 6}"))
    transformed, context = _run(kept, "simplify_reshapes")
    assert context.statistics["find_reshape_dot applied"] == 1
    check_values(kept, "simplify_reshapes", 0)
