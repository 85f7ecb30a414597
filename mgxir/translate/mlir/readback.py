"""MLIR module (as `--to-mlir` writes it) -> mgxir program, by the scheme described in `lower.py`:
ops carrying `mgx.op` are instructions (their arguments in `mgx.args`), `func.func @main`'s
arguments are the parameters (`mgx.param`), constants are the literals, `linalg.generic`s with
`mgx.module` hold pointwise modules and `func.call`s of private funcs hold fused_reduce modules."""

from __future__ import annotations

import numpy as np
from iree.compiler import ir

from mgxir.diagnostics import MgxError
from mgxir.ir.attributes import AttributeError_
from mgxir.ir.builtin import make_literal, make_param, make_return
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation, ShapeError
from mgxir.ir.program import Program
from mgxir.ir.registry import operation_from_node
from mgxir.ir.shape import Shape
from mgxir.text.syntax import SyntaxProblem, parse_layer2
from mgxir.translate.mlir.lower import (
    PARAM_ATTR,
    TAG_ARGS,
    TAG_MODULE,
    TAG_OP,
    TAG_PARAMS,
    TAG_STRIDES,
    TAG_TYPE,
)
from mgxir.translate.mlir.types import RAW_BITS, dtype_of

TERMINATORS = frozenset({"func.return", "linalg.yield"})


class Reader:
    def __init__(self, module: ir.Module, filename: str) -> None:
        self.filename = filename
        self.functions = {
            ir.StringAttr(op.attributes["sym_name"]).value: op
            for op in module.body.operations
            if op.operation.name == "func.func"
        }
        self.program = Program()
        self._operations: dict[str, Operation] = {}

    def error(self, message: str) -> MgxError:
        return MgxError(f"{self.filename}: {message}")

    def run(self) -> Program:
        main = self.functions.get("main")
        if main is None:
            raise self.error("no func.func @main: --from-mlir reads what --to-mlir writes")
        self.function(main, self.program.main)
        return self.program

    # -- regions --------------------------------------------------------------------------------

    def function(self, fn: ir.Operation, module: Module) -> None:
        block = fn.regions[0].blocks[0]
        arg_attrs = list(fn.arg_attrs) if fn.arg_attrs is not None else []
        params = []
        for i, value in enumerate(block.arguments):
            attrs = ir.DictAttr(arg_attrs[i]) if i < len(arg_attrs) else None
            if attrs is None or PARAM_ATTR not in attrs:
                raise self.error(f"argument {i} of @{module.name} has no {PARAM_ATTR} name")
            name = ir.StringAttr(attrs[PARAM_ATTR]).value
            shape = self.shape_of(value.type, attrs)
            params.append(module.insert(None, make_param(name), (), (), shape))
        self.region(block, module, params)

    def region(self, block: ir.Block, module: Module, params: list[Instruction]) -> None:
        tagged: list[Instruction] = []
        by_value: dict[ir.Value, Instruction] = {v: p for v, p in zip(block.arguments, params)}
        for op in block.operations:
            operation = op.operation
            attrs = operation.attributes
            if operation.name in TERMINATORS:
                outputs = [self._resolve_value(v, by_value, operation) for v in operation.operands]
                if operation.name == "linalg.yield" or outputs:
                    module.insert(None, make_return(), outputs)
                return
            if TAG_OP not in attrs:
                continue
            text = ir.StringAttr(attrs[TAG_OP]).value
            refs = list(ir.DenseI64ArrayAttr(attrs[TAG_ARGS])) if TAG_ARGS in attrs else []
            args = [params[-1 - r] if r < 0 else tagged[r] for r in refs]
            if text == "@literal":
                literal = self.literal(operation)
                ins = module.insert(None, make_literal(literal), (), (), literal.shape)
            else:
                ins = self.instruction(module, operation, text, args)
            tagged.append(ins)
            for result in operation.results:
                by_value[result] = ins
        raise self.error(f"the body of '{module.name}' has no terminator")

    def _resolve_value(self, value: ir.Value, by_value: dict[ir.Value, Instruction], op: ir.Operation) -> Instruction:
        found = by_value.get(value)
        if found is None:
            raise self.error(f"'{op.name}' returns a value that no op with {TAG_OP} made")
        return found

    # -- instructions ---------------------------------------------------------------------------

    def instruction(self, module: Module, op: ir.Operation, text: str, args: list[Instruction]) -> Instruction:
        operation = self.operation(text)
        modules: list[Module] = []
        if TAG_MODULE in op.attributes:
            modules.append(self.pointwise_module(op, args))
        elif op.name == "func.call":
            modules.append(self.called_module(op))
        try:
            return module.insert(None, operation, args, modules)
        except ShapeError:
            shape = self.shape_of(op.results[0].type, None)
            return module.insert(None, operation, args, modules, shape)

    def operation(self, text: str) -> Operation:
        found = self._operations.get(text)
        if found is None:
            try:
                node = parse_layer2(text, "op_text", "the operator")
                bracket = text.find("[")
                found = operation_from_node(node, text[bracket:] if bracket >= 0 else "")
            except (SyntaxProblem, AttributeError_) as e:
                raise self.error(f"{TAG_OP} '{text}' is not a MIGraphX operator: {e}") from None
            if found.defn.is_opaque:
                raise self.error(f"{TAG_OP} '{text}' is not an operator mgxir knows")
            self._operations[text] = found
        return found

    def pointwise_module(self, op: ir.Operation, args: list[Instruction]) -> Module:
        name = ir.StringAttr(op.attributes[TAG_MODULE]).value
        existing = self.program.get_module(name)
        if existing is not None:
            return existing
        names = [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes[TAG_PARAMS])]
        module = self.program.create_module(name)
        block = op.regions[0].blocks[0]
        params = [
            module.insert(None, make_param(n), (), (), Shape.scalar_of(a.shape.dtype)) for n, a in zip(names, args)
        ]
        self.region(block, module, params)
        return module

    def called_module(self, op: ir.Operation) -> Module:
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        existing = self.program.get_module(callee)
        if existing is not None:
            return existing
        fn = self.functions.get(callee)
        if fn is None:
            raise self.error(f"func.call of @{callee}, which the module does not define")
        module = self.program.create_module(callee)
        self.function(fn, module)
        return module

    # -- values ---------------------------------------------------------------------------------

    def shape_of(self, mlir_type: ir.Type, notes: ir.DictAttr | ir.OpAttributeMap | None) -> Shape:
        tensor_type = ir.RankedTensorType(mlir_type)
        dtype = self._dtype(tensor_type.element_type, notes)
        lens = list(tensor_type.shape) or [1]
        if notes is not None and TAG_STRIDES in notes:
            return Shape.make(dtype, lens, list(ir.DenseI64ArrayAttr(notes[TAG_STRIDES])))
        return Shape.make(dtype, lens)

    @staticmethod
    def _dtype(element: ir.Type, notes: ir.DictAttr | ir.OpAttributeMap | None) -> DType:
        if notes is not None and TAG_TYPE in notes:
            return DType.from_name(ir.StringAttr(notes[TAG_TYPE]).value)
        return dtype_of(element)

    def literal(self, op: ir.Operation) -> Literal:
        notes = op.attributes
        result_type = op.results[0].type
        if not isinstance(result_type, ir.RankedTensorType):  # a scalar constant in a pointwise body
            dtype = self._dtype(result_type, notes)
            value = op.attributes["value"]
            number = ir.FloatAttr(value).value if dtype.is_float else ir.IntegerAttr(value).value
            data = np.array([number]).astype(np.float64 if dtype.is_float else np.int64).astype(dtype.numpy)
            return Literal(Shape.scalar_of(dtype), data)
        shape = self.shape_of(result_type, notes)
        if op.name == "arith.bitcast" and shape.dtype in RAW_BITS:
            source = op.operands[0].owner.operation
            bits = _dense_data(source.attributes["value"], np.dtype(shape.dtype.bits_dtype))
            return Literal(shape, bits.view(shape.dtype.numpy).reshape(shape.lens))
        if op.name != "arith.constant":
            raise self.error(f"'{op.name}' is tagged as a literal but is not arith.constant")
        storage = (
            np.dtype(f"i{shape.dtype.itemsize}") if shape.dtype.is_unsigned and shape.dtype is not DType.bool else None
        )
        data = _dense_data(op.attributes["value"], storage or shape.dtype.numpy)
        return Literal(shape, data.view(shape.dtype.numpy).reshape(shape.lens))


def _dense_data(attr: ir.Attribute, dtype: np.dtype) -> np.ndarray:
    dense = ir.DenseElementsAttr(attr)
    count = int(np.prod(ir.ShapedType(dense.type).shape))
    if dense.is_splat:
        value = dense.get_splat_value()
        number = value.value
        return np.full(count, number, dtype=np.float64 if dtype.kind == "f" else np.int64).astype(dtype)
    return np.frombuffer(memoryview(dense), dtype=dtype, count=count).copy()


def from_mlir(module: ir.Module, filename: str = "<mlir>") -> Program:
    """The program a module written by `--to-mlir` holds."""
    return Reader(module, filename).run()
