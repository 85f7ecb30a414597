"""memory_coloring: every `allocate` whose lifetimes allow it shares one scratch buffer; each becomes
`load[offset=O,end=E]` of a single `allocate` of int8 (MIGraphX adds a `scratch` parameter
instead; `scratch_parameter=true` does that too, though the program then needs that input).

An allocation lives from its definition to the last use of anything that aliases it: views of it
(`is_view` ops), lowered target ops that write into their last argument, and operators mgxir does
not know, whose last argument is taken to alias it (MIGraphX's convention for lowered ops). A value
that an `if` or `loop` body reads from the module around it is used by that `if` or `loop`.
Offsets are planned in one scan in program order with a best-fit free list that coalesces
neighbours (MIGraphX colours a conflict graph instead, which is quadratic; the peak may differ).
Offsets are aligned as MIGraphX aligns them: the largest element size, times 4 (or 2) where the
allocation's elements allow, and at least `alignment` bytes."""

from __future__ import annotations

import bisect
import dataclasses
import heapq

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.rewrite import Rewriter


def element_alignment(shape: Shape) -> int:
    alignment = max([shape.dtype.itemsize, *(element_alignment(s) for s in shape.sub_shapes or ())])
    count = shape.bytes // alignment
    if count > 4:
        alignment *= {0: 4, 2: 2}.get(count % 4, 1)
    return alignment


def aliased_root(ins: Instruction, roots: dict[Instruction, Instruction]) -> Instruction | None:
    """The allocation whose memory `ins`'s result is, if any (roots of earlier instructions known)."""
    if not ins.args:
        return None
    if ins.op.defn.is_view:
        return roots.get(ins.args[0])
    if ins.op.defn.is_opaque or ins.op.defn.writes_last_argument:
        return roots.get(ins.args[-1])
    return None


def body_modules(ins: Instruction) -> list[Module]:
    """`ins`'s submodules and theirs, each once."""
    found: dict[int, Module] = {}
    for module in ins.module_args:
        for reached in module.reachable_modules():
            found.setdefault(id(reached), reached)
    return list(found.values())


def outer_values(ins: Instruction) -> list[Instruction]:
    """The values of the modules around `ins` that its submodules (an `if`'s branches, a `loop`'s
    body, and theirs) read: what `ins` uses besides its arguments."""
    modules = body_modules(ins)
    inside = {sub for module in modules for sub in module}
    read = dict.fromkeys(arg for module in modules for sub in module for arg in sub.args)
    return [value for value in read if value not in inside]


class FreeList:
    """Free byte ranges below the peak: best fit by size, neighbours merged on release."""

    def __init__(self) -> None:
        self.by_size: list[tuple[int, int]] = []  # (size, offset), sorted
        self.size_at: dict[int, int] = {}  # offset -> size
        self.offset_ending_at: dict[int, int] = {}  # end -> offset
        self.peak = 0

    def _add(self, offset: int, size: int) -> None:
        bisect.insort(self.by_size, (size, offset))
        self.size_at[offset] = size
        self.offset_ending_at[offset + size] = offset

    def _take(self, offset: int) -> int:
        size = self.size_at.pop(offset)
        del self.offset_ending_at[offset + size]
        del self.by_size[bisect.bisect_left(self.by_size, (size, offset))]
        return size

    def allocate(self, size: int) -> int:
        i = bisect.bisect_left(self.by_size, (size, -1))
        if i < len(self.by_size):
            block_size, offset = self.by_size[i]
            self._take(offset)
            if block_size > size:
                self._add(offset + size, block_size - size)
            return offset
        top = self.offset_ending_at.get(self.peak)
        if top is not None:  # grow the free block at the top rather than leave it behind
            self._take(top)
            self.peak = top + size
            return top
        offset = self.peak
        self.peak += size
        return offset

    def release(self, offset: int, size: int) -> None:
        before = self.offset_ending_at.get(offset)
        if before is not None:
            size += self._take(before)
            offset = before
        if offset + size in self.size_at:
            size += self._take(offset + size)
        self._add(offset, size)


@dataclasses.dataclass
class MemoryColoring(ModulePass):
    name = "memory_coloring"
    description = "Plan allocations into offsets of one scratch buffer by their lifetimes (peak in statistics)."
    allocation_op: str = "allocate"
    scratch_parameter: bool = False
    alignment: int = 1  # at least this many bytes (a target's vector loads may need 16)

    def apply_module(self, module: Module, context: PassContext) -> None:
        allocations, first_use, last_use = self._lifetimes(module)
        if not allocations:
            return
        alignment = max(self.alignment, *(element_alignment(a.shape) for a in allocations))
        offsets = self._plan(allocations, first_use, last_use, alignment)
        peak = max(offsets[a] + _rounded(a.shape.bytes, alignment) for a in allocations)
        scratch_shape = Shape.make(DType.int8, (peak,))
        if self.scratch_parameter:
            scratch = module.add_parameter("scratch", scratch_shape)
        else:
            scratch = module.insert(allocations[0], make_op("allocate", shape=scratch_shape))
        for ins in allocations:
            Rewriter(module).replace(ins, make_op("load", shape=ins.shape, offset=offsets[ins]), [scratch])
        context.count("allocations planned", len(allocations))
        context.count("peak scratch bytes", peak)
        context.count("bytes without planning", sum(_rounded(a.shape.bytes, alignment) for a in allocations))

    def _lifetimes(self, module: Module) -> tuple[list[Instruction], dict[Instruction, int], dict[Instruction, int]]:
        allocations: list[Instruction] = []
        first_use: dict[Instruction, int] = {}
        last_use: dict[Instruction, int] = {}
        roots: dict[Instruction, Instruction] = {}
        for index, ins in enumerate(module):
            for arg in [*ins.args, *outer_values(ins)] if ins.module_args else ins.args:
                root = roots.get(arg)
                if root is not None:
                    last_use[root] = index
            if ins.op.defn.name == self.allocation_op and not ins.args and not ins.shape.is_dynamic:
                if ins.shape.bytes > 0:
                    allocations.append(ins)
                    roots[ins] = ins
                    first_use[ins] = last_use[ins] = index
                continue
            root = aliased_root(ins, roots)
            if root is not None:
                roots[ins] = root
        return allocations, first_use, last_use

    def _plan(
        self,
        allocations: list[Instruction],
        first_use: dict[Instruction, int],
        last_use: dict[Instruction, int],
        alignment: int,
    ) -> dict[Instruction, int]:
        free = FreeList()
        live: list[tuple[int, int, int, int]] = []  # (last use, order, offset, size)
        offsets: dict[Instruction, int] = {}
        for order, ins in enumerate(allocations):
            start = first_use[ins]
            while live and live[0][0] < start:
                _, _, offset, size = heapq.heappop(live)
                free.release(offset, size)
            size = _rounded(ins.shape.bytes, alignment) // alignment
            offset = free.allocate(size)
            offsets[ins] = offset * alignment
            heapq.heappush(live, (last_use[ins], order, offset, size))
        return offsets


def _rounded(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment
