"""Control-flow ONNX operators: If and Loop, whose bodies become submodules."""

from __future__ import annotations

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ops.registry import make_op
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
