"""fuse_pointwise: every pointwise op becomes `pointwise(...)` over a scalar module, and chains of
them merge into one module, named and laid out exactly as MIGraphX does it."""

from __future__ import annotations

import dataclasses
from collections import Counter

from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.shape import Shape
from mgxir.ops.registry import make_op
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.dead_code_elimination import eliminate_dead_code
from mgxir.passes.eliminate_identity import EliminateIdentity

_SCALAR_SOURCES = ("contiguous", "broadcast", "multibroadcast")


def param_name(index: int) -> str:
    """MIGraphX's parameter names: x0..x9, then x:00010 (so that names sort by number)."""
    if index < 10:
        return f"x{index}"
    return f"x:{index:05d}"


def scalar_constant(ins: Instruction) -> Literal | None:
    """The one value of a constant with one element (through broadcasts), as a scalar literal."""
    while ins.op.defn.name in _SCALAR_SOURCES and ins.args:
        ins = ins.args[0]
    shape = ins.shape
    if shape.is_dynamic or shape.is_tuple or not (shape.elements == 1 or shape.scalar):
        return None
    if not ins.is_literal or ins.literal.data is None:
        return None
    return Literal(Shape.scalar_of(shape.dtype), ins.literal.data.ravel()[:1])


class _FusedModule:
    """A pointwise module being grown in place: its parameters by name and the outer values they
    stand for. Parameters and literals sit at the front, so counting them never walks the body."""

    def __init__(self, module: Module, outer_args: list[Instruction]):
        self.module = module
        params = []
        for ins in module:
            if ins.is_param:
                params.append(ins)
            elif not ins.is_literal:
                break
        params.sort(key=lambda p: p.param_name)
        self.outer_of_param: dict[str, Instruction] = {p.param_name: a for p, a in zip(params, outer_args)}
        self.inner_of_outer: dict[Instruction, Instruction] = {a: p for p, a in zip(params, outer_args)}

    def inputs(self) -> list[Instruction]:
        return [self.outer_of_param[name] for name in sorted(self.outer_of_param)]


@dataclasses.dataclass
class FusePointwise(ModulePass):
    name = "fuse_pointwise"
    description = "Fuse chains of pointwise operators into `pointwise` instructions over scalar modules."
    max_rounds: int = 8

    def apply_module(self, module: Module, context: PassContext) -> None:
        if module.bypass:
            return
        EliminateIdentity().apply_module(module, context)
        self._create_pointwise_modules(module, context)
        eliminate_dead_code(module, context)
        module_uses = Counter(id(m) for ins in module for m in ins.module_args)
        for _ in range(self.max_rounds):
            if not self._merge_round(module, module_uses, context):
                break
            eliminate_dead_code(module, context)

    # -- one pointwise module per pointwise operator ------------------------------------------

    def _create_pointwise_modules(self, module: Module, context: PassContext) -> None:
        program = module.program
        assert program is not None
        pointwise = make_op("pointwise")
        counter = 0
        for ins in module:
            defn = ins.op.defn
            if not defn.pointwise or defn.name == "layout":
                continue
            while True:
                name = f"{module.name}:pointwise{counter}"
                counter += 1
                if name not in program.modules:
                    break
            body = Module(name, program)
            body.bypass = True
            inner: dict[Instruction, Instruction] = {}
            outer_inputs: list[Instruction] = []
            for arg in ins.args:
                if arg in inner:
                    continue
                scalar = scalar_constant(arg)
                if scalar is None:
                    inner[arg] = body.add_parameter(param_name(len(outer_inputs)), Shape.scalar_of(arg.shape.dtype))
                    outer_inputs.append(arg)
                else:
                    inner[arg] = body.add_literal(scalar)
            if not outer_inputs:
                continue
            result = body.insert(None, ins.op, [inner[a] for a in ins.args])
            body.add_return([result])
            program.modules[name] = body
            fused = module.insert(ins, pointwise, outer_inputs, [body], shape=ins.shape)
            ins.replace_all_uses_with(fused)
            module.remove(ins)
            context.count("pointwise modules created")

    # -- merging a pointwise into its single-use pointwise producer -------------------------

    def _merge_round(self, module: Module, module_uses: Counter[int], context: PassContext) -> bool:
        changed = False
        for ins in module:
            if ins.op.defn.name != "pointwise":
                continue
            producer = next(
                (a for a in ins.args if a.op.defn.name == "pointwise" and len(a.users) == 1 and a.parent is module),
                None,
            )
            if producer is None:
                continue
            self._merge(module, producer, ins, module_uses)
            context.count("pointwise instructions fused")
            changed = True
        return changed

    def _merge(self, module: Module, producer: Instruction, consumer: Instruction, module_uses: Counter[int]) -> None:
        program = module.program
        assert program is not None
        body = producer.module_args[0]
        if module_uses[id(body)] > 1:
            body = _copy_module(body, _unused_name(program, body.name))
            program.modules[body.name] = body
            module_uses[id(body)] = 1
        fused = _FusedModule(body, producer.args)
        ret = body.return_instruction
        assert ret is not None and len(ret.args) == 1
        inner = dict(fused.inner_of_outer)
        inner[producer] = ret.args[0]
        next_index = len(fused.outer_of_param)
        for arg in consumer.args:
            if arg not in inner:
                name = param_name(next_index)
                next_index += 1
                inner[arg] = body.add_parameter(name, Shape.scalar_of(arg.shape.dtype))
                fused.outer_of_param[name] = arg
        consumer_body = consumer.module_args[0]
        consumer_params = sorted((i for i in consumer_body if i.is_param), key=lambda p: p.param_name)
        copied: dict[Instruction, Instruction] = {p: inner[a] for p, a in zip(consumer_params, consumer.args)}
        returns: list[Instruction] = []
        for sub in consumer_body:
            if sub.is_param:
                continue
            if sub.is_literal:
                copied[sub] = body.add_literal(sub.literal)
            elif sub.is_return:
                returns = [copied[a] for a in sub.args]
                break
            else:
                copied[sub] = body.insert(ret, sub.op, [copied.get(a, a) for a in sub.args], sub.module_args)
        ret.set_args(returns)
        ret.shape = returns[0].shape if len(returns) == 1 else Shape.tuple_of([r.shape for r in returns])
        merged = module.insert(consumer, producer.op, fused.inputs(), [body], shape=consumer.shape)
        consumer.replace_all_uses_with(merged)
        module.remove(consumer)
        module.remove(producer)
        module_uses[id(consumer_body)] -= 1
        if module_uses[id(consumer_body)] <= 0 and program.modules.get(consumer_body.name) is consumer_body:
            program.remove_module(consumer_body.name)
        module_uses[id(body)] = 1


def _unused_name(program, base: str) -> str:
    n = 0
    while f"{base}:{n}" in program.modules:
        n += 1
    return f"{base}:{n}"


def _copy_module(module: Module, name: str) -> Module:
    copy = Module(name, module.program)
    copy.bypass = module.bypass
    mapped: dict[Instruction, Instruction] = {}
    for ins in module:
        new = copy.insert(None, ins.op, [mapped.get(a, a) for a in ins.args], ins.module_args, shape=ins.shape)
        mapped[ins] = new
    return copy
