"""mgx-translate: convert programs between formats (the driver and its format tables:
`mgxir.drivers.translate`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

from mgxir.drivers.translate import READERS, WRITERS, TranslateOptions, spelled_formats, translate_main
from mgxir.tools.cli import run_command

if TYPE_CHECKING:
    import typer


def mgx_translate(
    input: Annotated[str, typer.Argument(help="Program to read ('-' for standard input).")] = "-",
    to: Annotated[str, typer.Option("--to", help=f"Output format: {', '.join(WRITERS)} (or --to-FORMAT).")] = "mgx",
    source: Annotated[
        str, typer.Option("--from", help=f"Input format: {', '.join(READERS)} (or --from-FORMAT).")
    ] = "mgx",
    output: Annotated[
        str | None, typer.Option("-o", "--output", help="Write here (atomically) instead of standard output.")
    ] = None,
    from_log: Annotated[bool, typer.Option("--from-log", help="The input is MIGraphX log output.")] = False,
) -> None:
    """Translate a MIGraphX program to another format."""
    options = TranslateOptions(input=input, to=to, source="log" if from_log else source, output=output)
    raise SystemExit(translate_main(options))


def main() -> None:
    run_command(mgx_translate, spelled_formats(sys.argv[1:]))


if __name__ == "__main__":
    main()
