"""memory_coloring: allocations live at the same time never share bytes, and planning is fast."""

from __future__ import annotations

import time

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes.base import PassContext
from mgxir.passes.memory_coloring import MemoryColoring


def random_allocation_program(seed: int, steps: int) -> Program:
    """Allocations of random sizes, each read by `neg` a few steps later, all feeding a final sum."""
    rng = np.random.default_rng(seed)
    program = Program()
    main = program.create_module("main")
    live: list[Instruction] = []
    results: list[Instruction] = []
    for _ in range(steps):
        if not live or rng.random() < 0.5:
            lens = (int(rng.integers(1, 40)),)
            live.append(main.add_instruction("allocate", shape=Shape.make(DType.float, lens)))
        else:
            chosen = live.pop(int(rng.integers(len(live))))
            results.append(main.add_instruction("neg", [chosen]))
    main.add_return(results + live)
    return program


def _live_ranges(program: Program) -> list[tuple[int, int, int, int]]:
    order = {ins: i for i, ins in enumerate(program.main)}
    ranges = []
    for ins in program.main:
        if ins.op.defn.name == "load":
            offset = ins.op["offset"]
            last = max(order[u] for u in ins.users)
            ranges.append((order[ins], last, offset, offset + ins.shape.bytes))
    return ranges


def test_live_allocations_do_not_overlap() -> None:
    for seed in range(30):
        program = random_allocation_program(seed, 60)
        context = PassContext()
        MemoryColoring().apply(program, context)
        ranges = _live_ranges(program)
        assert ranges
        for i, (start_a, end_a, lo_a, hi_a) in enumerate(ranges):
            for start_b, end_b, lo_b, hi_b in ranges[i + 1 :]:
                if start_a <= end_b and start_b <= end_a:
                    assert hi_a <= lo_b or hi_b <= lo_a, f"seed {seed}: overlapping live allocations"
        assert context.statistics["peak scratch bytes"] <= context.statistics["bytes without planning"]


def test_planning_scales() -> None:
    small = random_allocation_program(1, 5_000)
    large = random_allocation_program(1, 50_000)
    started = time.perf_counter()
    MemoryColoring().apply(small, PassContext())
    small_time = time.perf_counter() - started
    started = time.perf_counter()
    MemoryColoring().apply(large, PassContext())
    large_time = time.perf_counter() - started
    assert large_time < 30 * small_time + 0.5
