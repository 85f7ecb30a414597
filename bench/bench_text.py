"""Parse + verify + print speed of the text format, next to MLIR's C++ parser on the same graph.

Usage: python bench/bench_text.py [N ...]   (default: 10000 100000 instructions)

The program is a chain of add/mul/tanh over two parameters (bench/gen.py). The peer is MLIR's
parser, verifier and printer (through `iree.compiler.ir`, from the `mlir` extra) on the same
graph written as a func with `arith.addf`/`arith.mulf`/`math.tanh` on tensor<4x8xf32>, measured in
the same run.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import chain_program

from mgxir import parse_program, print_program, verify


def mlir_chain(n: int) -> str:
    t = "tensor<4x8xf32>"
    lines = [f"func.func @main(%x: {t}, %y: {t}) -> {t} {{"]
    prev = "%x"
    for i in range(2, n - 1):
        kind = i % 3
        if kind == 0:
            lines.append(f"  %v{i} = arith.addf {prev}, %y : {t}")
        elif kind == 1:
            lines.append(f"  %v{i} = arith.mulf {prev}, {prev} : {t}")
        else:
            lines.append(f"  %v{i} = math.tanh {prev} : {t}")
        prev = f"%v{i}"
    lines.append(f"  return {prev} : {t}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def best_of(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(sizes: list[int]) -> None:
    try:
        from iree.compiler import ir
    except ImportError:
        ir = None
        print("(MLIR peer unavailable: pip install 'mgxir[mlir]')")
    parse_program("x = @param:x -> float_type, {1}, {1}\n")  # build the parser tables once
    print(f"{'instructions':>12} {'mgxir s':>9} {'us/instr':>9} {'MLIR s':>9} {'mgxir/MLIR':>11}")
    for n in sizes:
        text = chain_program(n)

        def ours(text: str = text) -> None:
            program = parse_program(text)
            verify(program)
            out = print_program(program)
            assert out == text

        t_ours = best_of(ours)
        t_mlir = float("nan")
        if ir is not None:
            mtext = mlir_chain(n)

            def theirs(mtext: str = mtext) -> None:
                with ir.Context() as ctx:
                    ctx.allow_unregistered_dialects = False
                    module = ir.Module.parse(mtext)
                    assert module.operation.verify()
                    str(module)

            t_mlir = best_of(theirs)
        print(f"{n:>12} {t_ours:>9.3f} {1e6 * t_ours / n:>9.2f} {t_mlir:>9.3f} {t_ours / t_mlir:>10.1f}x")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10_000, 100_000])
