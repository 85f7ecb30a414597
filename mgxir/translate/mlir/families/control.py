"""Operators with module arguments and tuples: `pointwise` bodies become `linalg.generic` regions
(several outputs: several results), `fused_reduce`/`run_on_target`/`group` bodies private funcs
called in place, `if` an `scf.if` holding the branch modules, `loop` an `scf.while` holding the body
module. A tuple is the results of the op that made it; `get_tuple_elem` picks one (no op)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iree.compiler import ir
from iree.compiler.dialects import arith, cf, func, linalg, scf, tensor

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.translate.mlir.emitter import PARALLEL, REDUCTION
from mgxir.translate.mlir.registry import lowers, sizes
from mgxir.translate.mlir.scalar import CannotLower

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowered, Lowering

Values = list[ir.Value]
TAG_MODULE = "mgx.module"
TAG_MODULES = "mgx.modules"
TAG_PARAMS = "mgx.params"


@lowers("pointwise", to="linalg.generic whose region is the module on scalars (one result per output)", dynamic=True)
def _pointwise(lowering: Lowering, ins: Instruction, args: Values) -> Lowered:
    return lowering.pointwise(ins, args)


@lowers("fused_reduce", "run_on_target", "group", to="func.call of a private func.func holding the module")
def _call(lowering: Lowering, ins: Instruction, args: Values) -> Lowered:
    body = ins.module_args[0]
    fn = lowering.function(body, body.name, public=False)
    results = list(func.CallOp(fn, args).results)
    return results if ins.shape.is_tuple else results[0]


@lowers(
    "get_tuple_elem", to="nothing: the result of the tuple's op that is the element", takes_tuples=True, dynamic=True
)
def _get_tuple_elem(lowering: Lowering, ins: Instruction, args: list[Values]) -> ir.Value:
    return args[0][ins.op["index"]]


def _first_element(lowering: Lowering, value: ir.Value, t: DType, rank: int) -> ir.Value:
    """An i1: the tensor's first element is not zero."""
    element = tensor.extract(value, [lowering.emitter.index(0)] * rank)
    return lowering.scalars.truthy(element, t)


@lowers(
    "if",
    to="scf.if on the condition; the branch modules are its regions, their parameters the inputs after the "
    "condition (results: the tuple)",
)
def _if(lowering: Lowering, ins: Instruction, args: Values) -> Values:
    # MIGraphX binds the inputs after the condition to the sorted parameter names of both modules
    names = sorted({n for m in ins.module_args for n in m.parameter_names()})
    if len(names) > len(args) - 1:
        raise CannotLower(f"the modules take {len(names)} parameters but the if gets {len(args) - 1} inputs")
    by_name = dict(zip(names, args[1:]))
    condition = ins.args[0].shape
    flag = _first_element(lowering, args[0], condition.dtype, condition.ndim)
    result_types = [lowering.types.of_shape(s) for s in ins.shape.sub_shapes]
    op = scf.IfOp(flag, result_types, has_else=True)
    outer = lowering.region
    creation_orders = [list(reversed(m.parameters())) for m in ins.module_args]  # parameter j: -1-j
    for block, module, params in zip((op.then_block, op.else_block), ins.module_args, creation_orders):
        with ir.InsertionPoint(block):
            scf.YieldOp(lowering.body(module, outer, [(p, by_name[p.param_name]) for p in params]))
    op.attributes[TAG_MODULES] = ir.ArrayAttr.get([ir.StringAttr.get(m.name) for m in ins.module_args])
    if names:
        op.attributes[TAG_PARAMS] = ir.ArrayAttr.get(
            [ir.ArrayAttr.get([ir.StringAttr.get(p.param_name) for p in params]) for params in creation_orders]
        )
    return list(op.results)


@lowers(
    "loop",
    to="scf.while (iteration < min(trip count, max_iterations) and condition) whose body is the module in "
    "an scf.execute_region; scan outputs tensor.insert_slice'd at the iteration (results: the tuple)",
)
def _loop(lowering: Lowering, ins: Instruction, args: Values) -> Values:
    body = ins.module_args[0]
    # the body's parameters in MIGraphX's creation order (the reverse of the printed order):
    # iteration, condition, carried values
    params = list(reversed(body.parameters()))
    if len(params) != len(args):
        raise CannotLower(f"loop body '{body.name}' has {len(params)} parameters but gets {len(args)} values")
    e, s, types = lowering.emitter, lowering.scalars, lowering.types
    i64 = DType.int64
    trip_shape, condition_shape = ins.args[0].shape, ins.args[1].shape
    if not trip_shape.dtype.is_integral:
        raise CannotLower("the trip count must be an integer")
    carried = args[2:]
    scan_shapes = list(ins.shape.sub_shapes[len(carried) :])
    max_iterations = ins.op["max_iterations"]
    directions = list(ins.op["scan_output_directions"])
    trip = tensor.extract(args[0], [e.index(0)] * trip_shape.ndim)
    trip = s.min(s.convert(trip, trip_shape.dtype, i64), s.const(max_iterations, i64), i64)
    inits = [s.const(0, i64), args[1], *carried, *(e.filled(t.dtype, t.lens, 0) for t in scan_shapes)]
    carried_types = [v.type for v in inits]
    op = scf.WhileOp(carried_types, inits)
    before = op.before.blocks.append(*carried_types)
    with ir.InsertionPoint(before):
        iteration = before.arguments[0]
        going = _first_element(lowering, before.arguments[1], condition_shape.dtype, condition_shape.ndim)
        scf.ConditionOp(arith.andi(s.cmp("lt", iteration, trip, i64), going), list(before.arguments))
    after = op.after.blocks.append(*carried_types)
    with ir.InsertionPoint(after):
        iteration = after.arguments[0]
        counter_shape = params[0].shape
        counter = tensor.from_elements(
            types.of_shape(counter_shape), [s.convert(iteration, i64, counter_shape.dtype)] * counter_shape.elements
        )
        bound = [counter, *after.arguments[1 : 2 + len(carried)]]
        out_shapes = body.output_shapes()
        region_op = scf.ExecuteRegionOp([types.of_shape(o) for o in out_shapes])
        with ir.InsertionPoint(region_op.region.blocks.append()):
            scf.YieldOp(lowering.body(body, lowering.region, list(zip(params, bound))))
        outs = list(region_op.results)
        scans = []
        dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
        for k, (value, buffer) in enumerate(zip(outs[1 + len(carried) :], after.arguments[2 + len(carried) :])):
            reverse = k < len(directions) and directions[k]
            position = arith.subi(arith.subi(trip, s.const(1, i64)), iteration) if reverse else iteration
            lens = list(scan_shapes[k].lens[1:])
            offset = arith.index_cast(types.index, position)
            scans.append(
                tensor.insert_slice(
                    value, buffer, [offset], [], [], [dynamic] + [0] * len(lens), [1, *lens], [1] * (1 + len(lens))
                )
            )
        scf.YieldOp([arith.addi(iteration, s.const(1, i64)), *outs[: 1 + len(carried)], *scans])
    op.attributes[TAG_MODULE] = ir.StringAttr.get(body.name)
    op.attributes[TAG_PARAMS] = ir.ArrayAttr.get([ir.StringAttr.get(p.param_name) for p in params])
    return list(op.results[2:])


@lowers(
    "topk",
    to="linalg.generic counting each element's rank along the axis (stable, NaN last), then linalg.generic "
    "picking the elements of rank < k (results: values, indices)",
)
def _topk(lowering: Lowering, ins: Instruction, args: Values) -> Values:
    if len(args) != 1:
        raise CannotLower("the form with an input of indices has no lowering")
    source = ins.args[0].shape
    t = source.dtype
    rank = source.ndim
    axis = ins.op["axis"] + rank if ins.op["axis"] < 0 else ins.op["axis"]
    largest = bool(ins.op["largest"])
    e, s = lowering.emitter, lowering.scalars
    i64 = DType.int64
    i64_t = lowering.types.element(i64)

    def ahead(x_i: ir.Value, i: ir.Value, x_j: ir.Value, j: ir.Value) -> ir.Value:
        """Whether element i comes before element j in numpy's stable argsort of the key."""
        earlier = arith.cmpi(arith.CmpIPredicate.slt, i, j)
        order = s.cmp("gt" if largest else "lt", x_i, x_j, t)
        tied = arith.andi(s.cmp("eq", x_i, x_j, t), earlier)
        result = arith.ori(order, tied)
        if t.is_float:  # NaN sorts last, NaNs among themselves by position
            nan_i, nan_j = s.is_nan(x_i), s.is_nan(x_j)
            number_first = arith.andi(nan_j, arith.xori(nan_i, s.const(True, DType.bool)))
            both = arith.andi(arith.andi(nan_i, nan_j), earlier)
            result = arith.ori(result, arith.ori(number_first, both))
        return result

    # ranks: over (element coordinates..., other position) -> how many elements come before
    domain = rank + 1
    d = [ir.AffineDimExpr.get(k) for k in range(domain)]
    other_map = ir.AffineMapAttr.get(ir.AffineMap.get(domain, 0, [d[rank] if k == axis else d[k] for k in range(rank)]))
    own_map = e.projection(domain, range(rank))

    def count(scalars: Values) -> Values:
        x_j, x_i, acc = scalars
        j = linalg.IndexOp(axis).result
        i = linalg.IndexOp(rank).result
        one = arith.extui(i64_t, ahead(x_i, i, x_j, j))
        return [arith.addi(acc, one)]

    ranks = e.generic(
        [(args[0], own_map), (args[0], other_map)],
        [(e.filled(i64, source.lens, 0), own_map)],
        [PARALLEL] * rank + [REDUCTION],
        count,
    )[0]
    # picks: over (output coordinates..., position along the axis) -> the element of rank p
    out_lens = list(ins.shape.sub_shapes[0].lens)

    def pick(scalars: Values) -> Values:
        x, r, value, index = scalars
        p = arith.index_cast(i64_t, linalg.IndexOp(axis).result)
        j = arith.index_cast(i64_t, linalg.IndexOp(rank).result)
        here = arith.cmpi(arith.CmpIPredicate.eq, r, p)
        return [arith.select(here, x, value), arith.select(here, j, index)]

    return e.generic(
        [(args[0], other_map), (ranks, other_map)],
        [(e.filled(t, out_lens, 0), own_map), (e.filled(i64, out_lens, 0), own_map)],
        [PARALLEL] * rank + [REDUCTION],
        pick,
    )


@lowers("undefined", to="zeros, as the reference interpreter gives (rnn/gru/lstm read it as an absent input)")
def _undefined(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    # MIGraphX's undefined has no data; a program that reads it (the ONNX importer adds a missing
    # optional bias as one) gets the interpreter's zeros rather than whatever memory IREE hands out
    return lowering.emitter.filled(ins.shape.dtype, ins.shape.lens, 0)


@lowers(
    "select_module",
    to="scf.if chain on the inputs' run-time sizes (tensor.dim == each module's parameter sizes): the first "
    "module that fits is a func.call (inputs tensor.cast to its static types), no fit fails a cf.assert "
    "(results: the tuple)",
    dynamic=True,
)
def _select_module(lowering: Lowering, ins: Instruction, args: Values) -> Values:
    e, types = lowering.emitter, lowering.types
    result_types = [types.of_shape(s) for s in ins.shape.sub_shapes]
    candidates = [(m, _fit_conditions(lowering, m, ins, args)) for m in ins.module_args]
    candidates = [(m, fits) for m, fits in candidates if fits is not None]

    def call(module: Module) -> Values:
        fn = lowering.function(module, module.name, public=False)
        by_name = {p.param_name: v for p, v in zip(_input_parameters(module), args)}
        operands = []
        for p in sorted(module.parameters(), key=lambda p: p.param_name):
            given = by_name.get(p.param_name)  # else a result buffer: the reference passes zeros
            target = types.of_shape(p.shape)
            operands.append(e.filled(p.shape.dtype, p.shape.lens, 0) if given is None else tensor.cast(target, given))
        results = list(func.CallOp(fn, operands).results)
        return [v if v.type == t else tensor.cast(t, v) for v, t in zip(results, result_types)]

    def choose(k: int) -> Values:
        if k == len(candidates):
            cf.AssertOp(lowering.scalars.const(False, DType.bool), NO_FIT)
            return [e.empty(s.dtype, [e.index(0) if n is None else n for n in sizes(s)]) for s in ins.shape.sub_shapes]
        module, fits = candidates[k]
        op = scf.IfOp(fits, result_types, has_else=True)
        with ir.InsertionPoint(op.then_block):
            scf.YieldOp(call(module))
        with ir.InsertionPoint(op.else_block):
            scf.YieldOp(choose(k + 1))
        return list(op.results)

    if not candidates:
        raise CannotLower("no module's parameter types and static sizes can fit the inputs")
    results = choose(0)
    op = results[0].owner.operation
    op.attributes[TAG_MODULES] = ir.ArrayAttr.get([ir.StringAttr.get(m.name) for m in ins.module_args])
    return results


OUTPUT_PARAMETER = "#output_"
NO_FIT = "select_module: no module's parameter shapes fit the input shapes"  # the reference's words


def _input_parameters(module: Module) -> list[Instruction]:
    """A selectable module's parameters that take the inputs (sorted by name; MIGraphX's result
    buffers, named `#output_...`, are not among them)."""
    params = sorted(module.parameters(), key=lambda p: p.param_name)
    return [p for p in params if OUTPUT_PARAMETER not in p.param_name]


def _fit_conditions(lowering: Lowering, module: Module, ins: Instruction, args: Values) -> ir.Value | None:
    """An i1 that holds where the inputs' run-time sizes are the module's parameter sizes; None where
    the types or static sizes already rule the module out."""
    e = lowering.emitter
    params = _input_parameters(module)
    if len(params) > len(args):
        return None
    fits = None
    for p, value, arg in zip(params, args, ins.args):
        declared, given = p.shape, arg.shape
        if declared.is_dynamic or declared.dtype is not given.dtype or declared.ndim != given.ndim:
            return None
        for d, (n, size) in enumerate(zip(declared.lens, sizes(given))):
            if size is not None:
                if size != n:
                    return None
                continue
            same = arith.cmpi(arith.CmpIPredicate.eq, tensor.dim(value, e.index(d)), e.index(n))
            fits = same if fits is None else arith.andi(fits, same)
    return fits if fits is not None else lowering.scalars.const(True, DType.bool)
