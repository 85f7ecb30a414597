"""eliminate_concat: which lowered concats it removes and which it must leave (MIGraphX's conditions),
its options, and its statistics; the programs use MIGraphX's test target (test::concat, test::copy)."""

from __future__ import annotations

from mgxir.ir.registry import make_op
from mgxir.passes.base import PassContext
from mgxir.passes.eliminate_concat import EliminateConcat, concat_axis_attribute, op_names, output_alias
from mgxir.text.parser import parse_program
from mgxir.verifier import verify

TEST_TARGET = {"concat": "test::concat", "copy": "test::copy", "non_packed_output": "test::fill"}


def _alloc(name: int, lens: str, strides: str) -> str:
    shape = f"float_type, {{{lens}}}, {{{strides}}}"
    return f"@{name} = allocate[shape={shape}] -> {shape}\n"


def _fill(name: int, arg: int, lens: str, strides: str) -> str:
    return f"@{name} = test::fill[value=1](@{arg}) -> float_type, {{{lens}}}, {{{strides}}}\n"


# two row blocks of a {2, 3} concat along axis 0 (concat `@5`), its output allocation `@4`
ROWS = _alloc(0, "1, 3", "3, 1") + _fill(1, 0, "1, 3", "3, 1") + _alloc(2, "1, 3", "3, 1") + _fill(3, 2, "1, 3", "3, 1")
ROWS_CONCAT = _alloc(4, "2, 3", "3, 1") + "@5 = test::concat[axis=AXIS](@1,@3,@4) -> float_type, {2, 3}, {3, 1}\n"


def _eliminate(body: str, **options: str) -> tuple[list[str], dict[str, int]]:
    program = parse_program('module: "main"\n' + body)
    context = PassContext()
    EliminateConcat(**{**TEST_TARGET, **options}).apply(program, context)  # type: ignore[arg-type]
    verify(program)
    return [i.op.defn.name for i in program.main], dict(context.statistics)


def _rows(axis: str = "0", tail: str = "@6 = @return(@5)\n") -> str:
    return ROWS + ROWS_CONCAT.replace("AXIS", axis) + tail


def test_a_removed_concat_is_counted_once() -> None:
    names, statistics = _eliminate(_rows())
    assert "test::concat" not in names and names.count("slice") == 2
    assert statistics == {"concats eliminated": 1}


def test_a_negative_axis_counts_from_the_end() -> None:
    names, _ = _eliminate(_rows("-2"))
    assert "test::concat" not in names


def test_an_axis_out_of_range_is_left_and_the_next_concat_still_removed() -> None:
    for axis in ("2", "-3"):
        second = (
            _alloc(6, "1, 3", "3, 1")
            + _fill(7, 6, "1, 3", "3, 1")
            + _alloc(8, "1, 3", "3, 1")
            + _fill(9, 8, "1, 3", "3, 1")
            + _alloc(10, "2, 3", "3, 1")
            + "@11 = test::concat[axis=0](@7,@9,@10) -> float_type, {2, 3}, {3, 1}\n"
            + "@12 = @return(@5,@11)\n"
        )
        names, statistics = _eliminate(_rows(axis, second))
        assert names.count("test::concat") == 1, axis
        assert statistics == {"concats eliminated": 1}


def test_a_concat_of_one_input_is_removed_and_one_of_none_left() -> None:
    one = _alloc(0, "3", "1") + _fill(1, 0, "3", "1") + _alloc(2, "3", "1")
    one += "@3 = test::concat[axis=0](@1,@2) -> float_type, {3}, {1}\n@4 = @return(@3)\n"
    names, statistics = _eliminate(one)
    assert "test::concat" not in names and statistics == {"concats eliminated": 1}
    none = _alloc(0, "3", "1") + "@1 = test::concat[axis=0](@0) -> float_type, {3}, {1}\n@2 = @return(@1)\n"
    names, statistics = _eliminate(none)
    assert names == ["allocate", "test::concat", "@return"] and statistics == {}


def test_another_op_with_an_axis_is_not_a_concat() -> None:
    body = _rows().replace("test::concat", "test::stack")
    names, statistics = _eliminate(body)
    assert "test::stack" in names and "slice" not in names and statistics == {}


def test_an_output_that_is_not_an_allocation_is_left() -> None:
    body = _rows().replace("@5 = test::concat[axis=0](@1,@3,@4)", "@5 = test::concat[axis=0](@1,@3,@1)")
    names, statistics = _eliminate(body)
    assert "test::concat" in names and statistics == {}


def test_allocate_counts_whatever_the_target_allocation_is_called() -> None:
    names, statistics = _eliminate(_rows(), allocation="hip::allocate")
    assert "test::concat" not in names and statistics == {"concats eliminated": 1}


def _last_axis(readers: str = "") -> str:
    """Two {2, 2} blocks written by `np_op` into a {2, 4} concat along the last axis (not packed there)."""
    body = _alloc(0, "2, 2", "2, 1") + "@1 = np_op(@0) -> float_type, {2, 2}, {2, 1}\n"
    body += _alloc(2, "2, 2", "2, 1") + "@3 = np_op(@2) -> float_type, {2, 2}, {2, 1}\n"
    body += _alloc(4, "2, 4", "4, 1") + "@5 = test::concat[axis=1](@1,@3,@4) -> float_type, {2, 4}, {4, 1}\n"
    return body + readers


def test_non_packed_output_names_ops_separated_by_bars() -> None:
    for names_option in ("other|np_op", "np_op|", "*"):
        names, statistics = _eliminate(_last_axis("@6 = @return(@5)\n"), non_packed_output=names_option)
        assert "test::concat" not in names and statistics == {"concats eliminated": 1}, names_option
    names, _ = _eliminate(_last_axis("@6 = @return(@5)\n"), non_packed_output="other np_op")
    assert "test::concat" in names
    assert op_names("a|b||c") == frozenset({"a", "b", "c"})


def test_a_concat_needing_two_copies_is_left_and_the_next_one_removed() -> None:
    next_concat = (
        _alloc(6, "1, 3", "3, 1")
        + _fill(7, 6, "1, 3", "3, 1")
        + _alloc(8, "1, 3", "3, 1")
        + _fill(9, 8, "1, 3", "3, 1")
        + _alloc(10, "2, 3", "3, 1")
        + "@11 = test::concat[axis=0](@7,@9,@10) -> float_type, {2, 3}, {3, 1}\n"
        + "@12 = @return(@5,@11)\n"
    )
    names, statistics = _eliminate(_last_axis(next_concat))
    assert names.count("test::concat") == 1 and statistics == {"concats eliminated": 1}


def test_an_input_another_op_reads_packed_is_left_and_the_next_concat_removed() -> None:
    readers = (
        "@6 = pass_standard(@1) -> float_type, {2, 2}, {2, 1}\n"
        + _alloc(7, "1, 3", "3, 1")
        + _fill(8, 7, "1, 3", "3, 1")
        + _alloc(9, "1, 3", "3, 1")
        + _fill(10, 9, "1, 3", "3, 1")
        + _alloc(11, "2, 3", "3, 1")
        + "@12 = test::concat[axis=0](@8,@10,@11) -> float_type, {2, 3}, {3, 1}\n"
        + "@13 = @return(@5,@6,@12)\n"
    )
    options = {"non_packed_output": "*", "packed_input": "pass_standard"}
    names, statistics = _eliminate(_last_axis(readers), **options)
    assert names.count("test::concat") == 1 and statistics == {"concats eliminated": 1}
    names, _ = _eliminate(_last_axis(readers), non_packed_output="*")
    assert "test::concat" not in names


def test_concat_axis_of_known_and_wrapped_ops() -> None:
    assert concat_axis_attribute(make_op("concat", axis=1)) == 1
    assert concat_axis_attribute(make_op("neg")) is None
    program = parse_program(
        'module: "main"\nx = @param:x -> float_type, {2}, {1}\n'
        "@1 = gpu::precompile_op[op=concat[axis=-1],additional_args=1](x) -> float_type, {2}, {1}\n"
        "@2 = gpu::precompile_op[op=add,additional_args=1](x) -> float_type, {2}, {1}\n"
        "@3 = @return(@1,@2)\n"
    )
    wrapped, other = list(program.main)[1:3]
    assert concat_axis_attribute(wrapped.op) == -1
    assert concat_axis_attribute(other.op) is None


def test_the_output_of_a_known_computing_op_is_its_own() -> None:
    program = parse_program(
        'module: "main"\n'
        + _alloc(0, "2", "1")
        + "@1 = neg(@0) -> float_type, {2}, {1}\n"
        + "@2 = transpose[permutation={0}](@0) -> float_type, {2}, {1}\n"
        + "@3 = test::fill[value=1](@1,@0) -> float_type, {2}, {1}\n"
        + "@4 = @return(@1,@2,@3)\n"
    )
    alloc, neg, view, fill = list(program.main)[:4]
    assert output_alias(neg) is neg
    assert output_alias(view) is alloc
    assert output_alias(fill) is alloc
    assert output_alias(alloc) is alloc


def test_a_concat_in_a_branch_of_inputs_from_main_is_left() -> None:
    body = ROWS + "c = @param:c -> bool_type, {1}, {0}\n"
    body += "@5 = if(c), [then, else] -> [float_type, {2, 3}, {3, 1}]\n"
    body += "@6 = get_tuple_elem[index=0](@5) -> float_type, {2, 3}, {3, 1}\n@7 = @return(@6)\n\n"
    for branch in ("then", "else"):
        body += f'module: "{branch}"\n' + _alloc(0, "2, 3", "3, 1").replace("@0", f"{branch}:@0")
        if branch == "then":
            body += "then:@1 = test::concat[axis=0](@1,@3,then:@0) -> float_type, {2, 3}, {3, 1}\n"
            body += "then:@2 = @return(then:@1)\n\n"
        else:
            body += "else:@1 = @return(else:@0)\n\n"
    _, statistics = _eliminate(body)
    assert statistics == {}  # its inputs' allocations are not in the branch: nothing to move the output before
