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
from mgxir.drivers.options import DeclaredOptions, Option, flag
from mgxir.drivers.payloads import read_payloads, write_payloads
from mgxir.ir.program import Program
from mgxir.progress import progress, set_quiet
from mgxir.targets.base import target_passes
from mgxir.text.parser import parse_program, read_program
from mgxir.text.writer import render, write_output, write_program
from mgxir.verifier import verify

if TYPE_CHECKING:
    from pathlib import Path

    from mgxir.drivers.diagnostics_check import Chunk
    from mgxir.passes.base import Pass
    from mgxir.passes.manager import Instrumentation

DEFAULT_REPRODUCER = "mgx-opt.reproducer.mgx"


class OptOptions(DeclaredOptions):
    """What mgx-opt was asked to do: each field, its default, help text and command-line spellings."""

    DECLARED = (
        Option("input", help="Program text to read ('-' for standard input).", default="-", positional=True),
        Option("output", ("-o", "--output"), "Write here (atomically) instead of standard output."),
        flag(
            "lossless",
            "--lossless",
            help="Keep every literal value exactly (the default; NaN payloads, bf16/fp8 bits).",
        ),
        flag(
            "elide_literals",
            "--elide-literals",
            help="Print literals as MIGraphX does: '{ ... }' past 10 values, 6 digits.",
        ),
        Option("sidecar", ("--sidecar",), "Put the data of literals past ten values in this .npz; the text names it."),
        flag(
            "portable",
            "--portable",
            help="With -p gpu: keep each kernel's portable payloads beside its binary (CUDA/HIP C++ source, "
            "SPIR-V, MLIR bytecode); mgx-run finishes them on another GPU, on Vulkan or on the CPU.",
        ),
        Option(
            "offload_arch",
            ("--offload-arch",),
            "With -p gpu --portable: also keep ready binaries for these architectures (sm_90,sm_80,gfx942,...).",
        ),
        flag("from_log", "--from-log", help="The input is MIGraphX log output: load the program printed in it."),
        Option(
            "log_pass", ("--log-pass",), "With --from-log: the program printed after this pass (default: the last one)."
        ),
        flag("no_verify", "--no-verify", help="Do not check shapes and definitions after reading."),
        Option(
            "pipeline",
            ("-p", "--pass-pipeline"),
            "Passes to run: 'dce,simplify_algebra,fuse_pointwise{max_rounds=8}' (or MLIR's 'builtin.module(dce,cse)').",
        ),
        Option("passes", ("--pass",), "A pass to run (repeatable, after -p).", many=True),
        flag("optimize", "-O", help="What `migraphx-driver read -O` runs, on the main module only."),
        flag("show_passes", "--list-passes", help="List the passes, their options, aliases and pipelines."),
        flag(
            "dump_pipeline", "--dump-pass-pipeline", help="Print the pipeline to run (to stderr) as text -p reads back."
        ),
        Option(
            "verify_each",
            ("--verify-each",),
            "Verify the program after each pass.",
            default=True,
            kind=bool,
            negatable=True,
        ),
        Option("print_before", ("--print-ir-before",), "Print the IR before these passes.", many=True),
        Option("print_after", ("--print-ir-after",), "Print the IR after these passes.", many=True),
        flag(
            "print_before_all",
            "--print-ir-before-all",
            help="Print the IR before every pass.",
            aliases=("--mlir-print-ir-before-all",),
        ),
        flag(
            "print_after_all",
            "--print-ir-after-all",
            help="Print the IR after every pass.",
            aliases=("--mlir-print-ir-after-all",),
        ),
        flag(
            "print_after_change",
            "--print-ir-after-change",
            help="Print the IR after a pass that changed it.",
            aliases=("--mlir-print-ir-after-change",),
        ),
        Option("tree_dir", ("--print-ir-tree-dir",), "Write the IR after each pass into this folder."),
        flag("timing", "--timing", help="Print the wall time of each pass.", aliases=("--mlir-timing",)),
        flag(
            "statistics", "--pass-statistics", help="Print what each pass changed.", aliases=("--mlir-pass-statistics",)
        ),
        flag("split", "--split-input-file", help="Treat each '// -----' separated part as its own input."),
        flag(
            "verify_diagnostics",
            "--verify-diagnostics",
            help="Check errors and warnings against '// expected-error' annotations.",
        ),
        Option("disable", ("--disable-passes",), "Skip these passes (also MIGRAPHX_DISABLE_PASSES)."),
        Option(
            "reproducer",
            ("--reproducer",),
            f"Where a failing pass writes its reproducer (default {DEFAULT_REPRODUCER}).",
        ),
        flag(
            "run_reproducer",
            "--run-reproducer",
            help="The input is a reproducer: run the pipeline named in its first line.",
        ),
        flag("no_host", "--no-host", help="A target lowering (-p gpu) fails on an instruction left for the host."),
        flag("quiet", "-q", "--quiet", help="No progress display (shown on a terminal for work that takes seconds)."),
    )


# (program, sink for its diagnostics, a reader of the same input afresh for a reproducer, or None)
Transform = Callable[[Program, DiagnosticSink, Callable[[], Program] | None], None]


def opt_main(options: OptOptions) -> int:
    """Runs mgx-opt; returns the exit code (0, 1 for a user error, 2 for a bug in mgxir)."""
    set_quiet(options.quiet)
    return run_guarded(lambda sink: _opt(options, sink))


# `-o FILE.mxr` / `-o FILE.json`: the output format follows the extension (text otherwise)
_PROGRAM_FILE_WRITERS = {
    ".mxr": "mgxir.translate.mxr:write_mxr",
    ".json": "mgxir.translate.mxr:write_json_program",
}


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
        with progress(f"reading {filename}"):
            program = read_payloads(parse_program(text, filename, base_dir=base_dir, sink=sink), options.input)
        transform(program, sink, _reader(text, filename, base_dir))
        _write(program, options)
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
    then writes nothing. A chunk's `// case: NAME` line is printed before its output."""
    from mgxir.drivers.diagnostics_check import SPLIT_MARKER

    outputs: list[str] = []
    failed = False
    for chunk in chunks:
        try:
            program = parse_program(chunk.text, filename, base_dir=base_dir, sink=sink, line_map=chunk.line_map())
            transform(program, sink, _reader(chunk.text, filename, base_dir, chunk.line_map()))
            outputs.append(chunk.labelled(render(program, options.lossless)[0]))
        except MgxError as e:
            sink.drop_superseded(e.diagnostic)
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
    _write(program, options)
    return 0


def _write(program: Program, options: OptOptions) -> None:
    """The result, in the format `-o`'s extension names: MIGraphX's program files (a compiled
    program keeps its code objects), else program text (and a compiled program's payload sidecar)."""
    with progress("writing" if options.output in (None, "-") else f"writing {options.output}"):
        writer = _PROGRAM_FILE_WRITERS.get(os.path.splitext(options.output or "")[1])
        if writer is not None:
            import importlib

            module, _, function = writer.partition(":")
            getattr(importlib.import_module(module), function)(program, options.output)
        else:
            write_program(program, options.output, lossless=options.lossless, sidecar=options.sidecar)
            write_payloads(program, options.output)


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
        if options.portable or options.offload_arch:
            from mgxir.targets.gpu.compiled import keep_payloads

            archs = [a.strip() for a in (options.offload_arch or "").split(",") if a.strip()]
            with progress("keeping portable payloads"):
                keep_payloads(program, archs, sink)

    return transform


def _pipeline_text(options: OptOptions, text: str | None) -> tuple[str, bool]:
    """The pipeline as `-p` text, and whether it runs on `main` only (as `-O` does)."""
    if options.run_reproducer:
        if text is None:
            raise MgxError("--run-reproducer reads a reproducer file, not a log")
        from mgxir.passes.manager import read_reproducer

        return read_reproducer(text)
    parts = ("O" if options.optimize else "", mlir_pipeline(options.pipeline or ""), *(options.passes or []))
    return ",".join(p for p in parts if p), options.optimize


def mlir_pipeline(text: str) -> str:
    """MLIR's `builtin.module(a,b)` spelling of a pipeline as mgx-opt's `a,b` (the program is the module)."""
    stripped = text.strip()
    if stripped.startswith("builtin.module(") and stripped.endswith(")"):
        return stripped[len("builtin.module(") : -1]
    return text


# Passes and pipelines that targets define, by the names they register: "module" to import first
# (from the table of targets). Only a pipeline naming one of them (or --list-passes) pays for
# importing its target.
TARGET_PASSES: dict[str, str] = target_passes()


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
    for p in passes:  # --no-host: lowerings that would leave instructions for the host fail instead
        if options.no_host and hasattr(p, "allow_host"):
            p.allow_host = False
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
