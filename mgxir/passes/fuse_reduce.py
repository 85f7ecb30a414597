"""fuse_reduce: each reduction (argmin/argmax included) becomes `fused_reduce[axes=...]` over a
bypass module holding it; then, for four rounds, MIGraphX's matchers run in its order on each
instruction: `find_reduce_pointwise` (a pointwise consumer of a reduction moves in),
`find_pointwise_reduce` (a pointwise producer moves in) and `find_reduce_reduce` (two reductions
over the same axes merge). Producers may sit behind a `multibroadcast` (and contiguous copies)
that broadcasts exactly the reduced axes; the broadcast moves into the module with them.
Each round starts, as MIGraphX's does, with `rewrite_reshapes<reduce_reshape>` (option
enable_rewrite_reshapes, on by default): a reduction and a pointwise op (or two reductions) with
only reshapes between them are rebuilt on common dimensions, the reduction's module copied as
"<name>_reshape" with its axes mapped."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.program import Program
from mgxir.ir.registry import make_op
from mgxir.ir.traits import ArgReduction, Reduction
from mgxir.passes.base import ModulePass, PassContext, modules_to_run
from mgxir.passes.dead_code_elimination import eliminate_dead_code
from mgxir.passes.eliminate_common_subexpression import EliminateCommonSubexpression
from mgxir.passes.matchers import used_once
from mgxir.passes.module_fusion import (
    InstructionMap,
    find_inputs,
    fuse_instructions,
    fuse_module,
    last_output,
)
from mgxir.passes.rewrite import Rewriter
from mgxir.passes.rewrite_reshapes import AxesMap, ReshapeFusion, rewrite_reshapes


class BroadcastableInput(NamedTuple):
    """What `match_broadcastable_input` binds: the argument taken (`input`), the fusable
    instruction behind it, and the `multibroadcast` between them if any."""

    input: Instruction
    producer: Instruction
    broadcast: Instruction | None


def _broadcast_output(broadcast: Instruction) -> Instruction:
    """The user of a single-use broadcast, through contiguous copies."""
    while len(broadcast.users) == 1:
        output = next(iter(broadcast.users))
        if output.op.defn.name != "contiguous":
            return output
        broadcast = output
    return broadcast


def _used_once_except_broadcast(ins: Instruction) -> bool:
    """Used once, or used by one instruction both directly and through a broadcast of it."""
    users = list(ins.users)
    if len(users) == 1:
        return True
    if len(users) != 2:
        return False
    broadcasts = [u for u in users if "broadcast" in u.op.defn.name]
    others = [u for u in users if "broadcast" not in u.op.defn.name]
    if not broadcasts or not others:
        return False
    return _broadcast_output(broadcasts[0]) is others[0]


def _is_valid_broadcast(broadcast: Instruction, reduce_axes: tuple[int, ...]) -> bool:
    """The broadcast adds exactly the reduced axes (ignoring reduced axes of length 1)."""
    lens = broadcast.shape.lens
    strides = broadcast.shape.strides
    if any(not -len(lens) <= axis < len(lens) for axis in reduce_axes):
        return False
    axes = [axis for axis in reduce_axes if lens[axis] != 1]
    broadcast_axes = [i for i in range(len(strides)) if strides[i] == 0 and lens[i] != 1]
    return broadcast_axes == axes


def match_broadcastable_input(ins: Instruction, op_name: str) -> BroadcastableInput | None:
    """An argument of `ins` that is a single-use `op_name` instruction, else (looked for only
    then) one that is a single-use `multibroadcast` of one, through contiguous copies."""
    for arg in ins.args:
        if arg.op.defn.name == op_name and used_once(arg):
            return BroadcastableInput(arg, arg, None)
    for arg in ins.args:
        if not used_once(arg):
            continue
        broadcast = arg
        while broadcast.op.defn.name == "contiguous" and len(broadcast.args) == 1:
            broadcast = broadcast.args[0]
        if broadcast.op.defn.name != "multibroadcast" or not used_once(broadcast):
            continue
        producer = broadcast.args[0]
        if producer.shape.ndim != broadcast.shape.ndim:
            continue
        if producer.op.defn.name != op_name or not _used_once_except_broadcast(producer):
            continue
        return BroadcastableInput(arg, producer, broadcast)
    return None


def _match_broadcast_axes(match: BroadcastableInput | None, reduce: Instruction) -> BroadcastableInput | None:
    if match is None or match.broadcast is None:
        return match
    return match if _is_valid_broadcast(match.broadcast, tuple(reduce.op["axes"])) else None


def _match_input(ins: Instruction, op_name: str, reduce: Instruction | None) -> BroadcastableInput | None:
    match = match_broadcastable_input(ins, op_name)
    return _match_broadcast_axes(match, reduce if reduce is not None else match.producer) if match else None


class _ReduceFusion:
    """One run of fuse_reduce over one module: creates the fused modules in the program and
    remembers the bodies it replaced, for removal once nothing uses them."""

    def __init__(self, module: Module, context: PassContext, replaced: list[Module]):
        self.module = module
        program = module.program
        assert program is not None
        self.program: Program = program
        self.context = context
        self.replaced = replaced

    def create_module(self, name: str) -> Module:
        base, n = name, 0
        while name in self.program.modules:
            name = f"{base}:{n}"
            n += 1
        body = Module(name, self.program)
        body.bypass = True
        self.program.modules[name] = body
        return body

    def finish(self, ins: Instruction, op, body: Module, map_ins: InstructionMap, old: list[Module]) -> None:
        """CSE and DCE in the new body, then `ins` becomes `op` over it, in place."""
        EliminateCommonSubexpression().apply_module(body, PassContext())
        eliminate_dead_code(body)
        inputs = find_inputs(map_ins, self.module, body)
        Rewriter(self.module).replace(ins, op, inputs, [body])
        self.replaced.extend(old)

    # -- the wrapping of each reduction -----------------------------------------------------

    def create_reduce_modules(self) -> None:
        n = 0
        for ins in self.module:
            name = ins.op.defn.name
            if not ins.op.defn.has(Reduction) or len(ins.args) != 1:
                continue
            body = self.create_module(f"{self.module.name}:{name}{n}")
            n += 1
            body.add_return(fuse_instructions(body, [ins]))
            axes = list(ins.op["axes"]) if "axes" in ins.op.defn.attribute_index else [ins.op["axis"]]
            Rewriter(self.module).replace(ins, make_op("fused_reduce", axes=axes), list(ins.args), [body])
            self.context.count("reductions wrapped")

    # -- the matchers -----------------------------------------------------------------------

    def find_reduce_pointwise(self, pw: Instruction) -> bool:
        if pw.op.defn.name != "pointwise":
            return False
        match = _match_input(pw, "fused_reduce", None)
        if match is None:
            return False
        reduce = match.producer
        old_body = reduce.module_args[0]
        pointwise_body = pw.module_args[0]
        body = self.create_module(f"{old_body.name}:{pointwise_body.name}")
        map_ins: InstructionMap = {}
        fuse_module(body, old_body, reduce.args, map_ins)
        self._map_broadcast(body, match, map_ins)
        outputs = fuse_instructions(body, [pw], map_ins)
        body.add_return(outputs)
        self.finish(pw, reduce.op, body, map_ins, [old_body])
        self.context.count("pointwise consumers fused")
        return True

    def find_pointwise_reduce(self, reduce: Instruction) -> bool:
        if reduce.op.defn.name != "fused_reduce":
            return False
        match = _match_input(reduce, "pointwise", reduce)
        if match is None:
            return False
        pointwise = match.producer
        old_body = reduce.module_args[0]
        body = self.create_module(f"{pointwise.module_args[0].name}:{old_body.name}")
        map_ins: InstructionMap = {}
        map_ins[pointwise] = fuse_instructions(body, [pointwise], map_ins)[0]
        if match.broadcast is not None:
            broadcast_copy = fuse_instructions(body, [match.broadcast], map_ins)[0]
            map_ins[match.broadcast] = broadcast_copy
            map_ins[match.input] = broadcast_copy
        body.add_return(fuse_module(body, old_body, reduce.args, map_ins))
        self.finish(reduce, reduce.op, body, map_ins, [old_body])
        self.context.count("pointwise producers fused")
        return True

    def find_reduce_reduce(self, reduce1: Instruction) -> bool:
        if reduce1.op.defn.name != "fused_reduce":
            return False
        match = _match_input(reduce1, "fused_reduce", reduce1)
        if match is None:
            return False
        reduce2 = match.producer
        if reduce1.op != reduce2.op:
            return True  # MIGraphX's matcher matched; its rewrite declines
        body1 = reduce1.module_args[0]
        body2 = reduce2.module_args[0]
        body = self.create_module(f"{body1.name}:{body2.name}")
        map_ins: InstructionMap = {}
        fuse_module(body, body2, reduce2.args, map_ins)
        self._map_broadcast(body, match, map_ins)
        body.add_return(fuse_module(body, body1, reduce1.args, map_ins))
        self.finish(reduce1, reduce1.op, body, map_ins, [body1, body2])
        self.context.count("reductions merged")
        return True

    @staticmethod
    def _map_broadcast(body: Module, match: BroadcastableInput, map_ins: InstructionMap) -> None:
        """The producer's result (the body's last value) stands for `input`, through a copy of
        the broadcast when there is one."""
        result = last_output(body)
        if match.broadcast is None:
            map_ins[match.input] = result
            return
        map_ins[match.broadcast.args[0]] = result
        map_ins[match.input] = fuse_instructions(body, [match.broadcast], map_ins)[0]

    def run_matchers(self) -> None:
        for ins in self.module:
            if self.find_reduce_pointwise(ins) or self.find_pointwise_reduce(ins):
                continue
            self.find_reduce_reduce(ins)


class ReduceReshape(ReshapeFusion):
    """MIGraphX's reduce_reshape: a fused_reduce rebuilt on reshaped inputs, its module copied with
    the reduction axes (and argmin/argmax axis, and broadcast lens) moved to the new dimensions."""

    name = "fused_reduce"

    def __init__(self, fusion: _ReduceFusion):
        self.fusion = fusion

    def insert(self, rewriter: Rewriter, ins: Instruction, inputs: list[Instruction], axes_map: AxesMap) -> Instruction:
        axes = sorted(new_axis for axis in ins.op["axes"] for new_axis in axes_map[axis])
        dims = self.input_dims(inputs)
        old_body = ins.module_args[0]
        body = self.fusion.create_module(f"{old_body.name}_reshape")

        def transform(target: Module, op: Operation, args: list[Instruction], module_args: list[Module]) -> Instruction:
            name = op.defn.name
            if "reduce" in name:
                op = make_op(name, axes=axes)
            elif op.defn.has(ArgReduction):
                op = op.replace(axis=axes[0])
            elif name == "multibroadcast":
                op = make_op("multibroadcast", out_lens=dims)
            return target.insert(None, op, args, module_args)

        body.add_return(fuse_module(body, old_body, inputs, None, transform))
        self.fusion.replaced.append(old_body)
        return rewriter.insert(ins, make_op("fused_reduce", axes=axes), inputs, [body])

    def can_rebuild(self, ins: Instruction, axes_map: AxesMap) -> bool:
        """Not when the module holds an argmin/argmax whose one axis would become several (or none):
        MIGraphX's reduce_reshape then keeps the first new axis, which changes the result (argmax
        over a {2, 12} reshape of {2, 3, 4} is not argmax over axis 1 of {2, 3, 4}); mgxir leaves the
        reshape outside the module instead."""
        if ins.op.defn.name != "fused_reduce":
            return True
        has_arg_reduction = any(inner.op.defn.has(ArgReduction) for inner in ins.module_args[0])
        return not has_arg_reduction or all(len(axes_map[axis]) == 1 for axis in ins.op["axes"])

    @staticmethod
    def input_dims(inputs: list[Instruction]) -> list[int]:
        """The lens of the input with the most elements (the first of them)."""
        largest = inputs[0]
        for value in inputs[1:]:
            if value.shape.elements > largest.shape.elements:
                largest = value
        return list(largest.shape.lens)

    def base_dims(self, ins: Instruction) -> list[int]:
        return self.input_dims(ins.args)


@dataclasses.dataclass
class FuseReduce(ModulePass):
    name = "fuse_reduce"
    description = "Wrap reductions in fused_reduce modules and fuse pointwise neighbours and reductions into them."
    rounds: int = 4
    enable_rewrite_reshapes: bool = True
    skips_fused_bodies = True

    def apply(self, program: Program, context: PassContext) -> None:
        replaced: list[Module] = []
        for module in modules_to_run(program, context.main_only, self.skips_fused_bodies):
            self._fuse(module, context, replaced)
        _remove_unused(program, replaced)

    def apply_module(self, module: Module, context: PassContext) -> None:
        self._fuse(module, context, [])

    def _fuse(self, module: Module, context: PassContext, replaced: list[Module]) -> None:
        if module.bypass:
            return
        fusion = _ReduceFusion(module, context, replaced)
        fusion.create_reduce_modules()
        eliminate_dead_code(module, context)
        for _ in range(self.rounds):
            if self.enable_rewrite_reshapes:
                rewrite_reshapes(module, ReduceReshape(fusion), context)
            fusion.run_matchers()
            eliminate_dead_code(module, context)


def _remove_unused(program: Program, candidates: list[Module]) -> None:
    """Drops the replaced bodies that no instruction of the program uses any more."""
    if not candidates:
        return
    used = {id(m) for module in program for ins in module for m in ins.module_args}
    for body in candidates:
        if id(body) not in used and program.modules.get(body.name) is body:
            program.remove_module(body.name)
