"""mgx-opt's driver (MLIR's `MlirOptMain`): read a program, verify it, run passes, print it.

`mgxir.tools.mgx_opt` only declares the command-line options and calls `opt_main(OptOptions(...))`.
The pass machinery (`mgxir.passes`) is imported only when a command names passes, so that reading
and printing a program stays cheap to start.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.drivers.common import check_output_path, keeps_literals, read_text, run_guarded
from mgxir.drivers.formats import INPUT_FORMATS, input_format, read_input
from mgxir.ir.program import Program
from mgxir.records import Record
from mgxir.text.parser import parse_program, read_program
from mgxir.text.writer import render, write_output, write_program
from mgxir.verifier import verify

if TYPE_CHECKING:
    from pathlib import Path

    from mgxir.drivers.diagnostics_check import Chunk
    from mgxir.passes.base import Pass
    from mgxir.passes.manager import Instrumentation

DEFAULT_REPRODUCER = "mgx-opt.reproducer.mgx"


class OptOptions(Record):
    """What mgx-opt was asked to do; the field names are the front end's option names."""

    def __init__(
        self,
        input: str = "-",
        output: str | None = None,
        lossless: bool = False,
        sidecar: str | None = None,
        elide_literals: bool = False,
        from_log: bool = False,
        log_pass: str | None = None,
        no_verify: bool = False,
        pipeline: str | None = None,
        passes: list[str] | None = None,
        optimize: bool = False,
        show_passes: bool = False,
        dump_pipeline: bool = False,
        verify_each: bool = True,
        print_before: list[str] | None = None,
        print_after: list[str] | None = None,
        print_before_all: bool = False,
        print_after_all: bool = False,
        print_after_change: bool = False,
        tree_dir: str | None = None,
        timing: bool = False,
        statistics: bool = False,
        split: bool = False,
        verify_diagnostics: bool = False,
        disable: str | None = None,
        reproducer: str | None = None,
        run_reproducer: bool = False,
    ):
        self.input = input
        self.output = output
        self.lossless = lossless  # the default; the flag stays for the command lines that spell it out
        self.sidecar = sidecar
        self.elide_literals = elide_literals  # print as MIGraphX does: `{ ... }` past 10 values, 6 digits
        self.from_log = from_log
        self.log_pass = log_pass
        self.no_verify = no_verify
        self.pipeline = pipeline
        self.passes = passes
        self.optimize = optimize
        self.show_passes = show_passes
        self.dump_pipeline = dump_pipeline
        self.verify_each = verify_each
        self.print_before = print_before
        self.print_after = print_after
        self.print_before_all = print_before_all
        self.print_after_all = print_after_all
        self.print_after_change = print_after_change
        self.tree_dir = tree_dir
        self.timing = timing
        self.statistics = statistics
        self.split = split
        self.verify_diagnostics = verify_diagnostics
        self.disable = disable
        self.reproducer = reproducer
        self.run_reproducer = run_reproducer


# (program, sink for its diagnostics, a reader of the same input afresh for a reproducer, or None)
Transform = Callable[[Program, DiagnosticSink, Callable[[], Program] | None], None]


def opt_main(options: OptOptions) -> int:
    """Runs mgx-opt; returns the exit code (0, 1 for a user error, 2 for a bug in mgxir)."""
    return run_guarded(lambda sink: _opt(options, sink))


def _opt(options: OptOptions, sink: DiagnosticSink) -> int:
    if options.show_passes:
        from mgxir.passes.registry import list_passes

        load_target_passes(None)

        sys.stdout.write(list_passes())
        return 0
    check_output_path(options.output)
    options.lossless = keeps_literals(options.lossless, options.elide_literals, options.sidecar)
    from_log = options.from_log or options.log_pass is not None
    form = "log" if from_log else input_format(options.input)
    text = read_text(options.input) if form == "mgx" else None
    transform = _transformer(options, text)
    if from_log:
        return _opt_log(options, sink, transform)
    if text is None:
        return _opt_other_format(options, form, sink, transform)
    assert text is not None
    filename = "<stdin>" if options.input == "-" else options.input
    # the input's folder, where its sidecars are (as Path(input).parent for a file that could be read)
    base_dir = None if options.input == "-" else os.path.dirname(options.input)
    if not options.split and not options.verify_diagnostics:
        program = parse_program(text, filename, base_dir=base_dir, sink=sink)
        transform(program, sink, _reader(text, filename, base_dir))
        write_program(program, options.output, lossless=options.lossless, sidecar=options.sidecar)
        return 0
    # chunks of the input, and their expected diagnostics: imported only by the commands that ask
    from mgxir.drivers.diagnostics_check import Chunk, split_input

    chunks = split_input(text) if options.split else []
    if options.verify_diagnostics:
        return _verify_diagnostics(chunks or [Chunk(text, 1)], filename, base_dir, transform, options.lossless)
    return _opt_chunks(chunks, filename, base_dir, transform, options, sink)


def _opt_chunks(
    chunks: list[Chunk],
    filename: str,
    base_dir: str | Path | None,
    transform: Transform,
    options: OptOptions,
    sink: DiagnosticSink,
) -> int:
    """`--split-input-file` as mlir-opt does it: every chunk is processed and a failing one
    reports its error and prints nothing between its markers; exit 1 if any failed, and `-o`
    then writes nothing."""
    from mgxir.drivers.diagnostics_check import SPLIT_MARKER

    outputs: list[str] = []
    failed = False
    for chunk in chunks:
        try:
            program = parse_program(chunk.text, filename, base_dir=base_dir, sink=sink, line_map=chunk.line_map())
            transform(program, sink, _reader(chunk.text, filename, base_dir, chunk.line_map()))
            outputs.append(render(program, options.lossless)[0])
        except MgxError as e:
            sink.flush()
            print(e.render(), file=sys.stderr)
            outputs.append("")
            failed = True
    if not failed or options.output in (None, "-"):
        write_output(f"{SPLIT_MARKER}\n".join(outputs), options.output)
    return 1 if failed else 0


def _opt_other_format(options: OptOptions, form: str, sink: DiagnosticSink, transform: Transform) -> int:
    """An input in another format than program text (.mxr, JSON, ONNX, MLIR), read by its content."""
    if options.split or options.verify_diagnostics:
        flag = "--split-input-file" if options.split else "--verify-diagnostics"
        raise MgxError(f"{flag} reads program text; {options.input} is {INPUT_FORMATS[form].what}")
    program = read_input(options.input, {}, sink, form)
    again = None if options.input == "-" else lambda: read_input(options.input, {}, DiagnosticSink(), form)
    transform(program, sink, again)
    write_program(program, options.output, lossless=options.lossless, sidecar=options.sidecar)
    return 0


def _opt_log(options: OptOptions, sink: DiagnosticSink, transform: Transform) -> int:
    """`--from-log`: the program printed inside MIGraphX log output."""
    path, log_pass = options.input, options.log_pass
    program = read_program(path, sink, from_log=True, log_pass=log_pass)
    again = None if path == "-" else lambda: read_program(path, DiagnosticSink(), from_log=True, log_pass=log_pass)
    transform(program, sink, again)
    write_program(program, options.output, lossless=options.lossless, sidecar=options.sidecar)
    return 0


def _transformer(options: OptOptions, text: str | None) -> Transform:
    """Verification and the pass pipeline, as one function applied to each program read."""
    passes = _pipeline(options, text)
    instrumentation = _instrumentation(options, text) if passes else None
    verify_input = not options.no_verify

    def transform(program: Program, sink: DiagnosticSink, read_again: Callable[[], Program] | None) -> None:
        def replay() -> Program:
            assert read_again is not None
            fresh = read_again()
            if verify_input:
                verify(fresh, DiagnosticSink())
            return fresh

        if verify_input:
            verify(program, sink)
        if passes:
            from mgxir.passes.manager import PassManager

            PassManager(passes, instrumentation).run(program, sink, replay if read_again else None)

    return transform


def _pipeline_text(options: OptOptions, text: str | None) -> tuple[str, bool]:
    """The pipeline as `-p` text, and whether it runs on `main` only (as `-O` does)."""
    if options.run_reproducer:
        if text is None:
            raise MgxError("--run-reproducer reads a reproducer file, not a log")
        from mgxir.passes.manager import read_reproducer

        return read_reproducer(text)
    parts = ("O" if options.optimize else "", options.pipeline or "", *(options.passes or []))
    return ",".join(p for p in parts if p), options.optimize


# Passes and pipelines that targets define, by the names they register: "module" to import first.
# Only a pipeline naming one of them (or --list-passes) pays for importing its target.
TARGET_PASSES: dict[str, str] = {
    "gpu": "mgxir.targets.gpu.lowering",
    "gpu_lowering": "mgxir.targets.gpu.lowering",
}


def load_target_passes(pipeline_text: str | None) -> None:
    """Imports the targets whose passes `pipeline_text` names (all of them for None)."""
    import importlib
    import re

    names = set(TARGET_PASSES) if pipeline_text is None else set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", pipeline_text))
    for name in sorted(names & set(TARGET_PASSES)):
        importlib.import_module(TARGET_PASSES[name])


def _pipeline(options: OptOptions, text: str | None) -> list[Pass]:
    pipeline_text, main_only = _pipeline_text(options, text)
    if not pipeline_text and not options.dump_pipeline:
        return []
    from mgxir.passes.registry import format_pipeline, parse_pipeline

    load_target_passes(pipeline_text)
    passes = parse_pipeline(pipeline_text)
    if options.dump_pipeline:
        print(f"-p '{format_pipeline(passes)}'" + (" -O-scope=main" if main_only else ""), file=sys.stderr)
    return passes


def _instrumentation(options: OptOptions, text: str | None) -> Instrumentation:
    from mgxir.passes.manager import Instrumentation, disabled_passes
    from mgxir.passes.registry import ALIASES

    def names(values: list[str] | None) -> frozenset[str]:
        return frozenset(ALIASES.get(n.strip(), n.strip()) for v in values or [] for n in v.split(",") if n.strip())

    return Instrumentation(
        verify_each=options.verify_each,
        print_before=names(options.print_before),
        print_after=names(options.print_after),
        print_before_all=options.print_before_all,
        print_after_all=options.print_after_all,
        print_after_change=options.print_after_change,
        tree_dir=options.tree_dir,
        timing=options.timing,
        statistics=options.statistics,
        disabled=disabled_passes(options.disable),
        reproducer=options.reproducer or DEFAULT_REPRODUCER,
        main_only=_pipeline_text(options, text)[1],
    )


def _reader(text: str, filename: str, base_dir: str | Path | None, line_map=None) -> Callable[[], Program]:
    """Parses `text` again on each call, for rebuilding a failed pipeline's input."""
    return lambda: parse_program(text, filename, base_dir=base_dir, sink=DiagnosticSink(), line_map=line_map)


def _verify_diagnostics(
    chunks: list[Chunk], filename: str, base_dir: str | Path | None, transform: Transform, lossless: bool
) -> int:
    """`--verify-diagnostics`: each chunk's errors and warnings against its `expected-*` lines."""
    from mgxir.drivers.diagnostics_check import SPLIT_MARKER, check, expectations

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
