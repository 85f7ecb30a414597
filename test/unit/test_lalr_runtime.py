"""`mgxir.text.lalr_runtime` runs lark's tables as lark does: the same results, tokens and errors
(class, place, expected terminals) for the grammar's texts, mutated copies of them, and a small
grammar with what mgx.lark does not use (keywords that a name terminal also matches)."""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from typing import Any

import lark
import pytest

from mgxir.text import lalr, lalr_runtime

ROOT = Path(__file__).resolve().parents[2]


def _normal(x: Any) -> Any:
    """A value of either runtime in a form both give alike."""
    if isinstance(x, (lark.Tree, lalr_runtime.Tree)):
        return ("tree", x.data, [_normal(c) for c in x.children])
    if isinstance(x, (lark.Token, lalr_runtime.Token)):
        return ("token", x.type, str(x), x.start_pos, x.line, x.column, x.end_line, x.end_column, x.end_pos)
    if isinstance(x, (list, tuple)):
        return [_normal(c) for c in x]
    return x


def _outcome(parser: Any, text: str, start: str | None) -> tuple:
    try:
        return ("parsed", _normal(parser.parse(text, start) if start else parser.parse(text)))
    except (lark.UnexpectedCharacters, lalr_runtime.UnexpectedCharacters) as e:
        return ("characters", e.line, e.column, e.pos_in_stream, e.char, sorted(e.allowed), _normal(e.token_history))
    except (lark.UnexpectedToken, lalr_runtime.UnexpectedToken) as e:
        return ("token", e.line, e.column, e.pos_in_stream, _normal(e.token), sorted(e.expected), e.token_history)


class _LarkNames(lark.Transformer):
    def ATOM(self, token: Any) -> tuple:
        return ("atom", str(token))


class _RuntimeNames(lalr_runtime.Transformer):
    def ATOM(self, token: Any) -> tuple:
        return ("atom", str(token))


def _mutated(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(chars) + 1)
        kind = rng.randrange(3)
        if kind == 0 and i < len(chars):
            del chars[i]
        elif kind == 1:
            chars.insert(i, rng.choice(' \t\n{}[](),=->@#:"\\/a0_.'))
        elif i < len(chars):
            chars[i] = rng.choice(' \t\n{}[](),=->@#:"\\/a0_.')
    return "".join(chars)


def _cases(rng: random.Random) -> list[tuple[str, str | None]]:
    """Whole programs (layer 1) and their operator texts, tails and literal bodies (layer 2), each
    as written and mutated."""
    cases: list[tuple[str, str | None]] = []
    for path in sorted([*(ROOT / "test").rglob("*.mgx"), *(ROOT / "examples").glob("*.mgx")]):
        text = path.read_text()
        if len(text) > 4000:
            continue
        cases += [(text, None), (_mutated(text, rng), None), (_mutated(text, rng), None)]
        for line in text.splitlines()[:12]:
            if " = " not in line:
                continue
            rest = line.split(" = ", 1)[1]
            op = rest.split("(")[0].split(" -> ")[0]
            pieces = [(op, "op_text"), (rest[rest.find(" -> ") :] if " -> " in rest else "", "tail")]
            if op.startswith("@literal"):
                pieces.append((op[8:], "literal_body"))
            for piece, start in pieces:
                cases += [(piece, start), (_mutated(piece, rng), start)]
    return cases


def test_the_grammar_parses_as_with_lark() -> None:
    module = lalr.runtime()
    if module.__name__ == "lark":
        pytest.skip("no parser cache here: lark itself is the runtime")
    grammar = lalr.grammar_text()
    with_lark = {
        None: lark.Lark(grammar, **lalr.PROGRAM_OPTIONS, transformer=_LarkNames()),
        "value": lark.Lark(grammar, **lalr.VALUE_OPTIONS, transformer=_LarkNames()),
    }
    with_runtime = {
        None: lalr_runtime.Parser(module.PROGRAM, _RuntimeNames()),
        "value": lalr_runtime.Parser(module.VALUE, _RuntimeNames()),
    }
    cases = _cases(random.Random(8))
    assert len(cases) > 1500
    kinds = set()
    for text, start in cases:
        layer = None if start is None else "value"
        expected = _outcome(with_lark[layer], text, start)
        assert _outcome(with_runtime[layer], text, start) == expected, (text, start)
        kinds.add(expected[0])
    assert kinds == {"parsed", "characters", "token"}


# keywords that NAME also matches (lark's contextual lexer retypes them), an inlined rule, a `?rule`,
# aliases, `[optional]` placeholders, and rules without a transformer method (trees)
_TOY = r"""
start: _statement+
_statement: assignment | condition
assignment: NAME "=" expression [UNIT] ";"
condition: "if" expression "then" _statement ["else" _statement]
?expression: term | expression "+" term -> plus
?term: NAME | NUMBER | "(" expression ")" -> group
UNIT: /[a-z]+s\b/
NAME: /[a-z_]+/
NUMBER: /\d+/
SPACE: / +/
"""

_TOY_TEXTS = [
    "x=1;",
    "x=1+2+y;",
    "ifx=1;",
    "if(x)then(y)=2;",
    "if(x)theny=2;",
    "if(x)theny=2;elsez=3;",
    "x=(1+2)+3;",
    "x=1;if(y)thenz=4;",
    "x=if;",
    "x=1secs;",
    "x=1 secs;",
    "x==1;",
    "x=1",
    "",
    "x=1;;",
    "x=#;",
    "if(x)then",
    "then=1;",
]


@pytest.mark.parametrize("text", _TOY_TEXTS)
def test_a_grammar_with_keywords_parses_as_with_lark(text: str) -> None:
    grammar = _TOY  # SPACE is not ignored: a space is an error
    options = {"parser": "lalr", "lexer": "contextual", "maybe_placeholders": True}

    class LarkNumbers(lark.Transformer):
        def NUMBER(self, token: Any) -> int:
            return int(token)

        def assignment(self, children: list) -> tuple:
            return ("assign", *children)

    class RuntimeNumbers(lalr_runtime.Transformer):
        def NUMBER(self, token: Any) -> int:
            return int(token)

        def assignment(self, children: list) -> tuple:
            return ("assign", *children)

    table = lalr._table(lark.Lark(grammar, **options))
    assert table is not None
    assert any(unless for *_, unless in table["lexers"])  # "if" and "then" are also NAMEs
    expected = _outcome(lark.Lark(grammar, **options, transformer=LarkNumbers()), text, None)
    assert _outcome(lalr_runtime.Parser(table, RuntimeNumbers()), text, None) == expected


def test_a_grammar_that_ignores_terminals_is_left_to_lark() -> None:
    grammar = _TOY + "%ignore SPACE\n"
    assert lalr._table(lark.Lark(grammar, parser="lalr", lexer="contextual", maybe_placeholders=True)) is None


def test_tokens_trees_and_errors_read_as_lark_s() -> None:
    token = lalr_runtime.Token("ATOM", "x", 0, 1, 1)
    assert repr(token) == repr(lark.Token("ATOM", "x")) == "Token('ATOM', 'x')"
    assert token == "x" and hash(token) == hash("x")
    assert (token == lalr_runtime.Token("OP", "x")) is (lark.Token("ATOM", "x") == lark.Token("OP", "x")) is False
    assert pickle.loads(pickle.dumps(token)).type == "ATOM"
    tree = lalr_runtime.Tree("body", [token])
    assert repr(tree) == "Tree('body', [Token('ATOM', 'x')])" and tree == lalr_runtime.Tree("body", ["x"])
    parser = lalr_runtime.Parser(lalr.runtime().VALUE, _RuntimeNames()) if lalr.runtime() is not lark else None
    if parser is None:
        pytest.skip("no parser cache here: lark itself is the runtime")
    with pytest.raises(lalr_runtime.UnexpectedToken, match=r"Unexpected token Token\('\$END', ''\) at line 1"):
        parser.parse("a[", "op_text")
    with pytest.raises(lalr_runtime.UnexpectedCharacters, match=r"No terminal matches '\n' .* at line 1 col 1"):
        parser.parse("\n", "op_text")
