"""The `migraphx` API that --from-py scripts call: wrong calls give one line at the script's line,
and the calls MIGraphX's Python API offers (arguments, parameter and output queries) give what
MIGraphX's would."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.dtype import DType
from mgxir.text.printer import print_program
from mgxir.translate.py import migraphx as api
from mgxir.translate.py.reader import program_from_script, read_py_program

HEAD = (
    "p = migraphx.program()\nm = p.get_main_module()\n"
    'x = m.add_parameter("x", migraphx.shape(type="float_type", lens=[2, 3]))\n'
)


def _error(body: str) -> str:
    with pytest.raises(MgxError) as caught:
        program_from_script(HEAD + body, "s.py")
    message = caught.value.render()
    assert "Traceback" not in message
    return message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('m.add_instruction("relu", [x])\n', "s.py:4:1: error: add_instruction needs a migraphx.op(...)"),
        ('m.add_instruction(migraphx.op("relu"), x)\n', "s.py:4:1: error: arguments go in a list: [x]"),
        ('m.add_instruction(migraphx.op("relu"), [3])\n', "an argument is a int, not an instruction"),
        ('m.add_instruction(migraphx.op("if"), [x], ["then"])\n', "a module argument is a str, not a module"),
        ('m.add_parameter("y", [2, 3])\n', "add_parameter needs a migraphx.shape(...)"),
        (
            "m.add_literal(migraphx.create_argument(migraphx.shape(type='float_type', lens=[2]), [1.0]))\n",
            "s.py:4:1: error: 1 values for a shape of 2 elements",
        ),
        (
            "a = migraphx.create_argument(migraphx.shape(type='float_type', dyn_dims="
            "[migraphx.shape.dynamic_dimension(1, 4)]), [1.0])\n",
            "a literal needs a static shape",
        ),
        (
            "a = migraphx.argument_from_hex(migraphx.shape(type='int32_type', lens=[2]), '0100')\n",
            "2 bytes for a shape of 8",
        ),
        (
            "import numpy\na = migraphx.argument(numpy.array(['a']), migraphx.shape(type='float_type', lens=[1]))\n",
            "s.py:5:1: error: values do not fit float_type",
        ),
        (
            "import numpy\na = migraphx.argument(numpy.array(['a']))\n",
            "s.py:5:1: error: no MIGraphX type for numpy dtype <U1",
        ),
        ('m.add_instruction(migraphx.op("no_such_op"), [x])\n', "s.py:4:1: error: "),
    ],
)
def test_wrong_calls_give_one_line_at_the_call(body: str, message: str) -> None:
    found = _error(body)
    assert message in found
    assert found.count("error:") == 1


def test_arguments_hold_their_values_in_logical_order() -> None:
    shape = api.shape(type="int32_type", lens=[2, 2])
    assert api.create_argument(shape, [1, 2, 3, 4]).tolist() == [1, 2, 3, 4]
    assert api.argument_from_hex(shape, "01000000020000000300000004000000").tolist() == [1, 2, 3, 4]
    assert api.fill_argument(shape, 7).tolist() == [7, 7, 7, 7]
    from_numpy = api.argument(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert from_numpy.get_shape().lens == (2, 3) and from_numpy.get_shape().dtype is DType.float
    assert from_numpy.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


@pytest.mark.parametrize(
    ("type_name", "low", "high"), [("bool_type", 0, 1), ("float_type", -1, 1), ("int8_type", -128, 127)]
)
def test_generated_arguments_are_seeded_and_in_range(type_name: str, low: float, high: float) -> None:
    shape = api.shape(type=type_name, lens=[64])
    first = api.generate_argument(shape, 3).tolist()
    assert first == api.generate_argument(shape, 3).tolist()
    assert first != api.generate_argument(shape, 4).tolist()
    assert all(low <= v <= high for v in first)


def test_program_queries_answer_as_migraphx_does() -> None:
    source = HEAD + 'y = m.add_instruction(migraphx.op("relu"), [x])\nm.add_return([y])\n'
    program_from_script(source, "q.py")
    recorded = api.program()
    main = recorded.get_main_module()
    x = main.add_parameter("x", api.shape(type="float_type", lens=[2, 3]))
    relu = api.op("relu")
    main.add_return([main.add_instruction(relu, [x])])
    assert recorded.get_parameter_names() == ["x"]
    assert recorded.get_parameter_shapes()["x"].lens == (2, 3)
    assert [s.lens for s in recorded.get_output_shapes()] == [(2, 3)]
    assert relu.name() == "relu" and "relu" in repr(relu)
    assert repr(main) == "<module main>"
    assert repr(x).startswith("<instruction_ref @param at ")


def test_print_writes_the_program(capsys: pytest.CaptureFixture[str]) -> None:
    recorded = api.program()
    main = recorded.get_main_module()
    main.add_return([main.add_parameter("x", api.shape(type="float_type", lens=[2]))])
    recorded.print()
    assert "@param:x" in capsys.readouterr().out


def test_a_module_created_twice_is_one_module() -> None:
    # MIGraphX's --py prints a module once per use: the repeat adds nothing
    source = HEAD + (
        'm1 = p.create_module("then")\nm1.add_return([x])\n'
        'm2 = p.create_module("then")\nm2.add_return([x])\n'
        'c = m.add_literal(migraphx.create_argument(migraphx.shape(type="bool_type"), [1]))\n'
        'm3 = p.create_module("else")\nm3.add_return([x])\n'
        'r = m.add_instruction(migraphx.op("if"), [c], [m1, m3])\n'
    )
    text = print_program(program_from_script(source, "twice.py"))
    assert text.count('module: "then"') == 1


def test_unreadable_scripts(tmp_path: Path) -> None:
    with pytest.raises(MgxError, match=r"cannot read .*missing\.py"):
        read_py_program(tmp_path / "missing.py")
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# caf\xe9\n")
    with pytest.raises(MgxError, match=r"latin\.py is not UTF-8 text"):
        read_py_program(latin)


def test_undefined_names_are_read_as_parameters_only_when_allowed() -> None:
    source = (
        "p = migraphx.program()\nm = p.get_main_module()\n"
        'm.add_return([m.add_instruction(migraphx.op("relu"), [x_7])])  # migraphx.shape(type="float_type", lens=[2])\n'
    )
    with pytest.raises(MgxError, match="name 'x_7' is not defined"):
        program_from_script(source, "u.py")
    sink = DiagnosticSink()
    program_from_script(source, "u.py", sink, allow_undefined=True)
    assert any("'x_7' is not defined in the script" in w.message for w in sink.warnings)
