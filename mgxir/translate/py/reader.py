"""`--from-py`: runs a MIGraphX `--py` reproducer against mgxir's building API and returns the program.

The script may `import migraphx` or not (MIGraphX prints the body alone). The shapes MIGraphX
prints in comments (`# migraphx.shape(...)`) give the result shapes of instructions whose shape
cannot be computed (unknown operators, arguments defined outside an excerpt). With
`allow_undefined`, a script that starts mid-program runs: `p` and `m` are an implicit program and
its main module, `mNAME` its module NAME, and every `x_N`/`p_NAME` never assigned is a value of
unknown shape (with a warning).
"""

from __future__ import annotations

import builtins
import contextlib
import linecache
import re
import sys
import traceback
from pathlib import Path
from types import CodeType
from typing import Any

from mgxir.diagnostics import DiagnosticSink, Location, MgxError
from mgxir.ir.program import Program
from mgxir.text.parser import SourceText
from mgxir.translate.py import migraphx as api
from mgxir.translate.py.migraphx import ReproError, Session, caller, declared_shape, run_in_session


def read_py_program(path: str | Path, sink: DiagnosticSink | None = None, allow_undefined: bool = False) -> Program:
    """Runs the script at `path` (`-` reads standard input) and returns the program it builds."""
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
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as e:
        line = e.lineno or 1
        text = lines[line - 1] if 0 < line <= len(lines) else None
        raise MgxError(f"invalid Python: {e.msg}", Location(filename, line, e.offset or 1), text) from None
    # the API reads comments and quotes lines through linecache
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    declared_shape.cache_clear()
    session = Session(allow_undefined, sink)
    program = run_in_session(session, lambda: _run(code, filename, session))
    program.source = SourceText(filename, source)  # type: ignore[attr-defined]
    return program


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


def _run(code: CodeType, filename: str, session: Session) -> Program:
    namespace: dict[str, Any] = {
        "__name__": "__mgxir_from_py__",
        "__file__": filename,
        "__builtins__": _builtins_with_migraphx(),
        "migraphx": api,
        # MIGraphX prints attribute values as JSON
        "null": None,
        "true": True,
        "false": False,
    }
    names: dict[str, Any] = _ExcerptNames(namespace, session) if session.allow_undefined else namespace
    try:
        # the script's own prints must not mix with the program on standard output
        with contextlib.redirect_stdout(sys.stderr):
            exec(code, namespace, names)
            chosen = _chosen_program(names, session)
            return chosen.to_mgxir()
    except MgxError:
        raise
    except (Exception, SystemExit) as e:
        raise _located(e, filename, session) from None


def _chosen_program(names: dict[str, Any], session: Session) -> api.program:
    bound = dict.get(names, "p")
    if isinstance(bound, api.program):
        return bound
    if session.programs:
        return session.programs[-1]
    raise ReproError("the script builds no program (it never calls migraphx.program())")


def _located(e: BaseException, filename: str, session: Session) -> MgxError:
    line = 0
    for frame, lineno in traceback.walk_tb(e.__traceback__):
        if frame.f_code.co_filename == filename:
            line = lineno
    if isinstance(e, ReproError):
        message = str(e)
    elif isinstance(e, NameError):
        message = f"{e}"
        if not session.allow_undefined:
            message += " (a value from outside the excerpt? --allow-undefined reads it as unknown)"
    elif isinstance(e, SystemExit):
        message = "the script exited before it finished building the program"
    else:
        message = f"{type(e).__name__}: {e}"
    return session.error(message, (filename, line))


def _builtins_with_migraphx() -> dict[str, Any]:
    """Builtins whose `import migraphx` gives mgxir's building API."""
    table = dict(vars(builtins))
    real_import = builtins.__import__

    def import_(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "migraphx":
            return api
        return real_import(name, *args, **kwargs)

    table["__import__"] = import_
    return table


class _ExcerptNames(dict):
    """The script's names when it may start mid-program: `p`, `m` and `mNAME` are an implicit
    program and its modules; `x_...`/`p_...` never assigned are values of unknown shape."""

    def __init__(self, namespace: dict[str, Any], session: Session):
        super().__init__()
        self.namespace = namespace
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
        if name in self.namespace or name in self.namespace["__builtins__"]:
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
