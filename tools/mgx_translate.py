"""mgx-translate: convert programs between formats."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from mgxir.diagnostics import DiagnosticSink
from mgxir.text.parser import read_program
from mgxir.text.writer import write_program
from mgxir.tools.common import run_guarded
from mgxir.translate.spirv import emit_spirv, emit_spvasm
from mgxir.verifier import verify

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)


class Target(StrEnum):
    mgx = "mgx"
    mgx_lossless = "mgx-lossless"


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def mgx_translate(
    input: Annotated[str, typer.Argument(help="Program text to read ('-' for standard input).")] = "-",
    to: Annotated[Target, typer.Option("--to", help="Output format.")] = Target.mgx,
    output: Annotated[
        str | None, typer.Option("-o", "--output", help="Write here (atomically) instead of standard output.")
    ] = None,
    from_log: Annotated[bool, typer.Option("--from-log", help="The input is MIGraphX log output.")] = False,
    to_spirv: Annotated[
        bool, typer.Option("--to-spirv", help="SPIR-V kernels of the fused modules and a manifest, into -o DIR.")
    ] = False,
    to_spvasm: Annotated[bool, typer.Option("--to-spvasm", help="The same kernels as SPIR-V assembly.")] = False,
) -> None:
    """Translate a MIGraphX program to another format.

    Formats available now: mgx (MIGraphX's text), mgx-lossless (text keeping every literal value).
    """

    def body(sink: DiagnosticSink) -> int:
        program = read_program(input, sink, from_log=from_log)
        verify(program, sink)
        if to_spirv or to_spvasm:
            (emit_spirv if to_spirv else emit_spvasm)(program, sink, output)
            return 0
        write_program(program, output, lossless=to is Target.mgx_lossless)
        return 0

    raise typer.Exit(run_guarded(body))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
