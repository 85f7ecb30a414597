"""mgx-translate: convert programs between formats (the driver and its format tables:
`mgxir.drivers.translate`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

from mgxir.drivers.translate import (
    READERS,
    WRITERS,
    TranslateOptions,
    conflicting_formats,
    spelled_formats,
    translate_main,
)
from mgxir.tools.cli import run_command

if TYPE_CHECKING:
    import typer


def mgx_translate(
    input: Annotated[str, typer.Argument(help="Program to read ('-' for standard input).")] = "-",
    to: Annotated[str, typer.Option("--to", help=f"Output format: {', '.join(WRITERS)} (or --to-FORMAT).")] = "mgx",
    source: Annotated[
        str | None,
        typer.Option("--from", help=f"Input format: {', '.join(READERS)} (or --from-FORMAT; default: by content)."),
    ] = None,
    output: Annotated[
        str | None, typer.Option("-o", "--output", help="Write here (atomically) instead of standard output.")
    ] = None,
    from_log: Annotated[bool, typer.Option("--from-log", help="The input is MIGraphX log output.")] = False,
    allow_undefined: Annotated[
        bool,
        typer.Option("--allow-undefined", help="Read values used but not defined (an excerpt) as of unknown shape."),
    ] = False,
    bytecode_version: Annotated[
        int | None, typer.Option("--bytecode-version", help="With --to-mlirbc: the bytecode format version (0 to 6).")
    ] = None,
    split_input_file: Annotated[
        bool,
        typer.Option(
            "--split-input-file", help="With --to-mlir or --from-mlir: translate each '// -----' part on its own."
        ),
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
    list_lowerings: Annotated[
        bool, typer.Option("--list-lowerings", help="Print the table of what each operator lowers to in MLIR.")
    ] = False,
    lossless: Annotated[
        bool, typer.Option("--lossless", help="Text: keep every literal value exactly (the default).")
    ] = False,
    elide_literals: Annotated[
        bool,
        typer.Option("--elide-literals", help="Text: print literals as MIGraphX does ('{ ... }' past 10 values)."),
    ] = False,
) -> None:
    """Translate a MIGraphX program to another format.

    Reads program text, MIGraphX logs, ONNX models (as `migraphx-driver read`), .mxr, JSON, --py
    reproducers and MLIR; writes text (mgx, mgx-lossless), MLIR text and bytecode, SPIR-V kernels
    (-o DIR) or assembly, .mxr, JSON, Python reproducers, DOT and SVG.
    """
    options = TranslateOptions(
        input=input,
        to=to,
        source="log" if from_log else source,
        output=output,
        split_input_file=split_input_file,
        list_lowerings=list_lowerings,
        format_options={
            "allow_undefined": allow_undefined,
            "bytecode_version": bytecode_version,
            "default_dim_value": default_dim_value,
            "batch": batch,
            "input_dim": input_dim,
            "dyn_input_dim": dyn_input_dim,
            "dim_param": dim_param,
            "skip_unknown_operators": skip_unknown_operators,
            "lossless": lossless,
            "elide_literals": elide_literals,
        },
    )
    raise SystemExit(translate_main(options))


def main() -> None:
    problem = conflicting_formats(sys.argv[1:])
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(1)
    run_command(mgx_translate, spelled_formats(sys.argv[1:]))


if __name__ == "__main__":
    main()
