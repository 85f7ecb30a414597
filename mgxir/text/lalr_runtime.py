"""Runs the grammar's LALR(1) tables as lark does, without importing lark.

`mgxir.text.lalr` has lark build the grammar's two parsers once per grammar and lark version and
writes what they consist of (parse table, rules with their child filters, the contextual lexer's
terminal order in each state) into a cached module as plain data. `Parser` runs that data as lark's
LALR parser with its contextual lexer and an inline transformer does (`lark.parsers.lalr_parser`,
`lark.lexer.ContextualLexer`, `lark.parse_tree_builder` with `maybe_placeholders`): the same tokens,
the same transformer calls, and the same exceptions with the same fields. It covers what mgxir's
grammar and parsers use, and `mgxir.text.lalr` refuses to write tables that need more (ignored
terminals, lexer callbacks, flags on string terminals), using lark itself instead.

A table is a dict of builtins (what `marshal` can hold):
- "starts": start rule -> (start state, end state)
- "actions": per state, symbol -> action: a state to shift to (>= 0) or ~rule (< 0) to reduce by
- "rules": per rule, (origin, callback name, length, wrappers); a wrapper is () (expand a single
  child) or (to_include, append_none) (lark's ChildFilterLALR: (index, to_expand, add_none) each)
- "terminals": terminal -> its regular expression
- "lexers": per lexer, (terminals in the order tried, terminals it allows, terminals that may hold
  a newline, {regex terminal: ((string terminal, string), ...)} for strings the regex also matches)
- "state_lexers": per state, its lexer; "root_lexer": the lexer of all terminals
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any


class Token(str):
    """A terminal's text, with its type and place (lark's `Token`)."""

    __slots__ = ("column", "end_column", "end_line", "end_pos", "line", "start_pos", "type", "value")

    def __new__(
        cls,
        type: str,
        value: Any,
        start_pos: int | None = None,
        line: int | None = None,
        column: int | None = None,
        end_line: int | None = None,
        end_column: int | None = None,
        end_pos: int | None = None,
    ) -> Token:
        token = super().__new__(cls, value)
        token.type = type
        token.start_pos = start_pos
        token.value = value
        token.line = line
        token.column = column
        token.end_line = end_line
        token.end_column = end_column
        token.end_pos = end_pos
        return token

    def __reduce__(self) -> tuple:
        return (self.__class__, (self.type, self.value, self.start_pos, self.line, self.column))

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {self.value!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Token) and self.type != other.type:
            return False
        return str.__eq__(self, other)

    __hash__ = str.__hash__


class Tree:
    """A rule's result where the transformer has no method for it (lark's `Tree`)."""

    __slots__ = ("children", "data")

    def __init__(self, data: str, children: list):
        self.data = data
        self.children = children

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        return self.data == other.data and self.children == other.children

    __hash__ = None  # type: ignore[assignment]


class Transformer:
    """Base of the transformers `Parser` calls: a method named after a rule gets the rule's children
    as it is reduced, one named after a terminal gets each token of it as it is shifted; other rules
    give a `Tree` (`__default__`)."""

    def __init__(self, visit_tokens: bool = True) -> None:
        self.__visit_tokens__ = visit_tokens

    def __default__(self, data: str, children: list, meta: Any) -> Any:
        return Tree(data, children)


class UnexpectedInput(Exception):
    """A syntax error (lark's `UnexpectedInput`); `state` is the parser's state number."""

    line: int
    column: int
    pos_in_stream: int | None = None
    state: Any = None


class UnexpectedCharacters(UnexpectedInput):
    """No terminal the parser accepts here matches the text at `line`, `column`."""

    def __init__(
        self,
        seq: str,
        lex_pos: int,
        line: int,
        column: int,
        allowed: set[str],
        state: Any = None,
        token_history: list | None = None,
    ):
        super().__init__()
        self.line = line
        self.column = column
        self.pos_in_stream = lex_pos
        self.state = state
        self.allowed = allowed
        self.considered_tokens = None
        self.considered_rules = None
        self.token_history = token_history
        self.char = seq[lex_pos]

    def __str__(self) -> str:
        return (
            f"No terminal matches '{self.char}' in the current parser context, at line {self.line} col {self.column}"
            f" (expected one of {sorted(self.allowed)})"
        )


class UnexpectedToken(UnexpectedInput):
    """The parser accepts none of `expected` here, but `token`."""

    def __init__(self, token: Token, expected: set[str], state: Any = None, token_history: list | None = None):
        super().__init__()
        self.line = getattr(token, "line", "?")
        self.column = getattr(token, "column", "?")
        self.pos_in_stream = getattr(token, "start_pos", None)
        self.state = state
        self.token = token
        self.expected = expected
        self.considered_rules = None
        self.token_history = token_history

    def __str__(self) -> str:
        return (
            f"Unexpected token {self.token!r} at line {self.line}, column {self.column}"
            f" (expected one of {sorted(self.expected)})"
        )


class _Lexer:
    """One state's lexer: its terminals in the order lark's union regex tries them."""

    def __init__(self, spec: tuple, patterns: dict[str, re.Pattern]):
        order, allowed, newline, unless = spec
        self.order = tuple((name, patterns[name].match) for name in order)
        self.allowed = set(allowed) or {"<END-OF-FILE>"}
        self.newline = frozenset(newline)
        self.unless = {name: dict((text, string) for string, text in pairs) for name, pairs in unless.items()}


class _Position:
    """Where the lexer is (lark's `LineCounter` and `LexerState`)."""

    __slots__ = ("column", "last_token", "line", "line_start", "pos")

    def __init__(self) -> None:
        self.pos = 0
        self.line = 1
        self.column = 1
        self.line_start = 0
        self.last_token: Token | None = None


def _next_token(lexer: _Lexer, text: str, at: _Position, state: int) -> Token:
    """The token at `at` (which moves past it), as lark's `BasicLexer.next_token` reads it."""
    pos = at.pos
    for name, match in lexer.order:  # noqa: B007 - the name of the terminal that matched
        found = match(text, pos)
        if found is not None:
            break
    else:
        history = [at.last_token] if at.last_token else None
        raise UnexpectedCharacters(text, pos, at.line, at.column, set(lexer.allowed), state, history)
    value = found.group(0)
    token = Token(name, value, pos, at.line, at.column)
    if name in lexer.newline:
        newlines = value.count("\n")
        if newlines:
            at.line += newlines
            at.line_start = pos + value.rindex("\n") + 1
    at.pos = pos + len(value)
    at.column = at.pos - at.line_start + 1
    token.end_line = at.line
    token.end_column = at.column
    token.end_pos = at.pos
    strings = lexer.unless.get(name)
    if strings is not None and value in strings:
        token.type = strings[value]
    at.last_token = token
    return token


def _expand_single_child(callback: Callable) -> Callable:
    def call(children: list) -> Any:
        return children[0] if len(children) == 1 else callback(children)

    return call


def _child_filter(callback: Callable, to_include: tuple, append_none: int) -> Callable:
    def call(children: list) -> Any:
        filtered: list = []
        for i, to_expand, add_none in to_include:
            if add_none:
                filtered += [None] * add_none
            if to_expand:
                if filtered:
                    filtered += children[i].children
                else:  # lark reuses the inlined rule's list
                    filtered = children[i].children
            else:
                filtered.append(children[i])
        if append_none:
            filtered += [None] * append_none
        return callback(filtered)

    return call


class Parser:
    """An LALR(1) parser of one table, calling `transformer` as it shifts and reduces."""

    def __init__(self, table: dict, transformer: object):
        self._starts: dict[str, tuple[int, int]] = table["starts"]
        self._actions: tuple[dict[str, int], ...] = table["actions"]
        self.terminals: dict[str, str] = table["terminals"]
        patterns = {name: re.compile(regexp) for name, regexp in self.terminals.items()}
        lexers = [_Lexer(spec, patterns) for spec in table["lexers"]]
        self._state_lexers = tuple(lexers[i] for i in table["state_lexers"])
        self._root_lexer = lexers[table["root_lexer"]]
        self._rules = table["rules"]
        default = getattr(transformer, "__default__", None)
        self._callbacks = []
        for _, name, _, wrappers in self._rules:
            callback = getattr(transformer, name, None)
            if callback is None:
                callback = _default_callback(default, name)
            for wrapper in wrappers:
                callback = _child_filter(callback, *wrapper) if wrapper else _expand_single_child(callback)
            self._callbacks.append(callback)
        self._token_callbacks = {
            name: getattr(transformer, name) for name in self.terminals if getattr(transformer, name, None) is not None
        }

    def parse(self, text: str, start: str | None = None) -> Any:
        """The transformer's result for `text` read from the rule `start` (the only one by default)."""
        if start is None:
            (start,) = self._starts
        start_state, end_state = self._starts[start]
        states = [start_state]
        values: list = []
        at = _Position()
        token = None
        end = len(text)
        while at.pos < end:
            token = self._lex(text, at, states[-1])
            self._feed(token, states, values, end_state, False)
        if token:
            end_token = Token(
                "$END", "", token.start_pos, token.line, token.column, token.end_line, token.end_column, token.end_pos
            )
        else:
            end_token = Token("$END", "", 0, 1, 1)
        return self._feed(end_token, states, values, end_state, True)

    def _lex(self, text: str, at: _Position, state: int) -> Token:
        try:
            return _next_token(self._state_lexers[state], text, at, state)
        except UnexpectedCharacters as e:
            # as lark's ContextualLexer: text that another state's terminal matches is an unexpected token
            last_token = at.last_token
            try:
                token = _next_token(self._root_lexer, text, at, state)
            except UnexpectedCharacters:
                raise e from None
            raise UnexpectedToken(token, e.allowed, state, [last_token]) from None

    def _feed(self, token: Token, states: list[int], values: list, end_state: int, is_end: bool) -> Any:
        actions = self._actions
        while True:
            state = states[-1]
            action = actions[state].get(token.type)
            if action is None:
                raise UnexpectedToken(token, {s for s in actions[state] if s.isupper()}, state)
            if action >= 0:
                assert not is_end
                states.append(action)
                callback = self._token_callbacks.get(token.type)
                values.append(token if callback is None else callback(token))
                return None
            rule = ~action
            origin, _, length, _ = self._rules[rule]
            if length:
                children = values[-length:]
                del states[-length:]
                del values[-length:]
            else:
                children = []
            value = self._callbacks[rule](children)
            states.append(actions[states[-1]][origin])
            values.append(value)
            if is_end and states[-1] == end_state:
                return values[-1]


def _default_callback(default: Callable | None, name: str) -> Callable:
    if default is None:
        return lambda children: Tree(name, children)
    return lambda children: default(name, children, None)
