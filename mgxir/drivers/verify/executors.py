"""Where mgx-verify's tasks run: `inline` (in this process, one after another: for debugging),
`process` (a pool of worker processes, one per core, no server) and `ray` (a Ray cluster: a local
one started for the run, or the one at `--ray-address`).

Under `process` and `ray` each task runs in a child forked by its worker (`run_limited`), with an
address-space limit (`resource.setrlimit(RLIMIT_AS)`, except on GPU targets, whose drivers reserve
address space the size of the device's memory) and a timeout: a task that hangs or allocates past
the limit is stopped and reported as `error`, and its worker goes on. A worker that dies (killed, or
its machine gone) has its tasks run again, up to `retries` more times, then reported as `error`.
Under `process` the tasks running on the pool when a worker dies count a try each (the pool cannot
tell which of them the dead worker held); Ray knows and retries only that task. `inline` applies
the same limits as far as a process can limit itself (`run_inline`), so every executor gives the
same verdicts.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import json
import math
import os
import select
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

from mgxir.drivers.verify.tasks import (
    GPU_TARGETS,
    Task,
    TaskOptions,
    Verdict,
    probe_target,
    record,
    run_task,
    warm_up,
)
from mgxir.records import Record

EXECUTORS = ("process", "inline", "ray")
# what a run's worker processes (and their children) are given: one thread each, as one worker
# per core leaves no core for a second thread
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
OnRecord = Callable[[int, dict], None]


class Limits(Record):
    def __init__(
        self,
        timeout_s: float = 600.0,
        memory_bytes: int | None = 8 << 30,
        retries: int = 2,
        workers: int = 0,
        gpus: tuple[str, ...] = (),
    ):
        self.timeout_s = timeout_s  # a task running longer is stopped (error)
        self.memory_bytes = memory_bytes  # a task's address space (host targets); None: no limit
        self.retries = retries  # a task whose worker died runs again this many more times at most
        self.workers = workers or (os.cpu_count() or 1)  # process: the pool's size
        # process: worker k sees only GPU gpus[k % len(gpus)] (CUDA_VISIBLE_DEVICES), as Ray gives
        # each GPU task one; empty: every worker sees every GPU
        self.gpus = gpus


# -- one task in a child process -------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """The child is killed when its worker dies (Linux's prctl), so no task outlives its worker."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _address_space_limit(task: Task, limits: Limits) -> int | None:
    """The bytes of address space a task may map: what its process already maps plus
    `memory_bytes` (a Ray worker maps gigabytes of its own before any task runs); None: no limit."""
    if limits.memory_bytes is None or task.target in GPU_TARGETS:
        return None
    try:
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        mapped = 0
    return mapped + limits.memory_bytes


def _limit_memory(task: Task, limits: Limits) -> None:
    """The child's address space capped for good (the child ends with its tasks)."""
    import resource

    limit = _address_space_limit(task, limits)
    if limit is not None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@contextlib.contextmanager
def _memory_limited_here(task: Task, limits: Limits) -> Iterator[None]:
    """This process's address space capped while the block runs (the soft limit only, so that it
    can be lifted again): the inline executor's tasks meet the limit the pool's children meet."""
    import resource

    limit = _address_space_limit(task, limits)
    if limit is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    capped = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (capped, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def timed_out(task: Task, limits: Limits) -> dict:
    """The record of a task past the timeout: the input's own doing under this timeout (which the
    cache key holds), so kept."""
    return {**record(task, "error", f"timed out after {limits.timeout_s:g} s"), "reads": [task.input]}


def run_inline(task: Task, limits: Limits) -> dict:
    """The task's record, run in this process under the limits the pool's children have, so that
    every executor gives the same verdict: the memory limit as it runs (a MemoryError is the
    task's `error`), and the timeout once it has ended (a thread cannot be stopped: a task that
    ran past it is reported as the pool reports the task it stops)."""
    start = time.monotonic()
    with _memory_limited_here(task, limits):
        found = run_task(task)
    return timed_out(task, limits) if time.monotonic() - start > limits.timeout_s else found


def run_limited(task: Task, limits: Limits, work: Callable[[], Any] | None = None) -> Any:
    """`work()` (default: the task's record) in a forked child under the task's limits."""
    return run_limited_batch([task], limits, [work] if work else None)[0]


def run_limited_batch(tasks: list[Task], limits: Limits, works: list[Callable[[], Any]] | None = None) -> list:
    """The tasks' records (or `works`' results), the tasks run one after another in a forked child
    under the limits, each record sent back as it is done: a child serves many small tasks (a fork
    costs more than most of the ONNX test models' tasks), and the timeout and a death still fall on
    the one task running then, which is reported as `error`; a new child runs the rest."""
    results: list = []
    while len(results) < len(tasks):
        start = len(results)
        done, stopped = _in_child(tasks[start:], works[start:] if works else None, limits)
        results += done
        if stopped is not None:
            results.append(stopped)
    return results


def _in_child(tasks: list[Task], works: list[Callable[[], Any]] | None, limits: Limits) -> tuple[list, dict | None]:
    """(the results received, in order; the record of the task that ran past the timeout or died)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(read_end)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            _die_with_parent()
            _limit_memory(tasks[0], limits)
            with os.fdopen(write_end, "wb") as out:
                for k, task in enumerate(tasks):
                    result = works[k]() if works else run_task(task)
                    out.write(json.dumps(result, allow_nan=False).encode() + b"\n")  # JSON escapes newlines
                    out.flush()
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    os.close(write_end)
    results: list = []
    pending = b""
    deadline = time.monotonic() + limits.timeout_s
    stopped = ended = False
    try:
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while not ended:
                left = deadline - time.monotonic()
                if left <= 0:
                    stopped = True
                    break
                ready, _, _ = select.select([pipe], [], [], min(left, 1.0))
                if not ready:
                    continue
                chunk = pipe.read(1 << 20)
                ended = not chunk
                *lines, pending = (pending + chunk).split(b"\n")
                if lines:
                    results += [json.loads(line) for line in lines]
                    deadline = time.monotonic() + limits.timeout_s  # each task has the whole timeout
    finally:
        if stopped or len(results) < len(tasks):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if len(results) == len(tasks):
        return results, None
    task = tasks[len(results)]
    if stopped:
        return results, timed_out(task, limits)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        return results, record(task, "error", f"the task's process died ({name}; past the memory limit?)")
    code = os.WEXITSTATUS(status)
    return results, record(task, "error", f"the task's process ended with exit code {code} and no result")


BATCH_MOST = 32  # tasks a child runs at most
BATCHES_PER_WORKER = 4  # batches per worker at least, where there are enough tasks


def batches(tasks: list[int], targets: list[str], workers: int) -> list[list[int]]:
    """Task indices in batches, each of one target (a run lists an input's targets one after
    another: batched in that order, two targets made a batch of every task). The batches shrink
    towards the end (the first two to three times the last, their number what equal batches
    would take): the last batch is what one worker still runs while the others wait, and with equal
    batches of 12 models two GPUs gave 1.75x, not 2x."""
    by_target: dict[str, list[int]] = {}
    for index in tasks:
        by_target.setdefault(targets[index], []).append(index)
    ordered = [index for group in by_target.values() for index in group]
    count = len(ordered)
    if not count:
        return []
    wanted = min(count, max(BATCHES_PER_WORKER * workers, math.ceil(1.5 * count / BATCH_MOST)))
    weights = [3 * wanted - 2 * k for k in range(wanted)]  # the first: 3/(2 wanted + 1) of the tasks
    ends, total, so_far = [], sum(weights), 0
    for weight in weights:
        so_far += weight
        ends.append(round(count * so_far / total))
    out: list[list[int]] = []
    start = 0
    for end in ends:  # a batch that spans two targets is two
        chunk, start = ordered[start:end], end
        out += [list(run) for _, run in itertools.groupby(chunk, key=targets.__getitem__)]
    return out


def finite(record_: dict) -> dict:
    """The record with a NaN or infinite rms written as null (JSON has no NaN)."""
    rms = record_.get("rms")
    if isinstance(rms, float) and not math.isfinite(rms):
        return {**record_, "rms": None}
    return record_


def _probe_in_child(target: str, options: TaskOptions, limits: Limits) -> Verdict | None:
    """The probe under the task's limits: a probe that hangs or kills its process (a driver that
    crashes) is the target's `error`, not the run's."""
    probe = Task("<probe>", target, options)
    found = run_limited(probe, limits, lambda: {"probe": probe_target(target, options)})
    if "probe" not in found:
        return "error", f"the target's probe failed: {found['message']}"
    return None if found["probe"] is None else (found["probe"][0], found["probe"][1])


# -- executors -------------------------------------------------------------------------------------


class Executor:
    """Runs tasks, calling `on_record(index, record)` as each ends (in this process)."""

    def probe(self, target: str, options: TaskOptions) -> Verdict | None:
        """None where the target runs on the workers; else what its every task is (a status, a line)."""
        raise NotImplementedError

    def run(self, tasks: list[Task], on_record: OnRecord) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Stops every worker and task still running (after Ctrl-C too)."""


class InlineExecutor(Executor):
    """In this process, one task after another (for debugging: a breakpoint in a pass stops here),
    under the pool's limits as far as a process can limit itself (`run_inline`)."""

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()

    def probe(self, target: str, options: TaskOptions) -> Verdict | None:
        return probe_target(target, options)

    def run(self, tasks: list[Task], on_record: OnRecord) -> None:
        for index, task in enumerate(tasks):
            on_record(index, finite(run_inline(task, self.limits)))


def _worker_started(started: Any, gpus: tuple[str, ...], samples: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the pool
    if gpus:  # before any GPU library loads: the task children forked from here inherit it
        with started.get_lock():
            index = started.value
            started.value += 1
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[index % len(gpus)]
    warm_up(samples)


def _in_worker(tasks: list[Task], limits: Limits) -> list[dict]:
    return [finite(r) for r in run_limited_batch(tasks, limits)]


class ProcessExecutor(Executor):
    """A `concurrent.futures.ProcessPoolExecutor` of `limits.workers` processes; each task in a
    child of its worker (`run_limited`). A pool that breaks (a worker died) is replaced."""

    def __init__(self, limits: Limits, samples: list[str] | None = None):
        self.limits = limits
        self.samples = samples or []  # inputs each worker reads once to load their readers (warm_up)
        self.pool: Any = None

    def _new_pool(self) -> Any:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        os.environ.update(ONE_THREAD)
        # spawned, not forked: this process may run threads (the progress bar) that a fork would copy mid-lock
        context = multiprocessing.get_context("spawn")
        self.pool = ProcessPoolExecutor(
            self.limits.workers,
            context,
            initializer=_worker_started,
            initargs=(context.Value("i", 0), self.limits.gpus, self.samples),
        )
        # the pool starts a spawned worker only when a task finds none idle: the second worker's start
        # and warm-up came after the probe, while the first worker ran tasks. One call per worker
        # starts them all at once, their warm-up beside the probe
        for _ in range(self.limits.workers):
            self.pool.submit(os.getpid)
        return self.pool

    def probe(self, target: str, options: TaskOptions) -> Verdict | None:
        pool = self.pool or self._new_pool()
        return pool.submit(_probe_in_child, target, options, self.limits).result()

    def run(self, tasks: list[Task], on_record: OnRecord) -> None:
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        targets = [t.target for t in tasks]
        waiting = batches(list(range(len(tasks))), targets, self.limits.workers)[::-1]
        tries = [0] * len(tasks)
        running: dict[Any, list[int]] = {}
        pool = self.pool or self._new_pool()
        broken = False
        while waiting or running:
            if broken and not running:  # every future of the broken pool has ended: a new pool
                self.close()
                pool, broken = self._new_pool(), False
            while not broken and waiting and len(running) < 2 * self.limits.workers:
                batch = waiting.pop()
                running[pool.submit(_in_worker, [tasks[i] for i in batch], self.limits)] = batch
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                batch = running.pop(future)
                for index in batch:
                    tries[index] += 1
                try:
                    found = future.result()
                except BrokenProcessPool:
                    broken = True
                    again = [i for i in batch if tries[i] <= self.limits.retries]
                    if again:
                        waiting.append(again)
                    found = [
                        record(tasks[i], "error", f"its worker died ({tries[i]} tries)") if i not in again else None
                        for i in batch
                    ]
                for index, result in zip(batch, found):
                    if result is not None:
                        on_record(index, {**result, "tries": tries[index]})

    def close(self) -> None:
        if self.pool is None:
            return
        # the pool's processes (a private attribute, there since Python 3.2): killed, not asked to
        # finish, so Ctrl-C stops a long task at once; their task children die with them (prctl)
        for process in list((getattr(self.pool, "_processes", None) or {}).values()):
            with contextlib.suppress(OSError, AttributeError):
                process.kill()
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool = None


_WARM: list[bool] = []  # a Ray worker runs many tasks: it warms up once


def _on_ray_worker(tasks: list[Task], limits: Limits, samples: list[str]) -> list[dict]:
    if not _WARM:
        warm_up(samples)
        _WARM.append(True)
    return [finite(r) for r in run_limited_batch(tasks, limits)]


def _probe_on_ray_worker(target: str, options: TaskOptions, limits: Limits) -> Verdict | None:
    return _probe_in_child(target, options, limits)


class RayExecutor(Executor):
    """Ray tasks (Ray 2.x): `ray.init()` starts a local cluster when there is no address; a task
    whose target needs a GPU asks for one (`num_gpus=1`, and Ray sets CUDA_VISIBLE_DEVICES); a
    worker that dies has its task retried by Ray (`max_retries`) on another worker. The caches'
    folders (MGXIR_* variables) are passed to every worker, so a shared folder serves them all."""

    def __init__(
        self, limits: Limits, address: str | None, environment: dict[str, str], samples: list[str] | None = None
    ):
        import ray

        self.ray = ray
        self.limits = limits
        self.samples = samples or []
        self.started = not ray.is_initialized()
        env = {**ONE_THREAD, **environment}
        if self.started:
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                logging_level="ERROR",
                configure_logging=False,
                runtime_env={"env_vars": env},
            )
        self.remote = ray.remote(max_retries=limits.retries, retry_exceptions=False)(_on_ray_worker)
        self.remote_probe = ray.remote(max_retries=limits.retries)(_probe_on_ray_worker)
        self.pending: dict[Any, list[int]] = {}

    def _gpus(self, target: str) -> int:
        return 1 if target in GPU_TARGETS else 0

    def probe(self, target: str, options: TaskOptions) -> Verdict | None:
        if self._gpus(target) and not self.ray.cluster_resources().get("GPU", 0):
            return "refused", "the Ray cluster has no GPU"
        ref = self.remote_probe.options(num_cpus=1, num_gpus=self._gpus(target)).remote(target, options, self.limits)
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayError as e:  # its workers died `retries + 1` times
            return "error", f"the target's probe failed: its Ray worker failed: {type(e).__name__}"

    def run(self, tasks: list[Task], on_record: OnRecord) -> None:
        ray = self.ray
        resources = ray.cluster_resources()
        # as many run at once as the cluster has CPUs, or GPUs where every task needs one (batched by
        # the CPUs there, the batches were single tasks, each a child that set up the GPU again)
        slots = resources.get("GPU" if all(self._gpus(t.target) for t in tasks) else "CPU", 1)
        for batch in batches(list(range(len(tasks))), [t.target for t in tasks], max(1, int(slots))):
            gpus = self._gpus(tasks[batch[0]].target)
            ref = self.remote.options(num_cpus=1, num_gpus=gpus).remote(
                [tasks[i] for i in batch], self.limits, self.samples
            )
            self.pending[ref] = batch
        while self.pending:
            ready, _ = ray.wait(list(self.pending), num_returns=min(len(self.pending), 64), timeout=0.2)
            for ref in ready:
                batch = self.pending.pop(ref)
                try:
                    found = ray.get(ref)
                except ray.exceptions.RayError as e:  # the batch's workers died `retries + 1` times
                    found = [record(tasks[i], "error", f"its Ray worker failed: {type(e).__name__}") for i in batch]
                for index, result in zip(batch, found):
                    on_record(index, result)

    def close(self) -> None:
        for ref in list(self.pending):
            with contextlib.suppress(Exception):
                self.ray.cancel(ref, force=True)
        self.pending.clear()
        if self.started and self.ray.is_initialized():
            self.ray.shutdown()


@contextlib.contextmanager
def executor(
    name: str, limits: Limits, ray_address: str | None = None, samples: list[str] | None = None
) -> Iterator[Executor]:
    """The executor `name`, stopped (workers, tasks, a local Ray cluster) however the block ends;
    `samples`: inputs whose readers each worker loads once (`warm_up`)."""
    chosen: Executor
    if name == "inline":
        chosen = InlineExecutor(limits)
    elif name == "process":
        chosen = ProcessExecutor(limits, samples)
    else:
        chosen = RayExecutor(limits, ray_address, shared_cache_environment(), samples)
    try:
        yield chosen
    finally:
        chosen.close()


# the folders of the caches that workers share: kernels and tuning (gpu), IREE's modules, parsers
CACHE_VARIABLES = ("MGXIR_KERNEL_CACHE", "MGXIR_CACHE_DIR", "MGXIR_PARSER_CACHE", "XDG_CACHE_HOME")


def shared_cache_environment() -> dict[str, str]:
    return {name: os.environ[name] for name in CACHE_VARIABLES if name in os.environ}
