"""Runs a pipeline of passes with mlir-opt's instrumentation: verify after each pass, IR dumps,
timing, statistics, disabled passes, and a reproducer file when a pass fails.

The reproducer holds the IR as it was before the failing pass. Printing the IR before every pass
would cost a print per pass on the success path, so when the caller can rebuild the input (`replay`),
the IR is recovered only after a failure by running the passes that preceded it again on a fresh
copy (passes are deterministic); without `replay` the IR is printed before each pass.

After a pass, verification is skipped when no module changed: a module's fingerprint (each
instruction with its operation, result shape, arguments and submodules, in order) is compared with
the one taken when it was last verified; operations and shapes are immutable values, so an equal
fingerprint means the verifier would see the same IR."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TextIO

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.program import Program
from mgxir.passes.base import Pass, PassContext, PassRefusal
from mgxir.passes.registry import ALIASES, format_pipeline
from mgxir.progress import Advance, progress
from mgxir.records import Record
from mgxir.text.printer import PrintOptions, print_program
from mgxir.verifier import verify

DISABLE_ENV = "MIGRAPHX_DISABLE_PASSES"


class Instrumentation(Record):
    def __init__(
        self,
        verify_each: bool = True,
        print_before: frozenset[str] = frozenset(),
        print_after: frozenset[str] = frozenset(),
        print_before_all: bool = False,
        print_after_all: bool = False,
        print_after_change: bool = False,
        tree_dir: str | None = None,
        timing: bool = False,
        statistics: bool = False,
        disabled: frozenset[str] = frozenset(),
        reproducer: str | None = None,
        main_only: bool = False,
        stream: TextIO | None = None,
    ):
        self.verify_each = verify_each
        self.print_before = print_before
        self.print_after = print_after
        self.print_before_all = print_before_all
        self.print_after_all = print_after_all
        self.print_after_change = print_after_change
        self.tree_dir = tree_dir
        self.timing = timing
        self.statistics = statistics
        self.disabled = disabled
        self.reproducer = reproducer  # where to write the reproducer if a pass fails
        self.main_only = main_only
        self.stream: TextIO = sys.stderr if stream is None else stream


def disabled_passes(flag: str | None) -> frozenset[str]:
    """Names from `--disable-passes=a,b` and MIGRAPHX_DISABLE_PASSES (aliases resolved)."""
    names = [n for text in (flag or "", os.environ.get(DISABLE_ENV, "")) for n in text.split(",")]
    return frozenset(ALIASES.get(n.strip(), n.strip()) for n in names if n.strip())


def _ir(program: Program) -> str:
    return print_program(program, PrintOptions(lossless=True))


class PassManager:
    def __init__(self, passes: list[Pass], instrumentation: Instrumentation | None = None):
        self.passes = passes
        self.options = instrumentation or Instrumentation()
        self.times: list[tuple[str, float]] = []
        self.statistics: list[tuple[str, Counter[str], int, int]] = []

    def run(
        self, program: Program, sink: DiagnosticSink | None = None, replay: Callable[[], Program] | None = None
    ) -> None:
        """Runs the pipeline on `program`; `replay`, if given, builds the same input afresh."""
        with cycle_collector_paused(), progress("passes", total=len(self.passes)) as advance:
            self._run(program, sink, replay, advance)

    def _run(
        self,
        program: Program,
        sink: DiagnosticSink | None,
        replay: Callable[[], Program] | None,
        advance: Advance,
    ) -> None:
        o = self.options
        keep_snapshot = o.print_after_change or (o.reproducer is not None and replay is None)
        verified = _fingerprint(program) if o.verify_each else None
        for index, p in enumerate(self.passes):
            advance(0 if index == 0 else 1, p.name)
            if p.name in o.disabled:
                continue
            if o.print_before_all or p.name in o.print_before:
                self._dump(f"Before {p.name}", _ir(program))
            before = _ir(program) if keep_snapshot else None
            count_before = _instruction_count(program) if o.statistics else 0
            context = PassContext(main_only=o.main_only, sink=sink)
            start = time.perf_counter()
            stage = "failed"
            try:
                p.apply(program, context)
                if verified is not None and not _unchanged(program, verified):
                    stage = "left invalid IR"
                    verify(program, sink)
                    verified = _fingerprint(program)
            except PassRefusal:
                raise
            except Exception as e:
                message = e.message if isinstance(e, MgxError) else f"{type(e).__name__}: {e}"
                text = f"pass '{p.name}' {stage}: {message.splitlines()[0] if message else ''}"
                if o.reproducer:
                    if before is None and replay is not None:
                        before = self._replay_until(replay, index)
                    self._write_reproducer(before, index)
                    text += f" (reproducer: {o.reproducer}; replay with mgx-opt --run-reproducer)"
                raise MgxError(text) from e
            self.times.append((p.name, time.perf_counter() - start))
            if o.statistics:
                self.statistics.append((p.name, context.statistics, count_before, _instruction_count(program)))
            after: str | None = None
            if o.print_after_all or p.name in o.print_after:
                after = _ir(program)
                self._dump(f"After {p.name}", after)
            elif o.print_after_change:
                after = _ir(program)
                if after != before:
                    self._dump(f"After {p.name}", after)
            if o.tree_dir:
                from pathlib import Path  # only here: a plain run does not import pathlib (mgxir.text.writer)

                Path(o.tree_dir).mkdir(parents=True, exist_ok=True)
                path = Path(o.tree_dir) / f"{index:03d}_{p.name}.mgx"
                path.write_text(after if after is not None else _ir(program))
        if o.timing:
            self._print_timing()
        if o.statistics:
            self._print_statistics()

    def _dump(self, title: str, text: str) -> None:
        print(f"// -----// IR Dump {title} //----- //", file=self.options.stream)
        self.options.stream.write(text)

    def _replay_until(self, replay: Callable[[], Program], index: int) -> str:
        """The IR before pass `index`, rebuilt by running the passes before it on a fresh input."""
        program = replay()
        for p in self.passes[:index]:
            if p.name not in self.options.disabled:
                p.apply(program, PassContext(main_only=self.options.main_only))
        return _ir(program)

    def _write_reproducer(self, before: str, index: int) -> None:
        assert self.options.reproducer is not None
        pipeline = format_pipeline(self.passes[index:])
        scope = " -O-scope=main" if self.options.main_only else ""
        from pathlib import Path

        Path(self.options.reproducer).write_text(f"// mgx-opt -p '{pipeline}'{scope}\n{before}")

    def _print_timing(self) -> None:
        total = sum(t for _, t in self.times) or 1e-12
        out = self.options.stream
        print("===-------------------------------------------------------------------------===", file=out)
        print("                         ... Execution time report ...", file=out)
        print("===-------------------------------------------------------------------------===", file=out)
        print(f"  Total Execution Time: {total:.4f} seconds", file=out)
        print("", file=out)
        print("  ----Wall Time----  ----Name----", file=out)
        for name, t in self.times:
            print(f"  {t:8.4f} ({100 * t / total:5.1f}%)  {name}", file=out)
        print(f"  {total:8.4f} (100.0%)  Total", file=out)

    def _print_statistics(self) -> None:
        out = self.options.stream
        print("===-------------------------------------------------------------------------===", file=out)
        print("                         ... Pass statistics report ...", file=out)
        print("===-------------------------------------------------------------------------===", file=out)
        for name, counts, before, after in self.statistics:
            print(f"{name}", file=out)
            print(f"  (S) {before} instructions before, {after} after", file=out)
            for what, n in sorted(counts.items()):
                print(f"  (S) {n} {what}", file=out)


@contextlib.contextmanager
def cycle_collector_paused() -> Iterator[None]:
    """Python's cycle collector off while passes run: every instruction is in a reference cycle
    (its list links, its users), so each collection would only rescan the whole IR, making large
    pipelines grow faster than linearly. The command-line tools keep it off for their whole run."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            # what was made while it was off would all be young: the first collection after would
            # scan every instruction made by the passes. Filed as old instead (freeze moves every
            # tracked object to the permanent generation, unfreeze back to the oldest), it is
            # collected as the old generation is, cycles included.
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _fingerprint(program: Program) -> tuple[object, ...]:
    """What the verifier reads, held by reference (so no identity is reused while it is kept)."""
    modules = program.modules.values()
    return tuple((m, m.name, [(i, i.op, i.shape, *i.args, *i.module_args) for i in m]) for m in modules)


def _unchanged(program: Program, fingerprint: tuple[object, ...]) -> bool:
    """Whether `_fingerprint(program)` would equal `fingerprint`, found without building it (each
    instruction's entry is made, compared and dropped at once: cheaper than holding them all)."""
    modules = list(program.modules.values())
    if len(modules) != len(fingerprint):
        return False
    for module, (known, name, entries) in zip(modules, fingerprint):  # type: ignore[misc]
        if module is not known or module.name != name or len(module) != len(entries):
            return False
        for i, entry in zip(module, entries):
            if entry != (i, i.op, i.shape, *i.args, *i.module_args):
                return False
    return True


def _instruction_count(program: Program) -> int:
    return sum(len(m) for m in program.modules.values())


def read_reproducer(text: str) -> tuple[str, bool]:
    """The pipeline (and whether it ran on main only) from a reproducer's first line."""
    first = text.split("\n", 1)[0]
    prefix = "// mgx-opt -p '"
    if not first.startswith(prefix) or "'" not in first[len(prefix) :]:
        raise MgxError("not a reproducer: the first line must be // mgx-opt -p '<pipeline>'")
    rest = first[len(prefix) :]
    pipeline, _, tail = rest.partition("'")
    return pipeline, "-O-scope=main" in tail
