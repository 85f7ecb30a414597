"""Translation to MLIR next to mgx-opt's parse + print of the same program (goal: at most 2x).

Usage: python bench/bench_mlir.py [N ...]   (default: 100000 instructions)

The program is bench/gen.py's chain of add/mul/tanh. `translate` is what `mgx-translate --to-mlir`
does: parse, verify, lower through the MLIR Python bindings, run MLIR's verifier, print the text.
The peer, measured in the same run, is what `mgx-opt` does: parse, verify, print MIGraphX's text.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import chain_program

from mgxir import parse_program, print_program, verify
from mgxir.translate.mlir.api import mlir_text


def best_of(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
        gc.enable()
    return best


def main(sizes: list[int]) -> None:
    parse_program("x = @param:x -> float_type, {1}, {1}\n")  # build the parser tables once
    print(f"{'instructions':>12} {'translate s':>12} {'parse+print s':>14} {'ratio':>7}")
    for n in sizes:
        text = chain_program(n)

        def translate(text: str = text) -> None:
            program = parse_program(text)
            verify(program)
            mlir_text(program)

        def parse_print(text: str = text) -> None:
            program = parse_program(text)
            verify(program)
            print_program(program)

        t_translate = best_of(translate)
        t_peer = best_of(parse_print)
        print(f"{n:>12} {t_translate:>12.3f} {t_peer:>14.3f} {t_translate / t_peer:>6.2f}x")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [100_000])
