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

from mgxir.diagnostics import MgxError
from mgxir.drivers.common import check_output_path
from mgxir.drivers.verify import report
from mgxir.drivers.verify.cache import ResultCache, default_cache_dir
from mgxir.drivers.verify.executors import EXECUTORS, Limits, executor
from mgxir.drivers.verify.tasks import (
    AGAINST_ONNXRUNTIME,
    AGAINST_REFERENCE,
    VERIFY_TARGETS,
    Task,
    TaskOptions,
    file_digest,
    find_inputs,
    record,
    warm_up_samples,
)
from mgxir.records import Record

GIB = 1 << 30


class VerifyOptions(Record):
    """What mgx-verify was asked to do; the field names are the front end's option names."""

    def __init__(
        self,
        paths: list[str] | None = None,
        targets: str = "ref",
        against: str = AGAINST_REFERENCE,
        pipeline: str | None = None,
        tune: bool = False,
        perf: bool = False,
        device: str | None = None,
        executor: str = "process",
        ray_address: str | None = None,
        workers: int = 0,
        gpus: str | None = None,
        timeout: float = 600.0,
        memory_limit: float = 8.0,
        retries: int = 2,
        report: str | None = None,
        html: str | None = None,
        baseline: str | None = None,
        cache_dir: str | None = None,
        no_cache: bool = False,
        rms_tol: float = 1e-3,
        seed: int = 0,
        all_rows: bool = False,
        quiet: bool = False,
    ):
        self.paths = paths
        self.targets = targets  # comma-separated: ref, cpu, iree, vulkan, gpu
        self.against = against  # reference, onnxruntime or FILE.npz
        self.pipeline = pipeline  # passes run before the target (the reference runs the program as read)
        self.tune = tune  # gpu: exhaustive tuning
        self.perf = perf  # time runs after a warm-up
        self.device = device  # iree: its device; gpu: N, cuda:N or hip:N
        self.executor = executor  # process, inline or ray
        self.ray_address = ray_address  # with ray: a running cluster (default: a local one)
        self.workers = workers  # process: the pool's size (default: one per core)
        self.gpus = gpus  # process: comma-separated GPU indices, worker k pinned to the k-th (modulo)
        self.timeout = timeout  # seconds a task may run
        self.memory_limit = memory_limit  # GiB of address space a task may use (0: no limit)
        self.retries = retries  # more tries for a task whose worker died
        self.report = report  # the JSON report
        self.html = html  # the HTML page
        self.baseline = baseline  # an earlier JSON report: regressions against it come first
        self.cache_dir = cache_dir  # the result cache (default $MGXIR_VERIFY_CACHE or ~/.cache/mgxir/verify)
        self.no_cache = no_cache  # neither read nor write the result cache
        self.rms_tol = rms_tol
        self.seed = seed
        self.all_rows = all_rows  # print every record, not only the regressions and failures
        self.quiet = quiet  # no progress bar


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
    unknown = [t for t in targets if t not in VERIFY_TARGETS]
    if unknown or not targets:
        raise MgxError(f"unknown target '{unknown[0] if unknown else ''}' (available: {', '.join(VERIFY_TARGETS)})")
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
    inputs = find_inputs(o.paths or [])
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
    extra = {"devices": ",".join(devices), "timeout": str(o.timeout)}
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
        refused = {target: chosen.probe(target, options) for target in dict.fromkeys(tasks[i].target for i in to_run)}
        runnable = []
        for index in to_run:
            reason = refused[tasks[index].target]
            if reason is not None:
                done(index, record(tasks[index], "refused", reason))
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
