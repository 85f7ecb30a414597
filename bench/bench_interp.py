"""Interpreter overhead: a 1000-instruction chain of small tensors, interpreted vs the same numpy
calls written out by hand. Prints both times and their ratio (the target is at most 2x)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import chain_program

from mgxir.diagnostics import DiagnosticSink
from mgxir.interp import Interpreter
from mgxir.text.parser import parse_program

N = 1000
LENS = (4, 8)


def by_hand(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """What chain_program(N) computes, as direct numpy calls."""
    add, mul, tanh = np.add, np.multiply, np.tanh
    prev = x
    for i in range(2, N - 1):
        kind = i % 3
        if kind == 0:
            prev = add(prev, y)
        elif kind == 1:
            prev = mul(prev, prev)
        else:
            prev = tanh(prev)
    return prev


def best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    program = parse_program(chain_program(N, LENS), "<bench>", sink=DiagnosticSink())
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, LENS).astype(np.float32)
    y = rng.uniform(-1, 1, LENS).astype(np.float32)
    interpreter = Interpreter(program)
    params = {"x": x, "y": y}
    interpreted = interpreter.run(params)[0]
    assert np.array_equal(interpreted, by_hand(x, y)), "interpreter and hand-written numpy disagree"
    repeats = 30
    t_interp = best_of(lambda: interpreter.run(params), repeats)
    t_hand = best_of(lambda: by_hand(x, y), repeats)
    print(f"instructions: {N}, tensor lens {LENS}")
    print(f"interpreter: {t_interp * 1e3:.3f} ms, hand-written numpy: {t_hand * 1e3:.3f} ms")
    print(f"ratio: {t_interp / t_hand:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
