"""mgx-opt: read a program, verify it, run passes, and print it (the driver: `mgxir.drivers.opt`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from mgxir.drivers.opt import DEFAULT_REPRODUCER, OptOptions, opt_main
from mgxir.tools.cli import run_command

if TYPE_CHECKING:
    import typer


def mgx_opt(
    input: Annotated[str, typer.Argument(help="Program text to read ('-' for standard input).")] = "-",
    output: Annotated[
        str | None, typer.Option("-o", "--output", help="Write here (atomically) instead of standard output.")
    ] = None,
    lossless: Annotated[
        bool,
        typer.Option("--lossless", help="Keep every literal value exactly (the default; NaN payloads, bf16/fp8 bits)."),
    ] = False,
    elide_literals: Annotated[
        bool,
        typer.Option("--elide-literals", help="Print literals as MIGraphX does: '{ ... }' past 10 values, 6 digits."),
    ] = False,
    sidecar: Annotated[
        str | None,
        typer.Option("--sidecar", help="Put the data of literals past ten values in this .npz; the text names it."),
    ] = None,
    from_log: Annotated[
        bool, typer.Option("--from-log", help="The input is MIGraphX log output: load the program printed in it.")
    ] = False,
    log_pass: Annotated[
        str | None,
        typer.Option(
            "--log-pass", help="With --from-log: the program printed after this pass (default: the last one)."
        ),
    ] = None,
    no_verify: Annotated[
        bool, typer.Option("--no-verify", help="Do not check shapes and definitions after reading.")
    ] = False,
    pipeline: Annotated[
        str | None,
        typer.Option(
            "-p", "--pass-pipeline", help="Passes to run: 'dce,simplify_algebra,fuse_pointwise{max_rounds=8}'."
        ),
    ] = None,
    passes: Annotated[list[str] | None, typer.Option("--pass", help="A pass to run (repeatable, after -p).")] = None,
    optimize: Annotated[
        bool, typer.Option("-O", help="What `migraphx-driver read -O` runs, on the main module only.")
    ] = False,
    show_passes: Annotated[
        bool, typer.Option("--list-passes", help="List the passes, their options, aliases and pipelines.")
    ] = False,
    dump_pipeline: Annotated[
        bool, typer.Option("--dump-pass-pipeline", help="Print the pipeline to run (to stderr) as text -p reads back.")
    ] = False,
    verify_each: Annotated[
        bool, typer.Option("--verify-each/--no-verify-each", help="Verify the program after each pass.")
    ] = True,
    print_before: Annotated[
        list[str] | None, typer.Option("--print-ir-before", help="Print the IR before these passes.")
    ] = None,
    print_after: Annotated[
        list[str] | None, typer.Option("--print-ir-after", help="Print the IR after these passes.")
    ] = None,
    print_before_all: Annotated[
        bool, typer.Option("--print-ir-before-all", help="Print the IR before every pass.")
    ] = False,
    print_after_all: Annotated[
        bool, typer.Option("--print-ir-after-all", help="Print the IR after every pass.")
    ] = False,
    print_after_change: Annotated[
        bool, typer.Option("--print-ir-after-change", help="Print the IR after a pass that changed it.")
    ] = False,
    tree_dir: Annotated[
        str | None, typer.Option("--print-ir-tree-dir", help="Write the IR after each pass into this folder.")
    ] = None,
    timing: Annotated[bool, typer.Option("--timing", help="Print the wall time of each pass.")] = False,
    statistics: Annotated[bool, typer.Option("--pass-statistics", help="Print what each pass changed.")] = False,
    split: Annotated[
        bool, typer.Option("--split-input-file", help="Treat each '// -----' separated part as its own input.")
    ] = False,
    verify_diagnostics: Annotated[
        bool,
        typer.Option("--verify-diagnostics", help="Check errors and warnings against '// expected-error' annotations."),
    ] = False,
    disable: Annotated[
        str | None, typer.Option("--disable-passes", help="Skip these passes (also MIGRAPHX_DISABLE_PASSES).")
    ] = None,
    reproducer: Annotated[
        str | None,
        typer.Option(
            "--reproducer", help=f"Where a failing pass writes its reproducer (default {DEFAULT_REPRODUCER})."
        ),
    ] = None,
    run_reproducer: Annotated[
        bool,
        typer.Option("--run-reproducer", help="The input is a reproducer: run the pipeline named in its first line."),
    ] = False,
) -> None:
    """Parse, verify, transform and print a MIGraphX program.

    Without passes the output is byte-identical to what MIGraphX prints for the same program.
    """
    raise SystemExit(opt_main(OptOptions(**locals())))


def main() -> None:
    run_command(mgx_opt)


if __name__ == "__main__":
    main()
