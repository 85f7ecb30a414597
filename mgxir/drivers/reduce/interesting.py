"""The interestingness tests: does a candidate still show the bug?

Each test is a small picklable object with `holds(program, inputs, folder) -> bool`; the engine
sends it once to every worker process and then only candidates (their lossless text and inputs).
A test that raises or runs past its time is "not interesting" (as in C-Vise): the engine keeps
only candidates for which the test answered yes.

- `Crash`: the pipeline fails with the same kind of error as on the input (`error_kind`);
- `Mismatch`: a target's outputs differ from the reference interpreter's by MIGraphX's rms rule;
- `Miscompile`: the pipeline changes the outputs on the reference interpreter;
- `ShellCommand`: a command line, `{}` replaced by the candidate's reproducer file; exit 0 holds.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.records import Record

if TYPE_CHECKING:
    from mgxir.ir.program import Program

Inputs = Mapping[str, np.ndarray]

DEFAULT_RMS_TOLERANCE = 1e-3  # mgx-run's --rms-tol default, MIGraphX's verify tolerance

# the parts of an error message that change with the program cut down (numbers, shapes, names in
# quotes) and not with the kind of error
_UNSTABLE = re.compile(r"\d+|'[^']*'|\"[^\"]*\"|\{[^}]*\}")
_PASS_PREFIX = re.compile(r"^(pass '[^']*' [a-zA-Z ]+?): ")


class ErrorKind(Record):
    """What makes two failures the same bug: the exception class that started it and the stable
    part of the first line of its message (numbers, quoted names and shapes taken out); the failing
    pass's name is kept."""

    def __init__(self, exception: str, message: str):
        self.exception = exception
        self.message = message

    def __str__(self) -> str:
        return f"{self.exception}: {self.message}"


def error_kind(error: BaseException) -> ErrorKind:
    """The kind of `error`; for a pass that failed (MgxError from the pass manager), its cause's."""
    root: BaseException = error
    while root.__cause__ is not None:
        root = root.__cause__
    text = error.message if isinstance(error, MgxError) else str(error)
    first = text.splitlines()[0] if text else ""
    prefix = _PASS_PREFIX.match(first)
    head, rest = (prefix.group(1) + ": ", first[prefix.end() :]) if prefix else ("", first)
    return ErrorKind(type(root).__name__, head + _UNSTABLE.sub("_", rest))


def run_pipeline(program: Program, pipeline: str) -> None:
    """Verifies `program` and runs `pipeline` on it as mgx-opt does (verifying after each pass)."""
    from mgxir.drivers.opt import load_target_passes
    from mgxir.passes.manager import Instrumentation, PassManager
    from mgxir.passes.registry import parse_pipeline

    load_target_passes(pipeline)
    PassManager(parse_pipeline(pipeline), Instrumentation(reproducer=None)).run(program, DiagnosticSink())


def reference_outputs(program: Program, inputs: Inputs) -> dict[str, np.ndarray]:
    from mgxir.drivers.run import flatten_outputs, run_on_ref

    return flatten_outputs(run_on_ref(program, dict(inputs), DiagnosticSink()))


def outputs_differ(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], tolerance: float) -> bool:
    """Whether any output differs by MIGraphX's rms rule (as `mgx-run --verify`: identical NaNs match)."""
    from mgxir.drivers.run import rms_error

    if actual.keys() != expected.keys():
        return True
    for key, ref in expected.items():
        got = actual[key]
        if tuple(got.shape) != tuple(ref.shape):
            return True
        g, r = got.astype(np.float64), ref.astype(np.float64)
        error = rms_error(g, r)
        if np.isnan(error):
            if not np.array_equal(g, r, equal_nan=True):
                return True
        elif error > tolerance:
            return True
    return False


class Crash(Record):
    """`--crash=PIPELINE`: the pipeline fails with `expected` (the input's kind of error)."""

    name = "crash"

    def __init__(self, pipeline: str, expected: ErrorKind | None = None):
        self.pipeline = pipeline
        self.expected = expected

    def failure(self, program: Program) -> ErrorKind | None:
        """The kind of error the pipeline fails with on `program`, None if it does not fail."""
        try:
            run_pipeline(program, self.pipeline)
        except (MgxError, Exception) as e:
            return error_kind(e)
        return None

    def holds(self, program: Program, inputs: Inputs, folder: str) -> bool:
        found = self.failure(program)
        return found is not None and found == self.expected

    def describe(self) -> str:
        return f"--crash='{self.pipeline}' ({self.expected})"


class Mismatch(Record):
    """`--mismatch=TARGET`: the target's outputs differ from the reference interpreter's."""

    name = "mismatch"

    def __init__(self, target: str, tolerance: float = DEFAULT_RMS_TOLERANCE):
        self.target = target
        self.tolerance = tolerance

    def holds(self, program: Program, inputs: Inputs, folder: str) -> bool:
        from mgxir.drivers.run import RunOptions, flatten_outputs, run_on_target

        expected = reference_outputs(program, inputs)
        if self.target == "ref":
            # as `mgx-run --verify` on ref: the interpreter against the program the ref pipeline compiles
            from mgxir.drivers.compiled_for_ref import run_compiled_for_ref

            actual = flatten_outputs(run_compiled_for_ref(program, dict(inputs), DiagnosticSink()))
        else:
            actual = flatten_outputs(
                run_on_target(program, dict(inputs), RunOptions(target=self.target), DiagnosticSink())
            )
        return outputs_differ(actual, expected, self.tolerance)

    def describe(self) -> str:
        return f"--mismatch={self.target}"


class Miscompile(Record):
    """`--miscompile=PIPELINE`: the pipeline runs, and the result computes something else on the
    reference interpreter than the program before it."""

    name = "miscompile"

    def __init__(self, pipeline: str, tolerance: float = DEFAULT_RMS_TOLERANCE):
        self.pipeline = pipeline
        self.tolerance = tolerance

    def holds(self, program: Program, inputs: Inputs, folder: str) -> bool:
        before = reference_outputs(program, inputs)
        run_pipeline(program, self.pipeline)
        return outputs_differ(reference_outputs(program, inputs), before, self.tolerance)

    def describe(self) -> str:
        return f"--miscompile='{self.pipeline}'"


class ShellCommand(Record):
    """`--interesting='CMD {}'`: a shell command on the candidate's reproducer file (its inputs
    beside it, as the output has them), run in mgx-reduce's own working folder (so that the command
    can name files relative to it); exit status 0 means it still shows the bug."""

    name = "interesting"

    def __init__(self, command: str, timeout: float | None = None):
        self.command = command
        self.timeout = timeout

    def holds(self, program: Program, inputs: Inputs, folder: str) -> bool:
        from mgxir.drivers.reduce.reproducer import write_reproducer

        path = os.path.join(folder, "candidate.mgx")
        write_reproducer(program, inputs, path, header=[])  # no header: the command's own text would match a grep
        command = self.command.replace("{}", shlex.quote(path)) if "{}" in self.command else self.command
        try:
            done = subprocess.run(
                command, shell=True, timeout=self.timeout,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0

    def describe(self) -> str:
        return f"--interesting='{self.command}'"
