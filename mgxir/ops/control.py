"""Operators with submodules (if, loop, pointwise) and tuples (get_tuple_elem)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from mgxir.ir.attributes import INT, INTS, SHAPE, STRING, Attr
from mgxir.ir.operation import ComputeError, OpDef, Operation, RunModule, RuntimeValue, ShapeError
from mgxir.ir.registry import register
from mgxir.ir.shape import Shape, find_common_permutation
from mgxir.ir.traits import FusedBody
from mgxir.ops.common import fail, same_dims

if TYPE_CHECKING:
    from mgxir.ir.module import Module

Shapes = Sequence[Shape]
Arrays = list[np.ndarray]
Modules = Sequence["Module"]


@register
class If(OpDef):
    name = "if"
    arity = (1, None)
    module_arity = (2, 2)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        then_shapes = modules[0].output_shapes()
        else_shapes = modules[1].output_shapes()
        if then_shapes != else_shapes:
            raise fail(self.name, f"modules '{modules[0].name}' and '{modules[1].name}' return different shapes")
        return Shape.tuple_of(then_shapes)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        # MIGraphX binds the inputs after the condition to the parameter names of both modules,
        # sorted; run_module takes a module's parameters sorted by name
        branch = modules[0] if bool(inputs[0].reshape(-1)[0]) else modules[1]
        names = sorted({n for m in modules for n in m.parameter_names()})
        if len(names) > len(inputs) - 1:
            raise ComputeError(
                f"{self.name}: the modules take {len(names)} parameters but get {len(inputs) - 1} inputs"
            )
        by_name = dict(zip(names, inputs[1:]))
        return tuple(run_module(branch, [by_name[n] for n in sorted(branch.parameter_names())]))


@register
class Loop(OpDef):
    name = "loop"
    attributes = (Attr("max_iterations", INT, 10), Attr("scan_output_directions", INTS, ()))
    arity = (2, None)
    module_arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        outs = modules[0].output_shapes()
        carried = len(inputs) - 2
        if len(outs) < 1 + carried:
            raise fail(self.name, f"body '{modules[0].name}' returns {len(outs)} values, needs at least {1 + carried}")
        result = list(outs[1 : 1 + carried])
        for s in outs[1 + carried :]:
            result.append(Shape.make(s.dtype, (op["max_iterations"], *s.lens)))
        return Shape.tuple_of(result)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        # inputs: trip count, condition, carried values; the body takes (iteration, condition,
        # carried...) in MIGraphX's creation order of its parameters (the reverse of the printed
        # order: each new parameter goes to the front) and returns (condition, carried...,
        # scan outputs...); run_module binds parameters sorted by name
        body = modules[0]
        creation_order = list(reversed(body.parameter_names()))
        if len(creation_order) != len(inputs):
            raise ComputeError(
                f"loop body '{body.name}' has {len(creation_order)} parameters but gets {len(inputs)} values"
            )
        by_name = sorted(range(len(creation_order)), key=creation_order.__getitem__)
        max_iterations = op["max_iterations"]
        trip_count = min(int(inputs[0].reshape(-1)[0]), max_iterations)
        condition = inputs[1].reshape(-1)[:1].copy()
        carried = list(inputs[2:])
        scan_shapes = body.output_shapes()[1 + len(carried) :]
        scans = [np.zeros((max_iterations, *s.lens), s.dtype.numpy) for s in scan_shapes]
        directions = op["scan_output_directions"]
        iteration = 0
        while iteration < trip_count and bool(condition[0]):
            counter = np.array([iteration], dtype=inputs[0].dtype)
            values = [counter, condition, *carried]
            outs = run_module(body, [values[i] for i in by_name])
            condition = np.asarray(outs[0]).reshape(-1)[:1].copy()
            carried = [np.array(v, copy=True) for v in outs[1 : 1 + len(carried)]]
            for k, value in enumerate(outs[1 + len(carried) :]):
                reverse = bool(directions[k]) if k < len(directions) else False
                scans[k][trip_count - 1 - iteration if reverse else iteration] = value
            iteration += 1
        return (*carried, *scans)


@register
class GetTupleElem(OpDef):
    name = "get_tuple_elem"
    attributes = (Attr("index", INT, 0),)
    arity = (1, 1)
    is_view = True

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        s = inputs[0]
        if not s.is_tuple:
            raise fail(self.name, "the input is not a tuple")
        i = op["index"]
        if not 0 <= i < len(s.sub_shapes):
            raise fail(self.name, f"index {i} is out of range for a tuple of {len(s.sub_shapes)}")
        return s.sub_shapes[i]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        return inputs[0][op["index"]]


def evaluate_module_shapes(module: Module, inputs: Shapes, scalar_const_lens: Sequence[int] | None) -> list[Shape]:
    """The shapes a module returns when its parameters (sorted by name) take `inputs`
    (MIGraphX's module::compute_shapes with strict types)."""
    params = sorted(module.parameter_names())
    if len(params) != len(inputs):
        raise ShapeError(f"module '{module.name}' has {len(params)} parameters but gets {len(inputs)} inputs")
    by_name = dict(zip(params, inputs))
    shapes: dict[int, Shape] = {}
    # the same operation on the same shapes recurs along a fused chain: each rule runs once a key
    rule_results: dict[tuple, Shape] = {}
    for ins in module:
        if ins.is_param:
            s = by_name[ins.param_name]
            if s.dtype != ins.shape.dtype:
                raise ShapeError(
                    f"pointwise: parameter '{ins.param_name}' of '{module.name}' is {ins.shape.dtype.type_name} "
                    f"but gets {s.dtype.type_name}"
                )
            shapes[id(ins)] = s
        elif ins.is_literal:
            lit = ins.shape
            if scalar_const_lens and lit.scalar:
                shapes[id(ins)] = Shape.make(lit.dtype, scalar_const_lens, [0] * len(scalar_const_lens))
            else:
                shapes[id(ins)] = lit
        elif ins.is_return:
            return [shapes[id(a)] if id(a) in shapes else a.shape for a in ins.args]
        else:
            arg_shapes = [shapes[id(a)] if id(a) in shapes else a.shape for a in ins.args]
            key = None if ins.module_args else (ins.op, *arg_shapes)
            s = rule_results.get(key) if key is not None else None
            if s is None:
                s = ins.op.defn.shape(ins.op, arg_shapes, ins.module_args)
                if s is None:
                    raise ShapeError(f"'{ins.op.name}' in '{module.name}' has no shape rule")
                if key is not None:
                    rule_results[key] = s
            shapes[id(ins)] = s
    raise ShapeError(f"module '{module.name}' has no @return")


@register
class Pointwise(OpDef):
    name = "pointwise"
    traits = (FusedBody,)
    arity = (1, None)
    module_arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        same_dims(self.name, inputs)
        first = inputs[0]
        if not first.is_dynamic and first.ndim > 1 and any(s.broadcasted for s in inputs):
            perm = find_common_permutation(inputs)
            inputs = [Shape.from_permutation(s.dtype, s.lens, perm) if s.broadcasted else s for s in inputs]
        outs = evaluate_module_shapes(modules[0], inputs, None if first.is_dynamic else first.lens)
        return outs[0] if len(outs) == 1 else Shape.tuple_of(outs)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        outs = run_module(modules[0], list(inputs))
        lens = np.broadcast_shapes(*(x.shape for x in inputs))
        results = tuple(o if o.shape == lens else np.broadcast_to(o, lens).copy() for o in outs)
        return results[0] if len(results) == 1 else results


@register
class FusedReduce(OpDef):
    """A reduction fused with pointwise producers and consumers; the body works on whole tensors."""

    name = "fused_reduce"
    traits = (FusedBody,)
    attributes = (Attr("axes", INTS, ()),)
    arity = (1, None)
    module_arity = (1, 1)
    axis_attributes = {"axes": "input"}

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        outs = modules[0].output_shapes()
        if len(outs) != 1:
            raise fail(self.name, f"body '{modules[0].name}' must return one value, returns {len(outs)}")
        rank = inputs[0].ndim
        for i, s in enumerate(inputs):
            if s.ndim != rank:
                raise fail(self.name, f"input {i} has rank {s.ndim}, input 0 has rank {rank}")
        out = outs[0]
        if out.is_dynamic:
            return out
        # MIGraphX: the inputs' most common permutation, broadcast inputs not counted
        return Shape.from_permutation(out.dtype, out.lens, find_common_permutation(inputs))

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        return run_module(modules[0], list(inputs))[0]


@register
class SplitFusedReduce(OpDef):
    """A fused reduction split across compute units (split_reduce): its body returns the partial
    reductions, which `assign` (assign_add, ...) combines; the body's results, one or a tuple."""

    name = "split_fused_reduce"
    traits = (FusedBody,)
    attributes = (Attr("axes", INTS, ()), Attr("assign", STRING, "assign_none"))
    arity = (1, None)
    module_arity = (1, 1)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        rank = inputs[0].ndim
        for i, s in enumerate(inputs):
            if s.ndim != rank:
                raise fail(self.name, f"input {i} has rank {s.ndim}, input 0 has rank {rank}")
        outs = evaluate_module_shapes(modules[0], inputs, None)
        return outs[0] if len(outs) == 1 else Shape.tuple_of(outs)

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        outs = run_module(modules[0], list(inputs))
        return outs[0] if len(outs) == 1 else tuple(outs)


@register
class Outline(OpDef):
    """A placeholder with a shape and no value."""

    name = "outline"
    aliases = ("@outline",)
    attributes = (Attr("shape", SHAPE, None),)
    arity = (0, None)

    def shape(self, op: Operation, inputs: Shapes, modules: Modules) -> Shape:
        if op["shape"] is None:
            raise fail(self.name, "needs a shape attribute")
        return op["shape"]

    def compute(self, op: Operation, inputs: Arrays, modules: Modules, run_module: RunModule) -> RuntimeValue:
        s = op["shape"]
        return np.zeros(s.lens, s.dtype.numpy)
