"""A short run of fuzz/run.py (issue 24): mutated inputs for every reader, in a worker process
under a memory and a time limit (--in-process), end in a user error or in success, never in an internal error, a
crash, a hang or a memory blow-up. MGXIR_FUZZ_COUNT sets the inputs per reader (the long runs are
by hand: `python fuzz/run.py --reader=X --count=N --in-process`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "fuzz"))

import run as fuzz_run  # noqa: E402

COUNT = int(os.environ.get("MGXIR_FUZZ_COUNT", "30"))


@pytest.mark.parametrize("reader", sorted(fuzz_run.READERS))
def test_mutated_inputs_are_user_errors_or_read(reader: str, tmp_path: Path) -> None:
    if reader in ("mlir", "mlirbc"):
        pytest.importorskip("iree.compiler")
    if reader == "onnx":
        pytest.importorskip("onnx")
    fuzz_run.warm_up()
    counts = fuzz_run.fuzz(reader, COUNT, 1, 1, fuzz_run.Limits(_limit(), 20), tmp_path, in_process=True)
    bad = {kind: counts[kind] for kind in fuzz_run.BAD if counts[kind]}
    found = sorted(p.name for p in tmp_path.glob("*.stderr"))
    first = (tmp_path / found[0]).read_text()[-500:] if found else ""
    assert not bad, f"{reader}: {bad}; kept in {tmp_path}: {found[:5]}; first: {first}"
    assert sum(counts.values()) == COUNT


def _limit() -> int:
    from mgxir.diagnostics import process_memory

    return process_memory()[1] + (3 << 30)


def test_the_classification() -> None:
    # exit statuses as os.wait gives them
    assert fuzz_run.classify(0, "") == "ok"
    assert fuzz_run.classify(1 << 8, "x.mgx:1:1: error: ...") == "user error"
    # a quoted source line with the word in it (the test suite's `CHECK-NOT: Traceback` as seeds)
    assert fuzz_run.classify(1 << 8, "x.mgx:2:7: error: ...\nx = @paCHECK-NOT: Traceback\n      ^") == "user error"
    assert fuzz_run.classify(2 << 8, "internal error: KeyError: 'x'") == "internal error"
    assert fuzz_run.classify(2 << 8, "internal error: MemoryError: ") == "memory"
    assert fuzz_run.classify(6, "") == "crash"  # SIGABRT
    assert fuzz_run.classify(14, "") == "hang"  # SIGALRM
    assert fuzz_run.classify(24, "") == "hang"  # SIGXCPU


def test_a_mutation_is_seeded() -> None:
    import random

    seeds = [b"x = @param:x -> float_type, {2, 3}, {3, 1}\n", b"@1 = relu(x)\n"]
    first = [fuzz_run.mutate(seeds[0], seeds, random.Random(7), True) for _ in range(5)]
    again = [fuzz_run.mutate(seeds[0], seeds, random.Random(7), True) for _ in range(5)]
    assert first == again and any(m != seeds[0] for m in first)


def _scripted_reader(pids: Path) -> fuzz_run.Reader:
    """A reader that does what its input says: abort, sleep, run out of memory, or read."""

    def run(path: str, folder: str) -> int:
        with pids.open("a") as f:
            f.write(f"{os.getpid()}\n")
        action = Path(path).read_bytes()
        if action == b"abort":
            os.abort()
        while action == b"hang":  # processor time: SIGXCPU after Limits.seconds
            pass
        if action == b"memory":
            print("internal error: MemoryError: ", file=sys.stderr)
            return 2
        return 0 if action == b"read" else 1

    return fuzz_run.Reader(lambda: [], ".txt", run)


def test_workers_classify_crashes_hangs_and_memory_and_are_recycled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--in-process: a worker that aborts or hangs is replaced, the input is run again in a fresh
    process (noted with the finding), and a worker is recycled after RECYCLE_AFTER inputs."""
    monkeypatch.setattr(fuzz_run, "RECYCLE_AFTER", 3)
    pids = tmp_path / "pids"
    finder = fuzz_run.Finder(_scripted_reader(pids), tmp_path / "found")
    inputs = [b"read", b"abort", b"read", b"hang", b"memory", b"bad", *[b"read"] * 6]
    limits = fuzz_run.Limits(_limit(), 1)
    fuzz_run._fuzz_in_workers(finder, iter(inputs), 1, limits, str(tmp_path))
    assert finder.counts == {"ok": 8, "crash": 1, "hang": 1, "memory": 1, "user error": 1}
    assert (tmp_path / "found/crash-1.stderr").read_text().startswith("(in a fresh process: crash)")
    assert (tmp_path / "found/hang-1.txt").read_bytes() == b"hang"
    workers = pids.read_text().split()
    # abort, hang and memory run again in a fresh process each; a worker ends after each of them
    # and after 3 inputs: workers of [read abort] [read hang] [memory] [bad read read] [read read read] [read]
    assert len(workers) == len(inputs) + 3
    assert len(set(workers)) == 6 + 3, " ".join(workers)
