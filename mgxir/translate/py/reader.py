"""`--from-py`: reads a MIGraphX `--py` reproducer and returns the program it builds, without
running it.

The script is parsed with `ast` and only MIGraphX's building API is evaluated (`script.py`):
`migraphx.program/shape/op/...`, the methods of programs, modules and arguments, `numpy.array`,
numbers, lists, dicts, names, `for` loops. Anything else (other imports, `def`, attribute walks
such as `().__class__`) is refused in one line at its line and column, before any of it runs.

The script may `import migraphx` or not (MIGraphX prints the body alone). The shapes MIGraphX
prints in comments (`# migraphx.shape(...)`) give the result shapes of instructions whose shape
cannot be computed (unknown operators, arguments defined outside an excerpt). With
`allow_undefined`, a script that starts mid-program is read: `p` and `m` are an implicit program
and its main module, `mNAME` its module NAME, and every `x_N`/`p_NAME` never assigned is a value
of unknown shape (with a warning).
"""

from __future__ import annotations

import linecache
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from mgxir.diagnostics import DiagnosticSink, Location, MgxError, check_allocation
from mgxir.ir.program import Program
from mgxir.text.parser import SourceText
from mgxir.translate.py import migraphx as api
from mgxir.translate.py import script
from mgxir.translate.py.migraphx import ReproError, Session, caller, declared_shape, run_in_session

# the bytes of syntax tree and values one byte of script may become (measured: about 40)
_TREE_BYTES_PER_SOURCE_BYTE = 64


def read_py_program(path: str | Path, sink: DiagnosticSink | None = None, allow_undefined: bool = False) -> Program:
    """Reads the script at `path` (`-` reads standard input) and returns the program it builds."""
    if str(path) == "-":
        source, filename = sys.stdin.read(), "<stdin>"
    else:
        try:
            source, filename = Path(path).read_text(), str(path)
        except OSError as e:
            raise MgxError(f"cannot read {path}: {e.strerror or e}") from None
        except UnicodeDecodeError:
            raise MgxError(f"{path} is not UTF-8 text") from None
    return program_from_script(source, filename, sink, allow_undefined)


def program_from_script(
    source: str, filename: str = "<python>", sink: DiagnosticSink | None = None, allow_undefined: bool = False
) -> Program:
    sink = sink if sink is not None else DiagnosticSink()
    source = _valid_module_variables(source)
    lines = source.split("\n")
    check_allocation(len(source) * _TREE_BYTES_PER_SOURCE_BYTE, f"reading the {len(source)}-character script")
    try:
        tree = script.parse(source, filename)
    except SyntaxError as e:
        line = e.lineno or 1
        text = lines[line - 1] if 0 < line <= len(lines) else None
        raise MgxError(f"invalid Python: {e.msg}", Location(filename, line, e.offset or 1), text) from None
    except script.Refused as e:
        raise _at(str(e), filename, e.line, e.column, lines) from None
    # the API reads comments and quotes lines through linecache
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    declared_shape.cache_clear()
    session = Session(allow_undefined, sink)
    program = run_in_session(session, lambda: _run(tree, filename, session, lines))
    program.source = SourceText(filename, source)  # type: ignore[attr-defined]
    return program


def _at(message: str, filename: str, line: int, column: int, lines: list[str]) -> MgxError:
    text = lines[line - 1] if 0 < line <= len(lines) else None
    return MgxError(message, Location(filename, line, column), text)


_CREATE_MODULE = re.compile(r'create_module\("((?:[^"\\]|\\.)*)"\)')


def _valid_module_variables(source: str) -> str:
    """MIGraphX's --py names a module's variable `m` + its name, which is no Python name when the
    module is `main:pointwise0`: such variables are renamed as MIGraphX names values (`:` as
    `_module_`, other characters as `_`)."""
    names = {m.group(1) for m in _CREATE_MODULE.finditer(source)}
    for name in sorted((n for n in names if not ("m" + n).isidentifier()), key=len, reverse=True):
        variable = "m" + re.sub(r"_+", "_", re.sub(r"\W", "_", name.replace(":", "_module_"), flags=re.ASCII))
        source = re.sub(r"(?<![\w\"])" + re.escape("m" + name) + r"(?![\w:@])", variable, source)
    return source


def _run(tree: Any, filename: str, session: Session, lines: list[str]) -> Program:
    def at_line(line: int) -> None:
        session.where = (filename, line)

    policy = script.Policy(
        SCRIPT_MODULES,
        SCRIPT_BUILTINS,
        api.script_attribute_allowed,
        at_line,
        SCRIPT_CALL_ERRORS,
    )
    names: dict[str, Any] = _ExcerptNames(session) if session.allow_undefined else {}
    evaluator = script.Evaluator(policy, names)
    try:
        evaluator.run(tree)
        session.where = None
        chosen = _chosen_program(names, session)
        return chosen.to_mgxir()
    except MgxError:
        raise
    except ReproError as e:
        raise session.error(str(e), session.where or (filename, 0)) from None
    except script.Refused as e:
        raise _at(str(e), filename, e.line, e.column, lines) from None
    except script.Undefined as e:
        message = str(e)
        if not session.allow_undefined:
            message += " (a value from outside the excerpt? --allow-undefined reads it as unknown)"
        raise session.error(message, (filename, e.line)) from None
    except script.CallFailed as e:
        if isinstance(e.error, ReproError):
            raise session.error(str(e.error), (filename, e.line)) from None
        raise session.error(f"{type(e.error).__name__}: {e.error}", (filename, e.line)) from None


# What a call of the building API raises for arguments of the wrong kind: it checks what MIGraphX's
# API checks and is duck-typed past that (`migraphx.op(5)` fails on `5.startswith`), as MIGraphX's
# Python bindings throw for them; the line of the call is what the user needs.
SCRIPT_CALL_ERRORS = (ReproError, TypeError, ValueError, ArithmeticError, AttributeError, LookupError)


def _chosen_program(names: dict[str, Any], session: Session) -> api.program:
    bound = dict.get(names, "p")
    if isinstance(bound, api.program):
        return bound
    if session.programs:
        return session.programs[-1]
    raise ReproError("the script builds no program (it never calls migraphx.program())")


def _print(*values: Any) -> None:
    """A script's own prints go to standard error: they must not mix with the program."""
    print(*values, file=sys.stderr)


_NUMPY_TYPES = ("bool_", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16")
_NUMPY_TYPES += ("uint32", "uint64")


def _numpy_array(values: Any, dtype: Any = None) -> np.ndarray:
    """`numpy.array(values[, dtype])` for a reproducer: numbers (or strings, which the API then
    refuses) in nested lists, as one of numpy's numeric types."""
    if dtype is not None and not ((isinstance(dtype, str) and dtype in _NUMPY_TYPES) or dtype in NUMPY_SCALARS):
        raise ReproError(f"numpy.array's dtype should be one of {', '.join(_NUMPY_TYPES)}")
    array = np.array(values, dtype=dtype)
    if array.dtype.hasobject:
        raise ReproError("numpy.array needs nested lists of numbers of one shape")
    return array


NUMPY_SCALARS = tuple(getattr(np, name) for name in _NUMPY_TYPES)
NUMPY = script.Namespace(
    "numpy",
    {"array": _numpy_array, "asarray": _numpy_array} | {name: getattr(np, name) for name in _NUMPY_TYPES},
)
SCRIPT_MODULES: dict[str, Any] = {
    "migraphx": api,
    "numpy": NUMPY,
    # what mgx-translate --to-py writes, so that its scripts also run as they are
    "mgxir.translate.py": script.Namespace("mgxir.translate.py", {"migraphx": api}),
}
SCRIPT_BUILTINS: dict[str, Any] = {
    "migraphx": api,  # MIGraphX prints the body alone, without `import migraphx`
    # MIGraphX prints attribute values as JSON
    "null": None,
    "true": True,
    "false": False,
    "float": float,
    "int": int,
    "bool": bool,
    "abs": abs,
    "len": len,
    "print": _print,
    "bytes": script.Namespace("bytes", {"fromhex": bytes.fromhex}),
}


class _ExcerptNames(dict):
    """The script's names when it may start mid-program: `p`, `m` and `mNAME` are an implicit
    program and its modules; `x_...`/`p_...` never assigned are values of unknown shape."""

    def __init__(self, session: Session):
        super().__init__()
        self.session = session
        self.implicit: api.program | None = None

    def _program(self) -> api.program:
        if self.implicit is None:
            self.implicit = api.program()
            self.session.sink.warn(
                "the script starts mid-program (no 'p = migraphx.program()'): building into an implicit program",
                *self.session.location(caller()),
                once_key="implicit-program",
            )
        return self.implicit

    def __missing__(self, name: str) -> Any:
        if name in SCRIPT_BUILTINS:
            raise KeyError(name)
        if name == "p":
            found: Any = self._program()
        elif name == "m":
            found = self._program().get_main_module()
        elif name.startswith(("x_", "p_")):
            shown = name[2:] if name.startswith("p_") else name
            self.session.sink.warn(
                f"'{name}' is not defined in the script: read as a parameter of unknown shape",
                *self.session.location(caller()),
            )
            found = api.undefined(shown)
        elif name.startswith("m") and len(name) > 1:
            recorded = self._program()
            found = recorded.modules.get(name[1:]) or recorded.create_module(name[1:])
        else:
            raise KeyError(name)
        self[name] = found
        return found
