"""mgx-translate: convert programs between formats."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.text.parser import read_program
from mgxir.text.writer import write_program
from mgxir.tools.common import run_guarded
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
    to_mlir: Annotated[
        bool, typer.Option("--to-mlir", help="Write MLIR text (tosa/linalg/tensor/arith/math).")
    ] = False,
    to_mlirbc: Annotated[bool, typer.Option("--to-mlirbc", help="Write MLIR bytecode.")] = False,
    from_mlir: Annotated[
        bool, typer.Option("--from-mlir", help="The input is MLIR (text or bytecode) that --to-mlir/--to-mlirbc wrote.")
    ] = False,
    bytecode_version: Annotated[
        int | None, typer.Option("--bytecode-version", help="With --to-mlirbc: the bytecode format version (0 to 6).")
    ] = None,
    split: Annotated[
        bool, typer.Option("--split-input-file", help="With --to-mlir: translate each '// -----' part on its own.")
    ] = False,
    list_lowerings: Annotated[
        bool, typer.Option("--list-lowerings", help="Print the table of what each operator lowers to in MLIR.")
    ] = False,
) -> None:
    """Translate a MIGraphX program to another format.

    Formats: mgx (MIGraphX's text), mgx-lossless (text keeping every literal value), MLIR text
    (--to-mlir) and bytecode (--to-mlirbc), and back from MLIR (--from-mlir).
    """

    def body(sink: DiagnosticSink) -> int:
        if to_mlir or to_mlirbc or from_mlir or list_lowerings:
            from mgxir.translate.mlir import api, table  # the MLIR bindings load only when asked for

            if list_lowerings:
                api.write_output(table.lowering_table(), output)
                return 0
            if sum([to_mlir, to_mlirbc, from_mlir]) > 1:
                raise MgxError("give one of --to-mlir, --to-mlirbc and --from-mlir")
            if from_mlir:
                program = api.program_from_mlir(*api.read_bytes(input))
                verify(program, sink)
                write_program(program, output, lossless=to is Target.mgx_lossless)
                return 0
            if split and to_mlir:
                data, filename = api.read_bytes(input)
                api.write_output(api.mlir_text_of_chunks(data.decode(), filename, sink), output)
                return 0
            program = read_program(input, sink, from_log=from_log)
            verify(program, sink)
            if to_mlirbc:
                api.write_output(api.mlir_bytecode(program, bytecode_version, sink), output)
            else:
                api.write_output(api.mlir_text(program, sink), output)
            return 0
        if bytecode_version is not None:
            raise MgxError("--bytecode-version goes with --to-mlirbc")
        program = read_program(input, sink, from_log=from_log)
        verify(program, sink)
        write_program(program, output, lossless=to is Target.mgx_lossless)
        return 0

    raise typer.Exit(run_guarded(body))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
