"""memory_coloring's exact plans: MIGraphX's offset alignment, which results alias an allocation,
the free list's best fit and merging (against a plain model of free bytes), the pass's options and
statistics."""

from __future__ import annotations

import numpy as np
import pytest

from mgxir.ir.dtype import DType
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes.base import PassContext
from mgxir.passes.memory_coloring import FreeList, MemoryColoring, element_alignment
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.verifier import verify


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
