"""mgxir program -> MLIR module, built through the MLIR Python bindings and checked by MLIR's verifier.

`main` becomes `func.func @main` with one argument per parameter (printed order, each with
`mgx.param = "NAME"`) and the outputs as results (a tuple output flattened in place). Modules that a
`fused_reduce` calls become private funcs of the same name; `pointwise` modules become the bodies of
`linalg.generic` ops.

How the program comes back (`--from-mlir`, see `readback.py`): the op that produces an
instruction's value carries `mgx.op` (the operation as MIGraphX prints it) and `mgx.args` (its
arguments: k >= 0 is the k-th tagged op of the same region, -1-j is the region's argument j).
Instructions that lower to no op (`contiguous`, `identity`, a reshape to the same lens) refer to
their argument instead and do not come back. Literals are the values of their constants; a
parameter or literal of an unsigned type says so with `mgx.type`.
"""

from __future__ import annotations

import numpy as np
from iree.compiler import ir
from iree.compiler.dialects import func

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.interp.interpreter import generated_literal
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape, standard_strides
from mgxir.translate.mlir import families  # noqa: F401  (registers every rule)
from mgxir.translate.mlir.emitter import Emitter
from mgxir.translate.mlir.registry import POINTWISE_AS_GENERIC, Rule, scalar_rule, tensor_rule
from mgxir.translate.mlir.scalar import CannotLower, Scalars
from mgxir.translate.mlir.types import UNSIGNED, TypeCache, lowers_type

TAG_OP = "mgx.op"
TAG_ARGS = "mgx.args"
TAG_MODULE = "mgx.module"
TAG_PARAMS = "mgx.params"
TAG_TYPE = "mgx.type"
TAG_STRIDES = "mgx.strides"
PARAM_ATTR = "mgx.param"


class Region:
    """What one region knows while it is filled: the value and the reference of each instruction."""

    def __init__(self) -> None:
        self.values: dict[Instruction, ir.Value] = {}
        self.refs: dict[Instruction, int] = {}
        self.tagged = 0


class Lowering:
    """Lowers one program into a new MLIR module (its own context)."""

    def __init__(self, program: Program, sink: DiagnosticSink | None = None) -> None:
        self.program = program
        self.sink = sink or DiagnosticSink()
        self.context = ir.Context()
        self.location = ir.Location.unknown(self.context)
        with self.context, self.location:
            self.types = TypeCache()
            self.emitter = Emitter(self.types)
            self.scalars = Scalars(self.emitter)
            self.module = ir.Module.create()
        self._functions: dict[str, func.FuncOp] = {}
        self._op_names: dict[str, ir.StringAttr] = {}
        self._lowers_shape: set[Shape] = set()
        self._arg_refs: dict[tuple[int, ...], ir.DenseI64ArrayAttr] = {}
        # set while a rule runs: the tags of its instruction, for `create` to put on the op it makes
        self._pending: tuple[Region, Instruction] | None = None
        self._consumed: tuple[Region, Instruction] | None = None
        # values made once per function and shared by its ops (tosa.mul's shift, ...)
        self.function_values: dict[object, ir.Value] = {}

    # -- entry ----------------------------------------------------------------------------------

    def run(self) -> ir.Module:
        with self.context, self.location:
            self.function(self.program.main, "main", public=True)
            if not self.module.operation.verify():
                raise AssertionError("the lowered module does not verify")
        return self.module

    def function(self, module: Module, name: str, public: bool) -> func.FuncOp:
        """The func for a module (made once): parameters in printed order for `main`, sorted by name
        for called bodies (as MIGraphX binds them)."""
        found = self._functions.get(name)
        if found is not None:
            return found
        params = module.parameters()
        if not public:
            params = sorted(params, key=lambda p: p.param_name)
        for p in params:
            self._check_shape(module, p)
        outputs = _outputs(module)
        for o in outputs:
            self._check_shape(module, o)
        arg_types = [self.types.of_shape(p.shape) for p in params]
        result_types = [self.types.of_shape(o.shape) for o in outputs]
        with ir.InsertionPoint(self.module.body):
            fn = func.FuncOp(name, (arg_types, result_types))
        if not public:
            fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
        fn.arg_attrs = ir.ArrayAttr.get([self._param_attrs(p) for p in params])
        self._functions[name] = fn
        block = fn.add_entry_block()
        region = Region()
        for i, p in enumerate(params):
            region.values[p] = block.arguments[i]
            region.refs[p] = -1 - i
        outer_values, self.function_values = self.function_values, {}
        outer_pending, self._pending = self._pending, None
        with ir.InsertionPoint(block):
            self._fill(module, region)
            func.ReturnOp([region.values[o] for o in outputs])
        self.function_values, self._pending = outer_values, outer_pending
        return fn

    def _param_attrs(self, p: Instruction) -> ir.DictAttr:
        attrs = {PARAM_ATTR: ir.StringAttr.get(p.param_name)}
        attrs.update(_shape_notes(p.shape))
        return ir.DictAttr.get(attrs)

    # -- tensor regions -------------------------------------------------------------------------

    def _fill(self, module: Module, region: Region) -> None:
        for index, ins in enumerate(module):
            if ins.is_param:
                continue
            if ins.is_return:
                break
            self._check_shape(module, ins)
            if ins.is_literal:
                value = self.emitter.constant(self._literal_data(module, ins, index), ins.shape.dtype)
                self._tag(region, ins, value, literal=True)
                continue
            try:
                args = [region.values[a] for a in ins.args]
            except KeyError:
                raise self.error(module, ins, "an argument comes from another module (not lowered)") from None
            rule = self.rule_for(module, ins)
            token = self._pending = (region, ins)
            try:
                value = rule.lower(self, ins, args)
            except CannotLower as e:
                raise self.error(module, ins, str(e)) from None
            self._pending = None
            if self._consumed is token:  # `create` made the op with its tags
                region.values[ins] = value
            else:
                self._tag(region, ins, value)

    def rule_for(self, module: Module, ins: Instruction) -> Rule:
        defn = ins.op.defn
        rule = tensor_rule(defn)
        if rule is None and defn.pointwise and scalar_rule(defn) is not None:
            rule = POINTWISE_AS_GENERIC
        if rule is None:
            why = "unknown operator" if defn.is_opaque else "no lowering to MLIR for this operator"
            raise self.error(module, ins, why)
        return rule

    def _literal_data(self, module: Module, ins: Instruction, index: int) -> np.ndarray:
        literal = ins.literal
        if literal.data is not None:
            return np.asarray(literal.data).reshape(literal.shape.lens)
        self.sink.warn(
            f"literal {self.name_of(module, ins)} in module '{module.name}' was printed elided ({{ ... }}); "
            "lowering the reference interpreter's generated values",
            once_key=f"elided:{module.name}:{index}",
        )
        return generated_literal(literal.shape, index)

    def _check_shape(self, module: Module, ins: Instruction) -> None:
        shape = ins.shape
        if shape in self._lowers_shape:
            return
        if shape.is_tuple:
            raise self.error(module, ins, "tuple values have no lowering")
        if shape.is_dynamic:
            raise self.error(module, ins, "dynamic shapes have no lowering yet")
        if not lowers_type(shape.dtype):
            raise self.error(module, ins, f"{shape.dtype.type_name} has no MLIR element type")
        self._lowers_shape.add(shape)

    def _tag(self, region: Region, ins: Instruction, value: ir.Value, literal: bool = False) -> None:
        """Records the instruction on the op that made its value, or refers to an argument whose value
        it is (a no-op lowering)."""
        region.values[ins] = value
        owner = defining_op(value)
        if owner is None or TAG_OP in owner.attributes:
            for a in ins.args:
                if region.values[a] == value:
                    region.refs[ins] = region.refs[a]
                    return
            raise AssertionError(f"lowering of {ins.op.text} returned a value it did not make")
        attrs = owner.attributes
        for key, tag in self._tags(region, ins).items():
            attrs[key] = tag
        if literal:
            for key, note in _shape_notes(ins.shape).items():
                attrs[key] = note

    def _tags(self, region: Region, ins: Instruction) -> dict[str, ir.Attribute]:
        """The instruction's tags; it takes the next reference of the region."""
        tags: dict[str, ir.Attribute] = {TAG_OP: self._op_name(ins)}
        if ins.args:
            refs = tuple(region.refs[a] for a in ins.args)
            found = self._arg_refs.get(refs)
            if found is None:
                found = self._arg_refs[refs] = ir.DenseI64ArrayAttr.get(list(refs))
            tags[TAG_ARGS] = found
        region.refs[ins] = region.tagged
        region.tagged += 1
        return tags

    def create(self, name: str, result: ir.Type, operands: list[ir.Value]) -> ir.Value:
        """A rule's final op made in one step with its instruction's tags (the fast path for ops
        without attributes of their own, which most elementwise ops are)."""
        pending = self._pending
        if pending is None:
            return ir.Operation.create(name, results=[result], operands=operands).result
        self._pending = None
        self._consumed = pending
        region, ins = pending
        return ir.Operation.create(name, results=[result], operands=operands, attributes=self._tags(region, ins)).result

    def _op_name(self, ins: Instruction) -> ir.StringAttr:
        text = ins.op.text
        found = self._op_names.get(text)
        if found is None:
            found = self._op_names[text] = ir.StringAttr.get(text)
        return found

    # -- pointwise bodies -----------------------------------------------------------------------

    def pointwise(self, ins: Instruction, args: list[ir.Value]) -> ir.Value:
        """A `pointwise` instruction: a `linalg.generic` whose body is its module on scalars."""
        body = ins.module_args[0]
        params = sorted(body.parameters(), key=lambda p: p.param_name)
        if len(params) != len(args):
            raise CannotLower(f"module '{body.name}' has {len(params)} parameters but gets {len(args)} inputs")
        outputs = _outputs(body)
        if len(outputs) != 1:
            raise CannotLower(f"module '{body.name}' returns {len(outputs)} values (tuples have no lowering)")
        lens = ins.shape.lens
        inputs = [(v, a.shape.lens) for v, a in zip(args, ins.args)]

        def fill(scalars: list[ir.Value]) -> list[ir.Value]:
            region = Region()
            for i, p in enumerate(params):
                region.values[p] = scalars[i]
                region.refs[p] = -1 - i
            self._fill_scalars(body, region)
            return [region.values[outputs[0]]]

        result = self.emitter.elementwise(inputs, ins.shape.dtype, lens, fill)
        generic = defining_op(result)
        assert generic is not None
        attrs = generic.attributes
        attrs[TAG_MODULE] = ir.StringAttr.get(body.name)
        attrs[TAG_PARAMS] = ir.ArrayAttr.get([ir.StringAttr.get(p.param_name) for p in params])
        return result

    def _fill_scalars(self, module: Module, region: Region) -> None:
        for index, ins in enumerate(module):
            if ins.is_param:
                continue
            if ins.is_return:
                break
            if ins.is_literal:
                data = self._literal_data(module, ins, index).reshape(-1)
                if data.size != 1:
                    raise self.error(module, ins, "a literal in a pointwise module must have one element")
                value = self.emitter.scalar_constant(data[0].item(), ins.shape.dtype)
                self._tag(region, ins, value, literal=True)
                continue
            self._check_shape(module, ins)
            rule = scalar_rule(ins.op.defn)
            if rule is None:
                raise self.error(module, ins, "no scalar lowering for this operator inside a pointwise module")
            args = [region.values[a] for a in ins.args]
            types = [a.shape.dtype for a in ins.args]
            try:
                value = rule.lower(self.scalars, ins.op, args, types, ins.shape.dtype)
            except CannotLower as e:
                raise self.error(module, ins, str(e)) from None
            self._tag(region, ins, value)

    # -- errors ---------------------------------------------------------------------------------

    @staticmethod
    def name_of(module: Module, ins: Instruction) -> str:
        if ins.is_param:
            return ins.param_name
        prefix = "" if module.name == "main" else f"{module.name}:"
        for i, other in enumerate(module):
            if other is ins:
                return f"{prefix}@{i}"
        return "?"

    def error(self, module: Module, ins: Instruction, why: str) -> MgxError:
        message = f"cannot lower '{ins.op.name}' ({self.name_of(module, ins)}) to MLIR: {why}"
        source = getattr(self.program, "source", None)
        if source is not None and ins.line:
            return source.error(message, ins.line, 1)
        return MgxError(message)


def _shape_notes(shape: Shape) -> dict[str, ir.Attribute]:
    """What a tensor type does not say about a parameter's or literal's shape: an unsigned type,
    strides other than the standard ones (a scalar's {0})."""
    notes: dict[str, ir.Attribute] = {}
    if shape.dtype in UNSIGNED:
        notes[TAG_TYPE] = ir.StringAttr.get(shape.dtype.type_name)
    if not shape.is_dynamic and shape.strides != standard_strides(shape.lens):
        notes[TAG_STRIDES] = ir.DenseI64ArrayAttr.get(list(shape.strides))
    return notes


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The op whose result `value` is (None for a block argument)."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _outputs(module: Module) -> list[Instruction]:
    ret = module.return_instruction
    if ret is not None:
        return list(ret.args)
    last = module.last
    return [] if last is None else [last]


def to_mlir(program: Program, sink: DiagnosticSink | None = None) -> ir.Module:
    """The verified MLIR module of a program (in a context of its own)."""
    return Lowering(program, sink).run()
