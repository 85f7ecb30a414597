"""One analysis of a fused `pointwise` or `fused_reduce` module for code generation, which every
kernel generator reads (the GPU's C++ in mgxir/targets/gpu/kernels.py, SPIR-V in
mgxir/translate/spirv/kernels.py): what the module computes, in the terms a kernel needs.

- `BodyPlan`: a scalar body (a `pointwise` module): its parameters in the order the instruction's
  arguments bind them (by name, as MIGraphX binds them), its steps in order, its results.
- `ReducePlan`: a `fused_reduce` module over its iteration space `lens`: the reduced `axes` split
  it into rows (one per index of the kept axes) of `row_length` elements. Each step is an element
  value (it varies along the row: parameters and what is computed from them) or a row value (one
  per row: literals, reductions and what is computed from those alone), and is known after `level`
  passes over the row (1 + the deepest reduction it depends on). Each reduction names its
  `Reducer` (mgxir/ops/nn.py: the one table of how reduce ops fold) and its accumulator type.
  Every tensor is seen over `lens` with its broadcast strides; `collapsed` merges the axes that are
  contiguous in all of them.

Launch shapes (threads per row, rows per block, workgroup sizes) are the generators' own: the plan
gives the counts they are chosen from (`rows`, `row_length`, `elements`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.registry import lookup
from mgxir.ir.traits import Broadcasting, NopWhenShapeKept, ValueTransparent
from mgxir.ops.nn import REDUCTIONS, Reducer


class Unplannable(Exception):
    """The module is not one a kernel computes (its instruction stays for the host); says why."""


class StepKind(Enum):
    LITERAL = "literal"  # a scalar literal
    VIEW = "view"  # passes its argument through (broadcasting dimensions of length 1)
    POINTWISE = "pointwise"  # a nested pointwise module, inlined
    OP = "op"  # one elementwise operator, by its scalar meaning
    REDUCE = "reduce"  # a reduction over the plan's axes


@dataclass(frozen=True)
class TensorView:
    """How a kernel sees one tensor over the iteration space: element type, lens, strides (in
    elements, 0 along broadcast dimensions)."""

    dtype: DType
    lens: tuple[int, ...]
    strides: tuple[int, ...]


@dataclass(frozen=True)
class Step:
    """One instruction of a body: `position` is its index in the module (kernels name values by
    it); a fused_reduce's steps say whether they are element values and after how many passes over
    the row they are known."""

    instruction: Instruction
    position: int
    kind: StepKind
    per_element: bool = True
    level: int = 0


@dataclass(frozen=True)
class Reduction:
    """One reduction of a fused_reduce body: it folds `source` (an element value) along the row."""

    instruction: Instruction
    reducer: Reducer
    source: Instruction
    accumulator: DType
    level: int

    @property
    def identity(self) -> float | int:
        return self.reducer.identity(self.accumulator)

    @property
    def result(self) -> DType:
        return self.instruction.shape.dtype


@dataclass(frozen=True)
class BodyPlan:
    module: Module
    parameters: tuple[Instruction, ...]
    steps: tuple[Step, ...]
    results: tuple[Instruction, ...]


@dataclass(frozen=True)
class ReducePlan:
    module: Module
    parameters: tuple[Instruction, ...]
    inputs: tuple[TensorView, ...]
    output: TensorView
    lens: tuple[int, ...]
    axes: tuple[int, ...]
    steps: tuple[Step, ...]
    reductions: tuple[Reduction, ...]
    result: Instruction
    _by_instruction: Mapping[Instruction, Step] = field(repr=False, compare=False, default_factory=dict)

    @property
    def kept(self) -> tuple[int, ...]:
        return tuple(d for d in range(len(self.lens)) if d not in self.axes)

    @property
    def rows(self) -> int:
        return math.prod(self.lens[d] for d in self.kept)

    @property
    def row_length(self) -> int:
        return math.prod(self.lens[d] for d in self.axes)

    @property
    def elements(self) -> int:
        return math.prod(self.lens)

    @property
    def tensors(self) -> tuple[TensorView, ...]:
        return (*self.inputs, self.output)

    @property
    def passes(self) -> tuple[int, ...]:
        """The levels of the reductions: one pass over the row each."""
        return tuple(sorted({r.level for r in self.reductions}))

    def step(self, ins: Instruction) -> Step:
        return self._by_instruction[ins]

    def is_element_value(self, ins: Instruction) -> bool:
        return ins.is_param or self._by_instruction[ins].per_element

    def needed_for(self, target: Instruction) -> list[Step]:
        """The element-value steps `target` is computed from (itself included), in order."""
        seen: set[Instruction] = set()
        stack = [target]
        while stack:
            ins = stack.pop()
            if ins in seen or not self.is_element_value(ins):
                continue
            seen.add(ins)
            stack.extend(ins.args)
        return [s for s in self.steps if s.instruction in seen]

    def collapsed(self, axes: Sequence[int]) -> tuple[list[int], list[list[int]]]:
        """The lens of `axes` (in order) and each tensor's strides along them, with neighbouring
        axes merged where every tensor is contiguous across them (and length-1 axes dropped)."""
        return collapse([self.lens[d] for d in axes], [[t.strides[d] for d in axes] for t in self.tensors])


def sorted_parameters(module: Module) -> tuple[Instruction, ...]:
    """A body's parameters in the order its instruction's arguments bind them (sorted by name)."""
    return tuple(sorted(module.parameters(), key=lambda p: p.param_name))


def accumulator_type(t: DType, reducer: Reducer) -> DType:
    """What a kernel folds elements of type `t` in: float for floats up to 32 bits, double for
    double, 64-bit integers for integers (as the reference: sums and products wrap once, at the
    end), 0/1 in int32 for the truthy folds."""
    if reducer.truthy:
        return DType.int32
    if t.is_float:
        return DType.double if t is DType.double else DType.float
    return DType.uint64 if t.is_unsigned and t is not DType.bool else DType.int64


def _scalar_literal(ins: Instruction) -> None:
    data = ins.literal.data
    if data is None or data.size != 1:
        raise Unplannable(f"literal '{ins.name}' is not a scalar")


def plan_body(module: Module) -> BodyPlan:
    """The plan of a pointwise module: literals must be scalars and steps elementwise operators."""
    steps = []
    for position, ins in enumerate(module):
        if ins.is_param or ins.is_return:
            continue
        if ins.is_literal:
            _scalar_literal(ins)
            steps.append(Step(ins, position, StepKind.LITERAL))
        elif ins.module_args:
            raise Unplannable(f"'{ins.op.name}' with a module inside pointwise body '{module.name}'")
        else:
            steps.append(Step(ins, position, StepKind.OP))
    ret = module.return_instruction
    if ret is None:
        raise Unplannable(f"pointwise body '{module.name}' has no @return")
    return BodyPlan(module, sorted_parameters(module), tuple(steps), tuple(ret.args))


def _passes_values_through(ins: Instruction) -> bool:
    """A broadcast, or an operator that is the identity where it keeps the shape (a contiguous):
    along the iteration it passes its argument's values through."""
    defn = ins.op.defn
    if defn.pointwise or len(ins.args) != 1:
        return False
    same = ins.args[0].shape.dtype is ins.shape.dtype and ins.args[0].shape.lens == ins.shape.lens
    return defn.has(Broadcasting) or (defn.has(NopWhenShapeKept) and defn.has(ValueTransparent) and same)


def _normalized(axes: Sequence[int], rank: int) -> tuple[int, ...]:
    return tuple(sorted({a % rank for a in axes}))


class Layout(Protocol):
    """A static tensor layout: a Shape, or a generator's own view of one."""

    @property
    def dtype(self) -> DType: ...
    @property
    def lens(self) -> Sequence[int]: ...
    @property
    def strides(self) -> Sequence[int]: ...


def plan_reduce(module: Module, axes: Sequence[int], inputs: Sequence[Layout], output: Layout) -> ReducePlan:
    """The plan of a fused_reduce module over `axes`, its inputs and output laid out as given
    (static shapes: the generators refuse dynamic ones first)."""
    parameters = sorted_parameters(module)
    if len(parameters) != len(inputs):
        raise Unplannable(
            f"fused_reduce module '{module.name}' has {len(parameters)} parameters for {len(inputs)} inputs"
        )
    lens = tuple(inputs[0].lens)
    rank = len(lens)
    axes = _normalized(axes, rank)
    reduced = tuple(1 if d in axes else n for d, n in enumerate(lens))
    if any(tuple(s.lens) != lens for s in inputs) or tuple(output.lens) not in (lens, reduced):
        raise Unplannable("fused_reduce inputs and output must share their axes")
    ret = module.return_instruction
    if ret is None or len(ret.args) != 1:
        raise Unplannable("a fused_reduce with more than one result")
    by_instruction: dict[Instruction, Step] = {}
    reductions = []

    def element(ins: Instruction) -> bool:
        return ins.is_param or by_instruction[ins].per_element

    def level(ins: Instruction) -> int:
        return 0 if ins.is_param else by_instruction[ins].level

    for position, ins in enumerate(module):
        if ins.is_param or ins.is_return:
            continue
        name = ins.op.defn.name
        below = max((level(a) for a in ins.args), default=0)
        varies = any(element(a) for a in ins.args)
        if ins.is_literal:
            _scalar_literal(ins)
            step = Step(ins, position, StepKind.LITERAL, False, 0)
        elif name in REDUCTIONS:
            if _normalized(ins.op["axes"], rank) != axes:
                raise Unplannable(f"{ins.op.name} over other axes than the fused_reduce's {list(axes)}")
            step = Step(ins, position, StepKind.REDUCE, False, below + 1)
            reducer = REDUCTIONS[name]
            source_type = ins.args[0].shape.dtype
            reductions.append(Reduction(ins, reducer, ins.args[0], accumulator_type(source_type, reducer), below + 1))
        elif _passes_values_through(ins):
            src, dst = ins.args[0].shape.lens, ins.shape.lens
            if len(src) != len(dst) or any(s not in (1, d) for s, d in zip(src, dst)):
                raise Unplannable(f"'{ins.op.name}' from {list(src)} to {list(dst)} inside a fused_reduce body")
            step = Step(ins, position, StepKind.VIEW, varies, below)
        elif ins.op.defn is lookup("pointwise"):
            if len(plan_body(ins.module_args[0]).results) != 1:
                raise Unplannable("a pointwise with several results inside a fused_reduce body")
            step = Step(ins, position, StepKind.POINTWISE, varies, below)
        elif ins.op.defn.pointwise and not ins.module_args:
            step = Step(ins, position, StepKind.OP, varies, below)
        else:
            raise Unplannable(f"'{ins.op.name}' inside a fused_reduce body")
        by_instruction[ins] = step
    result = ret.args[0]
    return ReducePlan(
        module,
        parameters,
        tuple(_view(s, lens) for s in inputs),
        _view(output, lens),
        lens,
        axes,
        tuple(by_instruction.values()),
        tuple(reductions),
        result,
        by_instruction,
    )


def _view(shape: Layout, lens: Sequence[int]) -> TensorView:
    return TensorView(shape.dtype, tuple(lens), tuple(broadcast_strides(shape.lens, shape.strides, lens)))


def broadcast_strides(lens: Sequence[int], strides: Sequence[int], target: Sequence[int]) -> list[int]:
    """Strides of a tensor of `lens` read over `target` (same rank): 0 where it has length 1."""
    if len(lens) != len(target):
        raise Unplannable(f"a tensor of rank {len(lens)} in an iteration of rank {len(target)}")
    out = []
    for n, s, t in zip(lens, strides, target):
        if n == t:
            out.append(s if n != 1 else 0)
        elif n == 1:
            out.append(0)
        else:
            raise Unplannable(f"lens {list(lens)} do not broadcast to {list(target)}")
    return out


def collapse(lens: Sequence[int], strides: Sequence[Sequence[int]]) -> tuple[list[int], list[list[int]]]:
    """Merges neighbouring dimensions that are contiguous in every tensor (stride[d] == stride[d+1]
    * lens[d+1]) and drops dimensions of length 1; keeps at least one dimension."""
    dims = [d for d, n in enumerate(lens) if n != 1]
    if not dims:
        return [1], [[0] for _ in strides]
    out_lens = [lens[dims[0]]]
    out_strides = [[s[dims[0]]] for s in strides]
    for d in dims[1:]:
        if all(o[-1] == s[d] * lens[d] for o, s in zip(out_strides, strides)):
            out_lens[-1] *= lens[d]
            for o, s in zip(out_strides, strides):
                o[-1] = s[d]
        else:
            out_lens.append(lens[d])
            for o, s in zip(out_strides, strides):
                o.append(s[d])
    return out_lens, out_strides
