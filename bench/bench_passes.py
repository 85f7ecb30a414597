"""Times `-O`, `fuse` and `ref` on 10k and 100k-instruction add/mul/tanh chains, and `fuse` on as many
instructions of normalization blocks (reductions between dots); prints seconds and growth."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from gen import chain_program

from mgxir.passes.manager import Instrumentation, PassManager
from mgxir.passes.registry import parse_pipeline
from mgxir.text.parser import parse_program


def norm_blocks_program(n: int) -> str:
    """About `n` instructions: blocks of `(x - mean(x)) * rsqrt(sum((x - mean(x))^2))`, then a dot."""
    full, reduced, spread = "float_type, {4, 8}, {8, 1}", "float_type, {4, 1}, {1, 1}", "float_type, {4, 8}, {1, 0}"
    lines = ['module: "main"', f"x = @param:x -> {full}", "w = @param:w -> float_type, {8, 8}, {8, 1}"]
    prev, i = "x", 2
    while i + 9 < n:
        lines += [
            f"@{i} = reduce_mean[axes={{1}}]({prev}) -> {reduced}",
            f"@{i + 1} = multibroadcast[out_lens={{4, 8}}](@{i}) -> {spread}",
            f"@{i + 2} = sub({prev},@{i + 1}) -> {full}",
            f"@{i + 3} = mul(@{i + 2},@{i + 2}) -> {full}",
            f"@{i + 4} = reduce_sum[axes={{1}}](@{i + 3}) -> {reduced}",
            f"@{i + 5} = rsqrt(@{i + 4}) -> {reduced}",
            f"@{i + 6} = multibroadcast[out_lens={{4, 8}}](@{i + 5}) -> {spread}",
            f"@{i + 7} = mul(@{i + 2},@{i + 6}) -> {full}",
            f"@{i + 8} = dot(@{i + 7},w) -> {full}",
        ]
        prev, i = f"@{i + 8}", i + 9
    lines.append(f"@{i} = @return({prev})")
    return "\n".join(lines) + "\n\n\n"


def time_pipeline(pipeline: str, n: int, main_only: bool, generate: Callable[[int], str] = chain_program) -> float:
    program = parse_program(generate(n))
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
    time_pipeline("fuse", 1_000, False, norm_blocks_program)
    small = time_pipeline("fuse", 10_000, False, norm_blocks_program)
    large = time_pipeline("fuse", 100_000, False, norm_blocks_program)
    print(f"fuse (norm blocks) 10k: {small:7.3f} s   100k: {large:7.3f} s   growth x{large / small:5.1f}")


if __name__ == "__main__":
    main()
