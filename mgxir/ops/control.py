"""Operators with submodules (if, loop, pointwise) and tuples (get_tuple_elem)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mgxir.ir.shape import Shape, find_common_permutation
from mgxir.ops.attributes import INT, INTS, Attr
from mgxir.ops.common import fail, same_dims
from mgxir.ops.definition import OpDef, Operation, ShapeError
from mgxir.ops.registry import register

if TYPE_CHECKING:
    from mgxir.ir.module import Module

Shapes = Sequence[Shape]
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


def evaluate_module_shapes(module: Module, inputs: Shapes, scalar_const_lens: Sequence[int] | None) -> list[Shape]:
    """The shapes a module returns when its parameters (sorted by name) take `inputs`
    (MIGraphX's module::compute_shapes with strict types)."""
    params = sorted(module.parameter_names())
    if len(params) != len(inputs):
        raise ShapeError(f"module '{module.name}' has {len(params)} parameters but gets {len(inputs)} inputs")
    by_name = dict(zip(params, inputs))
    shapes: dict[int, Shape] = {}
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
            s = ins.op.defn.shape(ins.op, arg_shapes, ins.module_args)
            if s is None:
                raise ShapeError(f"'{ins.op.name}' in '{module.name}' has no shape rule")
            shapes[id(ins)] = s
    raise ShapeError(f"module '{module.name}' has no @return")


@register
class Pointwise(OpDef):
    name = "pointwise"
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
