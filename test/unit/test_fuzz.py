"""A short run of fuzz/run.py (issue 24): mutated inputs for every reader, each in a forked child
under a memory and a time limit, end in a user error or in success, never in an internal error, a
crash, a hang or a memory blow-up. MGXIR_FUZZ_COUNT sets the inputs per reader (the long runs are
by hand: `python fuzz/run.py --reader=X --count=N -j 1`)."""

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
    counts = fuzz_run.fuzz(reader, COUNT, 1, 1, fuzz_run.Limits(_limit(), 20), tmp_path)
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
    assert fuzz_run.classify(2 << 8, "internal error: KeyError: 'x'") == "internal error"
    assert fuzz_run.classify(2 << 8, "internal error: MemoryError: ") == "memory"
    assert fuzz_run.classify(6, "") == "crash"  # SIGABRT
    assert fuzz_run.classify(14, "") == "hang"  # SIGALRM


def test_a_mutation_is_seeded() -> None:
    import random

    seeds = [b"x = @param:x -> float_type, {2, 3}, {3, 1}\n", b"@1 = relu(x)\n"]
    first = [fuzz_run.mutate(seeds[0], seeds, random.Random(7), True) for _ in range(5)]
    again = [fuzz_run.mutate(seeds[0], seeds, random.Random(7), True) for _ in range(5)]
    assert first == again and any(m != seeds[0] for m in first)
