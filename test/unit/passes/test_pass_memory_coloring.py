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
from mgxir.passes.memory_coloring import FreeList, MemoryColoring, element_alignment
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


# memory_coloring's exact plans: MIGraphX's offset alignment, which results alias an allocation,
# the free list's best fit and merging (against a plain model of free bytes), the pass's options and
# statistics.


@pytest.mark.parametrize(
    ("dtype", "count", "alignment"),
    [
        (DType.float, 1, 4),
        (DType.float, 4, 4),  # four elements or fewer: the element size
        (DType.float, 5, 4),
        (DType.float, 6, 8),  # a multiple of 2 (not 4) elements: twice
        (DType.float, 7, 4),
        (DType.float, 8, 16),  # a multiple of 4: four times
        (DType.float, 12, 16),
        (DType.int8, 10, 2),
        (DType.half, 12, 8),
        (DType.double, 9, 8),
    ],
)
def test_element_alignment(dtype: DType, count: int, alignment: int) -> None:
    assert element_alignment(Shape.make(dtype, (count,))) == alignment


def test_element_alignment_of_a_tuple_is_that_of_its_widest_element() -> None:
    # 29 + 4 = 33 bytes: 8 whole floats (a multiple of 4), so four times the float
    assert element_alignment(Shape.tuple_of([Shape.make(DType.int8, (29,)), Shape.make(DType.float, (1,))])) == 16
    assert element_alignment(Shape.tuple_of([Shape.make(DType.int8, (3,)), Shape.make(DType.half, (1,))])) == 2


def _plan(body: str, **options: object) -> tuple[Program, dict[str, int]]:
    program = parse_program('module: "main"\nx = @param:x -> float_type, {2}, {1}\n' + body)
    context = PassContext()
    MemoryColoring(**options).apply(program, context)  # type: ignore[arg-type]
    verify(program)
    return program, dict(context.statistics)


def _loads(program: Program) -> list[tuple[int, int]]:
    return [(i.op["offset"], i.op["offset"] + i.shape.bytes) for i in program.main if i.op.name == "load"]


def _alloc(name: int, dtype: str = "float_type", lens: str = "2") -> str:
    shape = f"{dtype}, {{{lens}}}, {{1}}"
    return f"@{name} = allocate[shape={shape}] -> {shape}\n"


# @0 written by an operator mgxir does not know (its last argument is its output), read through it at @3
WRITTEN_BY_UNKNOWN_OP = (
    _alloc(0)
    + "@1 = foo(x,x,@0) -> float_type, {2}, {1}\n"
    + _alloc(2)
    + "@3 = add(@1,@2) -> float_type, {2}, {1}\n"
    + "@4 = @return(@3)\n"
)


def test_an_unknown_op_keeps_its_last_argument_alive() -> None:
    program, statistics = _plan(WRITTEN_BY_UNKNOWN_OP)
    assert _loads(program) == [(0, 8), (8, 16)]
    assert statistics == {"allocations planned": 2, "peak scratch bytes": 16, "bytes without planning": 16}


def test_bytes_are_reused_once_the_last_reader_has_run() -> None:
    body = _alloc(0) + "@1 = neg(@0) -> float_type, {2}, {1}\n" + _alloc(2)
    body += "@3 = add(@1,@2) -> float_type, {2}, {1}\n@4 = @return(@3)\n"
    program, statistics = _plan(body)
    assert _loads(program) == [(0, 8), (0, 8)]
    assert statistics == {"allocations planned": 2, "peak scratch bytes": 8, "bytes without planning": 16}
    scratch = next(i for i in program.main if i.op.name == "allocate")
    assert scratch.shape == Shape.make(DType.int8, (8,))
    assert [i.op.name for i in program.main][:3] == ["@param", "allocate", "load"]


def test_alignment_option_and_rounding_up() -> None:
    body = _alloc(0, "int8_type", "5") + _alloc(1, "int8_type", "5")
    body += "@2 = add(@0,@1) -> int8_type, {5}, {1}\n@3 = @return(@2)\n"
    program, statistics = _plan(body.replace("x = ", "y = "), alignment=4)
    assert _loads(program) == [(0, 5), (8, 13)]
    assert all(type(offset) is int for offset, _ in _loads(program))
    assert "allocate[shape=int8_type, {16}, {1}" in print_program(program)
    assert all(type(n) is int for n in statistics.values())
    assert statistics == {"allocations planned": 2, "peak scratch bytes": 16, "bytes without planning": 16}
    program, _ = _plan(body, alignment=16)
    assert _loads(program) == [(0, 5), (16, 21)]


def test_one_byte_allocations_are_planned_and_empty_ones_left() -> None:
    body = _alloc(0, "int8_type", "1") + _alloc(1, "int8_type", "0")
    body += "@2 = @return(@0,@1)\n"
    program, statistics = _plan(body)
    assert _loads(program) == [(0, 1)]
    assert [i.op.name for i in program.main].count("allocate") == 2
    assert statistics["allocations planned"] == 1


def test_scratch_parameter() -> None:
    program, _ = _plan(WRITTEN_BY_UNKNOWN_OP, scratch_parameter=True)
    assert program.main.parameter_names() == ["scratch", "x"]
    scratch = program.main.first
    assert scratch is not None and scratch.param_name == "scratch"
    assert scratch.shape == Shape.make(DType.int8, (16,))
    assert all(i.args == [scratch] for i in program.main if i.op.name == "load")
    assert "allocate" not in [i.op.name for i in program.main]


def test_nothing_to_plan_leaves_the_program() -> None:
    program, statistics = _plan("@1 = neg(x) -> float_type, {2}, {1}\n@2 = @return(@1)\n")
    assert [i.op.name for i in program.main] == ["@param", "neg", "@return"] and statistics == {}


class FreeBytes:
    """The model: one flag per byte below the peak."""

    def __init__(self) -> None:
        self.used: list[bool] = []

    def blocks(self) -> list[tuple[int, int]]:
        """Free (offset, size) runs."""
        runs, start = [], None
        for at, used in enumerate([*self.used, True]):
            if not used and start is None:
                start = at
            elif used and start is not None:
                runs.append((start, at - start))
                start = None
        return runs

    def expected_offset(self, size: int) -> int:
        fitting = [(s, o) for o, s in self.blocks() if s >= size]
        if fitting:
            return min(fitting)[1]
        top = [o for o, s in self.blocks() if o + s == len(self.used)]
        return top[0] if top else len(self.used)

    def take(self, offset: int, size: int) -> None:
        self.used += [False] * max(0, offset + size - len(self.used))
        assert not any(self.used[offset : offset + size])
        self.used[offset : offset + size] = [True] * size


@pytest.mark.parametrize("seed", range(12))
def test_free_list_is_best_fit_and_merges_neighbours(seed: int) -> None:
    rng = np.random.default_rng(seed)
    free, model = FreeList(), FreeBytes()
    held: list[tuple[int, int]] = []
    for _ in range(80):
        if held and rng.random() < 0.45:
            offset, size = held.pop(int(rng.integers(len(held))))
            free.release(offset, size)
            model.used[offset : offset + size] = [False] * size
        else:
            size = int(rng.integers(1, 6))
            expected = model.expected_offset(size)
            offset = free.allocate(size)
            assert offset == expected
            model.take(offset, size)
            held.append((offset, size))
        assert free.peak == len(model.used)
        assert sorted((o, s) for s, o in free.by_size) == model.blocks()
        assert free.size_at == dict(model.blocks())
        assert free.offset_ending_at == {o + s: o for o, s in model.blocks()}


def test_free_list_reuses_an_exact_fit_at_offset_zero() -> None:
    free = FreeList()
    assert (free.allocate(4), free.allocate(4)) == (0, 4)
    free.release(0, 4)
    assert free.allocate(4) == 0
    assert free.peak == 8
