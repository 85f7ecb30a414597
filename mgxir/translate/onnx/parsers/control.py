"""Control-flow ONNX operators: If, Loop and Scan, whose bodies become submodules."""

from __future__ import annotations

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape, format_shape
from mgxir.translate.onnx.importer import NodeInfo, OnnxParser, ParseError
from mgxir.translate.onnx.registry import onnx_op

Args = list[Instruction]


def _tuple_elements(info: NodeInfo, ins: Instruction) -> list[Instruction]:
    subs = ins.shape.sub_shapes or ()
    return [info.add("get_tuple_elem", ins, index=i) for i in range(len(subs))]


def _make_standard_return(module: Module) -> None:
    ret = module.return_instruction
    if ret is None:
        return
    args = list(ret.args)
    for i, r in enumerate(args):
        if not r.shape.standard:
            args[i] = module.insert(ret, make_op("contiguous"), [r])
    module.replace(ret, ret.op, args)


def _graph(info: NodeInfo, name: str):
    graph = info.attr_graph(name)
    if graph is None:
        raise ParseError(f"{info.op_type}: missing the {name} attribute")
    return graph


@onnx_op("If")
def parse_if(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    then_graph = _graph(info, "then_branch")
    else_graph = _graph(info, "else_branch")
    if not args or args[0].shape.elements != 1:
        raise ParseError(f"PARSE_IF: {info.name} condition input can have only one element!")
    cond = info.eval(args[0])
    if cond is not None:
        branch = then_graph if bool(np.asarray(cond).reshape(-1)[0]) else else_graph
        return parser.parse_graph(info.module, branch, inlining=True)
    then_module = parser.program.create_module(info.name + "_if")
    else_module = parser.program.create_module(info.name + "_else")
    parser.parse_graph(then_module, then_graph)
    parser.parse_graph(else_module, else_graph)
    then_shapes, else_shapes = then_module.output_shapes(), else_module.output_shapes()
    if then_shapes != else_shapes:
        if len(then_shapes) != len(else_shapes) or any(
            t.as_standard() != e.as_standard() for t, e in zip(then_shapes, else_shapes)
        ):
            raise ParseError(f"PARSE_IF: {info.name} then and else sub_graphs must have same output shapes!")
        _make_standard_return(then_module)
        _make_standard_return(else_module)
    return _tuple_elements(info, info.add("if", *args, modules=[then_module, else_module]))


@onnx_op("Loop")
def parse_loop(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    if len(args) < 2:
        raise ParseError("Loop: needs the trip count and condition inputs")
    max_iterations = parser.options.max_loop_iterations
    args = list(args)
    if args[0].name == "undefined":
        args[0] = info.add_literal(max_iterations, DType.int64)
    else:
        trips = info.eval(args[0])
        if trips is not None:
            max_iterations = int(np.asarray(trips).reshape(-1)[0])
    if max_iterations > parser.options.limit_max_iterations:
        parser.sink.warn(
            f"PARSE_LOOP max_iterations exceeds the maximum loop iterations limit, it will be changed from "
            f"{max_iterations} to {parser.options.limit_max_iterations}."
        )
        max_iterations = parser.options.limit_max_iterations
    if args[1].name == "undefined":
        args[1] = info.add_literal(True, DType.bool)
    body = _graph(info, "body")
    module = parser.program.create_module(info.name + "_loop")
    parser.parse_graph(module, body)
    return _tuple_elements(info, info.add("loop", *args, modules=[module], max_iterations=max_iterations))


# -- Scan ------------------------------------------------------------------------------------------


def _scan_ints(info: NodeInfo, name: str, size: int) -> list[int]:
    if not info.has(name):
        return []
    values = list(info.attributes[name].ints)
    if len(values) != size:
        raise ParseError(f"Scan: {name} size is {len(values)}, should be {size}")
    return [int(v) for v in values]


def _scan_directions(info: NodeInfo, name: str, size: int) -> list[int]:
    directions = _scan_ints(info, name, size)
    if not directions:
        return [0] * size
    if any(d not in (0, 1) for d in directions):
        raise ParseError(f"Scan: {name} may contain only 1s and 0s, actual values: {', '.join(map(str, directions))}")
    return directions


def _scan_axes(info: NodeInfo, name: str, size: int, values: list[Instruction], rank_offset: int) -> list[int]:
    axes = _scan_ints(info, name, size)
    if not axes:
        return [0] * size
    out = []
    for axis, ins in zip(axes, values):
        rank = ins.shape.ndim + rank_offset
        if not -rank <= axis < rank:
            raise ParseError(f"Scan: {name} axis value {{{axis}}} out of range [{-rank}, {rank})")
        out.append(axis + rank if axis < 0 else axis)
    return out


def _scan_body_as_loop_body(body: Module, args: Args, n: int, axes: list[int], directions: list[int]) -> None:
    """The Scan body made a Loop body: (iter, cond, state...) in, (cond, state..., scan outputs...)
    out; each scan input slice becomes scan_slice(outer input, iter) squeezed, as MIGraphX does."""
    params = list(reversed(body.parameters()))
    iteration = body.add_parameter("iter", Shape.scalar_of(DType.int64))
    condition = body.add_parameter("cond", Shape.scalar_of(DType.bool))
    states = [body.add_parameter(f"state_var{i}", params[i].shape) for i in range(n)]
    for i, param in enumerate(params):
        if i < n:
            replacement = states[i]
        else:
            axis, direction = axes[i - n], directions[i - n]
            sliced = body.insert(param, make_op("scan_slice", axis=axis, direction=direction), [args[i], iteration])
            replacement = body.insert(param, make_op("squeeze", axes=[axis]), [sliced])
        param.replace_all_uses_with(replacement)
        body.remove(param)
    ret = body.return_instruction
    assert ret is not None
    body.replace(ret, ret.op, [condition, *ret.args])


def _scan_output_permutation(rank: int, axis: int) -> list[int]:
    """Axis 0 (the loop's stacking axis) moved to `axis`, the others kept in order."""
    perm = list(range(rank))
    perm[:axis] = perm[1 : 1 + axis]
    perm[axis] = 0
    return perm


@onnx_op("Scan")
def parse_scan(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    if parser.opset_version == 8:
        raise ParseError("Scan: Opset 8 version not supported")
    for required in ("body", "num_scan_inputs"):
        if not info.has(required):
            raise ParseError(f"Scan: {required} attribute required")
    body = parser.program.create_module(info.name + "_scan")
    parser.parse_graph(body, _graph(info, "body"))
    outputs = list(body.return_instruction.args) if body.return_instruction is not None else []
    m = int(info.attributes["num_scan_inputs"].i)
    if not 1 <= m <= len(args):
        # MIGraphX takes the count as it is (size_t arithmetic); a clear refusal here
        raise ParseError(f"Scan: num_scan_inputs {{{m}}} must be between 1 and the number of inputs {{{len(args)}}}")
    n = len(args) - m
    k = len(outputs) - n
    params = list(reversed(body.parameters()))
    if len(params) != n + m:
        raise ParseError(
            f"Scan: Number of inputs to body {{{len(params)}}} does not match number of inputs to Scan {{{n + m}}}"
        )
    input_axes = _scan_axes(info, "scan_input_axes", m, args[n:], 0)
    input_directions = _scan_directions(info, "scan_input_directions", m)
    output_axes = _scan_axes(info, "scan_output_axes", k, outputs[n:], 1)
    output_directions = _scan_directions(info, "scan_output_directions", k)
    iterations = args[n].shape.lens[input_axes[0]]
    for i in range(1, m):
        if args[n + i].shape.lens[input_axes[i]] != iterations:
            raise ParseError(
                "Scan: Lengths of scan_input_axes do not match across all scan inputs.\n"
                f"Scan input shapes: {', '.join(format_shape(a.shape) for a in args[n:])}\n"
                f"Scan input axes: {', '.join(map(str, input_axes))}"
            )
    if iterations > parser.options.max_loop_iterations:
        raise ParseError(
            f"Scan: Number of required iterations {{{iterations}}} would exceed the maximum iteration limit "
            f"{{{parser.options.max_loop_iterations}}}"
        )
    for i in range(n):
        if args[i].shape != params[i].shape:
            raise ParseError(
                f"Scan: State input {i} shape {{{format_shape(args[i].shape)}}} does not match corresponding body "
                f"input shape {{{format_shape(params[i].shape)}}}"
            )
    for i in range(m):
        lens = list(args[n + i].shape.lens)
        del lens[input_axes[i]]
        sliced = Shape.make(args[n + i].shape.dtype, lens)
        if params[n + i].shape != sliced:
            raise ParseError(
                f"Slice: Sliced scan input {i} shape {{{format_shape(sliced)}}} does not match corresponding body "
                f"input shape {{{format_shape(params[n + i].shape)}}}"
            )
    _scan_body_as_loop_body(body, args, n, input_axes, input_directions)
    trips = info.add_literal(iterations, DType.int64)
    condition = info.add_literal(True, DType.bool)
    loop = info.add(
        "loop",
        trips,
        condition,
        *args[:n],
        modules=[body],
        max_iterations=iterations,
        scan_output_directions=output_directions,
    )
    results = [info.add("get_tuple_elem", loop, index=i) for i in range(n)]
    for i in range(k):
        stacked = info.add("get_tuple_elem", loop, index=i + n)
        perm = _scan_output_permutation(stacked.shape.ndim, output_axes[i])
        results.append(info.add("transpose", stacked, permutation=perm))
    return results
