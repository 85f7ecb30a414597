"""fuse_pointwise: every pointwise op becomes `pointwise(...)` over a scalar module, and chains of
them merge into one module, named and laid out exactly as MIGraphX does it.

MIGraphX's steps, in its order: eliminate_identity; `create_pointwise_modules`; DCE; then up to
eight rounds of `rewrite_reshapes<pointwise_reshape>` (option enable_rewrite_reshapes, on by
default), `rewrite_broadcasts` (enable_rewrite_broadcasts, off by default) and
`find_pointwise_modules` (merging a pointwise op into its single-use pointwise producer), with DCE
after each round that merged. MIGraphX's multi-output fusion (enable_multi_output, off by default) is not done.

A merge grows the producer's module in place and moves the consumer's instructions into it
(MIGraphX copies the producer's module each time, which is quadratic in a chain's length); the
printed result is the same."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from mgxir.ir.builtin import make_param, make_return
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module, compute_shape
from mgxir.ir.operation import Operation
from mgxir.ir.program import Program
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.passes.base import ModulePass, PassContext
from mgxir.passes.dead_code_elimination import eliminate_dead_code
from mgxir.passes.eliminate_common_subexpression import EliminateCommonSubexpression
from mgxir.passes.eliminate_identity import EliminateIdentity
from mgxir.passes.matchers import scalar_constant
from mgxir.passes.module_fusion import param_name
from mgxir.passes.rewrite import Rewriter
from mgxir.passes.rewrite_reshapes import PointwiseReshape, rewrite_reshapes


class _Builder:
    """What one run of the pass reuses: parameter operations by name, the return operation, the
    scalar shapes of operations already seen, and the parameters (in name order) of the modules
    it built or grew."""

    def __init__(self) -> None:
        self.params: dict[int, Operation] = {}
        self.params_of: dict[Module, list[Instruction]] = {}
        self.return_op = make_return()
        self.shapes: dict[tuple, Shape] = {}
        self.scalar_shapes: dict[DType, Shape] = {}

    def param(self, module: Module, index: int, dtype: DType) -> Instruction:
        """Parameter x<index> of `module`, a scalar of `dtype`."""
        op = self.params.get(index)
        if op is None:
            op = self.params[index] = make_param(param_name(index))
        shape = self.scalar_shapes.get(dtype)
        if shape is None:
            shape = self.scalar_shapes[dtype] = Shape.scalar_of(dtype)
        param = module.insert(module.first, op, (), (), shape)
        found = self.params_of.get(module)
        if found is None:
            self.params_of[module] = [param]
        else:
            found.append(param)
        return param

    def parameters(self, module: Module) -> list[Instruction]:
        """`module`'s parameters in name order (x0.., so also in the order this builder adds them)."""
        params = self.params_of.get(module)
        if params is None:
            params = self.params_of[module] = sorted(_front_parameters(module), key=lambda p: p.param_name)
        return params

    def insert(
        self,
        module: Module,
        pos: Instruction | None,
        op: Operation,
        args: list[Instruction],
        module_args: Sequence[Module] = (),
    ) -> Instruction:
        return module.insert(pos, op, args, module_args, self.shape_of(op, args, module_args))

    def shape_of(self, op: Operation, args: list[Instruction], module_args: Sequence[Module] = ()) -> Shape:
        """`op`'s shape rule on `args`, remembered for operations without module arguments."""
        key = (op, *[a.shape for a in args])
        shape = None if module_args else self.shapes.get(key)
        if shape is None:
            shape = compute_shape(op, args, module_args)
            if not module_args:
                self.shapes[key] = shape
        return shape

    def add_return(self, module: Module, result: Instruction) -> Instruction:
        return module.insert(None, self.return_op, [result], (), result.shape)


def _fused(rewriter: Rewriter, ins: Instruction, op: Operation, inputs: list[Instruction], body: Module) -> None:
    """`ins` becomes `op(inputs)` over `body`, its shape by its rule (the body's ops on the inputs'
    shapes). Without broadcast inputs that is the shape the instruction had: the body computes what
    the op (or the merged pair) computed, so only then is the body walked."""
    shape = ins.shape
    for arg in inputs:
        if arg.shape.broadcasted:
            shape = compute_shape(op, inputs, [body])
            break
    rewriter.rebind(ins, op, inputs, [body], shape)


@dataclasses.dataclass
class FusePointwise(ModulePass):
    name = "fuse_pointwise"
    description = "Fuse chains of pointwise operators into `pointwise` instructions over scalar modules."
    max_rounds: int = 8
    enable_rewrite_reshapes: bool = True
    enable_rewrite_broadcasts: bool = False
    skips_fused_bodies = True

    def apply_module(self, module: Module, context: PassContext) -> None:
        if module.bypass:
            return
        program = module.program
        assert program is not None
        builder = _Builder()
        EliminateIdentity().apply_module(module, context)
        self.create_pointwise_modules(module, program, builder, context)
        eliminate_dead_code(module, context)
        uses = _module_uses(module)
        for _ in range(self.max_rounds):
            rebuilt = False
            if self.enable_rewrite_reshapes:
                rebuilt = rewrite_reshapes(module, PointwiseReshape(), context)
            if self.enable_rewrite_broadcasts:
                rebuilt = self.rewrite_broadcasts(module, context) or rebuilt
            if rebuilt:
                uses = _module_uses(module)
            if not self.find_pointwise_modules(module, program, builder, uses, context):
                break
            eliminate_dead_code(module, context)

    # -- one pointwise module per pointwise operator ------------------------------------------

    @staticmethod
    def create_pointwise_modules(module: Module, program: Program, builder: _Builder, context: PassContext) -> None:
        pointwise = make_op("pointwise")
        rewriter = Rewriter(module)
        prefix = f"{module.name}:pointwise"
        modules = program.modules
        counter = 0
        created = 0
        for ins in module:
            defn = ins.op.defn
            if not defn.pointwise or defn.name == "layout":
                continue
            name = f"{prefix}{counter}"
            counter += 1
            body = Module(name, program)
            body.bypass = True
            inner: dict[Instruction, Instruction] = {}
            outer_inputs: list[Instruction] = []
            for arg in ins.args:
                if arg in inner:
                    continue
                scalar = scalar_constant(arg)
                if scalar is None:
                    inner[arg] = builder.param(body, len(outer_inputs), arg.shape.dtype)
                    outer_inputs.append(arg)
                else:
                    inner[arg] = body.add_literal(scalar)
            if not outer_inputs:
                continue
            result = builder.insert(body, None, ins.op, [inner[a] for a in ins.args])
            builder.add_return(body, result)
            modules[name] = body
            # in place, as MIGraphX's replace_instruction: users keep using `ins`
            _fused(rewriter, ins, pointwise, outer_inputs, body)
            created += 1
        context.count("pointwise modules created", created)

    # -- merging a pointwise into its single-use pointwise producer -------------------------

    def find_pointwise_modules(
        self, module: Module, program: Program, builder: _Builder, uses: dict[int, int], context: PassContext
    ) -> bool:
        merged = 0
        last = module.last
        rewriter = Rewriter(module)
        for ins in module:
            # a dead pointwise is skipped (a pointwise is never the @return)
            if ins.op.defn.name != "pointwise" or (not ins.users and ins is not last):
                continue
            for producer in ins.args:
                if producer.op.defn.name == "pointwise" and len(producer.users) == 1 and producer.parent is module:
                    self.merge_instruction(rewriter, program, builder, producer, ins, uses)
                    merged += 1
                    break
        context.count("pointwise instructions fused", merged)
        return merged > 0

    @staticmethod
    def merge_instruction(
        rewriter: Rewriter,
        program: Program,
        builder: _Builder,
        producer: Instruction,
        consumer: Instruction,
        uses: dict[int, int],
    ) -> None:
        """`consumer` becomes one pointwise over the producer's module grown by its own body."""
        body = producer.module_args[0]
        consumer_body = consumer.module_args[0]
        if uses.get(id(body), 0) > 1:
            # MIGraphX renames the shared module and gives its name to the grown copy
            uses[id(body)] -= 1
            shared = body
            body = _copy_module(shared, shared.name)
            shared.name = f"{shared.name}:{consumer_body.name}-deleted"
            program.modules[shared.name] = shared
            program.modules[body.name] = body
            uses[id(body)] = 1
        inner_of_outer: dict[Instruction, Instruction] = {}
        inputs: list[Instruction] = []
        for param, outer in zip(builder.params_of.get(body) or builder.parameters(body), producer.args):
            inner_of_outer.setdefault(outer, param)
            inputs.append(outer)
        ret = body.last
        assert ret is not None and ret.is_return and len(ret.args) == 1
        inner_of_outer[producer] = ret.args[0]
        for arg in consumer.args:
            if arg not in inner_of_outer:
                inner_of_outer[arg] = builder.param(body, len(inputs), arg.shape.dtype)
                inputs.append(arg)
        consumer_params = builder.parameters(consumer_body)
        moved: dict[Instruction, Instruction] = {p: inner_of_outer[a] for p, a in zip(consumer_params, consumer.args)}
        shared_consumer = uses.get(id(consumer_body), 1) > 1
        results: list[Instruction] = []
        for sub in consumer_body:
            kind = sub.op.defn.name
            if kind == "@param":
                continue
            if kind == "@return":
                results = [moved.get(a, a) for a in sub.args]
                if not shared_consumer:
                    sub.set_args(())
                break
            args = [moved.get(a, a) for a in sub.args]
            if shared_consumer:
                if kind == "@literal":
                    moved[sub] = body.add_literal(sub.literal)
                else:
                    moved[sub] = builder.insert(body, ret, sub.op, args, sub.module_args)
                continue
            # moved rather than copied: the consumer's module is dropped; literals go to the front,
            # as MIGraphX's add_literal puts its copies. The shape is found again, as MIGraphX's
            # add_instruction finds it: a producer's result need not be the scalar {1}, {0} the
            # consumer's parameter was (dequantizelinear of a scalar gives {1}, {1})
            sub.set_args(args)
            if kind != "@literal":
                sub.shape = builder.shape_of(sub.op, args, sub.module_args)
            body.adopt(sub, body.first if kind == "@literal" else ret)
        ret.set_args(results)
        ret.shape = results[0].shape if len(results) == 1 else Shape.tuple_of([r.shape for r in results])
        _fused(rewriter, consumer, consumer.op, inputs, body)
        rewriter.remove(producer)
        left = uses[id(consumer_body)] = uses.get(id(consumer_body), 1) - 1
        if left <= 0:
            builder.params_of.pop(consumer_body, None)
            if program.modules.get(consumer_body.name) is consumer_body:
                program.remove_module(consumer_body.name)

    # -- the other steps of a round -----------------------------------------------------------

    def rewrite_broadcasts(self, module: Module, context: PassContext) -> bool:
        """MIGraphX's `pointwise_broadcast_pointwise`, then CSE and DCE: a pointwise consumer of
        a single-use multibroadcast of a single-use pointwise gets the broadcast moved onto the
        producer's inputs, so the two can merge."""
        changed = False
        rewriter = Rewriter(module)
        for ins in module:
            if ins.op.defn.name != "pointwise":
                continue
            broadcast = next((a for a in ins.args if _is_broadcast_of_pointwise(a)), None)
            if broadcast is None:
                continue
            producer = broadcast.args[0]
            extra = broadcast.args[1:]
            inputs = [rewriter.insert(broadcast, broadcast.op, [x, *extra]) for x in producer.args]
            rewriter.replace(broadcast, producer.op, inputs, producer.module_args)
            context.count("broadcasts moved above pointwise")
            changed = True
        EliminateCommonSubexpression().apply_module(module, context)
        eliminate_dead_code(module, context)
        return changed


def _module_uses(module: Module) -> dict[int, int]:
    """How many instructions of `module` use each submodule (by id)."""
    uses: dict[int, int] = {}
    for ins in module:
        for sub in ins.module_args:
            uses[id(sub)] = uses.get(id(sub), 0) + 1
    return uses


def _is_broadcast_of_pointwise(ins: Instruction) -> bool:
    if ins.op.defn.name != "multibroadcast" or len(ins.users) != 1 or len(ins.args) not in (1, 2):
        return False
    producer = ins.args[0]
    return producer.op.defn.name == "pointwise" and len(producer.users) == 1


def _front_parameters(module: Module) -> list[Instruction]:
    """Parameters and literals sit at the front, so collecting parameters stops at the first other."""
    params = []
    for ins in module:
        if ins.is_param:
            params.append(ins)
        elif not ins.is_literal:
            break
    return params


def _copy_module(module: Module, name: str) -> Module:
    copy = Module(name, module.program)
    copy.bypass = module.bypass
    mapped: dict[Instruction, Instruction] = {}
    for ins in module:
        new = copy.insert(None, ins.op, [mapped.get(a, a) for a in ins.args], ins.module_args, shape=ins.shape)
        mapped[ins] = new
    return copy
