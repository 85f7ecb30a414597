"""eliminate_concat: a lowered concat whose inputs are written into allocations is removed, as
MIGraphX removes it: the concat's own output allocation moves before the first input's
allocation, each input is written into a slice of it (the slice replaces the input's allocation
where that is safe, else the input is copied into the slice), and the concat becomes
`identity(super_allocation, inputs...)`.

MIGraphX parametrises the pass by a target's concat optimisation; here its parts are options: the
allocation and copy operators' names, the lowered concat's name (an op with an `axis` attribute,
or one wrapping a concat as `gpu::precompile_op[op=concat[axis=A],...]` does), which ops can write
a non-packed slice and which cannot read one. Lowered ops write into their last argument, so an
op mgxir does not know aliases its last argument and a view its first."""

from __future__ import annotations

import dataclasses

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.registry import make_op, opaque
from mgxir.ir.shape import Shape
from mgxir.ir.values import OpNode
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.rewrite import Rewriter
from mgxir.text.syntax import SyntaxProblem, parse_layer2


def op_names(text: str) -> frozenset[str]:
    return frozenset(name for name in text.split("|") if name)


def output_alias(ins: Instruction) -> Instruction:
    """The argument whose memory `ins` writes or views (one level, as MIGraphX's shallow alias)."""
    if ins.args and ins.op.defn.is_view:
        return ins.args[0]
    if ins.args and ins.op.defn.is_opaque:
        return ins.args[-1]
    return ins


def concat_axis_attribute(op: Operation) -> int | None:
    """The `axis` of a concat op, or of the concat an op wraps in its `op` attribute."""
    if not op.defn.is_opaque:
        return op["axis"] if "axis" in op.defn.attribute_index else None
    try:
        node = parse_layer2(op.defn.name + op.values[0], "op_text", "the operator")
    except SyntaxProblem:
        return None
    attributes = dict(node.attributes)
    wrapped = attributes.get("op")
    if isinstance(wrapped, OpNode):
        if wrapped.name != "concat":
            return None
        attributes = dict(wrapped.attributes)
    axis = attributes.get("axis")
    try:
        return int(axis) if isinstance(axis, str) else None
    except ValueError:
        return None


def packed_along(ins: Instruction, axis: int) -> bool:
    """Whether `ins` stays packed when written into a slice of the concat along `axis`."""
    shape = ins.shape
    lens = list(shape.lens)
    lens[axis] = 1
    return Shape.make(shape.dtype, lens, shape.strides).packed


def earliest(module: Module, ins: Instruction, wanted: set[Instruction]) -> Instruction | None:
    """The first in module order of `wanted`, all before `ins`: walks back until it has met them all."""
    remaining = set(wanted)
    at = ins
    while at is not module.first:
        at = at.prev
        remaining.discard(at)
        if not remaining:
            return at
    return None


@dataclasses.dataclass
class EliminateConcat(ModulePass):
    name = "eliminate_concat"
    description = "Remove a lowered concat by writing each of its inputs into a slice of one allocation."
    allocation: str = "allocate"  # the target's allocation op (`allocate` always counts too)
    copy: str = "hip::copy"  # copies its first argument into its last
    concat: str = "gpu::precompile_op"  # the lowered concat: inputs, then its output allocation
    non_packed_output: str = ""  # ops that can write a non-packed slice, '|'-separated; '*' means all
    packed_input: str = ""  # ops that cannot read a non-packed slice, '|'-separated

    def apply_module(self, module: Module, context: PassContext) -> None:
        writes_non_packed = op_names(self.non_packed_output)
        reads_packed_only = op_names(self.packed_input)

        def supports_non_packed_output(ins: Instruction) -> bool:
            return "*" in writes_non_packed or ins.op.defn.name in writes_non_packed

        for ins in module:
            if ins.op.defn.name != self.concat or len(ins.args) < 2 or any(a.shape.is_dynamic for a in ins.args):
                continue
            axis = concat_axis_attribute(ins.op)
            if axis is None:
                continue
            ndim = ins.args[0].shape.ndim
            axis = axis + ndim if axis < 0 else axis
            if not 0 <= axis < ndim:
                continue
            inputs = ins.args[:-1]
            copies = sum(
                1
                for x in inputs
                if self.need_copy(x) or (not packed_along(x, axis) and not supports_non_packed_output(x))
            )
            if copies > 1:
                continue
            if any(
                len(x.users) >= 2
                and not packed_along(x, axis)
                and any(u is not ins and u.op.defn.name in reads_packed_only for u in x.users)
                for x in inputs
            ):
                continue
            if self.replace_concat(module, ins, axis):
                context.count("concats eliminated")

    def is_allocation(self, ins: Instruction) -> bool:
        return ins.op.defn.name in ("allocate", self.allocation)

    def need_copy(self, ins: Instruction) -> bool:
        return not self.is_allocation(output_alias(ins))

    def replace_concat(self, module: Module, ins: Instruction, axis: int) -> bool:
        super_allocation = ins.args[-1]
        if not self.is_allocation(super_allocation):
            return False
        inputs = ins.args[:-1]
        first = earliest(module, ins, {output_alias(x) for x in inputs})
        if first is None:
            return False
        module.move_before(super_allocation, first)
        written = []
        start = 0
        for x in inputs:
            length = x.shape.lens[axis]
            slice_op = make_op("slice", axes=[axis], starts=[start], ends=[start + length])
            written.append(self.insert_copy(module, slice_op, x, super_allocation))
            start += length
        Rewriter(module).replace(ins, make_op("identity"), [super_allocation, *written])
        return True

    def insert_copy(
        self, module: Module, slice_op: Operation, x: Instruction, super_allocation: Instruction
    ) -> Instruction:
        view = module.insert(super_allocation.next, slice_op, [super_allocation])
        if not self.need_copy(x) and view.shape.packed and len(x.users) == 1:
            Rewriter(module).replace_all_uses(output_alias(x), view)
            for writer in list(view.users):
                if writer.op.defn.is_opaque and writer.args[-1] is view and writer.shape != view.shape:
                    writer.shape = view.shape  # a lowered op's result is the memory it writes
                    Rewriter.recompute_shapes(list(writer.users))
            return x
        copied = module.insert(x.next, opaque(self.copy).make_raw(""), [x, view], shape=view.shape)
        Rewriter(module).replace_all_uses(x, copied)
        return copied
