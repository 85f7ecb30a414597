"""Mutation fuzzing of every reader of mgxir (issue 24): text, mxr, json, py, onnx, mlir (text and
bytecode), `--input` specs and files, and literal sidecars.

    python fuzz/run.py --reader=py --count=100000 --in-process     # a long run, by hand
    python fuzz/run.py --count=20                           # every reader, briefly (CI does this)

Each input runs the tool's driver (mgx-translate or mgx-run, as a user would) in a forked child
(or, with `--in-process`, in a worker process that runs one input after another: about 10 times
as many inputs a second, 2 to 4 times for MLIR) under an address-space limit (RLIMIT_AS, `--memory` GiB more than the
harness holds) and a processor-time limit (`--seconds`), and the end is classified: `ok` (exit 0),
`user error` (exit 1, one line), `internal error` (exit 2), `memory` (exit 2 with a MemoryError:
something allocated past the limit), `crash` (killed by a signal), `hang` (past the time limit).
Inputs of the last four kinds are kept in `--findings` (default fuzz/findings/READER/) to
reproduce by hand; the exit code is 1 when there are any.

The mutator is this file's own, seeded (the same `--seed` gives the same inputs): atheris is
libFuzzer for CPython, which needs a clang-built extension on this Python 3.11 and runs in-process,
where one crash in MLIR's C++ reader ends the whole run; forking each input is what classifies
crashes, hangs and memory blow-ups, and the mutations that find the kinds of issue 24 (numbers at
the edges of integer types, nesting, truncation, splicing two seeds) are a few lines.
"""

from __future__ import annotations

import argparse
import faulthandler
import io
import math
import os
import random
import re
import resource
import select
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mgxir.diagnostics import DiagnosticSink, MgxError, process_memory  # noqa: E402
from mgxir.drivers.run import RunOptions, run_main  # noqa: E402
from mgxir.drivers.translate import TranslateOptions, translate_main  # noqa: E402
from mgxir.ops import register_all_ops  # noqa: E402
from mgxir.text.parser import parse_program  # noqa: E402
from mgxir.verifier import verify  # noqa: E402

KINDS = ("ok", "user error", "internal error", "memory", "crash", "hang")
BAD = frozenset({"internal error", "memory", "crash", "hang"})
# a user error that is MLIR's reader crashing in the tool's child: kept too (regression inputs), not bad
CONTAINED_CRASH = "reader crashed on this file"

# -- seeds -------------------------------------------------------------------------------------------

TEXT_SEEDS = [
    ROOT / "examples/conv_relu_pool.mgx",
    ROOT / "examples/fuse.mgx",
    ROOT / "test/translate/mxr/Inputs/everything.mgx",
]
# a program for the --input readers and a sidecar literal
RUN_PROGRAM = 'module: "main"\nx = @param:x -> float_type, {2, 3}, {3, 1}\ny = @param:y -> half_type, {3}, {1}\n'
RUN_PROGRAM += "@2 = relu(x)\n@3 = @return(@2,y)\n"
SIDECAR_PROGRAM = 'module: "main"\n@0 = @literal{npz:side.npz:a} -> float_type, {2, 2}, {2, 1}\n@1 = @return(@0)\n'


MORE_SEEDS: list[bytes] = []  # --more-seeds: the programs of the test suite's .mgx files


def _text_seeds() -> list[bytes]:
    return [p.read_bytes() for p in TEXT_SEEDS] + MORE_SEEDS


def _test_programs(limit: int = 300) -> list[bytes]:
    """The `// -----` parts of test/**/*.mgx that read and verify: programs using most operators."""
    found: list[bytes] = []
    for path in sorted(ROOT.glob("test/**/*.mgx")):
        if path.stat().st_size > 16_000:
            continue
        for part in path.read_text(errors="replace").split("// -----"):
            try:
                verify(parse_program(part, path.name), DiagnosticSink())
            except (MgxError, RecursionError):
                continue
            found.append(part.encode())
            if len(found) >= limit:
                return found
    return found


def _written(writer: str) -> Callable[[], list[bytes]]:
    """Seeds in another format: the text seeds written by mgx-translate's writer."""

    def seeds() -> list[bytes]:
        from mgxir.drivers.common import load_entry
        from mgxir.drivers.translate import WRITERS

        out = []
        write = load_entry(WRITERS[writer])
        for data in _text_seeds():
            program = parse_program(data.decode(), "seed.mgx")
            verify(program, DiagnosticSink())  # fills in the result shapes the text leaves out
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "seed")
                try:
                    write(program, path, {}, DiagnosticSink())
                except MgxError:  # a seed the format cannot hold (GPU ops in MLIR)
                    continue
                out.append(Path(path).read_bytes())
        return out

    return seeds


def _onnx_seeds() -> list[bytes]:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def model(nodes: list, inputs: list, initializers: list, output: str, opset: int = 13) -> bytes:
        graph = helper.make_graph(
            nodes,
            "seed",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
            initializers,
        )
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()

    shared = ROOT.parent / "shared" / "onnx-models"
    more = [p.read_bytes() for p in sorted(shared.glob("*.onnx"))[:400]] if MORE_SEEDS and shared.is_dir() else []
    weight = numpy_helper.from_array(np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2), "w")
    shape = numpy_helper.from_array(np.array([2, -1], np.int64), "s")
    return [
        *more,
        model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], [("x", [1, 3, 4, 4])], [weight], "y"),
        model([helper.make_node("Reshape", ["x", "s"], ["y"])], [("x", [2, 3, 4])], [shape], "y"),
        model([helper.make_node("Multinomial", ["x"], ["y"], sample_size=3, seed=1.0)], [("x", [2, 4])], [], "y"),
        model(
            [
                helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.ones((2, 2), np.float32))),
                helper.make_node("Add", ["x", "c"], ["y"]),
            ],
            [("x", [2, 2])],
            [],
            "y",
        ),
        onnx.helper.make_model(
            helper.make_graph(
                [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
                "pool",
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            ),
            opset_imports=[helper.make_opsetid("", 13)],
        ).SerializeToString(),
    ]


def _npz(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _input_file_seeds() -> list[bytes]:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    buffer = io.BytesIO()
    np.save(buffer, x)
    return [_npz(x=x, y=np.ones(3, np.float16)), _npz(x=x), buffer.getvalue()]


def _input_spec_seeds() -> list[bytes]:
    return [b"x=2x3xf32=1 2 3 4 5 6", b"y=3xf16=1.5", b"2x3xf32=[1 2 3][4 5 6]", b"x=@inputs.npz", b"3xf16=0"]


def _sidecar_seeds() -> list[bytes]:
    return [_npz(a=np.arange(4, dtype=np.float32).reshape(2, 2)), _npz(a=np.zeros(4, np.uint32).view(np.float32))]


# -- how each reader runs an input -----------------------------------------------------------------


def _translate(source: str, to: str = "mgx") -> Callable[[str, str], int]:
    def run(path: str, folder: str) -> int:
        out = os.path.join(folder, "out")
        return translate_main(TranslateOptions(input=path, source=source, to=to, output=out))

    return run


def _run_with_inputs(specs: Callable[[str, str], list[str]]) -> Callable[[str, str], int]:
    def run(path: str, folder: str) -> int:
        program = os.path.join(folder, "p.mgx")
        Path(program).write_text(RUN_PROGRAM)
        return run_main(RunOptions(input_file=program, inputs=specs(path, folder), fill="zeros", quiet=True))

    return run


def _spec_of_file(path: str, folder: str) -> list[str]:
    """The mutated bytes are one --input spec (the first line of them)."""
    np.savez(os.path.join(folder, "inputs.npz"), x=np.zeros((2, 3), np.float32))
    text = Path(path).read_bytes().split(b"\n")[0].decode("utf-8", "replace").replace("\0", "")
    return [text.replace("@inputs.npz", "@" + os.path.join(folder, "inputs.npz"))]


def _read_sidecar(path: str, folder: str) -> int:
    os.replace(path, os.path.join(folder, "side.npz"))
    program = os.path.join(folder, "p.mgx")
    Path(program).write_text(SIDECAR_PROGRAM)
    return translate_main(TranslateOptions(input=program, output=os.path.join(folder, "out")))


@dataclass
class Reader:
    seeds: Callable[[], list[bytes]]
    suffix: str
    run: Callable[[str, str], int]
    textual: bool = False  # mutations on numbers and brackets apply


READERS: dict[str, Reader] = {
    "text": Reader(_text_seeds, ".mgx", _translate("mgx"), textual=True),
    "mxr": Reader(_written("mxr"), ".mxr", _translate("mxr")),
    "json": Reader(_written("json"), ".json", _translate("json"), textual=True),
    "py": Reader(_written("py"), ".py", _translate("py"), textual=True),
    "onnx": Reader(_onnx_seeds, ".onnx", _translate("onnx")),
    "mlir": Reader(_written("mlir"), ".mlir", _translate("mlir"), textual=True),
    "mlirbc": Reader(_written("mlirbc"), ".mlirbc", _translate("mlir")),
    "input-spec": Reader(_input_spec_seeds, ".txt", _run_with_inputs(_spec_of_file), textual=True),
    "input-file": Reader(_input_file_seeds, ".npz", _run_with_inputs(lambda path, folder: [f"@{path}"])),
    "sidecar": Reader(_sidecar_seeds, ".npz", _read_sidecar),
}

# -- mutations ---------------------------------------------------------------------------------------

EDGE_NUMBERS = [
    b"0",
    b"-1",
    b"1",
    b"2",
    b"255",
    b"65535",
    b"2147483647",
    b"2147483648",
    b"4294967295",
    b"4294967296",
    b"9223372036854775807",
    b"9223372036854775808",
    b"18446744073709551615",
    b"18446744073709551616",
    b"100000000000",
    b"-2147483648",
    b"1e308",
    b"-1e308",
    b"1e-320",
    b"nan",
    b"inf",
    b"-0",
]
EDGE_BYTES = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\xff\xff\xff\xff", b"\xff\xff\xff\xff\xff\xff\xff\x7f", b"\xcf"]
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def mutate(data: bytes, seeds: list[bytes], rng: random.Random, textual: bool) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if textual and choice < 0.35:
            numbers = list(_NUMBER.finditer(out))
            if numbers:
                found = rng.choice(numbers)
                out[found.start() : found.end()] = rng.choice(EDGE_NUMBERS)
                continue
        if choice < 0.45 and out:
            at = rng.randrange(len(out))
            out[at] = rng.randrange(256)
        elif choice < 0.55 and out:
            at = rng.randrange(len(out))
            edge = rng.choice(EDGE_BYTES)
            out[at : at + len(edge)] = edge
        elif choice < 0.65 and out:
            start = rng.randrange(len(out))
            del out[start : start + rng.randint(1, 64)]
        elif choice < 0.75 and out:
            start = rng.randrange(len(out))
            chunk = out[start : start + rng.randint(1, 64)]
            at = rng.randrange(len(out) + 1)
            out[at:at] = chunk * rng.randint(1, 8)
        elif choice < 0.8 and textual:
            at = rng.randrange(len(out) + 1)
            depth = rng.choice([8, 64, 200, 1000])
            opener = rng.choice([b"[", b"(", b"{"])
            out[at:at] = opener * depth
        elif choice < 0.9 and len(seeds) > 1:
            other = rng.choice(seeds)
            cut, at = rng.randrange(len(out) + 1), rng.randrange(len(other) + 1)
            out = out[:cut] + bytearray(other[at:])
        else:
            out = out[: rng.randrange(len(out) + 1)]  # truncated
    return bytes(out)


# -- running in a child ------------------------------------------------------------------------------


# The time limit is processor time (RLIMIT_CPU, SIGXCPU): at `nice -n 19` on a shared machine an
# input can wait many times its own time for a processor, and a wall-clock limit took such inputs
# for hangs (the four of the third long run finished in under a second by hand). A wall-clock
# limit of WALL_FACTOR times as long still ends an input blocked without using the processor.
WALL_FACTOR = 10


@dataclass
class Limits:
    memory_bytes: int
    seconds: int  # of processor time

    @property
    def wall_seconds(self) -> int:
        return self.seconds * WALL_FACTOR


def _limit_time(limits: Limits) -> None:
    """From now on: `limits.seconds` more of processor time, `limits.wall_seconds` of wall clock."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = math.ceil(usage.ru_utime + usage.ru_stime)
    resource.setrlimit(resource.RLIMIT_CPU, (used + limits.seconds, resource.RLIM_INFINITY))
    signal.alarm(limits.wall_seconds)


def _child(reader: Reader, path: str, folder: str, limits: Limits) -> None:
    """In the forked child: the limits, the output to files, the reader; never returns."""
    code = 3
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        _limit_time(limits)
        out = os.open(os.path.join(folder, "stdout"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(os.path.join(folder, "stderr"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(err, 2)
        _limit_mlir_child(limits)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        faulthandler.enable(sys.stderr)  # a crash's Python stack goes with the finding
        code = reader.run(path, folder)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # whatever it is, exit code 3 says the harness itself failed
        code = 3
    finally:
        os._exit(code)


def _limit_mlir_child(limits: Limits) -> None:
    """The tool's own limit on MLIR's reader ends before the harness's."""
    mlir_api = sys.modules.get("mgxir.translate.mlir.api")
    if mlir_api is not None:
        mlir_api.CHILD_SECONDS = max(1, limits.wall_seconds // 2)


def classify(status: int, stderr: str) -> str:
    if os.WIFSIGNALED(status):
        return "hang" if os.WTERMSIG(status) in (signal.SIGALRM, signal.SIGXCPU) else "crash"
    code = os.WEXITSTATUS(status)
    if code == 0:
        return "ok"
    if code == 1 and "Traceback (most recent call last)" not in stderr:  # not a quoted line's word
        return "user error"
    if "MemoryError" in stderr:
        return "memory"
    return "internal error"


class Finder:
    """Counts how each input ended and keeps the inputs of the bad kinds (with their standard error)."""

    def __init__(self, reader: Reader, findings: Path | None) -> None:
        self.reader = reader
        self.findings = findings
        self.counts: Counter[str] = Counter()

    def record(self, kind: str, data: bytes, stderr: str, note: str = "") -> None:
        self.counts[kind] += 1
        if kind == "user error" and CONTAINED_CRASH in stderr:
            kind = "contained crash"
            self.counts[kind] += 1
        if (kind in BAD or kind == "contained crash") and self.findings is not None:
            self.findings.mkdir(parents=True, exist_ok=True)
            keep = self.findings / f"{kind.replace(' ', '-')}-{self.counts[kind]}{self.reader.suffix}"
            keep.write_bytes(data)
            keep.with_suffix(".stderr").write_text(note + stderr[-4000:])


def _fresh_folder(scratch: str, name: str) -> str:
    folder = os.path.join(scratch, name)
    if os.path.isdir(folder):
        for leftover in os.listdir(folder):
            os.remove(os.path.join(folder, leftover))
    else:
        os.mkdir(folder)
    return folder


def _inputs(name: str, count: int, seed: int) -> Iterator[bytes]:
    reader = READERS[name]
    seeds = reader.seeds()
    rng = random.Random(f"{name}:{seed}")
    for _ in range(count):
        yield mutate(rng.choice(seeds), seeds, rng, reader.textual)


def fuzz(
    name: str,
    count: int,
    seed: int,
    jobs: int,
    limits: Limits,
    findings: Path | None,
    in_process: bool = False,
) -> Counter[str]:
    """Runs `count` mutated inputs of reader `name`; returns how many ended in each kind."""
    finder = Finder(READERS[name], findings)
    inputs = _inputs(name, count, seed)
    with tempfile.TemporaryDirectory(prefix=f"mgxir-fuzz-{name}-") as scratch:
        if in_process:
            _fuzz_in_workers(finder, inputs, jobs, limits, scratch)
        else:
            _fuzz_forking(finder, inputs, jobs, limits, scratch)
    return finder.counts


def _fuzz_forking(finder: Finder, inputs: Iterator[bytes], jobs: int, limits: Limits, scratch: str) -> None:
    """Each input in a child forked for it alone."""
    reader = finder.reader
    running: dict[int, tuple[str, bytes]] = {}

    def finish() -> None:
        pid, status = os.wait()
        folder, data = running.pop(pid)
        stderr = Path(folder, "stderr").read_text(errors="replace") if Path(folder, "stderr").exists() else ""
        finder.record(classify(status, stderr), data, stderr)

    for index, data in enumerate(inputs):
        while len(running) >= jobs:
            finish()
        folder = _fresh_folder(scratch, str(index % (jobs * 2 + 2)))
        path = os.path.join(folder, "input" + reader.suffix)
        Path(path).write_bytes(data)
        pid = os.fork()
        if pid == 0:
            _child(reader, path, folder, limits)
        running[pid] = (folder, data)
    while running:
        finish()


def run_fresh(reader: Reader, data: bytes, limits: Limits) -> tuple[str, str]:
    """One input in a child forked for it alone: its kind and standard error."""
    with tempfile.TemporaryDirectory(prefix="mgxir-fuzz-again-") as folder:
        path = os.path.join(folder, "input" + reader.suffix)
        Path(path).write_bytes(data)
        pid = os.fork()
        if pid == 0:
            _child(reader, path, folder, limits)
        _, status = os.waitpid(pid, 0)
        stderr = Path(folder, "stderr").read_text(errors="replace") if Path(folder, "stderr").exists() else ""
        return classify(status, stderr), stderr


# -- running in a worker ------------------------------------------------------------------------------

RECYCLE_AFTER = 2000  # inputs a worker runs before a fresh one takes over (memory and caches drift)


class Worker:
    """A forked process that runs one input after another through the reader, in-process, under the
    address-space limit; each input under the time limit (its own alarm, and a kill from the
    harness a few seconds later). The harness sends an input's folder down a pipe and reads back
    the exit code the tool's driver returned; the worker's standard error goes to a file that is
    emptied before each input. A crash, a hang or a bad result ends the worker; a fresh one follows."""

    def __init__(self, reader: Reader, home: str, limits: Limits) -> None:
        self.reader = reader
        self.limits = limits
        self.stderr_path = os.path.join(home, "worker.stderr")
        self.runs = 0
        to_worker, self._from_harness = os.pipe()
        self._to_harness, from_worker = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self._from_harness)
            os.close(self._to_harness)
            self._serve(to_worker, from_worker)  # never returns
        os.close(to_worker)
        os.close(from_worker)
        self.started = 0.0

    def _serve(self, commands: int, results: int) -> None:
        code = 3
        try:
            resource.setrlimit(resource.RLIMIT_AS, (self.limits.memory_bytes, self.limits.memory_bytes))
            err = os.open(self.stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            out = os.open(os.devnull, os.O_WRONLY)
            os.dup2(out, 1)
            os.dup2(err, 2)
            sys.stdout = open(1, "w", closefd=False)
            sys.stderr = open(2, "w", closefd=False)
            faulthandler.enable(sys.stderr)  # a crash's Python stack goes with the finding
            _limit_mlir_child(self.limits)
            with open(commands, "rb", buffering=0) as pipe:
                for line in pipe:
                    folder = line.decode().rstrip("\n")
                    os.ftruncate(2, 0)
                    os.lseek(2, 0, os.SEEK_SET)
                    _limit_time(self.limits)
                    try:
                        result = self.reader.run(os.path.join(folder, "input" + self.reader.suffix), folder)
                    except BaseException:  # the driver catches everything: this is the harness's failure
                        result = 3
                    signal.alarm(0)
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os.write(results, b"%d\n" % result)
            code = 0
        finally:
            os._exit(code)

    def send(self, folder: str) -> None:
        self.runs += 1
        self.started = time.monotonic()
        os.write(self._from_harness, folder.encode() + b"\n")

    @property
    def result_pipe(self) -> int:
        return self._to_harness

    def result(self) -> tuple[str, str]:
        """After the result pipe is readable: the input's kind and standard error; a dead worker's
        kind is from its wait status (a signal: crash, SIGALRM: hang)."""
        answer = os.read(self._to_harness, 64)
        stderr = Path(self.stderr_path).read_text(errors="replace")
        if answer:
            code = int(answer)
            return classify((code & 0xFF) << 8, stderr), stderr
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        return classify(status, stderr), stderr

    def overdue(self) -> bool:
        return time.monotonic() - self.started > self.limits.wall_seconds + 5

    def stop(self) -> None:
        os.close(self._from_harness)
        os.close(self._to_harness)
        if self.pid:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = 0


def _fuzz_in_workers(finder: Finder, inputs: Iterator[bytes], jobs: int, limits: Limits, scratch: str) -> None:
    """Inputs through `jobs` workers. An input that ends badly is run again in a fresh process: the
    finding is kept either way, noted `in-process only` where the fresh run ends well (state that
    earlier inputs left in the worker, then, not the input alone)."""
    reader = finder.reader
    homes = [_fresh_folder(scratch, f"worker{i}") for i in range(jobs)]
    idle = [Worker(reader, home, limits) for home in homes]
    busy: dict[int, tuple[Worker, bytes]] = {}

    def settle(worker: Worker, data: bytes, kind: str, stderr: str) -> None:
        note = ""
        if kind in BAD:
            again, _ = run_fresh(reader, data, limits)
            note = f"(in a fresh process: {again}{'' if again in BAD else '; in-process only'})\n"
        finder.record(kind, data, stderr, note)
        if kind in BAD or worker.runs >= RECYCLE_AFTER or not worker.pid:
            home = os.path.dirname(worker.stderr_path)
            worker.stop()
            worker = Worker(reader, home, limits)
        idle.append(worker)

    def wait_one() -> None:
        ready, _, _ = select.select(list(busy), [], [], 1.0)
        for pipe in ready:
            worker, data = busy.pop(pipe)
            kind, stderr = worker.result()
            settle(worker, data, kind, stderr)
        for pipe in [p for p, (w, _) in busy.items() if w.overdue()]:
            worker, data = busy.pop(pipe)
            settle(worker, data, "hang", Path(worker.stderr_path).read_text(errors="replace"))

    for data in inputs:
        while not idle:
            wait_one()
        worker = idle.pop()
        folder = _fresh_folder(scratch, f"input{worker.pid}")
        Path(folder, "input" + reader.suffix).write_bytes(data)
        worker.send(folder)
        busy[worker.result_pipe] = (worker, data)
    while busy:
        wait_one()
    for worker in idle:
        worker.stop()


def warm_up() -> None:
    """Imports what the readers import lazily, once, so that each child starts at once."""
    register_all_ops()
    import mgxir.drivers.formats
    import mgxir.translate.py.reader  # noqa: F401

    for module in ("mgxir.translate.onnx", "mgxir.translate.mlir.api", "mgxir.translate.mxr"):
        try:
            __import__(module)
        except ImportError:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reader", action="append", choices=sorted(READERS), help="default: all")
    parser.add_argument("--count", type=int, default=100, help="inputs per reader")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-j", "--jobs", type=int, default=1)
    parser.add_argument("--memory", type=float, default=3.0, help="GiB a child may allocate past the harness")
    parser.add_argument(
        "--seconds", type=int, default=10, help=f"processor seconds per input (wall clock: {WALL_FACTOR} times)"
    )
    parser.add_argument("--findings", type=Path, default=ROOT / "fuzz/findings")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run inputs one after another in worker processes (recycled after a bad end or "
        f"{RECYCLE_AFTER} inputs) instead of a fresh process each",
    )
    parser.add_argument(
        "--more-seeds", action="store_true", help="also the programs of test/**/*.mgx and ../shared's ONNX models"
    )
    args = parser.parse_args(argv)
    warm_up()
    if args.more_seeds:
        MORE_SEEDS[:] = _test_programs()
    _, address_space = process_memory()
    limits = Limits(address_space + int(args.memory * (1 << 30)), args.seconds)
    bad = 0
    for name in args.reader or sorted(READERS):
        started = time.monotonic()
        counts = fuzz(name, args.count, args.seed, args.jobs, limits, args.findings / name, args.in_process)
        bad += sum(counts[k] for k in BAD)
        figures = ", ".join(f"{k}: {counts[k]}" for k in (*KINDS, "contained crash"))
        seconds = time.monotonic() - started
        print(f"{name}: {args.count} inputs in {seconds:.0f} s ({args.count / seconds:.1f}/s); {figures}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
