"""The printer's exact text (mgxir/text/printer.py): names with module prefixes, `?` for values
defined nowhere, target ids, symbols, lossless literals and their sidecar, and print_module."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mgxir.diagnostics import DiagnosticSink
from mgxir.ir.program import Program
from mgxir.text.parser import parse_program
from mgxir.text.printer import PrintOptions, print_module, print_program, undefined_name

PROGRAM = """\
module: "main"
@0 = @param:x -> float_type, {2}, {1}
@1 = @literal{1, 2} -> float_type, {2}, {1}
@2 = add(@0,@1) -> float_type, {2}, {1}, target_id=1
@3 = if(@0), [then, else] -> [float_type, {2}, {1}]
@5 = get_tuple_elem[index=0](@3) -> float_type, {2}, {1}
@4 = @return(@2,@5)

module: "then"
@0 = @literal{1, 2} -> float_type, {2}, {1}
@1 = @return(@0)

module: "else"
@0 = @literal{3, 4} -> float_type, {2}, {1}
@1 = @return(@0)
"""

PRINTED = """\
module: "main"
x = @param:x -> float_type, {2}, {1}
@1 = @literal{1, 2} -> float_type, {2}, {1}
@2 = add(x,@1) -> float_type, {2}, {1}, target_id=1
@3 = if(x), [then, else] -> [float_type, {2}, {1}]
@4 = get_tuple_elem[index=0](@3) -> float_type, {2}, {1}
@5 = @return(@2,@4)

module: "then"
then:@0 = @literal{1, 2} -> float_type, {2}, {1}
then:@1 = @return(then:@0)

module: "else"
else:@0 = @literal{3, 4} -> float_type, {2}, {1}
else:@1 = @return(else:@0)


"""


def test_print_program_names_renumbers_and_prefixes() -> None:
    assert print_program(parse_program(PROGRAM)) == PRINTED


def test_print_module_alone_has_no_prefix() -> None:
    program = parse_program(PROGRAM)
    then = next(m for m in program.print_order() if m.name == "then")
    assert print_module(then) == "@0 = @literal{1, 2} -> float_type, {2}, {1}\n@1 = @return(@0)\n"


def test_undefined_values_print_their_name_or_a_question_mark() -> None:
    text = "@0 = add(x,@7) -> float_type, {2}, {1}\n@1 = mul(@0,m:@2) -> float_type, {2}, {1}\n"
    program = parse_program(text, allow_undefined=True, sink=DiagnosticSink())
    assert print_program(program) == (
        'module: "main"\n@0 = add(x,?) -> float_type, {2}, {1}\n@1 = mul(@0,?) -> float_type, {2}, {1}\n\n\n'
    )


def test_lossless_keeps_values_and_fills_the_sidecar() -> None:
    values = [round(0.1 * i, 1) for i in range(20)]
    text = ", ".join("%g" % v for v in values)  # noqa: UP031 (MIGraphX's form, exact for these)
    program = parse_program(f'module: "main"\n@0 = @literal{{{text}}} -> float_type, {{20}}, {{1}}\n@1 = @return(@0)\n')
    assert (
        print_program(program)
        == 'module: "main"\n@0 = @literal{ ... } -> float_type, {20}, {1}\n@1 = @return(@0)\n\n\n'
    )
    lossless = print_program(program, PrintOptions(lossless=True))
    assert lossless == (f'module: "main"\n@0 = @literal{{{text}}} -> float_type, {{20}}, {{1}}\n@1 = @return(@0)\n\n\n')
    options = PrintOptions(lossless=True, sidecar_name="p.npz")
    assert print_program(program, options) == (
        'module: "main"\n@0 = @literal{npz:p.npz:@0} -> float_type, {20}, {1}\n@1 = @return(@0)\n\n\n'
    )
    assert list(options.sidecar) == ["@0"]
    np.testing.assert_array_equal(options.sidecar["@0"], np.array(values, np.float32))
    unused = PrintOptions(lossless=True)
    print_program(program, unused)
    assert unused.sidecar == {}


def test_symbols_and_dynamic_optimals() -> None:
    text = (
        'module: "main"\n@0 = @param:x -> float_type, {2}, {1} # a, b\n'
        "@1 = @param:y -> dynamic, float_type, {[1, 4, {2, 3}]}\n@2 = @return(@0,@1)\n"
    )
    program = parse_program(text)
    assert print_program(program) == (
        'module: "main"\nx = @param:x -> float_type, {2}, {1} # a, b\n'
        "y = @param:y -> dynamic, float_type, {[1..4]}\n@2 = @return(x,y)\n\n\n"
    )
    assert print_program(program, PrintOptions(lossless=True)) == (
        'module: "main"\nx = @param:x -> float_type, {2}, {1} # a, b\n'
        "y = @param:y -> dynamic, float_type, {[ 1, 4, {2, 3} ]}\n@2 = @return(x,y)\n\n\n"
    )


def test_a_program_without_modules_prints_nothing() -> None:
    assert print_program(Program()) == ""


def test_undefined_name_of_a_defined_op_is_a_question_mark() -> None:
    program = parse_program(PROGRAM)
    x, literal, add = list(program.main)[:3]
    assert undefined_name(x) == "?"
    assert undefined_name(literal) == "?"
    assert undefined_name(add) == "?"


def test_sidecar_keys_of_submodule_literals() -> None:
    values = ", ".join(str(i) for i in range(20))
    text = (
        'module: "main"\n@0 = @param:c -> bool_type, {1}, {1}\n'
        "@1 = if(@0), [then, else] -> [float_type, {20}, {1}]\n"
        "@2 = get_tuple_elem[index=0](@1) -> float_type, {20}, {1}\n@3 = @return(@2)\n\n"
        f'module: "then"\n@0 = @literal{{{values}}} -> float_type, {{20}}, {{1}}\n@1 = @return(@0)\n\n'
        f'module: "else"\n@0 = @literal{{{values}}} -> float_type, {{20}}, {{1}}\n@1 = @return(@0)\n'
    )
    options = PrintOptions(lossless=True, sidecar_name="s.npz")
    printed = print_program(parse_program(text), options)
    assert sorted(options.sidecar) == ["else_@0", "then_@0"]
    assert "then:@0 = @literal{npz:s.npz:then_@0} -> float_type, {20}, {1}\n" in printed


def test_a_shape_without_its_text_prints_as_migraphx_does_unless_lossless() -> None:
    program = parse_program(
        'module: "main"\n@0 = @param:y -> dynamic, float_type, {[1, 4, {2, 3}]}\n@1 = @return(@0)\n'
    )
    for ins in program.main:
        ins.shape.text = None  # as a pass makes a shape: no text from the input
    assert (
        print_program(program) == 'module: "main"\ny = @param:y -> dynamic, float_type, {[1..4]}\n@1 = @return(y)\n\n\n'
    )
    for ins in program.main:
        ins.shape.text = None
    assert "{[ 1, 4, {2, 3} ]}" in print_program(program, PrintOptions(lossless=True))


def test_the_caller_s_sidecar_dict_collects_the_arrays() -> None:
    values = ", ".join(str(i) for i in range(20))
    program = parse_program(
        f'module: "main"\n@0 = @literal{{{values}}} -> float_type, {{20}}, {{1}}\n@1 = @return(@0)\n'
    )
    arrays: dict[str, np.ndarray] = {}
    options = PrintOptions(lossless=True, sidecar_name="p.npz", sidecar=arrays)
    assert "@literal{npz:p.npz:@0}" in print_program(program, options)
    assert options.sidecar is arrays and list(arrays) == ["@0"]
    np.testing.assert_array_equal(arrays["@0"], np.arange(20, dtype=np.float32))


def test_an_unknown_op_written_without_a_shape_prints_as_written() -> None:
    """What `mgx-opt --no-verify` prints for a program the verifier would refuse: no `-> shape` on
    an unknown op that had none, the rest as usual."""
    text = 'module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = nosuch_op(x)\n@2 = @return(@1)\n'
    assert print_program(parse_program(text)) == text + "\n\n"


@settings(max_examples=60, deadline=None)
@given(st.floats(width=32, allow_nan=False))
def test_float_attributes_read_back_bit_for_bit_from_the_lossless_text(alpha: float) -> None:
    """MIGraphX prints float attributes with six digits; the lossless form keeps all their bits, and
    prints MIGraphX's text wherever that is already exact."""
    program = parse_program("x = @param:x -> float_type, {2}, {1}\n@1 = leaky_relu(x)\n@2 = @return(@1)\n")
    relu = program.main.last.args[0]
    relu.op = relu.op.defn.make(alpha=alpha)
    lossless = print_program(program, PrintOptions(lossless=True))
    again = parse_program(lossless).main.last.args[0].op.values[0]
    assert np.float32(again).view(np.uint32) == np.float32(alpha).view(np.uint32)
    migraphx = "%g" % alpha  # noqa: UP031 (MIGraphX's form)
    assert f"alpha={migraphx}]" in print_program(program)
    if np.float32(float(migraphx)) == np.float32(alpha):
        assert f"alpha={migraphx}]" in lossless
