"""Runs a tool's typer command, without importing typer when the command line is plain.

A tool declares its options once, as a typer command function whose parameters are annotated
`Annotated[type, typer.Option(...)]` in a module with `from __future__ import annotations` (so the
annotations stay text and the module imports no typer). Importing typer (click, pydantic) costs more
than reading, verifying and printing a small program, and lit runs the tools hundreds of times, so:
- a plain command line (declared options in the long or short form, `--name=value`, one positional
  argument, values that convert) is read here, from the same declarations, and the command is called
  directly;
- anything else (`--help`, an unknown option, a missing or bad value, `--`) goes to typer, which
  prints its usual help or error message. Both paths call the command with the same values.
"""

from __future__ import annotations

import enum
import inspect
import os
import sys
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

HELP_OPTIONS = ("-h", "--help")


class _Declaration:
    """What `typer.Option(...)`/`typer.Argument(...)` declare, recorded without typer."""

    def __init__(self, positional: bool, *names: str, **settings: Any):
        self.positional = positional
        self.names = names
        self.settings = settings


class _Recorder:
    """Stands in for the `typer` module while the annotations are evaluated for the fast path."""

    @staticmethod
    def Option(*names: str, **settings: Any) -> _Declaration:
        return _Declaration(False, *names, **settings)

    @staticmethod
    def Argument(*names: str, **settings: Any) -> _Declaration:
        return _Declaration(True, *names, **settings)


class _Annotation:
    """Stands in for `typing.Annotated` there: `_Annotation[type, declaration]` is the pair (cheaper)."""

    def __class_getitem__(cls, pair: tuple) -> tuple:
        return pair


class _Parameter:
    def __init__(self, name: str, kind: type, many: bool, default: Any, declaration: _Declaration):
        self.name = name
        self.kind = kind  # str, int, float, bool or an Enum
        self.many = many
        self.default = default
        self.declaration = declaration


def _base_type(annotation: Any) -> tuple[type, bool]:
    """(the element type, whether the option repeats) of `str | None`, `list[str] | None`, ..."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = args[0]
    if typing.get_origin(annotation) is list:
        return typing.get_args(annotation)[0], True
    return annotation, False


def _parameters(command: Callable) -> list[_Parameter]:
    namespace = {**command.__globals__, "typer": _Recorder, "Annotated": _Annotation}
    out = []
    for p in inspect.signature(command).parameters.values():
        annotation = eval(p.annotation, namespace) if isinstance(p.annotation, str) else p.annotation
        base, declaration = annotation[:2] if isinstance(annotation, tuple) else typing.get_args(annotation)[:2]
        kind, many = _base_type(base)
        if not declaration.positional and not declaration.names:  # typer names it after the parameter
            flag = "--" + p.name.replace("_", "-")
            declaration.names = (f"{flag}/--no-{flag[2:]}" if kind is bool else flag,)
        out.append(_Parameter(p.name, kind, many, p.default, declaration))
    return out


class _NotPlain(Exception):
    """The command line needs typer (help, an error message, or a form read only there)."""


def _convert(parameter: _Parameter, text: str) -> Any:
    kind = parameter.kind
    if kind is str:
        return text
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            raise _NotPlain from None
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        for member in kind:
            if member.value == text:
                return member
    raise _NotPlain


def plain_arguments(command: Callable, argv: Sequence[str]) -> dict[str, Any] | None:
    """The command's keyword arguments for a plain command line; None where typer must read it."""
    parameters = _parameters(command)
    by_name: dict[str, tuple[_Parameter, bool]] = {}
    positional = [p for p in parameters if p.declaration.positional]
    for p in parameters:
        for spelling in p.declaration.names:
            for i, flag in enumerate(spelling.split("/")):
                by_name[flag] = (p, i == 0)  # `--x/--no-x`: the second spelling sets False
    values: dict[str, Any] = {}
    given_positional: list[str] = []
    try:
        i = 0
        while i < len(argv):
            word = argv[i]
            i += 1
            if word in HELP_OPTIONS or word == "--":
                raise _NotPlain
            if not word.startswith("-") or word == "-":
                given_positional.append(word)
                continue
            flag, has_value, attached = word.partition("=")
            found = by_name.get(flag)
            if found is None:
                raise _NotPlain
            p, on = found
            if p.kind is bool:
                if has_value:
                    raise _NotPlain
                values[p.name] = on
                continue
            if not has_value:
                if i >= len(argv) or (argv[i].startswith("-") and argv[i] != "-"):
                    raise _NotPlain
                attached = argv[i]
                i += 1
            value = _convert(p, attached)
            if p.many:
                values.setdefault(p.name, []).append(value)
            else:
                values[p.name] = value
        if len(given_positional) > len(positional):
            raise _NotPlain
    except _NotPlain:
        return None
    for p, word in zip(positional, given_positional):
        values[p.name] = word
    for p in parameters:
        values.setdefault(p.name, p.default)
    return values


def run_command(command: Callable, argv: Sequence[str] | None = None, prog_name: str | None = None) -> None:
    """Runs `command` on the command line (default: sys.argv); the command ends with SystemExit."""
    argv = list(sys.argv[1:] if argv is None else argv)
    arguments = plain_arguments(command, argv)
    if arguments is not None:
        try:
            command(**arguments)
        except SystemExit as done:
            _exit_now(done.code)
        return
    typer_app(command)(args=argv, prog_name=prog_name)


def _exit_now(code: object) -> None:
    """Ends the process without Python's teardown, which would free the whole IR object by object
    (seconds for a 100k-instruction program). Output is flushed first; where `atexit` work is
    expected (coverage measuring the tools), the ordinary exit runs instead."""
    if "coverage" in sys.modules:
        raise SystemExit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away (`| head`), or a closed stream
            pass
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


def typer_app(command: Callable) -> Callable:
    """The typer application of `command` (imports typer)."""
    import typer

    command.__globals__.setdefault("typer", typer)  # the annotations name it
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    app.command(context_settings={"help_option_names": list(HELP_OPTIONS)})(command)
    return app
