"""Loads `grammar/mgx.lark` and parses the second layer: operator texts, tails and literal bodies."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

from lark import Lark, Token, Transformer, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from mgxir.ir.values import Braces, Brackets, OpNode, Seq


@functools.cache
def grammar_text() -> str:
    """The grammar shipped inside the package (`mgxir.grammar`), or the checkout's `grammar/`."""
    # the package's folder, without importlib.resources (whose zip support costs more to import
    # than reading the file): mgxir is installed as files, never zipped
    spec = importlib.util.find_spec("mgxir.grammar")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in [*folders, Path(__file__).resolve().parents[2] / "grammar"]:
        path = Path(folder) / "mgx.lark"
        if path.is_file():
            return path.read_text()
    raise FileNotFoundError("mgxir's grammar (mgx.lark) is missing from the installation")


def _items(v: object) -> tuple:
    if v is None:
        return ()
    if isinstance(v, Seq):
        return v.items
    return (v,)


class _ValueBuilder(Transformer):
    """Turns the second layer's rules into value trees as the LALR parser reduces them."""

    def ATOM(self, tok: Token) -> str:
        return str(tok)

    def SYMBOL_TEXT(self, tok: Token) -> str:
        return str(tok)

    def sequence(self, children: list) -> Seq:
        return Seq(tuple(children))

    def braces(self, children: list) -> Braces:
        return Braces(_items(children[0]))

    def brackets(self, children: list) -> Brackets:
        return Brackets(_items(children[0]))

    def struct(self, children: list) -> dict:
        return dict(children)

    def field(self, children: list) -> tuple:
        key, value = children
        return (key, "" if value is None else value)

    attr = field

    def attr_block(self, children: list) -> tuple:
        return tuple(c for c in children if c is not None)

    def nested_op(self, children: list) -> OpNode:
        return OpNode(children[0], children[1])

    def op_text(self, children: list) -> OpNode:
        return OpNode(children[0], children[1] if children[1] is not None else ())

    def tail(self, children: list) -> tuple:
        return tuple(children)

    def literal_body(self, children: list) -> tuple:
        return _items(children[0])


@functools.cache
def value_parser() -> Lark:
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        start=["op_text", "tail", "literal_body"],
        maybe_placeholders=True,
        transformer=_ValueBuilder(),
        cache=True,
    )


class SyntaxProblem(Exception):
    """A syntax error inside a token: column is 0-based within the token text."""

    def __init__(self, message: str, column: int):
        super().__init__(message)
        self.message = message
        self.column = column


# What a terminal means to a reader, for "expected ..." messages.
TERMINAL_WORDS = {
    "ATOM": "a name or number",
    "RBRACE": "'}'",
    "LBRACE": "'{'",
    "RSQB": "']'",
    "LSQB": "'['",
    "COMMA": "','",
    "EQUAL": "'='",
    "_SEP": "', '",
    "_WS": "a space",
    "_ARROW": "'->'",
    "_TARGET": "', target_id='",
    "_SYMBOLS": "' # '",
    "SYMBOL_TEXT": "symbol names",
    "$END": "the end of the text",
    "DEF": "an instruction ('NAME = OP(args) -> shape')",
    "MODULE": "'module: \"NAME\"'",
    "OP": "an operator",
    "ARGS": "'(' arguments ')'",
    "MODULES": "', [' module names ']'",
    "TAIL": "' -> ' and a shape, or the end of the line",
    "_BLANK": "a new line",
    "_COMMENT": "a comment",
}


def describe_expected(names: set[str] | frozenset[str]) -> str:
    if len(names) > 1:
        names = set(names) - {"_WS"}
    words = sorted({TERMINAL_WORDS.get(n, n) for n in names})
    if not words:
        return "something else"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def parse_layer2(text: str, start: str, what: str):
    """Parses `text` with the given start rule; raises SyntaxProblem with a 0-based column."""
    try:
        return value_parser().parse(text, start=start)
    except UnexpectedCharacters as e:
        expected = describe_expected(set(e.allowed or ()))
        raise SyntaxProblem(f"expected {expected} in {what}", e.column - 1) from None
    except UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            col = len(text.rstrip("\r\n"))
            found = f"the end of {what}"
        else:
            col = (tok.column or 1) - 1
            found = f"'{tok}'"
        raise SyntaxProblem(f"expected {describe_expected(e.expected)} in {what}, found {found}", col) from None
    except UnexpectedInput as e:  # pragma: no cover - other Lark errors
        raise SyntaxProblem(f"malformed {what}", max(getattr(e, "column", 1) - 1, 0)) from None
