"""The reduction loop: bisect the pipeline, then run every delta pass again and again until a whole
round shrinks nothing.

Candidates are tried in worker processes (a `concurrent.futures.ProcessPoolExecutor`, `jobs` of
them), a window of `jobs` at a time in the order the delta pass made them: the first that holds in
that order becomes the current program, so `-j 1` and `-j 8` take the same steps where the test is
deterministic. A worker gets the test once, then each candidate as its lossless text and inputs;
each test runs under a time limit (SIGALRM in the worker, a timeout on a shell command) and a test
that runs out of time does not hold. Every candidate is verified before it is sent, and the answer
for each is kept by the program's content fingerprint: a candidate that some pass makes again is
not run again.
"""

from __future__ import annotations

import collections
import os
import signal
import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.drivers.reduce.candidate import Candidate, ensure_return, instruction_count
from mgxir.drivers.reduce.interesting import Crash, Miscompile, outputs_differ, reference_outputs
from mgxir.drivers.reduce.strategies import STRATEGIES, Chunked
from mgxir.verifier import verify

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from mgxir.ir.program import Program


class Statistics:
    def __init__(self) -> None:
        self.tried = 0  # candidates the test ran on
        self.cache_hits = 0  # candidates answered from the cache
        self.invalid = 0  # candidates the verifier refused
        self.accepted = 0
        self.start = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start


class Progress:
    """One line on stderr: the size, the candidates tried, the cache hits and the delta pass.

    On a terminal the line is rewritten in place; elsewhere (a log, a test) a line is printed each
    time the program shrinks. `quiet` prints nothing."""

    def __init__(self, quiet: bool, stream: Any = None):
        self.stream = sys.stderr if stream is None else stream
        self.quiet = quiet
        self.live = not quiet and self.stream.isatty()
        self.last = 0.0

    def update(self, size: int, statistics: Statistics, strategy: str, shrunk: bool) -> None:
        if self.quiet or not (shrunk or self.live):
            return
        now = time.monotonic()
        if self.live and not shrunk and now - self.last < 0.1:
            return
        self.last = now
        line = (
            f"mgx-reduce: {size} instructions, {statistics.tried} candidates tried, "
            f"{statistics.cache_hits} cache hits, {statistics.elapsed():.1f}s [{strategy}]"
        )
        if self.live:
            self.stream.write(f"\r\x1b[K{line}")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.live:
            self.stream.write("\n")
            self.stream.flush()


# -- worker processes ----------------------------------------------------------------------------

_worker: dict[str, Any] = {}


class _OutOfTime(BaseException):
    """Raised by SIGALRM in a worker: a BaseException, so no `except Exception` on the way stops it."""


def _alarm(signum: int, frame: object) -> None:
    raise _OutOfTime


def _start_worker(test: Any, timeout: float, folder: str) -> None:
    from mgxir.drivers.common import register_target_ops
    from mgxir.ops import register_all_ops

    register_all_ops()
    register_target_ops()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))
    own = os.path.join(folder, f"worker{os.getpid()}")
    os.makedirs(own, exist_ok=True)
    _worker.update(test=test, timeout=timeout, folder=own)


def evaluate(test: Any, text: str, inputs: dict, folder: str, timeout: float) -> bool:
    """Whether `test` holds on the program `text`; an error or running out of time is a no."""
    from mgxir.text.parser import parse_program

    previous = signal.signal(signal.SIGALRM, _alarm) if timeout > 0 else None
    if timeout > 0:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        program = parse_program(text, "<candidate>", sink=DiagnosticSink())
        return bool(test.holds(program, inputs, folder))
    except (_OutOfTime, Exception):
        return False
    finally:
        if timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _evaluate_in_worker(text: str, inputs: dict) -> bool:
    return evaluate(_worker["test"], text, inputs, _worker["folder"], _worker["timeout"])


# -- the loop ------------------------------------------------------------------------------------


def fingerprint(candidate: Candidate) -> str:
    """The cache key: the program's content fingerprint and the digests of its inputs."""
    from mgxir.drivers.run import _storable
    from mgxir.ir.fingerprint import data_digest, program_fingerprint

    try:
        program = program_fingerprint(candidate.program)
    except ValueError:  # bf16/fp8 literal data, which program_fingerprint cannot digest yet: the text
        import hashlib

        program = hashlib.blake2b(lossless_text(candidate.program).encode(), digest_size=16).hexdigest()
    inputs = ",".join(
        f"{name}:{candidate.inputs[name].dtype}:{data_digest(_storable(candidate.inputs[name]))}"
        for name in sorted(candidate.inputs)
    )
    return f"{program}|{inputs}"


def lossless_text(program: Program) -> str:
    from mgxir.text.printer import PrintOptions, print_program

    return print_program(program, PrintOptions(lossless=True))


class Reducer:
    """Runs the delta passes on a candidate while `test` holds, in `jobs` worker processes."""

    def __init__(
        self,
        test: Any,
        jobs: int,
        timeout: float,
        folder: str,
        progress: Progress | None = None,
        time_limit: float | None = None,
    ):
        self.test = test
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self.folder = folder
        self.progress = progress or Progress(quiet=True)
        self.statistics = Statistics()
        self.cache: dict[str, bool] = {}
        self.strategies: list[Chunked] = [s() for s in STRATEGIES]
        self._pool: ProcessPoolExecutor | None = None
        # past this moment no candidate is made: the smallest program found so far is the result
        self.deadline = None if time_limit is None else time.monotonic() + time_limit
        self.stopped = False

    def __enter__(self) -> Reducer:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(
                self.jobs,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
                initargs=(self.test, self.timeout, self.folder),
            )
        return self._pool

    def reduce(self, current: Candidate) -> Candidate:
        """The smallest candidate found: every delta pass in turn, rounds until one shrinks nothing."""
        while True:
            before = current.size()
            for strategy in self.strategies:
                strategy.reset()
                current = self.run_strategy(strategy, current)
            if current.size() >= before or self.stopped:
                return current

    def run_strategy(self, strategy: Chunked, current: Candidate) -> Candidate:
        while not self.out_of_time():
            found = self.first_that_holds(strategy.candidates(current), current.size(), strategy.name)
            if found is None:
                return current
            current = found
            strategy.taken(found)
            self.statistics.accepted += 1
            self.progress.update(instruction_count(current.program), self.statistics, strategy.name, True)
        return current

    def out_of_time(self) -> bool:
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.stopped = True
        return self.stopped

    def first_that_holds(self, candidates: Iterable[Candidate], size: tuple, strategy: str) -> Candidate | None:
        """The first of `candidates` (smaller than `size`, verified) on which the test holds."""
        window: collections.deque[tuple[str, Candidate, Future]] = collections.deque()
        for candidate in candidates:
            if self.out_of_time():
                break
            if not candidate.size() < size:
                continue
            try:
                verify(candidate.program, DiagnosticSink())
            except MgxError:
                self.statistics.invalid += 1
                continue
            key = fingerprint(candidate)
            known = self.cache.get(key)
            if known is not None:
                self.statistics.cache_hits += 1
                if known and not window:
                    return candidate
                if not known:
                    continue
            window.append((key, candidate, self._submit(key, candidate)))
            if len(window) >= self.jobs:
                found = self._settle(window, strategy, keep=self.jobs - 1)
                if found is not None:
                    return found
        return self._settle(window, strategy, keep=0)

    def _submit(self, key: str, candidate: Candidate) -> Future:
        self.statistics.tried += 1
        self.cache[key] = False  # until the answer comes: a copy made meanwhile is not sent again
        future = self.pool().submit(_evaluate_in_worker, lossless_text(candidate.program), candidate.inputs)
        future.add_done_callback(lambda f: self._record(key, f))
        return future

    def _record(self, key: str, future: Future) -> None:
        if not future.cancelled() and future.exception() is None:
            self.cache[key] = bool(future.result())

    def _settle(self, window: collections.deque, strategy: str, keep: int) -> Candidate | None:
        """Waits for the oldest answers until `keep` are left; the first yes is returned."""
        from concurrent.futures.process import BrokenProcessPool

        while len(window) > keep:
            key, candidate, future = window.popleft()
            try:
                holds = future.result()
            except BrokenProcessPool:  # a worker died (killed for memory, a crash in a library)
                holds = False
                self._pool = None
            self.progress.update(instruction_count(candidate.program), self.statistics, strategy, False)
            if holds:
                self.cache[key] = True
                for later_key, _, later in window:
                    if later.cancel():  # never ran: no answer to keep
                        self.cache.pop(later_key, None)
                window.clear()
                return candidate
        return None


# -- the pipeline first ----------------------------------------------------------------------------


def _passes(pipeline: str) -> list:
    from mgxir.drivers.opt import load_target_passes
    from mgxir.passes.registry import parse_pipeline

    load_target_passes(pipeline)
    return parse_pipeline(pipeline)


def _run_passes(program: Program, passes: list) -> None:
    from mgxir.passes.manager import Instrumentation, PassManager

    PassManager(passes, Instrumentation(reproducer=None)).run(program, DiagnosticSink())


def bisect_pipeline(test: Any, current: Candidate) -> tuple[Any, Candidate]:
    """For a test with a pipeline: the one pass that fails or miscompiles, and the program as it
    enters that pass (the passes before it run here). Returns the test and candidate unchanged
    where no single pass shows the bug on its own."""
    from mgxir.passes.registry import format_pipeline

    if not isinstance(test, Crash | Miscompile):
        return test, current
    passes = _passes(test.pipeline)
    culprit = _first_bad_pass(test, current, passes)
    if culprit is None:
        return test, current
    entering = current.copy()
    _run_passes(entering.program, passes[:culprit])
    narrowed = _with_pipeline(test, format_pipeline([passes[culprit]]))
    if narrowed.holds(entering.copy().program, entering.inputs, ""):
        return narrowed, entering
    shortest = _with_pipeline(test, format_pipeline(passes[: culprit + 1]))
    if shortest.holds(current.copy().program, current.inputs, ""):
        return shortest, current
    return test, current


def _with_pipeline(test: Crash | Miscompile, pipeline: str) -> Crash | Miscompile:
    if isinstance(test, Crash):
        return Crash(pipeline, test.expected)
    return Miscompile(pipeline, test.tolerance)


def _first_bad_pass(test: Crash | Miscompile, current: Candidate, passes: list) -> int | None:
    """The index of the pass that fails (for a crash) or first changes the outputs (a miscompile)."""
    working = current.copy()
    expected = None if isinstance(test, Crash) else reference_outputs(working.program, working.inputs)
    for index, p in enumerate(passes):
        try:
            _run_passes(working.program, [p])
        except Exception:
            return index if isinstance(test, Crash) else None
        if expected is not None and outputs_differ(
            reference_outputs(working.program, working.inputs),
            expected,
            test.tolerance,  # type: ignore[union-attr]
        ):
            return index
    return None


def check_input(test: Any, current: Candidate, folder: str) -> Any:
    """The test ready to run on candidates: a crash learns the input's kind of error; a test that
    does not hold on the input is the user's error."""
    if isinstance(test, Crash):
        kind = test.failure(current.copy().program)
        if kind is None:
            raise MgxError(f"the input does not fail with --crash='{test.pipeline}'")
        test = Crash(test.pipeline, kind)
    if not evaluate(test, lossless_text(current.program), current.inputs, folder, 0):
        raise MgxError(f"the input is not interesting: {test.describe()} does not hold on it")
    return test


def prepare(program: Program, inputs: dict) -> Candidate:
    ensure_return(program)
    return Candidate(program, inputs)
