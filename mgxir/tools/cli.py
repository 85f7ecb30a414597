"""Runs a tool's command from its driver's option declarations, without typer when the line is plain.

A tool's command is a function `command(**fields)` marked with `@declared(OptionsClass)`: the
options class (`mgxir.drivers.options`) declares each field once, with its type, default, help and
spellings. Importing typer (click, rich) costs more than reading, verifying and printing a small
program, and lit runs the tools hundreds of times, so:

- every command line is first brought to the declared spellings: LLVM's single-dash long flags
  (`-pass-pipeline=fuse`, `-print-ir-after-all`) and declared aliases (MLIR's `--mlir-timing`,
  IREE's `--expected_output`) become the option's first long flag; `--version` is answered here;
- a plain command line (declared options in the long or short form, `--name=value`, one positional
  argument, values that convert) is then read here and the command is called directly;
- anything else (`--help`, an unknown option, a missing or bad value, `--`) goes to the typer
  command built from the same declarations, which prints its usual help or error message (with
  click's "did you mean" for a misspelt option). Both paths call the command with the same values.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from mgxir.drivers.options import DeclaredOptions, Option

HELP_OPTIONS = ("-h", "--help")
VERSION_OPTION = "--version"


def declared(options: type[DeclaredOptions]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Marks a command function as taking the fields of `options` as keyword arguments."""

    def mark(command: Callable[..., Any]) -> Callable[..., Any]:
        command.options = options  # type: ignore[attr-defined]
        return command

    return mark


def _declarations(command: Callable[..., Any]) -> tuple[Option, ...]:
    return command.options.DECLARED  # type: ignore[attr-defined]


def _by_spelling(declarations: Sequence[Option]) -> dict[str, tuple[Option, bool]]:
    """Each flag -> (its option, the value a bare boolean flag sets)."""
    found: dict[str, tuple[Option, bool]] = {}
    for option in declarations:
        for spelling in option.spellings():
            found[spelling] = (option, True)
        if option.negation:
            found[option.negation] = (option, False)
    return found


def canonical_argv(command: Callable[..., Any], argv: Sequence[str]) -> list[str]:
    """`argv` with LLVM's single-dash long flags and the declared aliases spelled as each option's
    first long flag; values (`-o -x.mgx`, `--input=-1`) and words after `--` are left alone."""
    declarations = _declarations(command)
    spellings = _by_spelling(declarations)
    primary = {alias: option.long_flag for option in declarations for alias in option.aliases}
    known = {*spellings, *HELP_OPTIONS, VERSION_OPTION}
    out: list[str] = []
    words = iter(argv)
    for word in words:
        if word == "--":
            out.append(word)
            out.extend(words)
            break
        flag, has_value, value = word.partition("=")
        if flag.startswith("-") and not flag.startswith("--") and len(flag) > 2 and "-" + flag in known:
            flag = "-" + flag  # -pass-pipeline: LLVM's tools take long flags after one dash
        if flag in primary:
            flag = primary[flag]
        out.append(flag + has_value + value)
        found = spellings.get(flag)
        if found is not None and found[0].kind is not bool and not has_value:
            following = next(words, None)  # the option's value, whatever it looks like
            if following is not None:
                out.append(following)
    return out


class _NotPlain(Exception):
    """The command line needs typer (help, an error message, or a form read only there)."""


def _convert(option: Option, text: str) -> Any:
    if option.kind is str:
        return text
    try:
        return option.kind(text)
    except ValueError:
        raise _NotPlain from None


def plain_arguments(command: Callable[..., Any], argv: Sequence[str]) -> dict[str, Any] | None:
    """The command's keyword arguments for a plain command line; None where typer must read it."""
    declarations = _declarations(command)
    spellings = _by_spelling(declarations)
    positional = [o for o in declarations if o.positional]
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
            found = spellings.get(flag)
            if found is None:
                raise _NotPlain
            option, on = found
            if option.kind is bool:
                if has_value:
                    raise _NotPlain
                values[option.name] = on
                continue
            if not has_value:
                if i >= len(argv) or (argv[i].startswith("-") and argv[i] != "-"):
                    raise _NotPlain
                attached = argv[i]
                i += 1
            value = _convert(option, attached)
            if option.many:
                values.setdefault(option.name, []).append(value)
            else:
                values[option.name] = value
        if len(given_positional) > len(positional):
            raise _NotPlain
    except _NotPlain:
        return None
    for option, word in zip(positional, given_positional):
        values[option.name] = word
    for option in declarations:
        values.setdefault(option.name, option.default)
    return values


def tool_name(prog_name: str | None = None) -> str:
    return prog_name or os.path.basename(sys.argv[0]) or "mgxir"


def version_line(prog_name: str | None = None) -> str:
    """`mgx-opt (mgxir) 0.1.0`: the installed distribution's version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        number = version("mgxir")
    except PackageNotFoundError:
        number = "unknown (not installed)"
    return f"{tool_name(prog_name)} (mgxir) {number}"


def run_command(command: Callable[..., Any], argv: Sequence[str] | None = None, prog_name: str | None = None) -> None:
    """Runs `command` on the command line (default: sys.argv); the command ends with SystemExit."""
    argv = canonical_argv(command, sys.argv[1:] if argv is None else argv)
    if VERSION_OPTION in argv[: argv.index("--") if "--" in argv else len(argv)]:
        print(version_line(prog_name))
        raise SystemExit(0)
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


def _typer_parameter(option: Option) -> Any:
    """The `inspect.Parameter` typer reads for one declared option."""
    import inspect
    from typing import Annotated, Optional

    import typer

    kind: Any = option.kind
    if option.many:
        kind = Optional[list[kind]]  # noqa: UP045 (typer reads typing's Optional in every version)
    elif option.default is None:
        kind = Optional[kind]  # noqa: UP045
    if option.positional:
        declaration = typer.Argument(help=option.help, metavar=option.metavar)
    else:
        names = list(option.flags)
        if option.negation:
            names[names.index(option.long_flag)] = f"{option.long_flag}/{option.negation}"
        declaration = typer.Option(*names, help=option.help, metavar=option.metavar)
    return inspect.Parameter(
        option.name,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=option.default,
        annotation=Annotated[kind, declaration],
    )


def typer_app(command: Callable[..., Any]) -> Callable[..., Any]:
    """The typer application of `command`, built from its declarations (imports typer)."""
    import inspect

    import typer

    version = Option("show_version", (VERSION_OPTION,), "Print the version and exit.", False, bool)
    parameters = [_typer_parameter(o) for o in (*_declarations(command), version)]

    def run(**given: Any) -> None:
        given.pop("show_version")  # answered before typer is reached; declared for --help
        command(**given)

    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    run.__doc__ = command.__doc__
    run.__name__ = command.__name__
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    app.command(context_settings={"help_option_names": list(HELP_OPTIONS)})(run)
    return app
