"""End-to-end `mgx-opt -p 'O,fuse'` (parse, verify, passes with verify-each, print) next to MLIR's
elementwise fusion on the same graph, and mgxir's cse next to MLIR's cse.

Usage: python bench/bench_pipeline.py [--mlir-fuse-max N]

The program is a chain of add/mul/tanh over two parameters (bench/gen.py). The peers run in the same
process through `iree.compiler` (the `mlir` extra), on the graph written as a func of
`arith.addf`/`arith.mulf`/`math.tanh` on tensor<4x8xf32>:
- fusion: parse, `convert-elementwise-to-linalg, linalg-fuse-elementwise-ops, canonicalize, cse`,
  print. Like fuse_pointwise it leaves one `linalg.generic` holding the whole chain. Its time grows
  quadratically (10k instructions take minutes), so it runs only up to --mlir-fuse-max (default 3000).
- cse: MLIR's `cse` pass alone next to mgxir's `eliminate_common_subexpression`, passes only.
"""

from __future__ import annotations

import argparse
import gc
import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_text import mlir_chain
from gen import chain_program

from mgxir import parse_program, print_program, verify
from mgxir.passes.manager import Instrumentation, PassManager
from mgxir.passes.registry import parse_pipeline

MLIR_FUSION = "builtin.module(func.func(convert-elementwise-to-linalg,linalg-fuse-elementwise-ops),canonicalize,cse)"


def mgxir_end_to_end(text: str) -> float:
    """What `mgx-opt in.mgx -p 'O,fuse'` does, in process (the -O part on main only, as MIGraphX)."""
    gc.collect()
    start = time.perf_counter()
    program = parse_program(text, "bench.mgx")
    verify(program)
    instrumentation = Instrumentation(main_only=True, stream=io.StringIO())
    PassManager(parse_pipeline("O"), instrumentation).run(program)
    PassManager(parse_pipeline("fuse"), Instrumentation(stream=io.StringIO())).run(program)
    print_program(program)
    return time.perf_counter() - start


def mgxir_cse(text: str) -> float:
    program = parse_program(text, "bench.mgx")
    verify(program)
    manager = PassManager(parse_pipeline("cse"), Instrumentation(verify_each=False))
    gc.collect()
    start = time.perf_counter()
    manager.run(program)
    return time.perf_counter() - start


def mlir_fusion(ir, passmanager, text: str) -> float:
    gc.collect()
    start = time.perf_counter()
    with ir.Context():
        module = ir.Module.parse(text)
        passmanager.PassManager.parse(MLIR_FUSION).run(module.operation)
        str(module)
    return time.perf_counter() - start


def mlir_cse(ir, passmanager, text: str) -> float:
    with ir.Context():
        module = ir.Module.parse(text)
        manager = passmanager.PassManager.parse("builtin.module(func.func(cse))")
        gc.collect()
        start = time.perf_counter()
        manager.run(module.operation)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mlir-fuse-max", type=int, default=3000)
    args = parser.parse_args()
    try:
        from iree.compiler import ir, passmanager
    except ImportError:
        ir = passmanager = None
        print("(MLIR peer unavailable: pip install 'mgxir[mlir]')")
    mgxir_end_to_end(chain_program(1_000))  # warm-up: parser tables, operator tables

    print("end to end: parse + verify + -O + fuse (verify-each) + print")
    print(f"{'instructions':>12} {'mgxir s':>9} {'MLIR fusion s':>14} {'MLIR/mgxir':>11}")
    previous = None
    for n in (1_000, 3_000, 10_000, 100_000):
        ours = mgxir_end_to_end(chain_program(n))
        peer = mlir_fusion(ir, passmanager, mlir_chain(n)) if ir is not None and n <= args.mlir_fuse_max else None
        growth = f"   (x{ours / previous[1]:.1f} for x{n // previous[0]} instructions)" if previous else ""
        if peer is None:
            print(f"{n:>12} {ours:>9.3f} {'-':>14} {'-':>11}{growth}")
        else:
            print(f"{n:>12} {ours:>9.3f} {peer:>14.3f} {peer / ours:>10.1f}x{growth}")
        previous = (n, ours)

    print("cse alone (passes only)")
    print(f"{'instructions':>12} {'mgxir s':>9} {'MLIR cse s':>11} {'mgxir/MLIR':>11}")
    for n in (10_000, 100_000):
        ours = mgxir_cse(chain_program(n))
        if ir is None:
            print(f"{n:>12} {ours:>9.3f} {'-':>11} {'-':>11}")
        else:
            peer = mlir_cse(ir, passmanager, mlir_chain(n))
            print(f"{n:>12} {ours:>9.3f} {peer:>11.3f} {ours / peer:>10.1f}x")


if __name__ == "__main__":
    main()
