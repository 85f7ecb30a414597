"""mgx-opt: read a program, verify it, run passes, and print it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.drivers.diagnostics_check import SPLIT_MARKER, check, expectations, split_input
from mgxir.ir.program import Program
from mgxir.passes.manager import Instrumentation, PassManager, disabled_passes, read_reproducer
from mgxir.passes.registry import ALIASES, format_pipeline, list_passes, parse_pipeline
from mgxir.text.parser import parse_program, read_program
from mgxir.text.writer import render, write_atomically, write_program
from mgxir.tools.common import run_guarded
from mgxir.verifier import verify

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)

DEFAULT_REPRODUCER = "mgx-opt.reproducer.mgx"


def _names(values: list[str] | None) -> frozenset[str]:
    return frozenset(ALIASES.get(n.strip(), n.strip()) for v in values or [] for n in v.split(",") if n.strip())


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def mgx_opt(
    input: Annotated[str, typer.Argument(help="Program text to read ('-' for standard input).")] = "-",
    output: Annotated[
        str | None, typer.Option("-o", "--output", help="Write here (atomically) instead of standard output.")
    ] = None,
    lossless: Annotated[
        bool,
        typer.Option("--lossless", help="Print every literal value exactly (all dtypes, NaN payloads, bf16/fp8 bits)."),
    ] = False,
    sidecar: Annotated[
        str | None,
        typer.Option("--sidecar", help="With --lossless: put literal data in this .npz and name it in the text."),
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

    def body(sink: DiagnosticSink) -> int:
        if show_passes:
            sys.stdout.write(list_passes())
            return 0
        text = _read_text(input) if not from_log and log_pass is None else None
        pipeline_text = ",".join(t for t in ("O" if optimize else "", pipeline or "", *(passes or [])) if t)
        main_only = optimize
        if run_reproducer:
            assert text is not None
            pipeline_text, main_only = read_reproducer(text)
        pass_list = parse_pipeline(pipeline_text)
        if dump_pipeline:
            print(f"-p '{format_pipeline(pass_list)}'" + (" -O-scope=main" if main_only else ""), file=sys.stderr)
        instrumentation = Instrumentation(
            verify_each=verify_each,
            print_before=_names(print_before),
            print_after=_names(print_after),
            print_before_all=print_before_all,
            print_after_all=print_after_all,
            print_after_change=print_after_change,
            tree_dir=tree_dir,
            timing=timing,
            statistics=statistics,
            disabled=disabled_passes(disable),
            reproducer=reproducer or DEFAULT_REPRODUCER,
            main_only=main_only,
        )

        def transform(program: Program, chunk_sink: DiagnosticSink, read_again: Callable[[], Program] | None) -> None:
            """Verifies and runs the passes; `read_again` reads the same input afresh (for a reproducer)."""

            def replay() -> Program:
                assert read_again is not None
                fresh = read_again()
                if not no_verify:
                    verify(fresh, DiagnosticSink())
                return fresh

            if not no_verify:
                verify(program, chunk_sink)
            if pass_list:
                PassManager(pass_list, instrumentation).run(program, chunk_sink, replay if read_again else None)

        if text is None:
            program = read_program(input, sink, from_log=True, log_pass=log_pass)
            transform(program, sink, None if input == "-" else lambda: _read_log(input, log_pass))
            write_program(program, output, lossless=lossless, sidecar=sidecar)
            return 0
        filename = "<stdin>" if input == "-" else input
        base_dir = None if input == "-" else Path(input).parent
        chunks = split_input(text) if split else None
        if verify_diagnostics:
            return _verify_diagnostics(chunks or split_input_whole(text), filename, base_dir, transform, lossless)
        if chunks is None:
            program = parse_program(text, filename, base_dir=base_dir, sink=sink)
            transform(program, sink, _reader(text, filename, base_dir))
            write_program(program, output, lossless=lossless, sidecar=sidecar)
            return 0
        outputs = []
        for chunk in chunks:
            program = parse_program(chunk.text, filename, base_dir=base_dir, sink=sink, line_map=chunk.line_map())
            transform(program, sink, _reader(chunk.text, filename, base_dir, chunk.line_map()))
            outputs.append(render(program, lossless)[0])
        _write(f"{SPLIT_MARKER}\n".join(outputs), output)
        return 0

    raise typer.Exit(run_guarded(body))


def _read_log(path: str, log_pass: str | None) -> Program:
    return read_program(path, DiagnosticSink(), from_log=True, log_pass=log_pass)


def _reader(text: str, filename: str, base_dir: Path | None, line_map=None) -> Callable[[], Program]:
    """Parses `text` again on each call, for rebuilding a failed pipeline's input."""
    return lambda: parse_program(text, filename, base_dir=base_dir, sink=DiagnosticSink(), line_map=line_map)


def split_input_whole(text: str):
    from mgxir.drivers.diagnostics_check import Chunk

    return [Chunk(text, 1)]


def _verify_diagnostics(chunks, filename, base_dir, transform, lossless: bool) -> int:
    problems: list[str] = []
    outputs: list[str] = []
    for chunk in chunks:
        chunk_sink = DiagnosticSink()
        found = []
        try:
            program = parse_program(chunk.text, filename, base_dir=base_dir, sink=chunk_sink, line_map=chunk.line_map())
            transform(program, chunk_sink, _reader(chunk.text, filename, base_dir, chunk.line_map()))
            outputs.append(render(program, lossless)[0])
        except MgxError as e:
            found.append(e.diagnostic)
        found = chunk_sink.warnings + found
        chunk_sink.warnings = []
        problems.extend(check(found, expectations(chunk), filename))
    if outputs:
        sys.stdout.write(f"{SPLIT_MARKER}\n".join(outputs))
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text()
    except OSError as e:
        raise MgxError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise MgxError(f"{path} is not UTF-8 text") from None


def _write(text: str, output: str | None) -> None:
    if output is None or output == "-":
        sys.stdout.write(text)
    else:
        write_atomically(output, text)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
