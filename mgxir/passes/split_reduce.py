"""split_reduce: a `fused_reduce` reducing at least `split_size` elements per output is split, as
MIGraphX splits it, so that the reduction can spread over many compute units: the reductions
themselves (one reduce_sum, or two that do not depend on each other) move into a
`split_fused_reduce[axes=...,assign=assign_add]` over a new bypass module `<body>_split`, and
what the body computes after them is inlined into the parent, reading the partial results (through
`get_tuple_elem` when there are two). Values the body computes before the reductions and still
needs after them are inlined before the split (MIGraphX's three-way `module::split`).

Only float and half reduce_sum reductions are split, as in MIGraphX. Where MIGraphX orders the
live values by an unordered set (which only matters when several are live), mgxir takes module
order."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.registry import make_op
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.matchers import is_reduce_like
from mgxir.passes.module_fusion import InstructionMap, copy_instructions, param_name
from mgxir.passes.rewrite import Rewriter

_ASSIGN = {
    "reduce_sum": "assign_add",
    "reduce_mean": "assign_add",
    "reduce_prod": "assign_mul",
    "reduce_max": "assign_max",
    "reduce_min": "assign_min",
}


def is_reduce(ins: Instruction) -> bool:
    return is_reduce_like(ins.op.defn)


def reduce_size(body: Module) -> int:
    """Elements reduced into each output by the body's first reduction."""
    for ins in body:
        if is_reduce(ins):
            if ins.args[0].shape.is_dynamic:
                return 0
            return ins.args[0].shape.elements // max(ins.shape.elements, 1)
    return 0


def reaches(start: Instruction, end: Instruction) -> bool:
    """Whether `end` uses `start`, directly or through other instructions."""
    seen: set[Instruction] = set()
    pending = list(start.users)
    while pending:
        ins = pending.pop()
        if ins is end:
            return True
        if ins not in seen:
            seen.add(ins)
            pending.extend(ins.users)
    return False


def output_aliases(ins: Instruction) -> Instruction:
    """The instruction whose memory `ins` is (through views)."""
    while ins.op.defn.is_view and ins.args:
        ins = ins.args[0]
    return ins


def sorted_parameters(module: Module) -> list[Instruction]:
    return sorted((ins for ins in module if ins.is_param), key=lambda p: p.param_name)


def _copy_before(
    module: Module, pos: Instruction | None, instructions: Iterable[Instruction], map_ins: InstructionMap
) -> list[Instruction]:
    """MIGraphX's insert_instructions: copies before `pos` (parameters and literals at the front)."""
    if pos is None:
        return copy_instructions(module, instructions, map_ins)
    return copy_instructions(module, instructions, map_ins, lambda m, op, args, subs: m.insert(pos, op, args, subs))


@dataclasses.dataclass
class ModuleWithInputs:
    """A module and the instructions its parameters (in name order) stand for."""

    module: Module
    inputs: list[Instruction]

    def replace(self, keys: Sequence[Instruction], values: Sequence[Instruction]) -> None:
        index = {k: i for i, k in enumerate(keys)}
        self.inputs = [values[index[x]] if x in index else x for x in self.inputs]

    def insert_inline(self, parent: Module, pos: Instruction) -> list[Instruction]:
        map_ins = dict(zip(sorted_parameters(self.module), self.inputs, strict=True))
        return _copy_before(parent, pos, self.module, map_ins)


def split_module(
    body: Module, args: Sequence[Instruction], splits: Sequence[Instruction]
) -> tuple[ModuleWithInputs, ModuleWithInputs, dict[Instruction, Instruction]]:
    """MIGraphX's module::split: what `splits` need, returning them; and the rest, reading them
    as parameters x0, x1, ... followed by the body's parameters it still uses. Also returns the
    map from `body`'s instructions to the second module's."""
    param_map = dict(zip(sorted_parameters(body), args, strict=True))
    selected: set[Instruction] = set()
    pending = list(splits)
    while pending:
        ins = pending.pop()
        if ins not in selected:
            selected.add(ins)
            pending.extend(ins.args)

    first_part = [ins for ins in body if ins in selected]
    first_inputs = [param_map[p] for p in sorted((i for i in first_part if i.is_param), key=lambda p: p.param_name)]
    first = Module("")
    first_map: dict[Instruction, Instruction] = {}
    _copy_before(first, None, first_part, first_map)
    first.add_return([first_map[s] for s in splits])

    second_part: list[Instruction] = []
    in_second: set[Instruction] = set()
    for ins in body:
        if ins in selected:
            continue
        for a in ins.args:
            if a.is_param and a not in in_second:
                in_second.add(a)
                second_part.append(a)
        in_second.add(ins)
        second_part.append(ins)
    second = Module("")
    second_inputs = list(splits)
    second_map: dict[Instruction, Instruction] = {}
    for n, s in enumerate(splits):
        second_map[s] = second.add_parameter(param_name(n), s.shape.as_standard())
    for p in body:
        if p.is_param and p in in_second:
            second_inputs.append(param_map[p])
            second_map[p] = second.add_parameter(param_name(len(second_map)), p.shape.as_standard())
    second.add_return(_copy_before(second, None, second_part, second_map))
    return ModuleWithInputs(first, first_inputs), ModuleWithInputs(second, second_inputs), second_map


def split_module_three_ways(
    body: Module, args: Sequence[Instruction], splits1: Sequence[Instruction], splits2: Sequence[Instruction]
) -> tuple[ModuleWithInputs, ModuleWithInputs, ModuleWithInputs]:
    first, rest, map_ins = split_module(body, args, splits1)
    new_splits2 = [map_ins[s] for s in splits2]
    second, third, _ = split_module(rest.module, rest.inputs, new_splits2)
    third.replace(new_splits2, splits2)
    return first, second, third


class Splitter:
    """The reductions of one fused_reduce body, and what is live across them."""

    def __init__(self, body: Module):
        self.body = body
        self._dominators: dict[Instruction, Instruction] | None = None

    def find_splits(self) -> list[Instruction]:
        result = [ins for ins in self.body if is_reduce(ins)]
        if len(result) > 2 or not all(ins.op.defn.name == "reduce_sum" for ins in result):
            return []
        if len(result) == 2 and reaches(result[0], result[1]):
            return []
        return result

    def strictly_dominate(self, a: Instruction, b: Instruction) -> bool:
        if self._dominators is None:
            self._dominators = immediate_dominators(self.body)
        at = self._dominators.get(b)
        while at is not None:
            if at is a:
                return True
            at = self._dominators.get(at)
        return False

    def find_alive(self, splits: list[Instruction]) -> list[Instruction]:
        """What is live just after the last split (MIGraphX's liveness, walked backwards)."""
        live: set[Instruction] = set()
        for ins in reversed(self.body):
            for a in ins.args:
                alias = output_aliases(a)
                if alias.parent is self.body:
                    live.add(alias)
            if ins not in live:
                continue
            live.discard(ins)
            if ins is self.body.first or output_aliases(ins.prev) not in splits:
                continue
            return [
                x
                for x in self.body
                if x in live
                and not x.is_param
                and x not in splits
                and (len(splits) < 2 or any(self.strictly_dominate(x, s) for s in splits))
            ]
        return []


def immediate_dominators(module: Module) -> dict[Instruction, Instruction]:
    """MIGraphX's compute_dominator over instruction inputs: an instruction's immediate dominator
    is its only input, or the nearest instruction that dominates all its inputs."""
    idom: dict[Instruction, Instruction] = {}
    dominators: dict[Instruction, set[Instruction]] = {}

    def strictly_dominates(a: Instruction, b: Instruction) -> bool:
        at = idom.get(b)
        while at is not None:
            if at is a:
                return True
            at = idom.get(at)
        return False

    for ins in module:
        if len(ins.args) == 1:
            idom[ins] = ins.args[0]
            doms = set(dominators.get(ins.args[0], ()))
        elif ins.args:
            doms = set(dominators.get(ins.args[0], ()))
            for a in ins.args[1:]:
                doms &= dominators.get(a, set())
            nearest = [d for d in doms if not any(d is not e and strictly_dominates(d, e) for e in doms)]
            if nearest:
                idom[ins] = nearest[0]
        else:
            doms = set()
        doms.add(ins)
        dominators[ins] = doms
    return idom


@dataclasses.dataclass
class SplitReduce(ModulePass):
    name = "split_reduce"
    description = "Split large fused_reduce reductions into a split_fused_reduce of partial reductions."
    split_size: int = 8192

    def apply_module(self, module: Module, context: PassContext) -> None:
        for ins in module:
            if ins.op.defn.name != "fused_reduce" or not ins.module_args:
                continue
            body = ins.module_args[0]
            if reduce_size(body) < self.split_size or module.program.get_module(body.name + "_split"):
                continue
            splitter = Splitter(body)
            splits = splitter.find_splits()
            if not splits or not all(s.shape.dtype in (DType.float, DType.half) for s in splits):
                continue
            self.split(module, ins, body, splitter, splits)
            context.count("reductions split")

    def split(
        self, module: Module, ins: Instruction, body: Module, splitter: Splitter, splits: list[Instruction]
    ) -> None:
        alive = splitter.find_alive(splits)
        if alive:
            before, reducing, after = split_module_three_ways(body, ins.args, alive, splits)
            computed = before.insert_inline(module, ins)
            reducing.replace(alive, computed)
            after.replace(alive, computed)
        else:
            reducing, after, _ = split_module(body, ins.args, splits)

        program = module.program
        assert program is not None
        split_body = reducing.module
        split_body.name = body.name + "_split"
        split_body.program = program
        split_body.bypass = True
        program.modules[split_body.name] = split_body

        assign = _ASSIGN[splits[0].op.defn.name]
        op = make_op("split_fused_reduce", axes=ins.op["axes"], assign=assign)
        rewriter = Rewriter(module)
        partial = rewriter.insert(ins, op, reducing.inputs, [split_body])
        if len(splits) == 1:
            each = [partial]
        else:
            each = [rewriter.insert(ins, make_op("get_tuple_elem", index=i), [partial]) for i in range(len(splits))]
        after.replace(splits, each)
        replaced = after.insert_inline(module, ins)
        rewriter.replace_all_uses(ins, replaced[0])
