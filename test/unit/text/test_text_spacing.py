"""Hand-written text reads as MIGraphX's print does: spacing between tokens is free (`add(x, y)`,
`{2,3}`, `{ 2 , 3 }`, tabs), lines may end in CRLF, and `#` or `//` lines are comments. Whatever the
spacing, the program prints back as MIGraphX prints it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mgxir.diagnostics import MgxError
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.verifier import verify

REPO = Path(__file__).resolve().parents[3]
SHARED = REPO.parent / "shared" / "reference" / "migraphx-examples"

# punctuation a reader may find spaced otherwise than MIGraphX prints it
_PUNCTUATION = re.compile(r"(->|[,(){}\[\]=])")


def _printed_programs() -> list[str]:
    paths = sorted((REPO / "examples").glob("*.mgx"))
    if SHARED.is_dir():
        paths += sorted(p for p in SHARED.glob("*.txt") if ".cpp." not in p.name)
    texts = []
    for path in paths:
        try:
            texts.append(print_program(parse_program(path.read_text(), str(path))))
        except MgxError:
            continue
    return texts


PRINTED = _printed_programs()


def _respace(line: str, spaces: list[str]) -> str:
    """`line` with the given spacing around its punctuation (the symbols after ` # ` kept)."""
    body, hash_sign, symbols = line.partition(" # ")
    tokens = [t.strip() for t in _PUNCTUATION.split(body) if t.strip()]
    out = tokens[0]
    for i, token in enumerate(tokens[1:]):
        glued = token == "(" or (token in ("[", "{") and not _PUNCTUATION.fullmatch(tokens[i]))
        # an argument list follows its operator, an attribute block or literal body its name
        out += ("" if glued else spaces[i % len(spaces)]) + token
    return out + hash_sign + symbols


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_any_spacing_prints_back_as_migraphx(data: st.DataObject) -> None:
    printed = data.draw(st.sampled_from(PRINTED))
    spaces = data.draw(st.lists(st.sampled_from(["", " ", "  ", "\t", " \t "]), min_size=1, max_size=7))
    newline = data.draw(st.sampled_from(["\n", "\r\n"]))
    lines = []
    for line in printed.splitlines():
        lines.append(_respace(line, spaces) if " = " in line else line)
        if data.draw(st.booleans()):
            lines.append(data.draw(st.sampled_from(["# a comment", "  # another", "// c", "", " \t"])))
    assert print_program(parse_program(newline.join(lines))) == printed


@pytest.mark.parametrize(
    "text",
    [
        "x = @param:x -> float_type, {2,3}, {3,1}\n@1 = add(x, x)\n@2 = @return(@1)\n",
        "x=@param:x->float_type,{ 2 , 3 },{ 3 , 1 }\n@1=add( x , x )\n@2=@return( @1 )\n",
        "\tx\t=\t@param:x\t->\tfloat_type,\t{2,\t3},\t{3,\t1}\n@1 = add(x,x)->float_type, {2, 3}, {3, 1}\n"
        "@2 = @return(@1)\n",
        "# comment\n\nx = @param:x -> float_type, {2, 3}, {3, 1}\r\n  # indented\r\n@1 = add(x,x)\r\n@2 = @return(@1)",
    ],
)
def test_hand_spaced_text_reads(text: str) -> None:
    expected = (
        'module: "main"\nx = @param:x -> float_type, {2, 3}, {3, 1}\n'
        "@1 = add(x,x) -> float_type, {2, 3}, {3, 1}\n@2 = @return(@1)\n\n\n"
    )
    program = parse_program(text)
    verify(program)
    assert print_program(program) == expected


def test_attributes_and_shapes_with_free_spacing() -> None:
    text = (
        ' module : "main" \n'
        "x = @param:x -> float_type, {1,3,4,4}, {48,16,4,1}\n"
        "@1 = pooling[ mode = max , lengths = { 2,2 } , stride={2 , 2}](x)\n"
        "@2 = allocate[shape = float_type,{2},{1} , buf_type=nullopt]\n"
        "@3 = @literal{ 1 , 2.5 } -> float_type, {2}, {1}\n"
        "@4 = @return(@1, @2, @3)\n"
    )
    program = parse_program(text)
    verify(program)
    printed = print_program(program)
    assert "@1 = pooling[mode=max,padding={0, 0},padding_mode=0,stride={2, 2},lengths={2, 2}," in printed
    assert "@2 = allocate[shape=float_type, {2}, {1},buf_type=nullopt] -> float_type, {2}, {1}" in printed
    assert "@3 = @literal{1, 2.5} -> float_type, {2}, {1}" in printed


def test_a_space_between_an_operator_and_its_arguments_is_an_error() -> None:
    """MIGraphX's `NAME(args)` has the arguments glued to the name; ` (x)` would read as a tail."""
    with pytest.raises(MgxError, match=r"^<input>:2:11: error: an operator's arguments follow its name with no space"):
        parse_program("x = @param:x -> float_type, {2}, {1}\n@1 = relu (x)\n")


def test_names_holding_a_hash_are_names_not_comments() -> None:
    """MIGraphX names output parameters `#output_0`: such a definition, at the start of a line too, is
    read as an instruction (a comment's `#` is followed by a blank)."""
    text = (
        'module: "main"\n'
        "#output_0 = @param:#output_0 -> float_type, {2}, {1}\n"
        "x = @param:x -> float_type, {2}, {1}\n"
        "@2 = neg(x) -> float_type, {2}, {1}\n"
        "# a comment\n"
        "@3 = @return(@2,#output_0)\n"
    )
    printed = print_program(parse_program(text))
    assert "#output_0 = @param:#output_0 -> float_type, {2}, {1}" in printed
    assert "a comment" not in printed
