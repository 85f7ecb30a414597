"""memory_coloring: allocations live at the same time never share bytes, and planning is fast; and the
planned program's operators, allocate and load, parsed, checked and run."""

from __future__ import annotations

import time

import numpy as np
import pytest

from mgxir import DiagnosticSink, MgxError, parse_program, verify
from mgxir.interp import Interpreter
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.program import Program
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.passes.base import PassContext
from mgxir.passes.memory_coloring import MemoryColoring
from mgxir.text.printer import print_program


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


# -- the planned program's operators: allocate and load (a view of a scratch buffer) -----------------

LOADS = """module: "main"
buf = @param:buf -> float_type, {4, 4}
@1 = load[offset=8,end=32](buf) -> float_type, {2, 3}, {1, 2}
@2 = load[shape=int32_type, {3}, {1}](buf)
@3 = load[end=4](buf) -> float_type, {1}
@4 = allocate[shape=int8_type, {2, 2}, {2, 1},buf_type=nullopt]()
d = @param:d -> int64_type, {2}
@6 = allocate[shape=nullopt,buf_type=int32_type](d)
@7 = @return(@1,@2,@3,@4,@6)
"""


def _parsed(text: str) -> Program:
    program = parse_program(text, "prog.mgx", sink=DiagnosticSink())
    verify(program)
    return program


def _refusal(text: str) -> str:
    with pytest.raises(MgxError) as caught:
        _parsed(text)
    return str(caught.value)


def test_load_views_bytes_of_the_buffer_and_allocate_gives_zeros() -> None:
    program = _parsed(LOADS)
    loads = [ins for ins in program.main if ins.op.defn.name == "load"]
    # a load without a printed shape takes its shape attribute; end is offset plus the shape's bytes
    assert [ins.op.values for ins in loads] == [
        (Shape.make(DType.float, (2, 3), (1, 2)), 8),
        (Shape.make(DType.int32, (3,)), 0),
        (Shape.make(DType.float, (1,)), 0),
    ]
    assert "@2 = load[offset=0,end=12](buf) -> int32_type, {3}, {1}" in print_program(program)
    buf = np.arange(16, dtype=np.float32).reshape(4, 4)
    transposed, ints, first, allocated, sized = Interpreter(program).run({"buf": buf, "d": np.array([2, 3])})
    # bytes 8..32 are floats 2..7, read with strides {1, 2}
    np.testing.assert_array_equal(transposed, [[2, 4, 6], [3, 5, 7]])
    np.testing.assert_array_equal(ints, buf.reshape(-1)[:3].view(np.int32))
    np.testing.assert_array_equal(first, [0])
    assert allocated.dtype == np.int8 and allocated.shape == (2, 2) and not allocated.any()
    assert sized.dtype == np.int32 and sized.shape == (2, 3) and not sized.any()


def test_load_refusals_name_the_problem() -> None:
    assert "load end=30 is not offset 8 plus the 24 bytes of its shape" in _refusal(
        LOADS.replace("load[offset=8,end=32]", "load[offset=8,end=30]")
    )
    assert "load has no attribute 'size'" in _refusal(LOADS.replace("load[end=4]", "load[end=4,size=4]"))
    assert "load: needs a shape" in _refusal(LOADS.replace("load[end=4](buf) -> float_type, {1}", "load[end=4](buf)"))
    assert "load: bytes 48..72 are outside the 64-byte buffer" in _refusal(
        LOADS.replace("load[offset=8,end=32]", "load[offset=48,end=72]")
    )
    assert "load: bytes 56..68 are outside the 64-byte buffer" in _refusal(
        LOADS.replace("load[shape=int32_type, {3}, {1}]", "load[shape=int32_type, {3}, {1},offset=56]")
    )


def test_a_load_without_a_shape_prints_its_end_as_its_offset() -> None:
    op = make_op("load", offset=12)
    assert op.defn.format(op) == "load[offset=12,end=12]"


def test_allocate_refusals_name_the_attributes() -> None:
    both = "allocate[shape=int8_type, {2, 2}, {2, 1},buf_type=int8_type]()"
    assert "allocate: shape and buf_type attributes both set" in _refusal(
        LOADS.replace("allocate[shape=int8_type, {2, 2}, {2, 1},buf_type=nullopt]()", both)
    )
    assert "allocate: shape and buf_type attributes both not set" in _refusal(
        LOADS.replace("allocate[shape=nullopt,buf_type=int32_type](d)", "allocate[shape=nullopt,buf_type=nullopt](d)")
    )
    two_d = LOADS.replace("d = @param:d -> int64_type, {2}", "d = @param:d -> int64_type, {1, 2}")
    assert "allocate: without a shape it takes one static 1-D input: the output dimensions" in _refusal(two_d)
