"""--exhaustive-tune: each problem's candidates are timed on the GPU and the fastest is recorded in
the compiled program, as MIGraphX's exhaustive tuning records its winners in its problem cache:
generated kernels try several launch configurations (the winner's global/local sizes and code
object are the op's), `gpu::gemm` tries every algorithm cuBLASLt's heuristic offers
(`solution_idx=`), `gpu::convolution` every plan cuDNN builds (`solution_id=`).

Winners are also kept on disk by problem and device (`problems.json` beside the kernel cache), so
tuning the same problem again costs nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from mgxir.diagnostics import MgxError
from mgxir.ir.instruction import Instruction
from mgxir.targets.gpu.compiler import cache_dir, compile_kernel
from mgxir.targets.gpu.kernels import Kernel, Tensor
from mgxir.targets.gpu.ops import CodeObject

# (threads per block, elements per thread) tried for elementwise kernels
LAUNCHES: tuple[tuple[int, int], ...] = ((128, 1), (256, 1), (512, 1), (1024, 1), (256, 2), (256, 4), (128, 4))
MAX_CONV_PLANS = int(os.environ.get("MGXIR_TUNE_CONV_PLANS", "12"))  # cuDNN plans timed per convolution
ITERATIONS = 20
GRAPH_CALLS, GRAPH_REPLAYS = 4, 3  # a gemm candidate is timed as 3 replays of a graph of 4 calls


class ProblemCache:
    """problem key -> winner (an int), per device, in one JSON file."""

    def __init__(self, path: Path | None):
        self.path = path
        self.entries: dict[str, int] = self._read()

    def _read(self) -> dict[str, int]:
        if self.path is None or not self.path.exists():
            return {}
        try:
            return {str(k): int(v) for k, v in json.loads(self.path.read_text()).items()}
        except (OSError, ValueError, TypeError, AttributeError):
            return {}

    def get(self, key: str) -> int | None:
        return self.entries.get(key)

    def put(self, key: str, winner: int) -> None:
        """Kept in the file with what other processes wrote there meanwhile (mgx-verify's workers
        tune on several GPUs into one file): read, merged and replaced under a lock."""
        self.entries[key] = winner
        if self.path is None:
            return
        try:
            import fcntl

            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path.with_suffix(".lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                self.entries = {**self._read(), **self.entries}
                temp = self.path.with_suffix(f".tmp{os.getpid()}")
                temp.write_text(json.dumps(self.entries, indent=0, sort_keys=True))
                os.replace(temp, self.path)
        except OSError:
            pass


def problem_cache() -> ProblemCache:
    directory = cache_dir()
    return ProblemCache(directory.parent / "problems.json" if directory else None)


def device_name() -> str:
    from cuda.core import Device

    return str(Device().name)


# -- timing ------------------------------------------------------------------------------------


class Timer:
    """Times callables on one stream of the current device with events."""

    def __init__(self) -> None:
        from cuda.core import Device, EventOptions

        self.device = Device()
        self.device.set_current()
        self.stream = self.device.create_stream()
        self.options = EventOptions(timing_enabled=True)
        self.buffers: list[object] = []

    def buffer(self, nbytes: int) -> int:
        from cuda.bindings import driver

        buffer = self.device.allocate(max(nbytes, 16), stream=self.stream)
        self.buffers.append(buffer)
        driver.cuMemsetD8Async(int(buffer.handle), 0, max(nbytes, 16), int(self.stream.handle))
        return int(buffer.handle)

    def time(self, body: Callable[[], None], iterations: int = ITERATIONS) -> float:
        body()
        start = self.stream.record(options=self.options)
        for _ in range(iterations):
            body()
        stop = self.stream.record(options=self.options)
        stop.sync()
        return (stop - start) / iterations


def time_kernel(timer: Timer, code: CodeObject, kernel: Kernel, arguments: Sequence[Tensor]) -> float:
    import numpy as np
    from cuda.core import LaunchConfig, ObjectCode, launch

    function = ObjectCode.from_cubin(code.binary).get_kernel(kernel.symbol)
    pointers = [np.uint64(timer.buffer(_span_bytes(t))) for t in arguments]
    config = LaunchConfig(grid=max(1, kernel.global_size // kernel.local_size), block=kernel.local_size)
    stream = timer.stream
    return timer.time(lambda: launch(stream, config, function, *pointers))


def _span_bytes(t: Tensor) -> int:
    span = 1 + sum((n - 1) * s for n, s in zip(t.lens, t.strides) if n > 0)
    return span * t.dtype.itemsize + 16


def tune_kernel(
    make: Callable[[int, int], Kernel], arguments: Sequence[Tensor], arch: str, cache: ProblemCache, timer: Timer
) -> tuple[Kernel, CodeObject]:
    """The fastest of the launch configurations of one generated kernel, with its code object."""
    default = make(*LAUNCHES[1])
    key = f"{device_name()}|kernel|{arch}|{compile_kernel(default, arch).size}|{hash_text(default.source)}"
    known = cache.get(key)
    if known is not None and 0 <= known < len(LAUNCHES):
        kernel = make(*LAUNCHES[known])
        return kernel, compile_kernel(kernel, arch)
    best: tuple[float, int, Kernel, CodeObject] | None = None
    for index, (local, per_thread) in enumerate(LAUNCHES):
        kernel = make(local, per_thread)
        code = compile_kernel(kernel, arch)
        elapsed = time_kernel(timer, code, kernel, arguments)
        if best is None or elapsed < best[0]:
            best = (elapsed, index, kernel, code)
    assert best is not None
    cache.put(key, best[1])
    return best[2], best[3]


def hash_text(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:24]


# -- library calls -----------------------------------------------------------------------------


def tune_library_calls(executable, cache: ProblemCache) -> dict[str, int]:
    """Times every algorithm of each gemm and every plan of each convolution of a loaded program
    with its own buffers; writes the winners into the program's ops. Returns counts."""
    counts = {"gemms tuned": 0, "convolutions tuned": 0}
    device = device_name()
    for ins in executable.program.main:
        name = ins.op.defn.name
        if name == "gpu::gemm":
            winner = _tune_gemm(executable, ins, cache, device)
            ins.op = ins.op.replace(solution_idx=winner)
            counts["gemms tuned"] += 1
        elif name == "gpu::convolution":
            winner = _tune_convolution(executable, ins, cache, device)
            ins.op = ins.op.replace(solution_id=winner)
            counts["convolutions tuned"] += 1
    return counts


def _problem(ins: Instruction) -> str:
    shapes = ";".join(f"{a.shape.dtype.type_name}{a.shape.lens}{a.shape.strides}" for a in ins.args)
    body = "" if not ins.module_args else hash_text("\n".join(str(i.op.text) for i in ins.module_args[0]))
    math = "|tf32" if ins.op.get("tf32") else ""
    return f"{ins.op.defn.name}|{ins.op.get('op') and ins.op['op'].text}|{ins.op.get('epilogue')}|{shapes}|{body}{math}"


def _tune_gemm(executable, ins: Instruction, cache: ProblemCache, device: str) -> int:
    plan = executable.gemm_plans[ins]
    key = f"{device}|{_problem(ins)}"
    known = cache.get(key)
    if known is not None and known < len(plan.algorithms):
        return known
    run = executable.gemm_call(ins)
    times = []
    for choice in range(len(plan.algorithms)):
        plan.choice = choice
        try:
            times.append((_graph_time(executable, run), choice))
        except Exception:  # an algorithm the heuristic offered may still fail for this problem
            continue
    if not times:
        raise MgxError(f"gpu::gemm: no cuBLASLt algorithm runs {[a.shape.lens for a in ins.args]}")
    winner = min(times)[1]
    plan.choice = winner
    cache.put(key, winner)
    return winner


def _graph_time(executable, run: Callable[[], None]) -> float:
    """Milliseconds per call of `run`, captured GRAPH_CALLS times in one graph and replayed, as the
    program runs it: a small gemm timed by launching it from Python would time the launches."""
    platform = executable.platform
    graph = platform.capture([run] * GRAPH_CALLS)
    return executable.time_call(lambda: platform.replay(graph), GRAPH_REPLAYS) / GRAPH_CALLS


def _tune_convolution(executable, ins: Instruction, cache: ProblemCache, device: str) -> int:
    key = f"{device}|{_problem(ins)}"
    known = cache.get(key)
    if known is not None:
        return known
    plan = executable.conv_plan(ins, plan_index=-1)
    times = []
    for index in range(plan.plan_count):  # the first MAX_CONV_PLANS that build (float32 bars TF32 ones)
        if len(times) == MAX_CONV_PLANS:
            break
        try:
            plan.graph.build_plan_at_index(index)
            workspace = executable.conv_workspace(plan.plan_workspace(index))
            times.append(
                (executable.time_call(lambda i=index, ws=workspace: executable.run_conv_plan(ins, plan, i, ws)), index)
            )
        except Exception:  # plans that did not build (policy ALL builds what it can) are skipped
            continue
    winner = min(times)[1] if times else -1
    cache.put(key, winner)
    return winner
