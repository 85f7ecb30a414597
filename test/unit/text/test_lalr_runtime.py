"""`mgxir.text.lalr_runtime` runs lark's tables as lark does: the same results, tokens and errors
(class, place, expected terminals) for the grammar's texts, mutated copies of them, and a small
grammar with what mgx.lark does not use (keywords that a name terminal also matches)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import marshal
import os
import pickle
import random
import re
import struct
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lark
import pytest

from mgxir.text import lalr, lalr_runtime

ROOT = Path(__file__).resolve().parents[3]


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


def _cases(rng: random.Random, paths: list[Path] | None = None) -> list[tuple[str, str | None]]:
    """Whole programs (layer 1) and their operator texts, tails and literal bodies (layer 2), each
    as written and mutated."""
    cases: list[tuple[str, str | None]] = []
    if paths is None:
        paths = sorted([*(ROOT / "test").rglob("*.mgx"), *(ROOT / "examples").glob("*.mgx")])
    for path in paths:
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
    cases = _cases(random.Random(8))
    assert len(cases) > 1500
    assert _parses_as_lark(module.PROGRAM, module.VALUE, cases) == {"parsed", "characters", "token"}


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
    # lark's Transformer flag, on by default as in lark
    assert lalr_runtime.Transformer().__visit_tokens__ is lark.Transformer().__visit_tokens__ is True
    assert lalr_runtime.Transformer(visit_tokens=False).__visit_tokens__ is False
    tree = lalr_runtime.Tree("body", [token])
    assert repr(tree) == "Tree('body', [Token('ATOM', 'x')])" and tree == lalr_runtime.Tree("body", ["x"])
    parser = lalr_runtime.Parser(lalr.runtime().VALUE, _RuntimeNames()) if lalr.runtime() is not lark else None
    if parser is None:
        pytest.skip("no parser cache here: lark itself is the runtime")
    with pytest.raises(lalr_runtime.UnexpectedToken, match=r"Unexpected token Token\('\$END', ''\) at line 1"):
        parser.parse("a[", "op_text")
    with pytest.raises(lalr_runtime.UnexpectedCharacters, match=r"No terminal matches '\n' .* at line 1 col 1"):
        parser.parse("\n", "op_text")


def _parses_as_lark(program: dict, value: dict, cases: list[tuple[str, str | None]]) -> set[str]:
    """Checks that the tables give lark's outcome for each case; returns the kinds of outcome seen."""
    grammar = lalr.grammar_text()
    with_lark = {
        None: lark.Lark(grammar, **lalr.PROGRAM_OPTIONS, transformer=_LarkNames()),
        "value": lark.Lark(grammar, **lalr.VALUE_OPTIONS, transformer=_LarkNames()),
    }
    with_runtime = {
        None: lalr_runtime.Parser(program, _RuntimeNames()),
        "value": lalr_runtime.Parser(value, _RuntimeNames()),
    }
    kinds = set()
    for text, start in cases:
        layer = None if start is None else "value"
        expected = _outcome(with_lark[layer], text, start)
        assert _outcome(with_runtime[layer], text, start) == expected, (text, start)
        kinds.add(expected[0])
    return kinds


@pytest.fixture
def cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """$MGXIR_PARSER_CACHE set to a folder that does not exist yet (nor does its parent), and the
    current directory a scratch one; the cached module's entry in sys.modules is restored after."""
    folder = tmp_path / "cache" / "parsers"
    monkeypatch.setenv(lalr.CACHE_ENV, str(folder))
    monkeypatch.chdir(tmp_path)
    saved = sys.modules.get(lalr._MODULE_NAME)
    yield folder
    if saved is None:
        sys.modules.pop(lalr._MODULE_NAME, None)
    else:
        sys.modules[lalr._MODULE_NAME] = saved


def _expected_path(folder: Path) -> Path:
    grammar, version = lalr.grammar_text(), lark.__version__
    checksum = zlib.crc32(lalr._source_key(grammar, version).encode())
    return folder / f"grammar_parsers_{version}_{checksum:08x}.py"


def _written(path: Path) -> set[str]:
    """What the cache folder holds once the module at `path` is written: it and its bytecode's folder."""
    compiled = Path(importlib.util.cache_from_source(str(path)))
    return {path.name, compiled.parent.name} if compiled.parent.parent == path.parent else {path.name}


def test_a_missing_cache_is_written_once_with_its_bytecode_and_parses_as_lark(cache_folder: Path) -> None:
    module = lalr.runtime.__wrapped__()  # not the session's cached runtime: this one writes the tables
    assert module.__name__ == lalr._MODULE_NAME and sys.modules[lalr._MODULE_NAME] is module
    path = _expected_path(cache_folder)
    assert module.__file__ == str(path)
    compiled = Path(importlib.util.cache_from_source(str(path)))
    # nothing else is left in the folder (no temporary files) and nothing in the current directory
    assert set(os.listdir(cache_folder)) == _written(path)
    assert os.listdir(compiled.parent) == [compiled.name]
    assert os.listdir(cache_folder.parent.parent) == ["cache"]
    version = lark.__version__
    assert path.read_text().splitlines()[:3] == [
        f"# Written by mgxir/text/lalr.py from grammar/mgx.lark with lark {version}: run by",
        "# mgxir/text/lalr_runtime.py",
        "from mgxir.text.lalr_runtime import Parser, Token, Transformer, Tree, UnexpectedCharacters, UnexpectedInput,"
        " UnexpectedToken",
    ]
    assert module.SOURCE_KEY == lalr._source_key(lalr.grammar_text(), version)
    for table, options in ((module.PROGRAM, lalr.PROGRAM_OPTIONS), (module.VALUE, lalr.VALUE_OPTIONS)):
        # a lexer of lark's that several states share is written once
        built = lark.Lark(lalr.grammar_text(), **options).parser.lexer
        assert len(table["lexers"]) == len({id(x) for x in [*built.lexers.values(), built.root_lexer]})
    assert (module.Parser, module.Token, module.Transformer, module.Tree) == (
        lalr_runtime.Parser,
        lalr_runtime.Token,
        lalr_runtime.Transformer,
        lalr_runtime.Tree,
    )
    # the bytecode is what an import of the module uses: made for this source (time, size), named after it
    data, stat = compiled.read_bytes(), path.stat()
    assert data[:4] == importlib.util.MAGIC_NUMBER
    flags = struct.unpack("<I", data[4:8])[0]
    if flags == 0:
        assert struct.unpack("<II", data[8:16]) == (int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF)
    else:  # SOURCE_DATE_EPOCH set: py_compile checks a hash of the source instead
        assert data[8:16] == importlib.util.source_hash(path.read_bytes())
    assert marshal.loads(data[16:]).co_filename == str(path)
    paths = sorted([*(ROOT / "test" / "text").glob("*.mgx"), *(ROOT / "examples").glob("*.mgx")])
    cases = _cases(random.Random(3), paths)
    assert _parses_as_lark(module.PROGRAM, module.VALUE, cases) == {"parsed", "characters", "token"}
    # a second run reads the module written by the first
    again = lalr.runtime.__wrapped__()
    assert again.PROGRAM == module.PROGRAM and again.VALUE == module.VALUE
    assert path.stat().st_mtime_ns == stat.st_mtime_ns


def test_parsers_come_from_the_cached_module(cache_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = lalr.runtime.__wrapped__()
    monkeypatch.setattr(lalr, "runtime", lambda: module)
    program = lalr.program_parser(_RuntimeNames())
    assert isinstance(program, lalr_runtime.Parser)
    text = "@0 = @literal{1} -> float_type, {1}, {0}\n"
    assert program.parse(text) == lalr_runtime.Parser(module.PROGRAM, _RuntimeNames()).parse(text)
    op_text = lalr.value_parser(_RuntimeNames()).parse("add", "op_text")
    assert (op_text.data, op_text.children) == ("op_text", [("atom", "add"), None])
    assert lalr.program_terminals() == module.PROGRAM["terminals"]


@pytest.mark.parametrize("stale", ["SOURCE_KEY = 'made from another grammar'\n", "PROGRAM = None\n"])
def test_a_cached_module_of_another_grammar_or_layout_is_replaced(cache_folder: Path, stale: str) -> None:
    path = _expected_path(cache_folder)
    cache_folder.mkdir(parents=True)
    path.write_text(stale)
    module = lalr.runtime.__wrapped__()
    assert module.__name__ == lalr._MODULE_NAME
    assert module.SOURCE_KEY == lalr._source_key(lalr.grammar_text(), lark.__version__)
    assert path.read_text() != stale and set(os.listdir(cache_folder)) == _written(path)


def test_a_damaged_or_unwritable_cache_leaves_lark_as_the_runtime(
    cache_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _expected_path(cache_folder)
    cache_folder.mkdir(parents=True)
    path.write_text("PROGRAM = (\n")
    assert lalr.runtime.__wrapped__() is lark
    assert lalr._MODULE_NAME not in sys.modules
    blocked = cache_folder.parent / "a-file"
    blocked.write_text("")
    monkeypatch.setenv(lalr.CACHE_ENV, str(blocked / "parsers"))
    assert lalr.runtime.__wrapped__() is lark
    monkeypatch.setenv(lalr.CACHE_ENV, "off")
    assert lalr.runtime.__wrapped__() is lark


def test_a_grammar_that_needs_lark_is_not_written(tmp_path: Path) -> None:
    target = tmp_path / "parsers.py"
    with pytest.raises(ValueError, match=r"^the grammar needs lark itself$"):
        lalr._write_module(str(target), lalr.grammar_text() + '\n%ignore "\\f"\n', lark.__version__)
    assert os.listdir(tmp_path) == []


def test_with_the_cache_off_lark_parses_with_its_own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lalr, "runtime", lambda: lark)
    grammar = lalr.grammar_text()
    text = (ROOT / "examples").glob("*.mgx").__next__().read_text()
    built = {}
    for name, build in [
        ("terminals", lalr.program_terminals),
        ("program", lambda: lalr.program_parser(_LarkDefault())),
        ("value", lambda: lalr.value_parser(_LarkNames())),
    ]:
        # lark's cache (`cache=True`): one file per grammar and options in the temporary folder
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / name))
        (tmp_path / name).mkdir()
        built[name] = build()
        assert len(list((tmp_path / name).glob(".lark_cache_*.tmp"))) == 1, name
    assert built["terminals"] == {
        t.name: t.pattern.to_regexp() for t in lark.Lark(grammar, **lalr.PROGRAM_OPTIONS).terminals
    }
    expected = lark.Lark(grammar, **lalr.PROGRAM_OPTIONS, transformer=_LarkDefault())
    parsed = built["program"].parse(text)
    assert parsed.data == "default program" and _normal(parsed) == _normal(expected.parse(text))
    op_text = built["value"].parse("add", "op_text")
    assert (op_text.data, op_text.children) == ("op_text", [("atom", "add"), None])


def test_the_cache_folder_is_the_environment_s_or_the_user_s(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(lalr.CACHE_ENV, str(tmp_path / "here"))
    assert lalr.cache_dir() == str(tmp_path / "here")
    monkeypatch.delenv(lalr.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert lalr.cache_dir() == str(tmp_path / "mgxir" / "parsers")


def test_the_cached_module_is_named_after_its_grammar_lark_version_and_options(tmp_path: Path) -> None:
    grammar, version = lalr.grammar_text(), lark.__version__
    assert lalr.cached_module_path(tmp_path, grammar, version) == str(_expected_path(tmp_path))
    assert lalr.cached_module_path(tmp_path, grammar + "\n", version) != str(_expected_path(tmp_path))
    assert lalr.cached_module_path(tmp_path, grammar, "0.0") != str(_expected_path(tmp_path)).replace(version, "0.0")


def _fake_find_spec(monkeypatch: pytest.MonkeyPatch) -> dict[str, importlib.machinery.ModuleSpec | None]:
    """importlib.util.find_spec answering from the returned dict for the names put in it."""
    find_spec = importlib.util.find_spec
    fake: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def answer(name: str, *rest: Any) -> importlib.machinery.ModuleSpec | None:
        return fake[name] if name in fake else find_spec(name, *rest)

    monkeypatch.setattr(importlib.util, "find_spec", answer)
    return fake


def test_lark_s_version_is_read_from_its_source(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert lalr.lark_version() == lark.__version__
    fake = _fake_find_spec(monkeypatch)
    init = tmp_path / "__init__.py"
    init.write_text("# a lark\n__version__ = '9.8.7'\n")
    fake["lark"] = importlib.machinery.ModuleSpec("lark", None, origin=str(init))
    assert lalr.lark_version() == "9.8.7"
    init.write_text('__version__: str = "1.2"\n')
    assert lalr.lark_version() == "1.2"
    init.write_text("version = '1'\n")
    with pytest.raises(RuntimeError, match=f"^no __version__ in {re.escape(str(init))}$"):
        lalr.lark_version()
    for spec in [None, importlib.machinery.ModuleSpec("lark", None, origin=None)]:
        fake["lark"] = spec
        with pytest.raises(ModuleNotFoundError, match=r"^lark is not installed$"):
            lalr.lark_version()


def _grammar_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, Path, Path]:
    """A fake installed `mgxir.grammar` folder and a fake checkout around lalr.py, neither with a grammar."""
    installed, checkout = tmp_path / "site" / "grammar", tmp_path / "checkout"
    installed.mkdir(parents=True)
    (checkout / "grammar").mkdir(parents=True)
    monkeypatch.setattr(lalr, "__file__", str(checkout / "mgxir" / "text" / "lalr.py"))
    monkeypatch.chdir(tmp_path)
    fake = _fake_find_spec(monkeypatch)
    return fake, installed, checkout / "grammar"


def test_the_installed_grammar_is_read_before_the_checkout_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake, installed, checkout = _grammar_places(tmp_path, monkeypatch)
    (installed / "mgx.lark").write_text("installed")
    (checkout / "mgx.lark").write_text("checkout")
    spec = importlib.machinery.ModuleSpec("mgxir.grammar", None, is_package=True)
    spec.submodule_search_locations = [str(installed)]
    fake["mgxir.grammar"] = spec
    assert lalr.grammar_text.__wrapped__() == "installed"
    (installed / "mgx.lark").unlink()
    assert lalr.grammar_text.__wrapped__() == "checkout"
    spec.submodule_search_locations = None
    assert lalr.grammar_text.__wrapped__() == "checkout"
    fake["mgxir.grammar"] = None
    assert lalr.grammar_text.__wrapped__() == "checkout"
    (checkout / "mgx.lark").unlink()
    (tmp_path / "grammar").mkdir()
    (tmp_path / "grammar" / "mgx.lark").write_text("the current directory's")  # never read
    with pytest.raises(FileNotFoundError, match=r"^mgxir's grammar \(mgx.lark\) is missing from the installation$"):
        lalr.grammar_text.__wrapped__()


# each of these needs what lalr_runtime does not do: lark itself reads them
class _PassThrough(lark.lark.PostLex):
    always_accept = ()

    def process(self, stream: Iterator) -> Iterator:
        return stream


@pytest.mark.parametrize(
    ("extra", "options"),
    [
        ("", {"postlex": _PassThrough()}),
        ("", {"g_regex_flags": 2}),  # re.IGNORECASE
        ("", {"use_bytes": True}),
        ("", {"lexer_callbacks": {"NAME": lambda token: token}}),
        ("%ignore SPACE\n", {}),
        ("", {"propagate_positions": True}),
    ],
    ids=["postlex", "regex-flags", "bytes", "lexer-callbacks", "ignore", "positions"],
)
def test_lexer_features_lalr_runtime_lacks_are_left_to_lark(extra: str, options: dict) -> None:
    parser = lark.Lark(_TOY + extra, parser="lalr", lexer="contextual", maybe_placeholders=True, **options)
    assert lalr._table(parser) is None


def test_a_case_insensitive_keyword_that_a_name_also_matches_is_left_to_lark() -> None:
    grammar = 'start: "if"i NAME\nNAME: /[a-z]+/i\n'
    assert lalr._table(lark.Lark(grammar, parser="lalr", lexer="contextual", maybe_placeholders=True)) is None


# a `?rule` whose second expansion keeps several children (no alias): a Tree, or the transformer's method
_SUMS = r"""
start: sum (";" sum)*
?sum: NUMBER | NUMBER "+" NUMBER | "-" NUMBER
NUMBER: /\d+/
"""


class _LarkDefault(lark.Transformer):
    def __default__(self, data: Any, children: list, meta: Any) -> lark.Tree:
        return lark.Tree(f"default {data}", children)


class _RuntimeDefault(lalr_runtime.Transformer):
    def __default__(self, data: Any, children: list, meta: Any) -> lalr_runtime.Tree:
        return lalr_runtime.Tree(f"default {data}", children)


class _Plain:
    """A transformer that is no Transformer: rules without a method give trees."""

    def NUMBER(self, token: Any) -> int:
        return int(token)


@pytest.mark.parametrize("grammar", [_TOY, _SUMS], ids=["keywords", "sums"])
@pytest.mark.parametrize("kind", ["default", "plain", "trees"])
def test_rules_without_a_method_call_default_or_give_trees_as_with_lark(grammar: str, kind: str) -> None:
    options = {"parser": "lalr", "lexer": "contextual", "maybe_placeholders": True}
    transformers = {
        "default": (_LarkDefault(), _RuntimeDefault()),
        "plain": (_Plain(), _Plain()),
        "trees": (lark.Transformer(), lalr_runtime.Transformer()),
    }
    with_lark, with_runtime = transformers[kind]
    table = lalr._table(lark.Lark(grammar, **options))
    assert table is not None
    texts = ["1;2+3;-4;5+6", "1+2", "7"] if grammar == _SUMS else _TOY_TEXTS[:8]
    for text in texts:
        expected = _outcome(lark.Lark(grammar, **options, transformer=with_lark), text, None)
        assert _outcome(lalr_runtime.Parser(table, with_runtime), text, None) == expected, text


def test_trees_are_equal_by_rule_and_children() -> None:
    tree = lalr_runtime.Tree("sum", [1, 2])
    assert tree == lalr_runtime.Tree("sum", [1, 2])
    assert tree != lalr_runtime.Tree("sum", [1, 3])
    assert tree != lalr_runtime.Tree("product", [1, 2])
    assert tree.__eq__(("sum", [1, 2])) is NotImplemented


def test_syntax_errors_carry_the_parser_state_and_lark_s_fields() -> None:
    module = lalr.runtime()
    if module.__name__ == "lark":
        pytest.skip("no parser cache here: lark itself is the runtime")
    actions = module.VALUE["actions"]
    parser = lalr_runtime.Parser(module.VALUE, _RuntimeNames())
    for text in ["a[", "a]"]:  # the end of input, and a token of another state (read by the root lexer)
        with pytest.raises(lalr_runtime.UnexpectedToken) as caught:
            parser.parse(text, "op_text")
        e = caught.value
        assert e.token.type not in actions[e.state]
        assert e.expected - {"$END"} == {s for s in actions[e.state] if s.isupper()} - {"$END"}
        assert e.considered_rules is None
        assert str(e) == (
            f"Unexpected token {e.token!r} at line 1, column {e.column} (expected one of {sorted(e.expected)})"
        )
    with pytest.raises(lalr_runtime.UnexpectedCharacters) as characters:
        parser.parse("\n", "op_text")
    assert str(characters.value).endswith(f"(expected one of {sorted(characters.value.allowed)})")
    assert characters.value.allowed


def test_an_error_at_a_plain_string_has_lark_s_unknown_place() -> None:
    ours, theirs = lalr_runtime.UnexpectedToken("x", {"A"}), lark.UnexpectedToken("x", {"A"})
    assert (ours.line, ours.column, ours.pos_in_stream) == (theirs.line, theirs.column, theirs.pos_in_stream)
    assert (ours.line, ours.column, ours.pos_in_stream) == ("?", "?", None)
