"""Parses the second layer: operator texts, tails and literal bodies."""

from __future__ import annotations

import functools
from typing import Any

from mgxir.ir.values import Braces, Brackets, OpNode, Seq
from mgxir.text import lalr

lark = lalr.runtime()  # lark's names, from the cached tables' module (mgxir.text.lalr_runtime) or from lark itself


def _items(v: object) -> tuple:
    if v is None:
        return ()
    if isinstance(v, Seq):
        return v.items
    return (v,)


class _ValueBuilder(lark.Transformer):
    """Turns the second layer's rules into value trees as the LALR parser reduces them."""

    def ATOM(self, tok: Any) -> str:
        return str(tok)

    def SYMBOL_TEXT(self, tok: Any) -> str:
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
def value_parser() -> Any:
    return lalr.value_parser(_ValueBuilder())


class SyntaxProblem(Exception):
    """A syntax error inside a token: column is 0-based within the token text."""

    def __init__(self, message: str, column: int):
        super().__init__(message)
        self.message = message
        self.column = column


# What a terminal means to a reader, for "expected ..." messages.
TERMINAL_WORDS = {
    "ATOM": "a name or number",
    "_RBRACE": "'}'",
    "_LBRACE": "'{'",
    "_RSQB": "']'",
    "_LSQB": "'['",
    "_SEP": "','",
    "_FIELD_SEP": "','",
    "_TRAILING_SEP": "','",
    "_EQ": "'='",
    "_WS": "a space",
    "_ARROW": "'->'",
    "_TARGET": "', target_id='",
    "_SYMBOLS": "' # '",
    "SYMBOL_TEXT": "symbol names",
    "$END": "the end of the text",
    "<END-OF-FILE>": "the end of the text",
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
    except lark.UnexpectedCharacters as e:
        expected = describe_expected(set(e.allowed or ()))
        raise SyntaxProblem(f"expected {expected} in {what}", e.column - 1) from None
    except lark.UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            col = len(text.rstrip("\r\n"))
            found = f"the end of {what}"
        else:
            col = (tok.column or 1) - 1
            found = f"'{tok.strip()}'"
        raise SyntaxProblem(f"expected {describe_expected(e.expected)} in {what}, found {found}", col) from None
    except lark.UnexpectedInput as e:  # pragma: no cover - other Lark errors
        raise SyntaxProblem(f"malformed {what}", max(getattr(e, "column", 1) - 1, 0)) from None
