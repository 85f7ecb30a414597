"""mgx-opt: read a program, verify it, (run passes,) and print it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from mgxir.diagnostics import DiagnosticSink
from mgxir.text.parser import read_program
from mgxir.text.writer import write_program
from mgxir.tools.common import run_guarded
from mgxir.verifier import verify

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def mgx_opt(
    input: Annotated[str, typer.Argument(help="Program text to read ('-' for standard input).")] = "-",
    output: Annotated[Optional[str], typer.Option("-o", "--output", help="Write here (atomically) instead of standard output.")] = None,
    lossless: Annotated[bool, typer.Option("--lossless", help="Print every literal value exactly (all dtypes, NaN payloads, bf16/fp8 bits).")] = False,
    sidecar: Annotated[Optional[str], typer.Option("--sidecar", help="With --lossless: put literal data in this .npz and name it in the text.")] = None,
    from_log: Annotated[bool, typer.Option("--from-log", help="The input is MIGraphX log output: load the program printed in it.")] = False,
    log_pass: Annotated[Optional[str], typer.Option("--log-pass", help="With --from-log: the program printed after this pass (default: the last one).")] = None,
    no_verify: Annotated[bool, typer.Option("--no-verify", help="Do not check shapes and definitions after reading.")] = False,
) -> None:
    """Parse, verify and print a MIGraphX program.

    The output is byte-identical to what MIGraphX prints for the same program.
    """

    def body(sink: DiagnosticSink) -> int:
        program = read_program(input, sink, from_log=from_log or log_pass is not None, log_pass=log_pass)
        if not no_verify:
            verify(program, sink)
        write_program(program, output, lossless=lossless, sidecar=sidecar)
        return 0

    raise typer.Exit(run_guarded(body))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
