"""Times `-O`, `fuse` and `ref` on 10k and 100k-instruction add/mul/tanh chains; prints seconds and growth."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from gen import chain_program

from mgxir.passes.manager import Instrumentation, PassManager
from mgxir.passes.registry import parse_pipeline
from mgxir.text.parser import parse_program


def time_pipeline(pipeline: str, n: int, main_only: bool) -> float:
    program = parse_program(chain_program(n))
    manager = PassManager(parse_pipeline(pipeline), Instrumentation(verify_each=False, main_only=main_only))
    start = time.perf_counter()
    manager.run(program)
    return time.perf_counter() - start


def main() -> None:
    for label, pipeline, main_only in (("-O", "O", True), ("fuse", "fuse", False), ("ref", "ref", False)):
        time_pipeline(pipeline, 1_000, main_only)  # warm-up: first lookups load the operator tables
        small = time_pipeline(pipeline, 10_000, main_only)
        large = time_pipeline(pipeline, 100_000, main_only)
        print(f"{label:5s} 10k: {small:7.3f} s   100k: {large:7.3f} s   growth x{large / small:5.1f} (linear = x10)")


if __name__ == "__main__":
    main()
