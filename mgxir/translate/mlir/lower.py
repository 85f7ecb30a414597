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
from iree.compiler.dialects import arith, cf, func

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.interp.interpreter import generated_literal
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape, standard_strides
from mgxir.translate.mlir import families  # noqa: F401  (registers every rule)
from mgxir.translate.mlir.emitter import Emitter
from mgxir.translate.mlir.registry import POINTWISE_AS_GENERIC, Rule, scalar_rule, sizes, tensor_rule
from mgxir.translate.mlir.scalar import CannotLower, Scalars
from mgxir.translate.mlir.types import UNSIGNED, TypeCache, lowers_type

TAG_OP = "mgx.op"
TAG_ARGS = "mgx.args"
TAG_MODULE = "mgx.module"
TAG_PARAMS = "mgx.params"
TAG_TYPE = "mgx.type"
TAG_STRIDES = "mgx.strides"
TAG_OUTER = "mgx.outer"
TAG_MODULES = "mgx.modules"
TAG_FIRST = "mgx.first"
TAG_DYN_DIMS = "mgx.dyn_dims"
PARAM_ATTR = "mgx.param"

# what an instruction lowers to: one tensor, or the elements of a tuple
Lowered = ir.Value | list[ir.Value]


class Region:
    """What one module's region knows while it is filled: the value and the reference of each
    instruction. A branch or loop body is a region inside the region of the module that holds it,
    whose values it may use (`mgx.outer` says how many regions out an argument is)."""

    def __init__(self, parent: Region | None = None) -> None:
        self.parent = parent
        self.values: dict[Instruction, Lowered] = {}
        self.refs: dict[Instruction, int] = {}
        # an instruction that lowers to no op and is the value of another (perhaps an outer one)
        self.aliases: dict[Instruction, Instruction] = {}
        # the references of the elements of a tuple instruction, and (regions out, reference) of a
        # get_tuple_elem, which lowers to no op
        self.element_refs: dict[Instruction, list[int]] = {}
        self.elements: dict[Instruction, tuple[int, int]] = {}
        self.tagged = 0

    def value(self, ins: Instruction) -> Lowered:
        region: Region | None = self
        while region is not None:
            found = region.values.get(ins)
            if found is not None:
                return found
            region = region.parent
        raise KeyError(ins)

    def reference(self, ins: Instruction) -> tuple[int, int]:
        """(how many regions out, reference there) of an instruction's value."""
        region: Region | None = self
        depth = 0
        while region is not None:
            if ins in region.aliases:
                ins = region.aliases[ins]
                continue
            if ins in region.refs:
                return depth, region.refs[ins]
            if ins in region.elements:
                out, ref = region.elements[ins]
                return depth + out, ref
            region, depth = region.parent, depth + 1
        raise KeyError(ins)

    def outer(self, depth: int) -> Region:
        region = self
        for _ in range(depth):
            assert region.parent is not None
            region = region.parent
        return region


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
        self._running: tuple[Region, Instruction] | None = None
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
        result_types = [self.types.of_shape(s) for o in outputs for s in _elements(o.shape)]
        with ir.InsertionPoint(self.module.body):
            fn = func.FuncOp(name, (arg_types, result_types))
        if not public:
            fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
        fn.arg_attrs = ir.ArrayAttr.get([self._param_attrs(p) for p in params])
        self._functions[name] = fn
        block = fn.add_entry_block()
        with ir.InsertionPoint(block):
            values = self.body(module, None, list(zip(params, block.arguments)))
            func.ReturnOp(values)
        return fn

    def body(self, module: Module, parent: Region | None, params: list[tuple[Instruction, ir.Value]]) -> list[ir.Value]:
        """Fills a region with a module at the current insertion point: its parameters bound to
        values (parameter j is the region's argument j for `mgx.args`); the module's outputs, tuple
        outputs flattened in place."""
        region = Region(parent)
        for j, (p, value) in enumerate(params):
            region.values[p] = value
            region.refs[p] = -1 - j
        outer_values, self.function_values = self.function_values, {}
        outer_pending, self._pending = self._pending, None
        self._fill(module, region)
        self.function_values, self._pending = outer_values, outer_pending
        return [v for o in _outputs(module) for v in _flat(region.value(o))]

    @property
    def region(self) -> Region:
        """The region of the instruction whose rule is running."""
        assert self._running is not None
        return self._running[0]

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
                if not ins.shape.lens:
                    raise self.error(module, ins, "a literal without elements (shape {}) has no tensor type")
                value = self.emitter.constant(self._literal_data(module, ins, index), ins.shape.dtype)
                self._tag(region, ins, value, literal=True)
                continue
            try:
                args = [region.value(a) for a in ins.args]
            except KeyError:
                raise self.error(module, ins, "an argument comes from another module (not lowered)") from None
            rule = self.rule_for(module, ins)
            if not rule.dynamic and (ins.shape.is_dynamic or any(a.shape.is_dynamic for a in ins.args)):
                raise self.error(module, ins, "dynamic dimensions have no lowering for this operator")
            if not rule.takes_tuples and any(isinstance(a, list) for a in args):
                raise self.error(module, ins, "a tuple argument has no lowering (only get_tuple_elem takes tuples)")
            if _no_elements(ins):  # nothing to compute (tosa and tensor ops refuse empty tensors)
                self._tag(region, ins, self.emitter.empty(ins.shape.dtype, ins.shape.lens))
                continue
            if ins.shape.is_dynamic and len(args) > 1 and (ins.op.defn.pointwise or ins.op.name == "pointwise"):
                self._same_run_time_sizes(ins, args)
            token = self._pending = (region, ins)
            outer_running, self._running = self._running, token
            try:
                value = rule.lower(self, ins, args)
            except CannotLower as e:
                raise self.error(module, ins, str(e)) from None
            finally:
                self._running = outer_running
            self._pending = None
            if self._consumed is token:  # `create` made the op with its tags
                region.values[ins] = value
            else:
                self._tag(region, ins, value)

    def _same_run_time_sizes(self, ins: Instruction, args: list[Lowered]) -> None:
        """`cf.assert`s that the inputs of an elementwise op have the same sizes at run time: MIGraphX
        requires equal shapes (it does not broadcast them; multibroadcast does), and the generic reads
        every input at the output's coordinates."""
        out = sizes(ins.shape)
        same = [v for v, a in zip(args, ins.args) if isinstance(v, ir.Value) and sizes(a.shape) == out]
        if len(same) < 2:
            return
        first = self.emitter.dims(same[0])
        for value in same[1:]:
            for d, (n, m) in enumerate(zip(first, self.emitter.dims(value))):
                if isinstance(n, ir.Value) or isinstance(m, ir.Value):
                    equal = arith.cmpi(arith.CmpIPredicate.eq, self._index(n), self._index(m))
                    cf.AssertOp(equal, f"{ins.op.name}: the inputs differ in dimension {d} at run time")

    def _index(self, n: int | ir.Value) -> ir.Value:
        return self.emitter.index(n) if isinstance(n, int) else n

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
        for element in _elements(shape):
            if element.is_tuple:
                raise self.error(module, ins, "a tuple of tuples has no lowering")
            if not lowers_type(element.dtype):
                raise self.error(module, ins, f"{element.dtype.type_name} has no MLIR element type")
        self._lowers_shape.add(shape)

    def _tag(self, region: Region, ins: Instruction, value: Lowered, literal: bool = False) -> None:
        """Records the instruction on the op that made its value (all the elements of a tuple come
        from one op), or refers to an argument whose value (or tuple element) it is: an
        instruction that lowers to no op."""
        region.values[ins] = value
        first = value[0] if isinstance(value, list) else value
        owner = defining_op(first)
        if owner is None or TAG_OP in owner.attributes:
            for a in ins.args:
                arg_value = region.value(a)
                if arg_value == value:
                    region.aliases[ins] = a
                    return
                if isinstance(arg_value, list) and not isinstance(value, list) and value in arg_value:
                    depth, _ = region.reference(a)
                    refs = region.outer(depth).element_refs[a]
                    region.elements[ins] = (depth, refs[arg_value.index(value)])
                    return
            raise AssertionError(f"lowering of {ins.op.text} returned a value it did not make")
        attrs = owner.attributes
        for key, tag in self._tags(region, ins).items():
            attrs[key] = tag
        if isinstance(value, list):
            start = ir.OpResult(first).result_number
            if start:
                attrs[TAG_FIRST] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), start)
            region.element_refs[ins] = list(range(region.tagged, region.tagged + len(value)))
            region.tagged += len(value)
        if literal or _shape_is_trusted(ins):
            for key, note in _shape_notes(ins.shape).items():
                attrs[key] = note

    def _tags(self, region: Region, ins: Instruction) -> dict[str, ir.Attribute]:
        """The instruction's tags; it takes the next reference of the region (a tuple takes the
        ones after it for its elements)."""
        tags: dict[str, ir.Attribute] = {TAG_OP: self._op_name(ins)}
        if ins.args:
            found = [region.reference(a) for a in ins.args]
            refs = tuple(ref for _, ref in found)
            attr = self._arg_refs.get(refs)
            if attr is None:
                attr = self._arg_refs[refs] = ir.DenseI64ArrayAttr.get(list(refs))
            tags[TAG_ARGS] = attr
            if any(depth for depth, _ in found):
                tags[TAG_OUTER] = ir.DenseI64ArrayAttr.get([depth for depth, _ in found])
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

    def pointwise(self, ins: Instruction, args: list[ir.Value]) -> Lowered:
        """A `pointwise` instruction: a `linalg.generic` whose body is its module on scalars, with
        one result per output of the module (a tuple where there are several)."""
        body = ins.module_args[0]
        params = sorted(body.parameters(), key=lambda p: p.param_name)
        if len(params) != len(args):
            raise CannotLower(f"module '{body.name}' has {len(params)} parameters but gets {len(args)} inputs")
        outputs = _outputs(body)
        shapes = _elements(ins.shape)
        lens = sizes(shapes[0])
        inputs = [(v, sizes(a.shape)) for v, a in zip(args, ins.args)]

        def fill(scalars: list[ir.Value]) -> list[ir.Value]:
            region = Region()
            for i, p in enumerate(params):
                region.values[p] = scalars[i]
                region.refs[p] = -1 - i
            self._fill_scalars(body, region)
            return [region.value(o) for o in outputs]

        results = self.emitter.elementwise_outputs(inputs, [s.dtype for s in shapes], lens, fill)
        generic = defining_op(results[0])
        assert generic is not None
        attrs = generic.attributes
        attrs[TAG_MODULE] = ir.StringAttr.get(body.name)
        attrs[TAG_PARAMS] = ir.ArrayAttr.get([ir.StringAttr.get(p.param_name) for p in params])
        return results if ins.shape.is_tuple else results[0]

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
    if shape.is_dynamic:  # the ranges of the dimensions ([min, max] pairs; optimals are dropped)
        notes[TAG_DYN_DIMS] = ir.DenseI64ArrayAttr.get([n for d in shape.dyn_dims for n in (d.min, d.max)])
    elif shape.strides != standard_strides(shape.lens):
        notes[TAG_STRIDES] = ir.DenseI64ArrayAttr.get(list(shape.strides))
    return notes


def _shape_is_trusted(ins: Instruction) -> bool:
    """Whether a dynamic result shape is only as printed (the op has no shape rule), so that
    --from-mlir needs its ranges noted."""
    shape = ins.shape
    if not shape.is_dynamic or shape.is_tuple:
        return False
    return ins.op.defn.shape(ins.op, [a.shape for a in ins.args], ins.module_args) is None


def _no_elements(ins: Instruction) -> bool:
    """A static, non-tuple result with a dimension of size 0, from an instruction that calls no
    module (a shape without dimensions, {}, is a rank-0 tensor of one element in MLIR)."""
    shape = ins.shape
    return not shape.is_tuple and not shape.is_dynamic and 0 in shape.lens and not ins.module_args


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The op whose result `value` is (None for a block argument)."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _elements(shape: Shape) -> list[Shape]:
    return list(shape.sub_shapes) if shape.is_tuple else [shape]


def _flat(value: Lowered) -> list[ir.Value]:
    return value if isinstance(value, list) else [value]


def _outputs(module: Module) -> list[Instruction]:
    ret = module.return_instruction
    if ret is not None:
        return list(ret.args)
    last = module.last
    return [] if last is None else [last]


def to_mlir(program: Program, sink: DiagnosticSink | None = None) -> ir.Module:
    """The verified MLIR module of a program (in a context of its own)."""
    return Lowering(program, sink).run()
