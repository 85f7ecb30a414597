"""What the text reader tells a user about malformed programs, and the parts of reading that the
round-trip tests do not pin: where each syntax error points and what it says, excerpts with values
defined elsewhere, repeated module copies, files, stdin and logs (the mutation tests' survivors in
mgxir/text)."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.dtype import DType
from mgxir.ir.literal import Literal
from mgxir.ir.program import Program
from mgxir.ir.shape import DynamicDimension, Shape
from mgxir.ir.values import OpNode
from mgxir.text import parser, syntax
from mgxir.text.literals import (
    LiteralSyntaxError,
    format_lossless,
    format_migraphx,
    literal_from_items,
    values_from_strings,
)
from mgxir.text.log import program_from_log, split_log
from mgxir.text.parser import SourceText, parse_program, read_program
from mgxir.text.split import split_input
from mgxir.text.syntax import SyntaxProblem, describe_expected, parse_layer2
from mgxir.text.writer import SIDECAR_THRESHOLD, render, user_cache_dir, write_output, write_program

X = "x = @param:x -> float_type, {2}, {1}\n"

# (the program's last line after X, the first line of the error: file:line:col: error: message)
SYNTAX_ERRORS = [
    ("@1 = add(x x) -> float_type, {2}, {1}", "2:11: error: expected ',' or ')' in the argument list"),
    ("@1 = add(x,,x) -> float_type, {2}, {1}", "2:12: error: expected an argument name after ','"),
    ("@1 = add(x,)", "2:12: error: expected an argument name after ','"),
    ("@1 = add(x,", "2:12: error: expected an argument name after ','"),
    ("@1 = add(x,x", "2:13: error: expected ')' after arguments"),
    ("@1 = relu(x", "2:12: error: expected ')' after arguments"),
    ("@1 = relu(x=1)", "2:12: error: expected ',' or ')' in the argument list"),
    ("@1 = relu(x[0])", "2:12: error: expected ',' or ')' in the argument list"),
    ("@1 = add(,x)", "2:9: error: expected ' -> ' and a shape, or the end of the line"),
    ("@1 = add(x)y", "2:12: error: expected ' -> ' and a shape, or the end of the line"),
    ("@1 = relu(x)=1", "2:13: error: expected ' -> ' and a shape, or the end of the line"),
    ("@1 = relu(x)[a]", "2:16: error: expected ']' to close the attribute list"),
    ("@1 = relu, [a]x", "2:15: error: expected ' -> ' and a shape, or the end of the line"),
    ("@1 =", "2:5: error: expected an operator after '='"),
    ("@1 = 5add(x)", "2:6: error: expected an operator after '='"),
    ("@1 = 5add[x", "2:6: error: expected an operator after '='"),
    ("@1 = -> float_type, {2}, {1}", "2:6: error: expected an operator after '='"),
    ("@1 = reduce_sum[axes={0}(x) -> float_type, {1}, {1}", "2:52: error: expected ']' to close the attribute list"),
    ("@1 = r[a", "2:9: error: expected ']' to close the attribute list"),
    ("@1 = _x[", "2:9: error: expected ']' to close the attribute list"),
    ("@1 = @literal{1, 2", "2:14: error: expected ' -> ' and a shape, or the end of the line"),
    (" = add(x,x)", "2:1: error: expected an instruction name before '='"),
    ('module "main"', "2:1: error: expected 'module: \"NAME\"'"),
    ('  module "main"', "2:1: error: expected 'module: \"NAME\"'"),
    ("this is not", "2:1: error: expected an instruction 'NAME = OP(args) -> shape'"),
    (", [a]", "2:1: error: expected an instruction 'NAME = OP(args) -> shape'"),
    (
        "@1 = relu(x) -> floaty_type, {2}, {1}",
        "2:17: error: expected a type name such as float_type, got 'floaty_type'",
    ),
    ("@1 = relu(x) -> float_type, {2}, {1}, target_id=z", "2:13: error: bad target id: "),
    ("@1 = if(x), [a, b]", "2:14: error: unknown module 'a'"),
    ("@1 = if(x), [a, a_b]", "2:14: error: unknown module 'a'"),
    (
        "@1 = if(x), [m] -> floaty_type, {2}, {1}",
        "2:20: error: expected a type name such as float_type, got 'floaty_type'",
    ),
    ("@1 = add(x,y)", "2:12: error: use of undefined value 'y'"),
    ("@1 = add(x,xy)", "2:12: error: use of undefined value 'xy'"),
    ("@1 = add(x,x,xx,x)", "2:14: error: use of undefined value 'xx'"),
    ("@1 = if(x), [b_a, a]", "2:14: error: unknown module 'b_a'"),
    ("@1 = add(,x) -> float_type, {2}, {1}", "2:9: error: expected ' -> ' and a shape, or the end of the line"),
    ("@1 = add(X x)", "2:11: error: expected ',' or ')' in the argument list"),
    ("@1 = add(x,X y)", "2:13: error: expected ',' or ')' in the argument list"),
    ("@1 = relu(x)\x0c", "2:13: error: expected ' -> ' and a shape, or the end of the line"),
    ("@1 = \x0b", "2:6: error: expected an operator after '='"),
    ("\x1cx = relu(x)", "2:1: error: expected an instruction name before '='"),
    ("x = relu(x)", "2:1: error: redefinition of 'x'"),
]


@pytest.mark.parametrize(("line", "error"), SYNTAX_ERRORS, ids=[line for line, _ in SYNTAX_ERRORS])
def test_syntax_errors_say_what_was_expected_where(line: str, error: str) -> None:
    with pytest.raises(MgxError) as raised:
        parse_program(X + line + "\n", "f.mgx")
    first, quoted, *_ = raised.value.render().split("\n")
    assert first.startswith("f.mgx:" + error), first
    assert quoted == line


def test_names_are_found_as_whole_items_of_their_list() -> None:
    """The caret of an undefined value or unknown module is on that name, not inside a longer one
    that contains it (it was: `add(ab,b)` pointed at the `b` of `ab`)."""
    with pytest.raises(MgxError) as raised:
        parse_program("ab = @param:ab -> float_type, {2}, {1}\n@1 = add(ab,b)\n", "f.mgx")
    assert raised.value.render().split("\n")[::2] == ["f.mgx:2:13: error: use of undefined value 'b'", "            ^"]
    with pytest.raises(MgxError) as raised:
        parse_program('module: "main"\n' + X + '@1 = if(x), [b_a, a]\nmodule: "b_a"\n', "f.mgx")
    assert raised.value.render().split("\n")[::2] == ["f.mgx:3:19: error: unknown module 'a'", "                  ^"]


def test_an_empty_module_list_is_no_modules() -> None:
    assert parse_program(X + "@1 = relu(x), []\n").main.last.module_args == []


def test_a_value_from_outside_warns_once_per_sink() -> None:
    sink = DiagnosticSink()
    for _ in range(2):
        parse_program("@1 = relu(y)\n", "f.mgx", sink=sink, allow_undefined=True)
    assert len(sink.warnings) == 1


def test_a_module_header_after_a_headerless_body_is_an_error_on_its_line() -> None:
    with pytest.raises(MgxError) as raised:
        parse_program(X + 'module: "main"\n', "f.mgx")
    assert raised.value.render().split("\n")[0] == "f.mgx:2:1: error: expected the end of the text"


def test_the_error_of_a_later_line_quotes_that_line() -> None:
    with pytest.raises(MgxError) as raised:
        parse_program(X + "@1 = relu(x)\n\n@2 = relu(@1\n", "f.mgx")
    assert raised.value.render().split("\n")[:2] == ["f.mgx:4:13: error: expected ')' after arguments", "@2 = relu(@1"]


def test_an_unexpected_input_of_another_kind_is_a_plain_syntax_error() -> None:
    """Lark's LALR parser raises UnexpectedCharacters or UnexpectedToken; another UnexpectedInput
    (its other parsers') is still one located error, at line 1 column 1 when it has no place."""
    source = SourceText("f.mgx", "a\nbc\n")
    placeless = parser._syntax_error(parser.lark.UnexpectedInput(), source)
    assert placeless.render() == "f.mgx:1:1: error: syntax error\na\n^"
    placed = parser.lark.UnexpectedInput()
    placed.line, placed.column = 2, 2
    assert parser._syntax_error(placed, source).render() == "f.mgx:2:2: error: syntax error\nbc\n ^"
    zero = parser.lark.UnexpectedInput()
    zero.line, zero.column = 0, 0
    assert parser._syntax_error(zero, source).render().split("\n")[0] == "f.mgx:1:1: error: syntax error"


def test_source_text_lines_and_mapped_locations() -> None:
    source = SourceText("f.mgx", "a\nbc", line_map=[5, 7])
    assert [source.line(n) for n in (0, 1, 2, 3)] == ["", "a", "bc", ""]
    assert [source.location(n).line for n in (0, 1, 2, 3)] == [0, 5, 7, 3]
    assert source.location(1).column == 1
    assert source.error("m", 2).render() == "f.mgx:7:1: error: m\nbc\n^"


# -- reading ---------------------------------------------------------------------------------


def test_module_names_may_hold_escaped_quotes() -> None:
    program = parse_program('module: "a\\"b"\n' + X)
    assert list(program.modules) == ['a"b']


def test_later_copies_of_a_module_are_dropped_and_an_empty_one_is_filled() -> None:
    module_m = 'module: "m"\nm:@0 = @literal{1} -> float_type, {1}, {0}\nm:@1 = @return(m:@0)\n'
    main = 'module: "main"\nc = @param:c -> bool_type, {1}, {0}\n@1 = if(c), [m, m]\n@2 = @return(@1)\n'
    program = parse_program(main + module_m + module_m.replace("{1}", "{2}", 1))
    assert {name: len(m) for name, m in program.modules.items()} == {"main": 3, "m": 2}
    assert program.modules["m"].first.literal.data.tolist() == [1.0]
    program = parse_program('module: "main"\nmodule: "main"\n' + X)
    assert {name: len(m) for name, m in program.modules.items()} == {"main": 1}


def test_names_defined_only_in_a_dropped_copy_are_undefined() -> None:
    main = 'module: "main"\nc = @param:c -> bool_type, {1}, {0}\n@1 = if(c), [m, m]\n@2 = @return(@1)\n'
    first = 'module: "m"\nm:@0 = @literal{1} -> float_type, {1}, {0}\nm:@1 = @return(m:@0)\n'
    copy = 'module: "m"\nm:@0 = @literal{1} -> float_type, {1}, {0}\nm:@5 = neg(m:@0)\nm:@1 = @return(m:@0)\n'
    user = 'module: "n"\nn:@0 = neg(m:@5)\n'
    with pytest.raises(MgxError) as raised:
        parse_program(main + first + copy + user, "f.mgx")
    assert raised.value.render().split("\n")[0] == "f.mgx:13:12: error: use of undefined value 'm:@5'"


def test_return_without_a_tail_takes_its_arguments_shapes() -> None:
    program = parse_program(X + "@1 = @return(x)\n")
    assert str(program.main.last.shape) == "Shape(float_type, {2}, {1})"
    assert program.main.last.args == [program.main.first]
    empty = parse_program("@0 = @return()\n")
    assert empty.main.first.args == []


def test_a_question_mark_argument_is_an_unnamed_undefined_value() -> None:
    program = parse_program("@0 = relu(?)\n@1 = relu(?)\n")
    first, second = (ins.args[0] for ins in program.main)
    assert first.name == "?" and first.op.text == "?" and first.line == 1 and second.line == 2
    assert first is not second


def test_values_from_outside_an_excerpt_warn_once_and_are_one_value() -> None:
    sink = DiagnosticSink()
    program = parse_program(X + "@1 = add(x,y)\n@2 = add(@1,y)\n", "f.mgx", sink=sink, allow_undefined=True)
    assert [w.render() for w in sink.warnings] == [
        "f.mgx:2:12: warning: 'y' is not defined here: read as a parameter of unknown shape\n"
        "@1 = add(x,y)\n"
        "           ^"
    ]
    first, second = list(program.main)[1:]
    assert first.args[1] is second.args[1]
    assert first.args[1].line == 2 and first.args[1].op.text == "?y"


@pytest.mark.parametrize("fast", [True, False])
def test_both_readers_pass_on_allow_undefined_and_the_sidecar_folder(
    fast: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parser, "FAST_LINES", fast)
    np.savez(tmp_path / "side.npz", a=np.array([1.5, 2.5], dtype=np.float32))
    program = parse_program(
        "@0 = @literal{npz:side.npz:a} -> float_type, {2}, {1}\n@1 = add(@0,y)\n",
        base_dir=tmp_path,
        allow_undefined=True,
        sink=DiagnosticSink(),
    )
    assert program.main.first.literal.data.tolist() == [1.5, 2.5]


def test_a_fresh_program_parser_and_line_reader_read_as_the_cached_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parsers are built once per process (functools.cache); build them again here."""
    text = 'module: "main"\nc = @param:c -> bool_type, {1}, {0}\n//x=y\n\n@1 = if(c), [m]\n@2 = @return(@1)\n'
    text += 'module: "m"\nm:@0 = @literal{1} -> float_type, {1}, {0}\nm:@1 = @return(m:@0)\n'
    expected = parse_program(text)
    monkeypatch.setattr(parser, "_program_parser", parser._program_parser.__wrapped__)
    monkeypatch.setattr(parser, "_line_reader", parser._line_reader.__wrapped__)
    for fast in (False, True):
        monkeypatch.setattr(parser, "FAST_LINES", fast)
        if fast:
            monkeypatch.setattr(parser, "_read_with_lark", lambda *args: pytest.fail("read by Lark"))
        program = parse_program(text)
        assert {n: [i.name for i in m] for n, m in program.modules.items()} == {
            n: [i.name for i in m] for n, m in expected.modules.items()
        }
        assert program.main.first.next.module_args == [program.modules["m"]]


# -- files -------------------------------------------------------------------------------------


def test_read_program_reads_files_relative_to_their_folder(tmp_path: Path) -> None:
    np.savez(tmp_path / "side.npz", a=np.array([3.0], dtype=np.float32))
    path = tmp_path / "p.mgx"
    path.write_text("@0 = @literal{npz:side.npz:a} -> float_type, {1}, {0}\n@1 = relu(y)\n")
    sink = DiagnosticSink()
    program = read_program(path, sink, allow_undefined=True)
    assert program.main.first.literal.data.tolist() == [3.0]
    assert [w.render().split("\n")[0] for w in sink.warnings] == [
        f"{path}:2:11: warning: 'y' is not defined here: read as a parameter of unknown shape"
    ]
    with pytest.raises(MgxError) as raised:
        read_program(path)
    assert raised.value.render().split("\n")[0] == f"{path}:2:11: error: use of undefined value 'y'"


def test_read_program_from_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(X + "@1 = relu(x\n"))
    with pytest.raises(MgxError) as raised:
        read_program("-")
    assert raised.value.render().split("\n")[0] == "<stdin>:2:12: error: expected ')' after arguments"


def test_read_program_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(MgxError) as raised:
        read_program(tmp_path / "nosuch.mgx")
    assert raised.value.render() == f"error: cannot read {tmp_path / 'nosuch.mgx'}: No such file or directory"
    (tmp_path / "bin.mgx").write_bytes(b"\xff\xfe")
    with pytest.raises(MgxError) as raised:
        read_program(tmp_path / "bin.mgx")
    assert raised.value.render() == f"error: {tmp_path / 'bin.mgx'} is not UTF-8 text"


LOG = """\
Module: main
x = @param:x -> float_type, {2}, {1}
@1 = relu(x
"""


def test_read_program_from_a_log_points_at_the_log_line(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_text("some output\n" + LOG)
    with pytest.raises(MgxError) as raised:
        read_program(path, from_log=True)
    assert raised.value.render().split("\n")[0] == f"{path}:4:12: error: expected ')' after arguments"


# -- logs and split inputs ---------------------------------------------------------------------


def test_a_log_program_keeps_its_log_line_numbers_and_blank_lines() -> None:
    log = "noise\r\nRun instruction: x = @param:x -> float_type, {2}, {1}\r\n\r\n@1 = relu(x): 0.2ms, 5%\r\nnoise\r\n"
    text, line_map = program_from_log(log)
    assert text == "x = @param:x -> float_type, {2}, {1}\n\n@1 = relu(x)\n\n"
    assert line_map == [2, 3, 4, 6]


def test_log_lines_keep_their_ends_but_the_carriage_return() -> None:
    text, _ = program_from_log("@1 = relu(x) # X\r\n@2 = neg(@1) # Y \r\n")
    assert text == "@1 = relu(x) # X\n@2 = neg(@1) # Y \n\n"


def test_a_second_main_module_starts_a_new_dump() -> None:
    dump = 'module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = OP(x)\n'
    segments = split_log("Pass: p\n" + dump.replace("OP", "relu") + dump.replace("OP", "neg") + "Pass: q\n")
    assert [(s.after_pass, s.lines[-1], s.line_map) for s in segments] == [
        ("p", "@1 = relu(x)", [2, 3, 4]),
        ("p", "@1 = neg(x)", [5, 6, 7]),
    ]
    assert [s.has_main for s in segments] == [True, True]
    text, line_map = program_from_log('module: "sub"\nsub:@0 = relu(x)\nmodule: "main"\n@1 = neg(x)\n')
    assert line_map == [1, 2, 3, 4, 5] and text.count("module:") == 2


def test_a_log_without_a_program_says_so() -> None:
    with pytest.raises(MgxError) as raised:
        program_from_log("just noise\n")
    assert raised.value.render() == "error: the log contains no program (no lines of the form 'NAME = OP ...')"


def test_split_input_chunks_know_their_first_line() -> None:
    chunks = split_input("a\nb\n// -----\nc\n// -----\nd\ne")
    assert [(c.text, c.first_line) for c in chunks] == [("a\nb", 1), ("c", 4), ("d\ne", 6)]
    assert [c.line_map() for c in chunks] == [[1, 2], [4], [6, 7]]
    assert split_input("// -----\nx")[0].first_line == 1 and split_input("// -----\nx")[1].first_line == 2


def test_a_chunk_names_itself_by_its_first_case_line() -> None:
    named, unnamed = split_input("// a comment\n  // case: dce_keeps_x \n// case: second\nx\n// -----\n// cases: no\ny")
    assert named.case_name() == "dce_keeps_x"
    assert named.labelled('module: "main"\n') == '// case: dce_keeps_x\nmodule: "main"\n'
    assert unnamed.case_name() is None
    assert unnamed.labelled("out") == "out"


# -- literals ----------------------------------------------------------------------------------


def _literal(dtype: DType, values: list) -> Literal:
    return Literal(Shape.make(dtype, (len(values),)), np.array(values, dtype=dtype.numpy))


def test_migraphx_prints_literals_of_at_most_ten_values() -> None:
    assert format_migraphx(_literal(DType.float, list(range(10)))) == "{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}"
    assert format_migraphx(_literal(DType.float, list(range(11)))) == "{ ... }"
    assert format_migraphx(_literal(DType.bool, [True, False])) == "{1, 0}"


def test_lossless_literals_are_decimal_up_to_64_values_and_inline_without_a_sidecar_name() -> None:
    assert format_lossless(_literal(DType.float, [1.5, 2]), {}, None, "k") == "{1.5, 2}"
    assert format_lossless(_literal(DType.float, [1.5, 2]), {}, "s.npz", "k") == "{1.5, 2}"  # MIGraphX prints it
    assert format_lossless(_literal(DType.float, list(range(11))), {}, "s.npz", "k") == "{npz:s.npz:k}"
    decimal = format_lossless(_literal(DType.float, list(range(64))), None, None, "k")
    assert decimal.startswith("{0, 1,") and decimal.endswith(", 63}")
    assert format_lossless(_literal(DType.float, list(range(65))), None, None, "k").startswith("{hex:00000000")


def test_literal_values_take_the_shapes_type() -> None:
    assert values_from_strings(["1", "-2"], DType.int8).dtype == np.int8
    wide = literal_from_items(("hex:0100ff00",), Shape.make(DType.int16, (2,)), None)
    assert wide.data.dtype == np.int16 and wide.data.tolist() == [1, 255]
    narrow = literal_from_items(("hex:ff",), Shape.make(DType.int8, (1,)), None)
    assert narrow.data.dtype == np.int8 and narrow.data.tolist() == [-1]
    elided = parse_program("@0 = @literal{ ... } -> half_type, {2}, {1}\n").main.first
    assert elided.literal.data is None and str(elided.literal.shape) == "Shape(half_type, {2}, {1})"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{1, 2, 3} -> float_type, {2}, {1}", "literal has 3 values, its shape has 2 elements"),
        ("{[1], 2} -> float_type, {2}, {1}", "literal values must be numbers"),
        ("{npz::a} -> float_type, {1}, {0}", "expected npz:FILE:KEY"),
    ],
)
def test_literal_body_errors(body: str, message: str) -> None:
    with pytest.raises(MgxError) as raised:
        parse_program(f"@0 = @literal{body}\n", "p.mgx")
    assert raised.value.render().split("\n")[0] == f"p.mgx:1:14: error: {message}"


def test_a_literal_needs_a_static_shape() -> None:
    with pytest.raises(LiteralSyntaxError, match=r"^a literal needs a static shape$"):
        literal_from_items(("1",), Shape.dynamic(DType.float, [DynamicDimension(1, 4)]), None)


def test_sidecar_paths_relative_to_the_working_folder_and_with_colons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    np.savez(tmp_path / "si:de.npz", a=np.array([4.0], dtype=np.float32))
    monkeypatch.chdir(tmp_path)
    literal = parse_program("@0 = @literal{npz:si:de.npz:a} -> float_type, {1}, {0}\n").main.first.literal
    assert literal.data.tolist() == [4.0] and literal.source == "si:de.npz"
    literal = literal_from_items(("npz:si:de.npz:a",), Shape.make(DType.float, (1,)), tmp_path)
    assert literal.source == str(tmp_path / "si:de.npz")


def test_unreadable_sidecar_files_are_errors_at_the_literal(tmp_path: Path) -> None:
    """Was an internal error (numpy's ValueError, zipfile's BadZipFile, EOFError for an empty file,
    a `.npy` read as an archive, a bad CRC found outside the check) with no place in the text."""
    np.savez(tmp_path / "objects.npz", a=np.array([1.0, "x"], dtype=object))
    np.savez(tmp_path / "strings.npz", a=np.array(["x", "y"]))
    np.save(tmp_path / "one.npy", np.array([1.0, 2.0], dtype=np.float32))
    (tmp_path / "pickle.npz").write_bytes(b"not an archive")
    (tmp_path / "damaged.npz").write_bytes(b"PK\x03\x04damaged")
    (tmp_path / "empty.npz").write_bytes(b"")
    np.savez(tmp_path / "crc.npz", a=np.array([1.0, 2.0], dtype=np.float32))
    crc = bytearray((tmp_path / "crc.npz").read_bytes())
    crc[crc.index(b"\x00\x00\x80?") + 3] ^= 0x01  # flip a bit of the stored 1.0
    (tmp_path / "crc.npz").write_bytes(bytes(crc))
    for name, why in [
        ("objects.npz", "member 'a' holds Python objects, not numbers"),
        ("strings.npz", "member 'a' holds <U1 values, not numbers"),
        ("one.npy", "is a .npy file (one array), not a .npz archive"),
        ("pickle.npz", "is neither a .npy nor a .npz file"),
        ("damaged.npz", "is a damaged .npz file: File is not a zip file"),
        ("empty.npz", "is empty"),
        ("crc.npz", "is a damaged .npz file: Bad CRC-32 for file 'a.npy'"),
        ("/dev/null", "is empty"),
    ]:
        with pytest.raises(MgxError) as raised:
            parse_program(f"@0 = @literal{{npz:{name}:a}} -> float_type, {{2}}, {{1}}\n", "p.mgx", base_dir=tmp_path)
        first = raised.value.render().split("\n")[0]
        assert first == f"p.mgx:1:14: error: sidecar {name} {why}", first


# -- the second layer's messages -----------------------------------------------------------------


def test_expected_terminals_are_listed_in_words() -> None:
    assert describe_expected(set()) == "something else"
    assert describe_expected({"_WS"}) == "a space"
    assert describe_expected({"_WS", "ATOM"}) == "a name or number"
    assert describe_expected({"ATOM", "_RBRACE", "_SEP", "FOO"}) == "',', '}', FOO or a name or number"


def test_layer2_values_and_problems() -> None:
    nested = OpNode("a", (("x", OpNode("b", (("c", "1"),))),))
    assert parse_layer2("a[x=b[c=1]]", "op_text", "the operator") == nested
    fresh = syntax.value_parser.__wrapped__()
    assert fresh.parse("a[x=b[c=1]]", start="op_text") == nested
    with pytest.raises(SyntaxProblem) as raised:
        parse_layer2("a[x=1", "op_text", "the operator")
    assert (
        str(raised.value)
        == raised.value.message
        == "expected ',' or ']' in the operator, found the end of the operator"
    )


# -- writing -------------------------------------------------------------------------------------


def _with_literal(values: np.ndarray) -> Program:
    program = Program()
    program.main.add_literal(Literal(Shape.make(DType.float, values.shape), values))
    return program


def test_user_cache_dir_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MGXIR_TEST_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir("MGXIR_TEST_CACHE", "kernels") == tmp_path / "xdg" / "mgxir" / "kernels"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_cache_dir("MGXIR_TEST_CACHE", "kernels") == tmp_path / "home" / ".cache" / "mgxir" / "kernels"
    monkeypatch.setenv("MGXIR_TEST_CACHE", str(tmp_path / "here"))
    assert user_cache_dir("MGXIR_TEST_CACHE", "kernels") == tmp_path / "here"
    monkeypatch.setenv("MGXIR_TEST_CACHE", "off")
    assert user_cache_dir("MGXIR_TEST_CACHE", "kernels") is None


def test_a_file_is_written_through_a_hidden_temporary_in_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    replace = os.replace

    def listing_replace(source: str, target: Path) -> None:
        seen.append(sorted(os.listdir(tmp_path)))
        replace(source, target)

    monkeypatch.setattr(os, "replace", listing_replace)
    write_output("text", str(tmp_path / "out.mgx"))
    assert (tmp_path / "out.mgx").read_text() == "text"
    assert len(seen) == 1 and len(seen[0]) == 1
    assert seen[0][0].startswith(".out.mgx.") and seen[0][0].endswith(".tmp")


def test_write_program_prints_plainly_unless_lossless(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    program = _with_literal(np.arange(11, dtype=np.float32))
    write_program(program, "out.mgx")
    assert "@literal{ ... }" in (tmp_path / "out.mgx").read_text()
    write_program(program, "-")
    assert sorted(os.listdir(tmp_path)) == ["out.mgx"]


def test_large_literals_go_to_a_sidecar_next_to_the_output_file(tmp_path: Path) -> None:
    limit = _with_literal(np.zeros(SIDECAR_THRESHOLD // 4, dtype=np.float32))
    text, arrays = render(limit, lossless=True, output=str(tmp_path / "out.mgx"))
    assert arrays == {} and "{hex:" in text
    large = _with_literal(np.zeros(SIDECAR_THRESHOLD // 4 + 1, dtype=np.float32))
    text, arrays = render(large, lossless=True, output=str(tmp_path / "out.mgx"))
    assert list(arrays) != [] and "@literal{npz:out.npz:" in text
    for output in (None, "-"):
        text, arrays = render(large, lossless=True, output=output)
        assert arrays == {} and "{hex:" in text


def test_a_named_sidecar_is_used_as_given(tmp_path: Path) -> None:
    program = _with_literal(np.arange(11, dtype=np.float32) + 0.5)
    text, arrays = render(program, lossless=False, output="-", sidecar=str(tmp_path / "d.npz"))
    assert f"@literal{{npz:{tmp_path / 'd.npz'}:" in text and len(arrays) == 1
    write_program(program, str(tmp_path / "out.mgx"), sidecar=str(tmp_path / "other.npz"))
    assert sorted(os.listdir(tmp_path)) == ["other.npz", "out.mgx"]
    assert "@literal{npz:other.npz:" in (tmp_path / "out.mgx").read_text()


def test_read_program_from_a_log_with_sidecar_data_and_outside_values(tmp_path: Path) -> None:
    np.savez(tmp_path / "side.npz", a=np.array([3.0], dtype=np.float32))
    path = tmp_path / "run.log"
    path.write_text("noise\n@0 = @literal{npz:side.npz:a} -> float_type, {1}, {0}\n@1 = relu(y)\n")
    sink = DiagnosticSink()
    program = read_program(path, sink, from_log=True, allow_undefined=True)
    assert program.main.first.literal.data.tolist() == [3.0]
    assert [w.render().split("\n")[0] for w in sink.warnings] == [
        f"{path}:3:11: warning: 'y' is not defined here: read as a parameter of unknown shape"
    ]


def test_read_program_reads_an_empty_file_as_an_empty_program(tmp_path: Path) -> None:
    (tmp_path / "empty.mgx").write_text("")
    assert list(read_program(tmp_path / "empty.mgx").modules) == ["main"]
