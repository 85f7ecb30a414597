"""fuse_reduce: each reduction becomes `fused_reduce[axes=...]` over a bypass module holding it, and
a `pointwise` producer used only by that reduction (of the same lens, so without a broadcast) moves
into the module, as MIGraphX's fuse_reduce does. Not yet done: producers behind broadcasts,
pointwise consumers of the reduction, and merging fused reductions with each other."""

from __future__ import annotations

import dataclasses
from collections import Counter

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ops.registry import make_op
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.fuse_pointwise import param_name

_REDUCTIONS = frozenset(
    {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any", "reduce_all"}
)


def _new_body(module: Module, name: str) -> Module:
    program = module.program
    assert program is not None
    base, n = name, 0
    while name in program.modules:
        name = f"{base}:{n}"
        n += 1
    body = Module(name, program)
    body.bypass = True
    program.modules[name] = body
    return body


def fuse_into(body: Module, instructions: list[Instruction], outer_inputs: list[Instruction]) -> Instruction:
    """Copies `instructions` (in order) into `body`; outside arguments become parameters x0, x1, ...
    appended to `outer_inputs`. Returns the copy of the last instruction."""
    copies: dict[Instruction, Instruction] = {}
    for ins in instructions:
        args = []
        for arg in ins.args:
            if arg not in copies:
                name = param_name(len(outer_inputs))
                copies[arg] = body.add_parameter(name, arg.shape.as_standard())
                outer_inputs.append(arg)
            args.append(copies[arg])
        copies[ins] = body.insert(None, ins.op, args, ins.module_args)
    return copies[instructions[-1]]


@dataclasses.dataclass
class FuseReduce(ModulePass):
    name = "fuse_reduce"
    description = "Wrap reductions in fused_reduce modules and move single-use pointwise producers into them."

    def apply_module(self, module: Module, context: PassContext) -> None:
        if module.bypass:
            return
        counter = 0
        for ins in list(module):
            name = ins.op.defn.name
            if name not in _REDUCTIONS or len(ins.args) != 1 or ins.shape.is_dynamic or ins.args[0].shape.is_dynamic:
                continue
            body = _new_body(module, f"{module.name}:{name}{counter}")
            counter += 1
            inputs: list[Instruction] = []
            body.add_return([fuse_into(body, [ins], inputs)])
            fused = module.insert(ins, make_op("fused_reduce", axes=ins.op["axes"]), inputs, [body], shape=ins.shape)
            ins.replace_all_uses_with(fused)
            module.remove(ins)
            context.count("reductions wrapped")
        module_uses = Counter(id(m) for ins in module for m in ins.module_args)
        for ins in list(module):
            if ins.op.defn.name == "fused_reduce" and self._merge_producer(module, ins, module_uses):
                context.count("pointwise producers fused")

    def _merge_producer(self, module: Module, reduce: Instruction, module_uses: Counter[int]) -> bool:
        producer = next(
            (
                a
                for a in reduce.args
                if a.op.defn.name == "pointwise"
                and len(a.users) == 1
                and tuple(a.shape.lens) == tuple(reduce.args[0].shape.lens)
            ),
            None,
        )
        if producer is None:
            return False
        old_body = reduce.module_args[0]
        body = _new_body(module, f"{producer.module_args[0].name}:{old_body.name}")
        inputs: list[Instruction] = []
        fused_producer = fuse_into(body, [producer], inputs)
        old_params = {p.param_name: p for p in old_body if p.is_param}
        mapped: dict[Instruction, Instruction] = {}
        for index, outer in enumerate(reduce.args):
            param = old_params[param_name(index)]
            if outer is producer:
                mapped[param] = fused_producer
            else:
                if outer not in inputs:
                    inputs.append(outer)
                    body.add_parameter(param_name(len(inputs) - 1), outer.shape.as_standard())
                mapped[param] = next(p for p in body if p.is_param and p.param_name == param_name(inputs.index(outer)))
        for sub in old_body:
            if sub.is_param:
                continue
            if sub.is_return:
                body.add_return([mapped[a] for a in sub.args])
                break
            mapped[sub] = body.insert(None, sub.op, [mapped.get(a, a) for a in sub.args], sub.module_args, sub.shape)
        merged = module.insert(reduce, reduce.op, inputs, [body], shape=reduce.shape)
        reduce.replace_all_uses_with(merged)
        module.remove(reduce)
        module.remove(producer)
        program = module.program
        assert program is not None
        module_uses[id(old_body)] -= 1
        if module_uses[id(old_body)] <= 0 and program.modules.get(old_body.name) is old_body:
            program.remove_module(old_body.name)
        return True
