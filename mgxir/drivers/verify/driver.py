"""mgx-verify's driver: every input on every target, through an executor, with the result cache,
a progress bar, the JSON report, the table and the HTML page.

`mgxir.tools.mgx_verify` only declares the options and calls `verify_main(VerifyOptions(...))`.
The exit code is 1 where a record regressed against `--baseline` or, without a baseline, where any
record is a mismatch or an error; 130 after Ctrl-C (the report of what finished is written first).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

from mgxir.diagnostics import MgxError, did_you_mean
from mgxir.drivers.common import check_output_path
from mgxir.drivers.options import DeclaredOptions, Option, flag
from mgxir.drivers.verify import report
from mgxir.drivers.verify.cache import ResultCache, default_cache_dir
from mgxir.drivers.verify.executors import EXECUTORS, Limits, executor
from mgxir.drivers.verify.tasks import (
    AGAINST_ONNXRUNTIME,
    AGAINST_REFERENCE,
    Task,
    TaskOptions,
    file_digest,
    find_inputs,
    record,
    target_names,
    warm_up_samples,
)

GIB = 1 << 30


class VerifyOptions(DeclaredOptions):
    """What mgx-verify was asked to do: each field, its default, help text and command-line spellings."""

    DECLARED = (
        Option("paths", help="Programs or models, or folders to walk.", positional=True, many=True, metavar="PATHS..."),
        Option("targets", ("--targets",), "Comma-separated: ref, cpu (IREE local-task), iree, vulkan, gpu.", "ref"),
        Option(
            "against",
            ("--against",),
            "reference (the reference interpreter), onnxruntime (.onnx inputs) or FILE.npz.",
            AGAINST_REFERENCE,
        ),
        Option(
            "pipeline", ("-p", "--pass-pipeline"), "Passes run on the program before the target (not the reference)."
        ),
        flag("tune", "--tune", help="gpu: exhaustive tuning of kernels and library calls."),
        flag("perf", "--perf", help="Time 10 runs after a warm-up run (the median)."),
        Option("device", ("--device",), "iree: its device; gpu: N, cuda:N or hip:N."),
        Option("executor", ("--executor",), "process (a pool), inline or ray.", "process"),
        Option("ray_address", ("--ray-address",), "With --executor=ray: a running cluster (default: a local one)."),
        Option("workers", ("--workers",), "process: the pool's size (default: one per core).", 0, int),
        Option("gpus", ("--gpus",), "process: GPU numbers (0,1): worker k sees only the k-th (CUDA_VISIBLE_DEVICES)."),
        Option("timeout", ("--timeout",), "Seconds a task may run.", 600.0, float),
        Option(
            "memory_limit",
            ("--memory-limit",),
            "GiB of address space a task may use beyond its worker's (0: no limit; not on gpu).",
            8.0,
            float,
        ),
        Option("retries", ("--retries",), "More tries for a task whose worker died.", 2, int),
        Option("report", ("--report",), "Write the JSON report here."),
        Option("html", ("--html",), "Write the HTML page here."),
        Option("baseline", ("--baseline",), "An earlier report: regressions against it come first."),
        Option("cache_dir", ("--cache-dir",), "The caches' folder (default: $MGXIR_VERIFY_CACHE)."),
        flag("no_cache", "--no-cache", help="Neither read nor write the result cache."),
        Option("rms_tol", ("--rms-tol",), "MIGraphX's rms tolerance.", 1e-3, float),
        Option("seed", ("--seed",), "Seed of the generated inputs.", 0, int),
        flag("all_rows", "--all", help="Print every record, not only changes and failures."),
        flag("quiet", "-q", "--quiet", help="No progress bar."),
    )


def verify_main(options: VerifyOptions) -> int:
    """Runs mgx-verify; returns the exit code. The run is driven from the main thread (Ctrl-C
    arrives there); a user's mistake is one line and exit code 1."""
    from mgxir.drivers.verify.tasks import prepare

    prepare()
    try:
        return _verify(options)
    except MgxError as e:
        print(e.render(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # a bug in mgxir, not in the input
        if os.environ.get("MGXIR_TRACEBACK"):
            raise
        print(f"internal error: {type(e).__name__}: {e} (set MGXIR_TRACEBACK=1 for the traceback)", file=sys.stderr)
        return 2


def _checked(o: VerifyOptions) -> tuple[list[str], list[str], dict | None]:
    targets = [t.strip() for t in o.targets.split(",") if t.strip()]
    unknown = [t for t in targets if t not in target_names()]
    if unknown or not targets:
        name = unknown[0] if unknown else ""
        hint = did_you_mean(name, target_names())
        raise MgxError(f"unknown target '{name}'{hint} (available: {', '.join(target_names())})")
    if o.executor not in EXECUTORS:
        raise MgxError(f"--executor must be {', '.join(EXECUTORS)}, not '{o.executor}'")
    if o.against not in (AGAINST_REFERENCE, AGAINST_ONNXRUNTIME):
        if not o.against.endswith(".npz"):
            raise MgxError(f"--against must be reference, onnxruntime or a FILE.npz of outputs, not '{o.against}'")
        if not os.path.isfile(o.against):
            raise MgxError(f"cannot read --against file '{o.against}': no such file")
    if o.executor == "ray" and importlib.util.find_spec("ray") is None:
        raise MgxError("--executor=ray needs the 'ray' package: pip install 'mgxir[distributed]'")
    if o.gpus is not None and (o.executor != "process" or not all(g.strip().isdigit() for g in o.gpus.split(","))):
        raise MgxError("--gpus goes with --executor=process and is a list of GPU numbers, as 0,1")
    if o.ray_address is not None and o.executor != "ray":
        raise MgxError("--ray-address goes with --executor=ray")
    if o.timeout <= 0 or o.retries < 0 or o.memory_limit < 0 or o.workers < 0:
        raise MgxError("--timeout must be positive; --retries, --memory-limit and --workers not negative")
    for path in (o.report, o.html):
        check_output_path(path)
    baseline = report.read_baseline(o.baseline) if o.baseline else None
    inputs = find_inputs([o.paths] if isinstance(o.paths, str) else list(o.paths or []))
    if not inputs:
        raise MgxError("no inputs: name files or folders holding .mgx, .onnx, .mxr, .json, .mlir or .log files")
    return targets, inputs, baseline


def _verify(o: VerifyOptions) -> int:
    targets, inputs, baseline = _checked(o)
    task_options = TaskOptions(o.against, o.rms_tol, o.seed, o.pipeline, o.tune, o.perf, o.device)
    tasks = [Task(path, target, task_options) for path in inputs for target in targets]
    gpus = tuple(g.strip() for g in (o.gpus or "").split(",") if g.strip())
    limits = Limits(o.timeout, int(o.memory_limit * GIB) or None, o.retries, o.workers, gpus)
    devices = report.gpu_devices() if "gpu" in targets else []
    # the limits decide a task's outcome too: a task stopped by one is kept as its timeout's is
    extra = {"devices": ",".join(devices), "timeout": str(o.timeout), "memory_limit": str(limits.memory_bytes)}
    if o.against.endswith(".npz"):
        extra["against"] = file_digest(o.against)
    cache = ResultCache(None if o.no_cache else (o.cache_dir or default_cache_dir()), extra)
    if o.cache_dir:
        os.environ.setdefault("MGXIR_KERNEL_CACHE", os.path.join(o.cache_dir, "kernels"))
        os.environ.setdefault("MGXIR_CACHE_DIR", os.path.join(o.cache_dir, "iree"))
    results: list[dict | None] = [None] * len(tasks)
    interrupted = False
    with Progress(len(tasks), o.quiet) as progress:

        def done(index: int, found: dict) -> None:
            results[index] = found
            cache.store(tasks[index], found)
            progress.advance(found)

        try:
            _run(tasks, o, limits, cache, done)
        except KeyboardInterrupt:
            interrupted = True
    finished = [r for r in results if r is not None]
    env = report.environment(o.executor, limits.workers, targets, devices)
    if o.report:
        report.write_json(o.report, env, finished)
    if o.html:
        report.write_html(o.html, env, finished, baseline)
    sys.stdout.write(report.table(finished, baseline, o.all_rows))
    if interrupted:
        print(f"interrupted: {len(finished)} of {len(tasks)} tasks finished", file=sys.stderr)
        return 130
    if baseline is not None:
        return 1 if report.regressions(finished, baseline) else 0
    return 1 if any(r["status"] in ("mismatch", "error") for r in finished) else 0


def _run(tasks: list[Task], o: VerifyOptions, limits: Limits, cache: ResultCache, done: Any) -> None:
    """Cached results first, then each target's probe, then the rest on the executor."""
    to_run = []
    for index, task in enumerate(tasks):
        found = cache.lookup(task)
        if found is not None:
            done(index, found)
        else:
            to_run.append(index)
    if not to_run:
        return
    samples = warm_up_samples([tasks[i].input for i in to_run])
    with executor(o.executor, limits, o.ray_address, samples) as chosen:
        options = tasks[to_run[0]].options
        probes = {target: chosen.probe(target, options) for target in dict.fromkeys(tasks[i].target for i in to_run)}
        runnable = []
        for index in to_run:
            verdict = probes[tasks[index].target]
            if verdict is not None:
                done(index, record(tasks[index], *verdict))
            else:
                runnable.append(index)
        chosen.run([tasks[i] for i in runnable], lambda k, found: done(runnable[k], found))


class Progress:
    """A rich progress bar on stderr: done/total and the failures so far (nothing with `quiet`)."""

    def __init__(self, total: int, quiet: bool):
        self.total = total
        self.failures = 0
        self.bar: Any = None
        if not quiet:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("verify"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[failures]} failed"),
                TimeElapsedColumn(),
                console=Console(stderr=True),
            )
            self.task = self.bar.add_task("verify", total=total, failures=0)

    def __enter__(self) -> Progress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def advance(self, found: dict) -> None:
        self.failures += found["status"] in ("mismatch", "error")
        if self.bar is not None:
            self.bar.update(self.task, advance=1, failures=self.failures)
