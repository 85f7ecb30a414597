"""The parser reads the line structure of large programs without Lark's LALR machinery
(`mgxir.text.parser._LineReader`); whatever it reads must come out exactly as Lark reads it: the same
program, the same warnings, the same error."""

from __future__ import annotations

from pathlib import Path

import pytest

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.text import parser
from mgxir.text.printer import PrintOptions, print_program
from mgxir.verifier import verify

REPO = Path(__file__).resolve().parents[3]
SHARED = REPO.parent / "shared" / "reference" / "migraphx-examples"

TRICKY = {
    "comment_like_definition": "x = @param:x -> float_type, {2}, {1}\n//y=relu(x)\n@1 = neg(x)\n",
    "module_name_with_equals": 'module: "a=b"\nx = @param:x -> float_type, {2}, {1}\n',
    "header_after_headerless_body": 'x = @param:x -> float_type, {2}, {1}\nmodule: "main"\n',
    "modules_versus_tail": (
        'module: "main"\nc = @param:c -> bool_type, {1}, {0}\n@1 = if(c), [t, e]\n@2 = @return(@1)\n'
        'module: "t"\nt:@0 = @literal{1} -> float_type, {1}, {0}\nt:@1 = @return(t:@0)\n'
        'module: "e"\ne:@0 = @literal{2} -> float_type, {1}, {0}\ne:@1 = @return(e:@0)\n'
    ),
    "crlf": 'module: "main"\r\nx = @param:x -> float_type, {2}, {1}\r\n@1 = relu(x)\r\n',
    "indented_instruction": "  x = @param:x -> float_type, {2}, {1}\n",
    "blank_and_comment_lines": "\n  \n// c\n   // d\nx = @param:x -> float_type, {2}, {1}\n\n",
    "args_then_bad_modules": "x = @param:x -> float_type, {2}, {1}\n@1 = relu(x), [m\n",
    "undefined_then_syntax_error": "@0 = relu(y) -> float_type, {2}, {1}\n@1 = = =\n",
    "unknown_op_warning": "x = @param:x -> float_type, {2}, {1}\n@1 = frobnicate[k=1](x) -> float_type, {2}, {1}\n",
    "empty": "",
    "only_blank": "\n\n",
    "free_spacing": (
        ' module : "main"\n# hash comment\n\tx\t=@param:x->float_type,{2},{1}\n@1 = add( x , x )\n'
        '@2 = if(x) , [ t ,e ]\n\r\nmodule: "t"\nt:@0 = @return()\nmodule:"e"\ne:@0 = @return( )\n'
    ),
}


def _files() -> list[Path]:
    found = sorted(p for p in (REPO / "test").rglob("*.mgx") if "Output" not in p.parts)
    found += sorted((REPO / "examples").glob("*.mgx"))
    if SHARED.is_dir():
        found += sorted(SHARED.rglob("*.txt"))
    return found


def _read(text: str, fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple:
    monkeypatch.setattr(parser, "FAST_LINES", fast)
    sink = DiagnosticSink()
    try:
        program = parser.parse_program(text, "input.mgx", sink=sink)
        verify(program, sink)
        printed = print_program(program, PrintOptions(lossless=True))
    except MgxError as e:
        printed = "error: " + e.render()
    return printed, [w.render() for w in sink.warnings]


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_tricky_lines_read_as_lark_reads_them(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = TRICKY[name]
    assert _read(text, True, monkeypatch) == _read(text, False, monkeypatch)


def test_every_test_input_reads_as_lark_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    files = _files()
    assert len(files) > 50
    for path in files:
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        assert _read(text, True, monkeypatch) == _read(text, False, monkeypatch), path


READ_WITHOUT_LARK = [
    "comment_like_definition",
    "module_name_with_equals",
    "modules_versus_tail",
    "crlf",
    "blank_and_comment_lines",
    "unknown_op_warning",
    "empty",
    "only_blank",
    "free_spacing",
]


@pytest.mark.parametrize("name", READ_WITHOUT_LARK)
def test_the_line_reader_reads_valid_programs_itself(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is taken (not silently always falling back to Lark)."""
    calls: list[str] = []
    monkeypatch.setattr(parser, "_read_with_lark", lambda *args: calls.append("lark"))
    parser.parse_program(TRICKY[name])
    assert calls == []


def test_modules_without_arguments_are_read_before_the_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parser, "_read_with_lark", lambda *args: pytest.fail("read by Lark"))
    program = parser.parse_program(
        'module: "main"\n@0 = foo, [m]\n@1 = @return(@0)\nmodule: "m"\n', sink=DiagnosticSink()
    )
    assert [m.name for m in program.main.first.module_args] == ["m"]
