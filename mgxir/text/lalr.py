"""The grammar's two LALR parsers, without importing lark on every run.

Importing lark (its grammar compiler, Earley parser, logging, tempfile, hashlib) and loading the
grammar cost more than reading a small program, and lit runs the tools hundreds of times. `runtime()`
has lark build the parsers of `grammar/mgx.lark` once per grammar text and lark version and writes
their tables (parse table, rules, each state's lexer) as plain data into a module in a cache folder;
later runs import that module, and `mgxir.text.lalr_runtime` runs the tables as lark does.
`grammar/mgx.lark` stays the one definition of the syntax: the cached module is named after a
checksum of the grammar text, the lark version and the parser options, and holds them to be
compared on loading; any change writes a new one. Where no cache folder can be written, or the
grammar needs what `lalr_runtime` does not do, lark itself is the runtime. Either runtime has lark's
names (`Transformer`, `Token`, `UnexpectedInput`, ...); parsers come from `program_parser` and
`value_parser`, as `Lark(grammar, **options)` would build them.

The cache folder: `$MGXIR_PARSER_CACHE` (`off`: lark itself), else `$XDG_CACHE_HOME/mgxir/parsers`, else
`~/.cache/mgxir/parsers` (as the GPU target's kernel cache).
"""

from __future__ import annotations

import functools
import importlib.util
import io
import os
import re
import sys
import zlib
from types import ModuleType
from typing import Any

from mgxir.text.writer import user_cache_folder

# the layer-1 parser reads whole programs; the layer-2 parser reads operator texts, tails and
# literal bodies (grammar/mgx.lark says what the layers are)
PROGRAM_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "lexer": "contextual",
    "start": "program",
    "maybe_placeholders": True,
}
VALUE_OPTIONS: dict[str, Any] = {**PROGRAM_OPTIONS, "start": ["op_text", "tail", "literal_body"]}

# changes when what `_write_module` writes changes, so that older cached modules are not read
_LAYOUT = 3
_MODULE_NAME = "_mgxir_grammar_parsers"  # not under mgxir: coverage measures mgxir's own code only


@functools.cache
def grammar_text() -> str:
    """The grammar shipped inside the package (`mgxir.grammar`), or the checkout's `grammar/`."""
    # the package's folder, without importlib.resources (whose zip support costs more to import
    # than reading the file): mgxir is installed as files, never zipped
    spec = importlib.util.find_spec("mgxir.grammar")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    for folder in [*folders, os.path.join(checkout, "grammar")]:
        path = os.path.join(folder, "mgx.lark")
        if os.path.isfile(path):
            with open(path) as f:
                return f.read()
    raise FileNotFoundError("mgxir's grammar (mgx.lark) is missing from the installation")


CACHE_ENV = "MGXIR_PARSER_CACHE"  # a directory; "off": lark itself, no cached module


def cache_dir() -> str | None:
    return user_cache_folder(CACHE_ENV, "parsers")


def lark_version() -> str:
    """The installed lark's version, read from its `__init__.py` without importing it."""
    spec = importlib.util.find_spec("lark")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("lark is not installed")
    with open(spec.origin) as f:
        found = re.search(r"""^__version__\s*(?::\s*str\s*)?=\s*["']([^"']+)["']""", f.read(), re.M)
    if found is None:
        raise RuntimeError(f"no __version__ in {spec.origin}")
    return found.group(1)


def _source_key(grammar: str, version: str) -> str:
    """What the cached module is made from: the grammar, lark's version, the options, the layout."""
    return f"{grammar}\0{version}\0{PROGRAM_OPTIONS!r}\0{VALUE_OPTIONS!r}\0{_LAYOUT}"


def cached_module_path(folder: str | os.PathLike, grammar: str, version: str) -> str:
    checksum = zlib.crc32(_source_key(grammar, version).encode())
    return os.path.join(folder, f"grammar_parsers_{version}_{checksum:08x}.py")


def _write_module(module_path: str, grammar: str, version: str) -> None:
    """Writes the module of both parsers' tables and its bytecode, atomically."""
    import py_compile
    from pathlib import Path

    from lark import Lark

    path = Path(module_path)
    tables = {"PROGRAM": _table(Lark(grammar, **PROGRAM_OPTIONS)), "VALUE": _table(Lark(grammar, **VALUE_OPTIONS))}
    if any(table is None for table in tables.values()):
        raise ValueError("the grammar needs lark itself")
    text = io.StringIO()
    print(f"# Written by mgxir/text/lalr.py from grammar/mgx.lark with lark {version}: run by", file=text)
    print("# mgxir/text/lalr_runtime.py", file=text)
    names = "Parser, Token, Transformer, Tree, UnexpectedCharacters, UnexpectedInput, UnexpectedToken"
    print(f"from mgxir.text.lalr_runtime import {names}", file=text)
    for name, table in tables.items():
        print(f"{name} = {table!r}", file=text)
    print(f"SOURCE_KEY = {_source_key(grammar, version)!r}", file=text)
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
    # the bytecode too, so that a run with PYTHONDONTWRITEBYTECODE does not compile the tables each time
    compiled = Path(importlib.util.cache_from_source(str(path)))
    compiled_scratch = compiled.with_name(f"{compiled.stem}.{os.getpid()}.tmp")
    try:
        scratch.write_text(text.getvalue())
        py_compile.compile(str(scratch), cfile=str(compiled_scratch), dfile=str(path), doraise=True)
        # the bytecode records the source's mtime and size, which the rename keeps
        os.replace(compiled_scratch, compiled)
        os.replace(scratch, path)
    finally:
        scratch.unlink(missing_ok=True)
        compiled_scratch.unlink(missing_ok=True)


def _table(parser: Any) -> dict | None:
    """What `lalr_runtime.Parser` runs of a lark LALR parser (its docstring says the layout), or None
    where the parser uses what lalr_runtime does not do."""
    from functools import partial

    from lark.lexer import PatternStr
    from lark.parse_tree_builder import ChildFilterLALR, ChildFilterLALR_NoPlaceholders, ExpandSingleChild
    from lark.parsers.lalr_analysis import Shift

    frontend = parser.parser
    conf = frontend.lexer_conf
    if conf.ignore or conf.callbacks or conf.postlex or conf.g_regex_flags or conf.use_bytes or parser.options.regex:
        return None
    table = frontend.parser._parse_table
    if sorted(table.states) != list(range(len(table.states))):
        return None
    rules: dict[Any, int] = {}
    actions = []
    for state in range(len(table.states)):
        row = {}
        for symbol, (action, arg) in table.states[state].items():
            row[symbol] = arg if action is Shift else ~rules.setdefault(arg, len(rules))
        actions.append(row)
    chains = dict(parser._parse_tree_builder.rule_builders)
    rule_specs = []
    for rule in rules:  # in index order
        wrappers: list[tuple] = []
        for wrapper in chains[rule]:
            if wrapper is ExpandSingleChild:
                wrappers.append(())
            elif isinstance(wrapper, partial) and wrapper.func is ChildFilterLALR:
                to_include, append_none = wrapper.args
                wrappers.append((tuple(tuple(x) for x in to_include), append_none))
            elif isinstance(wrapper, partial) and wrapper.func is ChildFilterLALR_NoPlaceholders:
                wrappers.append((tuple((i, to_expand, 0) for i, to_expand in wrapper.args[0]), 0))
            else:
                return None
        name = rule.alias or rule.options.template_source or rule.origin.name
        rule_specs.append((rule.origin.name, name, len(rule.expansion), tuple(wrappers)))
    contextual = frontend.lexer
    lexers: dict[int, int] = {}
    lexer_specs = []
    for basic in [*contextual.lexers.values(), contextual.root_lexer]:
        if id(basic) in lexers:
            continue
        scanner = basic.scanner  # builds lark's scanner, with its choice of string terminals
        if basic.user_callbacks or basic.ignore_types:
            return None
        unless = {}
        for name, callback in basic.callback.items():
            strings = callback.scanner.terminals
            if any(not isinstance(t.pattern, PatternStr) or t.pattern.flags for t in strings):
                return None
            unless[name] = tuple((t.name, t.pattern.value) for t in strings)
        lexers[id(basic)] = len(lexer_specs)
        lexer_specs.append(
            (
                tuple(t.name for t in scanner.terminals),
                tuple(sorted(scanner.allowed_types)),
                tuple(sorted(basic.newline_types)),
                unless,
            )
        )
    return {
        "starts": {start: (table.start_states[start], table.end_states[start]) for start in table.start_states},
        "actions": tuple(actions),
        "rules": tuple(rule_specs),
        "terminals": {t.name: t.pattern.to_regexp() for t in parser.terminals},
        "lexers": tuple(lexer_specs),
        "state_lexers": tuple(lexers[id(contextual.lexers[state])] for state in range(len(actions))),
        "root_lexer": lexers[id(contextual.root_lexer)],
    }


def _import_module(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(_MODULE_NAME, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[_MODULE_NAME] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[_MODULE_NAME]
        raise
    return module


@functools.cache
def runtime() -> ModuleType:
    """The cached module of tables (written first where missing), or lark where none can be written."""
    folder = cache_dir()
    if folder is not None:
        grammar, version = grammar_text(), lark_version()
        path = cached_module_path(folder, grammar, version)
        try:
            module = _current_module(path, grammar, version)
            if module is None:
                _write_module(path, grammar, version)
                module = _current_module(path, grammar, version)
            if module is not None:
                return module
        except (OSError, EOFError, SyntaxError, ValueError, ImportError):  # a cache unwritable or damaged
            pass
    import lark

    return lark


def _current_module(path: str, grammar: str, version: str) -> ModuleType | None:
    """The module at `path`, if there is one made from this grammar, lark version and options."""
    if not os.path.isfile(path):
        return None
    module = _import_module(path)
    if getattr(module, "SOURCE_KEY", None) != _source_key(grammar, version):
        del sys.modules[_MODULE_NAME]
        return None
    return module


def program_parser(transformer: object) -> Any:
    """The layer-1 parser, calling `transformer`'s methods as it reduces (no parse tree)."""
    lark = runtime()
    if lark.__name__ == _MODULE_NAME:
        return lark.Parser(lark.PROGRAM, transformer)
    return lark.Lark(grammar_text(), **PROGRAM_OPTIONS, transformer=transformer, cache=True)


def value_parser(transformer: object) -> Any:
    """The layer-2 parser (start rules `op_text`, `tail`, `literal_body`)."""
    lark = runtime()
    if lark.__name__ == _MODULE_NAME:
        return lark.Parser(lark.VALUE, transformer)
    return lark.Lark(grammar_text(), **VALUE_OPTIONS, transformer=transformer, cache=True)


def program_terminals() -> dict[str, str]:
    """The layer-1 parser's terminals' regular expressions, by name (without building the parser)."""
    lark = runtime()
    if lark.__name__ == _MODULE_NAME:
        return lark.PROGRAM["terminals"]
    parser = lark.Lark(grammar_text(), **PROGRAM_OPTIONS, cache=True)
    return {t.name: t.pattern.to_regexp() for t in parser.terminals}
