"""MLIR module (as `--to-mlir` writes it) -> mgxir program, by the scheme described in `lower.py`:
ops carrying `mgx.op` are instructions (their arguments in `mgx.args`), `func.func @main`'s
arguments are the parameters (`mgx.param`), constants are the literals, `linalg.generic`s with
`mgx.module` hold pointwise modules and `func.call`s of private funcs hold fused_reduce modules."""

from __future__ import annotations

import math
import re

import numpy as np
from iree.compiler import ir

from mgxir.diagnostics import Location, MgxError, check_allocation
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
    TAG_DYN_DIMS,
    TAG_FIRST,
    TAG_MODULE,
    TAG_MODULES,
    TAG_OP,
    TAG_OUTER,
    TAG_PARAMS,
    TAG_STRIDES,
    TAG_TYPE,
)
from mgxir.translate.mlir.types import RAW_BITS, dtype_of

TERMINATORS = frozenset({"func.return", "linalg.yield", "scf.yield"})


class Scope:
    """What one region read so far: its tagged instructions (a tuple's elements follow it as
    get_tuple_elem instructions), its parameters, and the region around it."""

    def __init__(self, params: list[Instruction], parent: Scope | None = None) -> None:
        self.params = params
        self.parent = parent
        self.tagged: list[Instruction] = []
        self.by_value: dict[ir.Value, Instruction] = {}

    def resolve(self, ref: int, depth: int) -> Instruction:
        scope = self
        for _ in range(depth):
            if scope.parent is None:
                raise ValueError(f"argument {ref} is {depth} regions out, past the outermost")
            scope = scope.parent
        values = scope.tagged if ref >= 0 else scope.params
        index = ref if ref >= 0 else -1 - ref
        if index >= len(values):
            raise ValueError(f"argument {ref} refers to no earlier value")
        return values[index]

    def lookup(self, value: ir.Value) -> Instruction | None:
        scope: Scope | None = self
        while scope is not None:
            found = scope.by_value.get(value)
            if found is not None:
                return found
            scope = scope.parent
        return None


class Reader:
    def __init__(self, module: ir.Module, filename: str, text: str = "") -> None:
        self.filename = filename
        self.lines = text.splitlines()
        self.functions = {
            ir.StringAttr(op.attributes["sym_name"]).value: op
            for op in module.body.operations
            if op.operation.name == "func.func"
        }
        self.program = Program()
        self._operations: dict[str, Operation] = {}

    def error(self, message: str) -> MgxError:
        return MgxError(f"{self.filename}: {message}")

    def error_at(self, op: ir.Operation, message: str) -> MgxError:
        """An error at the op's line and column where MLIR knows them (text), else at the file."""
        found = _FILE_LINE_COL.search(str(op.location))
        if found is None:
            return self.error(message)
        line, column = int(found.group(1)), int(found.group(2))
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return MgxError(message, Location(self.filename, line, column), text)

    def malformed(self, op: ir.Operation, e: Exception) -> MgxError:
        return self.error_at(op, f"'{op.name}' is not as --to-mlir writes it ({_reason(e)})")

    def run(self) -> Program:
        main = self.functions.get("main")
        if main is None:
            raise self.error("no func.func @main: --from-mlir reads what --to-mlir writes")
        try:
            self.function(main, self.program.main)
        except MALFORMED as e:
            raise self.malformed(main, e) from None
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
        self.region(block, module, Scope(params), list(block.arguments))

    def region(self, block: ir.Block, module: Module, scope: Scope, param_values: list[ir.Value]) -> None:
        for value, param in zip(param_values, scope.params):
            scope.by_value[value] = param
        for op in block.operations:
            operation = op.operation
            try:
                if self._read(operation, module, scope):
                    return
            except MALFORMED as e:
                raise self.malformed(operation, e) from None
        raise self.error(f"the body of '{module.name}' has no terminator")

    def _read(self, operation: ir.Operation, module: Module, scope: Scope) -> bool:
        """Reads one op into `module`; True at the region's terminator."""
        attrs = operation.attributes
        if operation.name in TERMINATORS:
            outputs = [self._resolve_value(v, scope, operation) for v in operation.operands]
            if operation.name != "func.return" or outputs:
                module.insert(None, make_return(), outputs)
            _drop_unused_elements(module)
            return True
        if TAG_OP not in attrs:
            return False
        text = ir.StringAttr(attrs[TAG_OP]).value
        refs = list(ir.DenseI64ArrayAttr(attrs[TAG_ARGS])) if TAG_ARGS in attrs else []
        depths = list(ir.DenseI64ArrayAttr(attrs[TAG_OUTER])) if TAG_OUTER in attrs else [0] * len(refs)
        if len(depths) != len(refs):
            raise self.error_at(operation, f"{TAG_ARGS} has {len(refs)} entries but {TAG_OUTER} {len(depths)}")
        args = [scope.resolve(r, d) for r, d in zip(refs, depths)]
        if text == "@literal":
            literal = self.literal(operation)
            ins = module.insert(None, make_literal(literal), (), (), literal.shape)
        else:
            ins = self.instruction(module, operation, text, args, scope)
        scope.tagged.append(ins)
        results = list(operation.results)
        if ins.shape.is_tuple:
            first = ir.IntegerAttr(attrs[TAG_FIRST]).value if TAG_FIRST in attrs else 0
            for index, result in enumerate(results[first:]):
                element = module.insert(None, self.operation(f"get_tuple_elem[index={index}]"), [ins])
                scope.tagged.append(element)
                scope.by_value[result] = element
        else:
            for result in results:
                scope.by_value[result] = ins
        return False

    def _resolve_value(self, value: ir.Value, scope: Scope, op: ir.Operation) -> Instruction:
        found = scope.lookup(value)
        if found is None:
            raise self.error(f"'{op.name}' returns a value that no op with {TAG_OP} made")
        return found

    # -- instructions ---------------------------------------------------------------------------

    def instruction(
        self, module: Module, op: ir.Operation, text: str, args: list[Instruction], scope: Scope
    ) -> Instruction:
        operation = self.operation(text)
        modules: list[Module] = []
        if op.name == "scf.if" and operation.name == "select_module":  # the modules are called funcs
            names = [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes[TAG_MODULES])]
            modules.extend(self.module_of_function(name) for name in names)
        elif op.name == "scf.if":
            names = [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes[TAG_MODULES])]
            params = [[]] * len(names)
            if TAG_PARAMS in op.attributes:
                params = [
                    [ir.StringAttr(n).value for n in ir.ArrayAttr(m)] for m in ir.ArrayAttr(op.attributes[TAG_PARAMS])
                ]
            # the inputs after the condition are the modules' parameters, by sorted name
            by_name = dict(zip(sorted({n for m in params for n in m}), args[1:]))
            for name, region, module_params in zip(names, op.regions, params):
                values = [_value_of(scope, by_name[n]) for n in module_params]
                modules.append(self.nested_module(name, region.blocks[0], scope, module_params, values))
        elif op.name == "scf.while":
            modules.append(self.loop_body(op, scope))
        elif TAG_MODULE in op.attributes:
            modules.append(self.pointwise_module(op, args))
        elif op.name == "func.call":
            modules.append(self.called_module(op))
        try:
            return module.insert(None, operation, args, modules)
        except ShapeError:
            first = ir.IntegerAttr(op.attributes[TAG_FIRST]).value if TAG_FIRST in op.attributes else 0
            results = list(op.results)[first:]
            notes = op.attributes if len(results) == 1 else None  # the ranges of a trusted dynamic shape
            shapes = [self.shape_of(r.type, notes) for r in results]
            shape = shapes[0] if len(shapes) == 1 else Shape.tuple_of(shapes)
            return module.insert(None, operation, args, modules, shape)

    def nested_module(
        self, name: str, block: ir.Block, scope: Scope, names: list[str], values: list[ir.Value]
    ) -> Module:
        """A branch or loop body: a region that may use the values of the regions around it; its
        parameters `names` (in MIGraphX's creation order) are `values`."""
        module = self.program.create_module(name)
        params = [module.add_parameter(n, self.shape_of(v.type, None)) for n, v in zip(names, values)]
        self.region(block, module, Scope(params, scope), values)
        return module

    def loop_body(self, op: ir.Operation, scope: Scope) -> Module:
        name = ir.StringAttr(op.attributes[TAG_MODULE]).value
        names = [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes[TAG_PARAMS])]
        after = op.regions[1].blocks[0]
        inner = [o.operation for o in after.operations]
        counter = next((o for o in inner if o.name == "tensor.from_elements"), None)
        body = next((o for o in inner if o.name == "scf.execute_region"), None)
        if counter is None or body is None:
            raise self.error(f"the scf.while of loop body '{name}' is not as --to-mlir writes it")
        values = [counter.results[0], *list(after.arguments)[1 : len(names)]]
        return self.nested_module(name, body.regions[0].blocks[0], scope, names, values)

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
        self.region(block, module, Scope(params), list(block.arguments))
        return module

    def called_module(self, op: ir.Operation) -> Module:
        return self.module_of_function(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)

    def module_of_function(self, callee: str) -> Module:
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
        if notes is not None and TAG_DYN_DIMS in notes:
            bounds = list(ir.DenseI64ArrayAttr(notes[TAG_DYN_DIMS]))
            return Shape.dynamic(dtype, list(zip(bounds[::2], bounds[1::2])))
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


def _drop_unused_elements(module: Module) -> None:
    """The get_tuple_elem instructions made for tuple elements that nothing reads."""
    for ins in list(module):
        if ins.op.name == "get_tuple_elem" and not ins.users:
            module.remove(ins)


def _dense_data(attr: ir.Attribute, dtype: np.dtype) -> np.ndarray:
    dense = ir.DenseElementsAttr(attr)
    dims = ir.ShapedType(dense.type).shape
    if any(n < 0 for n in dims):
        raise ValueError(f"a constant of dynamic shape {dims}")
    count = math.prod(dims)
    check_allocation(count * (dtype.itemsize + 8), f"a constant of {count} {dtype} values")
    if dense.is_splat:
        value = dense.get_splat_value()
        number = value.value
        return np.full(count, number, dtype=np.float64 if dtype.kind == "f" else np.int64).astype(dtype)
    return np.frombuffer(memoryview(dense), dtype=dtype, count=count).copy()


def from_mlir(module: ir.Module, filename: str = "<mlir>", text: str = "") -> Program:
    """The program a module written by `--to-mlir` holds (`text`: its source, for error lines)."""
    try:
        reader = Reader(module, filename, text)
    except MALFORMED as e:
        raise MgxError(f"{filename}: the module is not as --to-mlir writes it ({_reason(e)})") from None
    return reader.run()


# What a module --to-mlir did not write gives inside the reader: a missing attribute (KeyError), a
# cast of an attribute or type of another kind (MLIR's casts raise ValueError), an index past a
# list, an unknown type name (KeyError), a value of the wrong kind (TypeError), a string attribute
# that is not UTF-8 (the bindings' RuntimeError).
MALFORMED = (KeyError, ValueError, IndexError, TypeError, RuntimeError)
_FILE_LINE_COL = re.compile(r'loc\("[^"]*":(\d+):(\d+)')


def _reason(e: Exception) -> str:
    if isinstance(e, KeyError):
        return f"no {e.args[0]!r}" if e.args else "a missing entry"
    return str(e) or type(e).__name__


def _value_of(scope: Scope, ins: Instruction) -> ir.Value:
    """The MLIR value that an instruction read so far is (searched from `scope` outwards)."""
    found: Scope | None = scope
    while found is not None:
        for value, known in found.by_value.items():
            if known is ins:
                return value
        found = found.parent
    raise MgxError(f"no MLIR value for instruction '{ins.op.name}'")
