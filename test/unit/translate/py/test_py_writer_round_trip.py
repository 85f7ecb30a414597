"""--to-py writes MIGraphX's reproducer form for every kind of value (opaque attributes of any type,
literals that decimal text cannot hold bit for bit, names that are not identifiers), and the script
reads back (--from-py) to the same program."""

from __future__ import annotations

import pytest

from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.translate.mxr.values import Binary
from mgxir.translate.py.reader import program_from_script
from mgxir.translate.py.writer import _py, program_to_script

PROGRAMS = {
    "opaque attributes": (
        'module: "main"\n'
        "x = @param:x -> float_type, {2}, {1}\n"
        "y = my_op[flag=1,name=abc,ratio=0.5,sizes={1, 2}](x) -> float_type, {2}, {1}\n"
        "@2 = @return(y)\n"
    ),
    "attribute named as a keyword": (
        'module: "main"\n'
        "x = @param:x -> float_type, {2}, {1}\n"
        "y = my_op[class=1,a-b=2](x) -> float_type, {2}, {1}\n"
        "@2 = @return(y)\n"
    ),
    "wide int64 literal": (
        'module: "main"\nl = @literal{9007199254740993, -9007199254740993} -> int64_type, {2}, {1}\n@1 = @return(l)\n'
    ),
    "bool literal": ('module: "main"\nl = @literal{1, 0, 1} -> bool_type, {3}, {1}\n@1 = @return(l)\n'),
    "half literal": ('module: "main"\nl = @literal{0.1, 65504, -2} -> half_type, {3}, {1}\n@1 = @return(l)\n'),
}


@pytest.mark.parametrize("case", sorted(PROGRAMS))
def test_programs_round_trip_through_python(case: str) -> None:
    program = parse_program(PROGRAMS[case], "p.mgx")
    script = program_to_script(program)
    back = program_from_script(script, "p.py")
    assert print_program(back) == print_program(program), script


def test_parameter_names_that_are_not_identifiers_round_trip() -> None:
    source = (
        "p = migraphx.program()\nm = p.get_main_module()\n"
        'a = m.add_parameter("0", migraphx.shape(type="float_type", lens=[2]))\n'
        'b = m.add_parameter("class", migraphx.shape(type="float_type", lens=[2]))\n'
        'c = m.add_parameter("x-y", migraphx.shape(type="float_type", lens=[2]))\n'
        'd = m.add_parameter("x_y", migraphx.shape(type="float_type", lens=[2]))\n'
        's = m.add_instruction(migraphx.op("add"), [a, b])\n'
        's = m.add_instruction(migraphx.op("add"), [s, c])\n'
        'm.add_return([m.add_instruction(migraphx.op("add"), [s, d])])\n'
    )
    program = program_from_script(source, "n.py")
    back = program_from_script(program_to_script(program), "back.py")
    assert print_program(back) == print_program(program)
    assert back.main.parameter_names() == ["0", "class", "x-y", "x_y"]


def test_an_unused_module_is_still_created() -> None:
    text = (
        'module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = @return(x)\n\n'
        'module: "spare"\ny = @param:y -> float_type, {2}, {1}\n@1 = @return(y)\n'
    )
    script = program_to_script(parse_program(text, "s.mgx"))
    assert 'create_module("spare")' in script
    assert "spare" in [m.name for m in program_from_script(script, "s.py").modules.values()]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "None"),
        (True, "True"),
        (float("inf"), 'float("inf")'),
        (float("nan"), 'float("nan")'),
        (Binary(b"\x01\xff"), 'bytes.fromhex("01ff")'),
        ({"k": [1, 2.5]}, '{"k":[1,2.5]}'),
    ],
)
def test_values_are_written_as_python_literals(value: object, text: str) -> None:
    assert _py(value) == text


def test_a_value_with_no_python_form_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="no Python literal for object"):
        _py(object())
