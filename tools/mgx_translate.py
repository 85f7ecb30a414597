"""mgx-translate: convert programs between formats."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from mgxir.diagnostics import DiagnosticSink
from mgxir.text.parser import read_program
from mgxir.text.writer import write_program
from mgxir.tools.common import run_guarded
from mgxir.translate.onnx import import_model, options_from_text
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
    from_onnx: Annotated[
        bool, typer.Option("--from-onnx", help="The input is an ONNX model: print what MIGraphX's parser builds.")
    ] = False,
    default_dim_value: Annotated[
        int | None, typer.Option("--default-dim-value", help="ONNX: size of dimensions the model leaves open.")
    ] = None,
    batch: Annotated[int | None, typer.Option("--batch", help="ONNX: as --default-dim-value.")] = None,
    input_dim: Annotated[
        list[str] | None, typer.Option("--input-dim", help="ONNX: an input's dims, '@name d1 d2 ...' (repeatable).")
    ] = None,
    dyn_input_dim: Annotated[
        list[str] | None,
        typer.Option("--dyn-input-dim", help="ONNX: an input's dynamic dims, '@name [{min:1,max:4},3]' (repeatable)."),
    ] = None,
    dim_param: Annotated[
        list[str] | None,
        typer.Option("--dim-param", help="ONNX: a symbolic dim, 'N=4' or 'N={min:1,max:8}' (repeatable)."),
    ] = None,
    skip_unknown_operators: Annotated[
        bool, typer.Option("--skip-unknown-operators", help="ONNX: keep unknown operators as unknown:OpType.")
    ] = False,
) -> None:
    """Translate a MIGraphX program to another format.

    Formats available now: mgx (MIGraphX's text), mgx-lossless (text keeping every literal value);
    --from-onnx reads an ONNX model as `migraphx-driver read` does.
    """

    def body(sink: DiagnosticSink) -> int:
        if from_onnx:
            options = options_from_text(
                input_dim or (), dim_param or (), dyn_input_dim or (), default_dim_value, batch, skip_unknown_operators
            )
            program = import_model(input, options, sink)
        else:
            program = read_program(input, sink, from_log=from_log)
        verify(program, sink)
        write_program(program, output, lossless=to is Target.mgx_lossless)
        return 0

    raise typer.Exit(run_guarded(body))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
