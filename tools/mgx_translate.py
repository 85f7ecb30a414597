"""mgx-translate: convert programs between formats."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.text.parser import read_program
from mgxir.text.writer import write_program
from mgxir.tools.common import run_guarded
from mgxir.translate.formats import chosen, read_input, write_result
from mgxir.translate.spirv import emit_spirv, emit_spvasm
from mgxir.verifier import verify

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)


class Target(StrEnum):
    mgx = "mgx"
    mgx_lossless = "mgx-lossless"


def _flag(name: str, help: str) -> typer.models.OptionInfo:
    return typer.Option(name, help=help)


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def mgx_translate(
    input: Annotated[str, typer.Argument(help="The program to read ('-' for standard input).")] = "-",
    to: Annotated[Target, typer.Option("--to", help="Output format.")] = Target.mgx,
    output: Annotated[
        str | None, typer.Option("-o", "--output", help="Write here (atomically) instead of standard output.")
    ] = None,
    from_log: Annotated[bool, _flag("--from-log", "The input is MIGraphX log output.")] = False,
    from_mxr: Annotated[bool, _flag("--from-mxr", "The input is a .mxr file (MIGraphX's msgpack save).")] = False,
    from_json: Annotated[bool, _flag("--from-json", "The input is a program MIGraphX wrote as JSON.")] = False,
    from_py: Annotated[bool, _flag("--from-py", "The input is a MIGraphX --py reproducer (a Python script).")] = False,
    to_mxr: Annotated[bool, _flag("--to-mxr", "Write a .mxr file MIGraphX loads.")] = False,
    to_json: Annotated[bool, _flag("--to-json", "Write the program as MIGraphX's JSON.")] = False,
    to_py: Annotated[bool, _flag("--to-py", "Write a Python script that rebuilds the program.")] = False,
    to_dot: Annotated[bool, _flag("--to-dot", "Write a Graphviz drawing (DOT text).")] = False,
    to_svg: Annotated[bool, _flag("--to-svg", "Write the drawing as SVG (needs Graphviz's dot).")] = False,
    allow_undefined: Annotated[
        bool, _flag("--allow-undefined", "Read values used but not defined (an excerpt) as of unknown shape.")
    ] = False,
    to_spirv: Annotated[
        bool, _flag("--to-spirv", "SPIR-V kernels of the fused modules and a manifest, into -o DIR.")
    ] = False,
    to_spvasm: Annotated[bool, _flag("--to-spvasm", "The same kernels as SPIR-V assembly.")] = False,
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

    Reads program text (or a log, .mxr, JSON, a --py script, MLIR); writes text (mgx, mgx-lossless),
    .mxr, JSON, a Python script, DOT or SVG, MLIR text or bytecode, SPIR-V kernels.
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
        source = chosen({"log": from_log, "mxr": from_mxr, "json": from_json, "py": from_py}, "--from-", "text")
        target = chosen({"mxr": to_mxr, "json": to_json, "py": to_py, "dot": to_dot, "svg": to_svg}, "--to-")
        program = read_input(input, source, sink, allow_undefined)
        verify(program, sink)
        if to_spirv or to_spvasm:
            (emit_spirv if to_spirv else emit_spvasm)(program, sink, output)
            return 0
        if target is None:
            write_program(program, output, lossless=to is Target.mgx_lossless)
        else:
            write_result(program, target, output)
        return 0

    raise typer.Exit(run_guarded(body))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
