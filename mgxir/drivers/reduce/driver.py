"""mgx-reduce's driver: read the input, check that the test holds on it, reduce, write the reproducer.

`mgxir.tools.mgx_reduce` only declares the options and calls `reduce_main(ReduceOptions(...))`.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from typing import Any

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.drivers.common import check_output_path, load_entry, run_guarded
from mgxir.drivers.options import DeclaredOptions, Option, flag
from mgxir.drivers.reduce.candidate import instruction_count
from mgxir.drivers.reduce.interesting import (
    DEFAULT_RMS_TOLERANCE,
    Crash,
    Miscompile,
    Mismatch,
    ShellCommand,
)
from mgxir.drivers.reduce.reproducer import inputs_path, replay_header, write_reproducer
from mgxir.ir.program import Program
from mgxir.verifier import verify

DEFAULT_TIMEOUT = 60.0


class ReduceOptions(DeclaredOptions):
    """What mgx-reduce was asked to do: each field, its default, help text and command-line spellings."""

    DECLARED = (
        Option(
            "input",
            help="The program: text, .onnx, .mxr, .json, MLIR (by content), a log (--from-log), --py (--from-py).",
            default="-",
            positional=True,
            metavar="PROGRAM",
        ),
        Option("output", ("-o", "--output"), "The reproducer to write (its inputs in OUT.inputs.npz)."),
        Option("crash", ("--crash",), "Interesting: this pipeline fails with the input's kind of error."),
        Option("mismatch", ("--mismatch",), "Interesting: this target's outputs differ from ref's."),
        Option("miscompile", ("--miscompile",), "Interesting: this pipeline changes the outputs on ref."),
        Option("interesting", ("--interesting",), "Interesting: this shell command exits 0 ({} is the candidate)."),
        Option("jobs", ("-j", "--jobs"), "Worker processes (default 0: one per core).", default=0, kind=int),
        Option(
            "timeout", ("--timeout",), "Seconds one test may run on one candidate.", default=DEFAULT_TIMEOUT, kind=float
        ),
        flag("quiet", "-q", "--quiet", help="No progress line."),
        flag("from_log", "--from-log", help="The input is MIGraphX log output: the program printed in it."),
        Option("log_pass", ("--log-pass",), "With --from-log: the program printed after this pass."),
        flag("from_py", "--from-py", help="The input is a MIGraphX --py reproducer (its code is run)."),
        Option("inputs", ("--input",), "Values of main's parameters, as mgx-run takes them.", many=True),
        Option("seed", ("--seed",), "Seed of the random inputs.", default=0, kind=int),
        Option(
            "rms_tol",
            ("--rms-tol",),
            "--mismatch/--miscompile: outputs differ past this rms error.",
            default=DEFAULT_RMS_TOLERANCE,
            kind=float,
        ),
    )


def reduce_main(options: ReduceOptions) -> int:
    """Runs mgx-reduce; returns the exit code (1 for a user error, the input not interesting included)."""
    return run_guarded(lambda sink: _reduce(options, sink))


def make_test(o: ReduceOptions) -> Any:
    """The one interestingness test the options name."""
    given = [
        (flag, value)
        for flag, value in (
            ("--crash", o.crash),
            ("--mismatch", o.mismatch),
            ("--miscompile", o.miscompile),
            ("--interesting", o.interesting),
        )
        if value is not None
    ]
    if len(given) != 1:
        raise MgxError("give one test: --crash=PIPELINE, --mismatch=TARGET, --miscompile=PIPELINE or --interesting=CMD")
    pipeline = o.crash if o.crash is not None else o.miscompile
    if pipeline is not None:
        from mgxir.drivers.opt import load_target_passes
        from mgxir.passes.registry import parse_pipeline

        load_target_passes(pipeline)
        parse_pipeline(pipeline)  # an unknown pass is the user's error here, not a crash to reduce
    if o.crash is not None:
        return Crash(o.crash)
    if o.miscompile is not None:
        return Miscompile(o.miscompile, o.rms_tol)
    if o.mismatch is not None:
        from mgxir.targets.base import TARGETS

        if o.mismatch not in TARGETS:
            raise MgxError(f"unknown target '{o.mismatch}' for --mismatch (available: {', '.join(TARGETS)})")
        return Mismatch(o.mismatch, o.rms_tol)
    assert o.interesting is not None
    return ShellCommand(o.interesting, o.timeout)


def read_input(o: ReduceOptions, sink: DiagnosticSink) -> Program:
    """The program, read as the other tools read it: `--from-log`/`--from-py`, else by its content."""
    from mgxir.drivers.formats import INPUT_FORMATS, input_format

    if o.input == "-":
        raise MgxError("mgx-reduce reads a file, not standard input (it names the file in the reproducer)")
    source = "log" if o.from_log or o.log_pass else "py" if o.from_py else input_format(o.input)
    program = load_entry(INPUT_FORMATS[source].reader)(o.input, {"log_pass": o.log_pass}, sink)
    verify(program, sink)
    return program


def _reduce(o: ReduceOptions, sink: DiagnosticSink) -> int:
    from mgxir.drivers.reduce.engine import Progress, Reducer, bisect_pipeline, check_input, prepare
    from mgxir.drivers.run import gather_inputs

    if o.output is None or o.output == "-":
        raise MgxError("give the reproducer's file with -o OUT.mgx")
    check_output_path(o.output)
    test = make_test(o)
    if o.timeout <= 0:
        raise MgxError(f"--timeout must be a positive number of seconds, not {o.timeout:g}")
    program = read_input(o, sink)
    inputs = gather_inputs(program, o.inputs or [], "random", o.seed)
    start = prepare(program, inputs)
    size_before = instruction_count(program)
    folder = tempfile.mkdtemp(prefix="mgx-reduce.")
    try:
        test = check_input(test, start, folder)
        test, current = bisect_pipeline(test, start)
        jobs = o.jobs if o.jobs > 0 else (os.cpu_count() or 1)
        progress = Progress(o.quiet)
        with Reducer(test, jobs, o.timeout, folder, progress) as reducer:
            result = reducer.reduce(current)
        progress.finish()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    size_after = instruction_count(result.program)
    summary = (
        f"reduced by mgx-reduce {test.describe()} from {os.path.basename(o.input)}: "
        f"{size_before} -> {size_after} instructions"
    )
    write_reproducer(result.program, result.inputs, o.output, header_for(test, o.output, bool(result.inputs), summary))
    if not o.quiet:
        s = reducer.statistics
        print(
            f"mgx-reduce: {size_before} -> {size_after} instructions, {s.tried} candidates tried, "
            f"{s.cache_hits} cache hits, {s.elapsed():.1f}s; wrote {o.output}",
            file=sys.stderr,
        )
    return 0


def header_for(test: Any, output: str, has_inputs: bool, summary: str) -> list[str]:
    """The reproducer's header: its pipeline line and the commands that replay the bug."""
    inputs = f" --input=@{inputs_path(output)}" if has_inputs else ""
    if isinstance(test, Crash):
        return replay_header(test.pipeline, [f"mgx-opt --run-reproducer {output}"], summary)
    if isinstance(test, Miscompile):
        after = os.path.splitext(output)[0] + ".after.mgx"
        return replay_header(
            test.pipeline,
            [
                f"mgx-opt --run-reproducer --lossless {output} -o {after}",
                f"mgx-run {output}{inputs} --output=@before.npz",
                f"mgx-run {after}{inputs} --expected-output=@before.npz",
            ],
            summary,
        )
    if isinstance(test, Mismatch):
        return replay_header(None, [f"mgx-run {output} --target={test.target} --verify{inputs}"], summary)
    return replay_header(None, [test.command.replace("{}", output)], summary)
