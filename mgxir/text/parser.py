"""Reads program text into the IR.

The first layer of the grammar runs with an inline transformer, so no parse tree is built: each
instruction line is turned into an `Instruction` the moment the LALR parser reduces it. Operator
texts and tails repeat across a program, so their second-layer parses are cached per program.
"""

from __future__ import annotations

import functools
import gc
import os
import re
import threading
from typing import TYPE_CHECKING, Any

from mgxir.diagnostics import DiagnosticSink, Location, MgxError, did_you_mean
from mgxir.ir.attributes import AttributeError_
from mgxir.ir.builtin import make_literal, make_param, undefined_value
from mgxir.ir.format import ShapeSyntaxError, shape_from_value
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.program import Program
from mgxir.ir.registry import all_ops, lookup, operation_from_node
from mgxir.ir.shape import Shape
from mgxir.ops import register_all_ops
from mgxir.text import lalr
from mgxir.text.literals import LiteralSyntaxError, Sidecars, literal_from_items
from mgxir.text.syntax import SyntaxProblem, describe_expected, lark, parse_layer2

if TYPE_CHECKING:
    from pathlib import Path

# read the line structure with `_LineReader` (False: always with Lark; the tests compare the two)
FAST_LINES = True


class SourceText:
    """The text a program was read from, for diagnostics that quote a line."""

    def __init__(self, filename: str, text: str, line_map: list[int] | None = None):
        self.filename = filename
        self.text = text
        self._lines: list[str] | None = None
        self.line_map = line_map  # parsed line -> original line (logs)

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.text.split("\n")
        return self._lines

    def line(self, n: int) -> str:
        lines = self.lines
        return lines[n - 1] if 0 < n <= len(lines) else ""

    def location(self, line: int, column: int = 1) -> Location:
        shown = self.line_map[line - 1] if self.line_map and 0 < line <= len(self.line_map) else line
        return Location(self.filename, shown, column)

    def error(self, message: str, line: int, column: int = 1) -> MgxError:
        return MgxError(message, self.location(line, column), self.line(line))


class _Builder:
    def __init__(
        self,
        source: SourceText,
        base_dir: str | Path | None,
        sink: DiagnosticSink,
        allow_undefined: bool = False,
        sidecars: Sidecars | None = None,
    ):
        self.source = source
        self.sidecars = sidecars if sidecars is not None else Sidecars(base_dir)
        self.allow_undefined = allow_undefined
        self.base_dir = base_dir
        self.sink = sink
        self.program = Program()
        self.module: Module | None = None
        self.local: dict[str, Instruction] = {}
        self.globals: dict[str, Instruction] = {}
        self.discarding = False
        self.op_cache: dict[str, Operation] = {}
        self.tail_cache: dict[str, tuple] = {}
        self.pending_modules: list[tuple[Instruction, str, int, int]] = []  # (ins, text, line, column)

    # -- modules ------------------------------------------------------------------------------

    def module_header(self, tok: str) -> None:
        text = tok.strip()
        raw = text[text.index('"') + 1 : text.rindex('"')]
        name = raw.replace('\\"', '"')
        existing = self.program.get_module(name)
        self.local = {}
        if existing is not None:
            if len(existing):
                # MIGraphX prints a module once per use; later copies repeat the first
                self.discarding = True
                self.module = Module(name)
                return
            self.module = existing
        else:
            self.module = self.program.create_module(name)
        self.discarding = False

    # -- instructions -------------------------------------------------------------------------

    def instruction(self, d: str, o: str, a: str | None, m: str | None, t: str, line: int) -> None:
        """One instruction line, `DEF OP [ARGS] [MODULES] TAIL`; DEF starts the line (column 1)."""
        module = self.module
        if module is None:
            module = self.module = self.program.create_module("main")
        name = d[: d.index("=")].strip()
        op_column = 1 + len(d)
        args_column = op_column + len(o)
        modules_column = args_column + (len(a) if a is not None else 0)

        shape, target_id, symbols = self.tail_cache.get(t) or self._parse_tail(
            t, line, modules_column + (len(m) if m is not None else 0)
        )

        op = self.op_cache.get(o)
        if op is None:
            op = self._parse_op(o, shape, line, op_column)
        args: list[Instruction] = []
        if a is not None and len(a) > 2:
            lookup_local = self.local.get
            lookup_global = self.globals.get
            for arg_name in _listed_names(a[1:-1]):
                found = lookup_local(arg_name) or lookup_global(arg_name)
                if found is None:
                    found = self._missing(arg_name, a, line, args_column)
                args.append(found)
        if shape is None and op.defn.name == "@return" and all(a.shape is not None for a in args):
            shape = op.defn.shape(op, [a.shape for a in args], ())
        ins = Instruction(op, args, shape)
        ins.line = line
        if target_id:
            ins.target_id = target_id
        if symbols:
            ins.symbols = symbols
        if m is not None:
            self.pending_modules.append((ins, m, line, modules_column))
        if self.discarding:
            return
        if name in self.local:
            raise self.source.error(f"redefinition of '{name}'", line, 1)
        self.local[name] = ins
        if name not in self.globals:
            self.globals[name] = ins
        module.append_parsed(ins)

    def _missing(self, arg_name: str, args_text: str, line: int, column: int) -> Instruction:
        if arg_name == "?":
            unknown = undefined_value("")
            unknown.line = line
            return unknown
        offset = _item_offset(args_text, arg_name)
        if not self.allow_undefined:
            raise self.source.error(f"use of undefined value '{arg_name}'", line, column + offset)
        # an excerpt's value defined outside it: a parameter of unknown shape, kept by name
        unknown = undefined_value(arg_name)
        unknown.line = line
        self.sink.warn(
            f"'{arg_name}' is not defined here: read as a parameter of unknown shape",
            self.source.location(line, column + offset),
            self.source.line(line),
            once_key=f"undefined:{arg_name}",
        )
        self.globals[arg_name] = unknown
        return unknown

    def _parse_tail(self, t: str, line: int, column: int) -> tuple:
        text = t.rstrip("\r\n")
        if not text.strip():
            result: tuple = (None, 0, ())
        else:
            try:
                value, target, symbols = parse_layer2(text, "tail", "the result shape")
                shape = shape_from_value(value) if value is not None else None
                target_id = int(target) if target is not None else 0
                syms = tuple(symbols.split(", ")) if symbols else ()
            except SyntaxProblem as e:
                if text.lstrip().startswith("("):
                    e.message = "an operator's arguments follow its name with no space: 'NAME(args)'"
                raise self.source.error(e.message, line, column + e.column) from None
            except ShapeSyntaxError as e:
                col = column + max(text.find("->") + 3, 0)
                raise self.source.error(str(e), line, col) from None
            except ValueError as e:
                raise self.source.error(f"bad target id: {e}", line, column) from None
            result = (shape, target_id, syms)
        self.tail_cache[t] = result
        return result

    def _parse_op(self, o: str, shape: Shape | None, line: int, column: int) -> Operation:
        text = str(o)
        if text.startswith("@param:"):
            if shape is None:
                raise self.source.error(
                    f"parameter '{text[7:]}' needs a shape: '-> TYPE, {{lens}}, {{strides}}'", line, column
                )
            return make_param(text[7:])  # unique per instruction: not cached
        if text.startswith("@literal{"):
            if shape is None:
                raise self.source.error("a literal needs a shape: '-> TYPE, {lens}, {strides}'", line, column)
            try:
                items = parse_layer2(text[8:], "literal_body", "the literal")
                lit = literal_from_items(items, shape, self.base_dir, self.sidecars)
            except SyntaxProblem as e:
                raise self.source.error(e.message, line, column + 8 + e.column) from None
            except LiteralSyntaxError as e:
                raise self.source.error(str(e), line, column + 8) from None
            return make_literal(lit)
        bracket = text.find("[")
        raw_attributes = text[bracket:] if bracket >= 0 else ""
        name = text if bracket < 0 else text[:bracket]
        defn = lookup(name)
        try:
            if defn is not None and not raw_attributes and not defn.attributes:
                op = defn.make()
            else:
                node = parse_layer2(text, "op_text", "the operator")
                op = operation_from_node(node, raw_attributes)
            if defn is not None and not op.defn.is_opaque:
                op = op.defn.complete(op, shape)
        except SyntaxProblem as e:
            raise self.source.error(e.message, line, column + e.column) from None
        except AttributeError_ as e:
            raise self.source.error(str(e), line, column + max(bracket, 0)) from None
        if op.defn.is_opaque:
            hint = ""
            if defn is None:
                why = f"unknown operator '{name}'"
                if f"opaque:{name}" not in self.sink.seen:  # warned once per name: looked for once
                    hint = did_you_mean(name, all_ops())
            else:
                why = f"operator '{name}' has attributes mgxir does not know"
            self.sink.warn(
                f"{why}: kept as written; its shape is not checked{hint}",
                self.source.location(line, column),
                self.source.line(line),
                once_key=f"opaque:{name}",
            )
        if op.defn.name != "load":  # load carries its own shape, so it cannot be shared
            self.op_cache[o] = op
        return op

    def resolve_modules(self) -> None:
        for ins, text, line, column in self.pending_modules:
            names = _listed_names(text[text.index("[") + 1 : -1])
            mods = []
            for n in names:
                found = self.program.get_module(n)
                if found is None:
                    offset = _item_offset(text, n)
                    raise self.source.error(f"unknown module '{n}'", line, column + offset)
                mods.append(found)
            ins.module_args = mods


def _listed_names(inside: str) -> list[str]:
    """The names of an argument or module list without its brackets: `a,b` as MIGraphX prints it, or
    with any spacing (`a, b`, ` a `)."""
    return [name.strip() for name in inside.split(",")] if inside.strip() else []


def _item_offset(listed: str, item: str) -> int:
    """Where `item` stands in a printed list, `(a,b)` or `, [a, b]`: as a whole item, not inside a
    longer name."""
    found = re.search(rf"(?<=[(,\[ \t]){re.escape(item)}(?=[ \t,)\]])", listed)
    assert found is not None, (listed, item)  # ARGS and MODULES put a separator on both sides of each
    return found.start()


class _Callbacks(lark.Transformer):
    """Routes the first layer's reductions to the builder of the parse in progress."""

    def __init__(self) -> None:
        super().__init__()
        self.local = threading.local()

    def module_header(self, children: list) -> None:
        self.local.builder.module_header(children[0])

    def instruction(self, children: list) -> None:
        d, o, a, m, t = children
        self.local.builder.instruction(d, o, a, m, t, d.line)

    def program(self, children: list) -> None:
        return None

    def module(self, children: list) -> None:
        return None

    def body(self, children: list) -> None:
        return None


@functools.cache
def _program_parser() -> tuple[Any, _Callbacks]:
    callbacks = _Callbacks()
    return lalr.program_parser(callbacks), callbacks


class _LineReader:
    """The first layer read line by line with the grammar's own terminals, as Lark's contextual lexer
    reads them, but without its LALR machinery (four tokens a line through Lark cost four fifths of
    parsing a large program).

    Every line of `program` is one of: MODULE, _COMMENT, _BLANK, or `DEF OP [ARGS] [MODULES] TAIL`
    (each ends with its newline). At a line's start those terminals cannot match the same text;
    after OP and after ARGS, MODULES (priority 2) is tried before TAIL, which could also match
    `, [...`; this is the order Lark's lexer tries them in. A program this reader is not sure of
    (a syntax error, a header after a headerless body, an error raised while building) is read again
    by Lark from the start, so diagnostics are Lark's and the grammar stays the one definition."""

    def __init__(self, pattern: dict[str, str]):
        self.module = re.compile(pattern["MODULE"]).match
        self.comment = re.compile(pattern["_COMMENT"]).match
        self.blank = re.compile(pattern["_BLANK"]).match
        # one instruction line; atomic groups and possessive repeats make the regex take each token
        # as Lark's lexer does, never backtracking into one: DEF OP (MODULES | ARGS [MODULES])? TAIL
        token = {name: f"(?>({pattern[name]}))" for name in ("DEF", "OP", "ARGS", "MODULES", "TAIL")}
        self.instruction = re.compile(
            f"{token['DEF']}{token['OP']}(?:{token['MODULES']}|{token['ARGS']}{token['MODULES']}?+)?+{token['TAIL']}"
        ).match

    def read(self, text: str, builder: _Builder) -> bool:
        """Builds the program into `builder`; False where Lark must read the text instead."""
        match_module, match_comment, match_blank = self.module, self.comment, self.blank
        match_instruction = self.instruction
        instruction = builder.instruction
        gap_or_module = _GAP_OR_MODULE_START
        end = len(text)
        pos = 0
        line = 1
        headers = False  # `module+`, or a headerless `body` once an instruction came first
        body_started = False
        while pos < end:
            if text[pos] in gap_or_module:
                # Lark's order: MODULE and _COMMENT (priority 3), _BLANK (2), then DEF (`//x=` is a
                # comment, `module: "a=b"` a header)
                found = match_module(text, pos)
                if found is not None:
                    if body_started and not headers:
                        return False
                    headers = True
                    builder.module_header(found.group())
                else:
                    found = match_comment(text, pos) or match_blank(text, pos)
                if found is not None:
                    pos = found.end()
                    line += 1
                    continue
            found = match_instruction(text, pos)
            if found is None:
                return False
            d, o, modules_alone, a, m, t = found.groups()
            pos = found.end()
            body_started = True
            instruction(d, o, a, m or modules_alone, t, line)
            line += 1
        return True


# the characters MODULE, _COMMENT and _BLANK can start with; DEF is tried first on any other line
_GAP_OR_MODULE_START = frozenset("m/# \t\r\n")


@functools.cache
def _line_reader() -> _LineReader:
    return _LineReader(lalr.program_terminals())


def parse_program(
    text: str,
    filename: str = "<input>",
    *,
    base_dir: str | Path | None = None,
    sink: DiagnosticSink | None = None,
    line_map: list[int] | None = None,
    allow_undefined: bool = False,
) -> Program:
    """Parses program text; raises MgxError pointing at the first syntax error. With
    `allow_undefined`, a name used but never defined is a value of unknown shape (with a warning)."""
    if not text.endswith("\n"):
        text += "\n"
    register_all_ops()
    source = SourceText(filename, text, line_map)
    sink = sink if sink is not None else DiagnosticSink()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    sidecars = Sidecars(base_dir)
    try:
        builder = _read_lines(text, source, sidecars, sink, allow_undefined) if FAST_LINES else None
        if builder is None:
            builder = _read_with_lark(text, source, sidecars, sink, allow_undefined)
    finally:
        sidecars.close()
        if gc_was_enabled:
            gc.enable()
    builder.resolve_modules()
    program = builder.program
    program.source = source  # type: ignore[attr-defined]
    if not program.modules:
        program.create_module("main")
    return program


def _read_lines(
    text: str, source: SourceText, sidecars: Sidecars, sink: DiagnosticSink, allow_undefined: bool
) -> _Builder | None:
    """The program read by `_LineReader`, or None where Lark must read it; the warnings reach `sink`
    only when the reader succeeds (Lark's reading repeats them otherwise)."""
    scratch = DiagnosticSink()
    scratch.seen = set(sink.seen)
    builder = _Builder(source, sidecars.base_dir, scratch, allow_undefined, sidecars)
    try:
        if not _line_reader().read(text, builder):
            return None
    except MgxError:
        return None
    builder.sink = sink
    sink.seen |= scratch.seen
    sink.warnings.extend(scratch.warnings)
    return builder


def _read_with_lark(
    text: str, source: SourceText, sidecars: Sidecars, sink: DiagnosticSink, allow_undefined: bool
) -> _Builder:
    builder = _Builder(source, sidecars.base_dir, sink, allow_undefined, sidecars)
    parser, callbacks = _program_parser()
    callbacks.local.builder = builder
    try:
        parser.parse(text)
    except lark.UnexpectedInput as e:
        raise _syntax_error(e, source) from None
    finally:
        callbacks.local.builder = None
    return builder


def _syntax_error(e: Any, source: SourceText) -> MgxError:
    if isinstance(e, lark.UnexpectedCharacters):
        line_text = source.line(e.line)
        col0 = e.column - 1
        message, col0 = _diagnose(line_text, col0, set(e.allowed or ()))
        return source.error(message, e.line, col0 + 1)
    if isinstance(e, lark.UnexpectedToken):
        tok = e.token
        if tok.type == "$END":
            last = len(source.lines)
            return source.error(f"unexpected end of input: expected {describe_expected(e.expected)}", last, 1)
        message, col0 = _diagnose(source.line(tok.line), tok.column - 1, set(e.expected))
        return source.error(message, tok.line, col0 + 1)
    return source.error("syntax error", getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1)


def _diagnose(line: str, col: int, allowed: set[str]) -> tuple[str, int]:
    """A specific message for a line the coarse tokens could not match, and where it points."""
    rest = line[col:]
    if "ARGS" in allowed and rest.startswith("("):
        close = rest.find(")")
        for i, ch in enumerate(rest[1:], 1):
            if ch == ")":
                break
            if ch.isspace() or ch in "([]=":
                return "expected ',' or ')' in the argument list", col + i
            if ch == "," and (i + 1 >= len(rest) or rest[i + 1] in ",)"):
                return "expected an argument name after ','", col + i + 1
        if close < 0:
            return "expected ')' after arguments", len(line.rstrip())
    if "MODULES" in allowed and rest.startswith(", ["):
        if "]" not in rest:
            return "expected ']' after module names", len(line.rstrip())
        return "expected module names separated by ', ' inside '[...]'", col + 3
    if "OP" in allowed:
        if not rest.strip():
            return "expected an operator after '='", col
        if rest[:1].isalpha() or rest[:1] in "_@":
            depth = 0
            for ch in rest:
                if ch == "[":
                    depth += 1
                elif ch == "]":
                    depth -= 1
            if depth > 0:
                return "expected ']' to close the attribute list", len(line.rstrip())
            if rest.startswith("@literal{"):
                return "expected '}' to close the literal", len(line.rstrip())
        return "expected an operator after '='", col
    if "DEF" in allowed or "MODULE" in allowed:
        stripped = rest.lstrip()
        if stripped.startswith("module"):
            return "expected 'module: \"NAME\"'", col
        if "=" not in rest:
            return "expected an instruction 'NAME = OP(args) -> shape'", col
        return "expected an instruction name before '='", col
    if "TAIL" in allowed:
        if rest.startswith("["):
            return "expected ']' to close the attribute list", len(line.rstrip())
        return "expected ' -> ' and a shape, or the end of the line", col
    return f"expected {describe_expected(allowed)}", col


def read_program(
    path: str | Path,
    sink: DiagnosticSink | None = None,
    *,
    from_log: bool = False,
    log_pass: str | None = None,
    allow_undefined: bool = False,
) -> Program:
    """Parses a file (`-` reads standard input); with `from_log`, the program inside a log."""
    import sys

    if str(path) == "-":
        text, filename, base_dir = sys.stdin.read(), "<stdin>", None
    else:
        try:
            with open(path) as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            from pathlib import Path  # for the message only: a plain run does not import pathlib

            if isinstance(e, UnicodeDecodeError):
                raise MgxError(f"{Path(path)} is not UTF-8 text") from None
            raise MgxError(f"cannot read {Path(path)}: {e.strerror or e}") from None
        # the file's folder, where its sidecars are (as Path(path).parent for a file that could be read)
        filename, base_dir = str(path), os.path.dirname(path)
    if from_log:
        from mgxir.text.log import program_from_log

        text, line_map = program_from_log(text, log_pass)
        return parse_program(
            text, filename, base_dir=base_dir, sink=sink, line_map=line_map, allow_undefined=allow_undefined
        )
    return parse_program(text, filename, base_dir=base_dir, sink=sink, allow_undefined=allow_undefined)
