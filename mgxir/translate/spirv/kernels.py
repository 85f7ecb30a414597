"""SPIR-V compute kernels for `pointwise` and `fused_reduce` instructions.

Pointwise kernels: each invocation takes elements `i, i + S, ..., i + (U-1)S` of a grid-stride
loop (S invocations in all), loading every input of all U elements before computing any, so
several loads are in flight per invocation.

Reduction kernels: one workgroup per group (outer index), in a grid-stride loop over groups. The
body's values are either element values (they vary along the reduced axes) or row values (one per
group: reductions and what is computed from them alone). Each reduction is one pass over the
group's elements: every invocation folds its elements into a partial, then a tree in workgroup
memory combines the partials (log2 of the workgroup size steps). Reductions that do not need each
other share a pass. The first K elements of each invocation are unrolled, so their loads and
values stay in registers from one pass to the next; elements past K*W are visited by a loop that
reloads them in every pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mgxir.analysis.kernel_plan import StepKind, Unplannable, plan_body, plan_reduce
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.registry import lookup
from mgxir.ir.shape import Shape
from mgxir.translate.spirv.builder import ModuleBuilder
from mgxir.translate.spirv.layout import Binding, KernelLayout, View, broadcast_strides, collapse
from mgxir.translate.spirv.scalar import ScalarEmitter, Value, literal_value, lower_scalar
from mgxir.translate.spirv.types import ElementType, Kind, Unsupported, element_type

POINTWISE = lookup("pointwise")
FUSED_REDUCE = lookup("fused_reduce")


def _add(em: ScalarEmitter, a: Value, b: Value) -> Value:
    return em.op("OpFAdd" if a.kind in ("f", "d") else "OpIAdd", a.kind, a, b)


def _mul(em: ScalarEmitter, a: Value, b: Value) -> Value:
    return em.op("OpFMul" if a.kind in ("f", "d") else "OpIMul", a.kind, a, b)


# how a reducer (mgxir/ops/nn.py) folds two partials, by its `combine`
COMBINERS: dict[str, Callable[[ScalarEmitter, Value, Value], Value]] = {
    "sum": _add,
    "product": _mul,
    "max": lambda em, a, b: em.extremum(a, b, True),
    "min": lambda em, a, b: em.extremum(a, b, False),
}
# the type of each compute kind, for the reducers' identities
_KIND_TYPES: dict[Kind, DType] = {"f": DType.float, "d": DType.double, "i": DType.int32, "l": DType.int64}


@dataclass
class KernelOptions:
    workgroup_size: int | None = None  # default: by the kernel's kind and reduction size
    unroll: int | None = None  # pointwise elements per invocation and loop step (U)
    # per invocation; 512 x 4 was the fastest softmax over rows of 8192 on an H100 (bench/)
    max_cached_elements: int = 4  # per invocation, kept in registers across reduction passes (K)
    # keep values computed from the cached elements for later passes too (else only the loads)
    cache_derived: bool = True


@dataclass
class Kernel:
    layout: KernelLayout
    text: str
    module: str
    instruction: str = ""  # the instruction it implements, as printed (filled in by the translation)

    @property
    def name(self) -> str:
        return self.layout.name


# -- the writer: bindings, push constants, control flow ------------------------------------------


class KernelWriter:
    def __init__(self, layout: KernelLayout) -> None:
        self.layout = layout
        self.b = b = ModuleBuilder()
        self.em = ScalarEmitter(b)
        b.capability("Shader")
        for binding in layout.bindings:
            if binding.etype.capability:
                b.capability(binding.etype.capability)
                if binding.etype.extension:
                    b.extension(binding.etype.extension)
        self.u32 = b.int_type(32, False)
        self.bool = b.boolean()
        names = layout.push_names
        self.push_index = {name: i for i, name in enumerate(names)}
        push_struct = b.block_struct(b.array(self.u32, len(names), stride=4), "Push")
        self.push = b.variable(b.pointer("PushConstant", push_struct), "PushConstant", "push")
        self.push_word_pointer = b.pointer("PushConstant", self.u32)
        self.buffers: list[tuple[str, str, str]] = []  # (variable, element pointer type, storage type)
        for binding in layout.bindings:
            storage = _storage_type(b, binding.etype)
            block = b.block_struct(b.runtime_array(storage, binding.etype.itemsize), f"{binding.name}_block")
            variable = b.variable(b.pointer("StorageBuffer", block), "StorageBuffer", binding.name)
            b.decorate(variable, "DescriptorSet", 0)
            b.decorate(variable, "Binding", binding.index)
            if binding.role == "input":
                b.decorate(variable, "NonWritable")
            self.buffers.append((variable, b.pointer("StorageBuffer", storage), storage))
        self.builtins: dict[str, str] = {}
        self.words: dict[str, str] = {}
        self.block = ""
        self.function = b.fresh("main")
        b.emit_as(
            self.function, "OpFunction", b.enum("FunctionControl", "None"), b.function_type(b.void()), type=b.void()
        )
        self.label("entry")

    # values in the entry block -----------------------------------------------------------------

    def builtin(self, name: str) -> str:
        """The x component of a uvec3 builtin (GlobalInvocationId, WorkgroupId, ...)."""
        if name not in self.builtins:
            b = self.b
            vector = b.vector(self.u32, 3)
            variable = b.variable(b.pointer("Input", vector), "Input", name)
            b.decorate(variable, "BuiltIn", b.enum("BuiltIn", name))
            b.interface.append(variable)
            loaded = b.emit("OpLoad", variable, type=vector, name=name)
            self.builtins[name] = b.emit("OpCompositeExtract", loaded, 0, type=self.u32, name=f"{name}_x")
        return self.builtins[name]

    def word(self, name: str) -> str:
        """A push-constant word, loaded once in the entry block."""
        if name not in self.words:
            b = self.b
            pointer = b.emit(
                "OpAccessChain",
                self.push,
                b.const_uint(0),
                b.const_uint(self.push_index[name]),
                type=self.push_word_pointer,
                name="pc",
            )
            self.words[name] = b.emit("OpLoad", pointer, type=self.u32, name=_id_hint(name))
        return self.words[name]

    def uint(self, value: int) -> str:
        return self.b.const_uint(value)

    def u(self, opname: str, *ids: str, name: str = "u") -> str:
        return self.b.emit(opname, *ids, type=self.u32, name=name)

    def cond(self, opname: str, *ids: str) -> str:
        return self.b.emit(opname, *ids, type=self.bool, name="c")

    # memory --------------------------------------------------------------------------------------

    def load(self, binding: int, index: str) -> Value:
        variable, pointer_type, storage = self.buffers[binding]
        etype = self.layout.bindings[binding].etype
        pointer = self.b.emit("OpAccessChain", variable, self.uint(0), index, type=pointer_type, name="p")
        raw = self.b.emit("OpLoad", pointer, type=storage, name=self.layout.bindings[binding].name)
        return _from_storage(self.em, raw, etype)

    def store(self, binding: int, index: str, value: Value) -> None:
        variable, pointer_type, storage = self.buffers[binding]
        etype = self.layout.bindings[binding].etype
        pointer = self.b.emit("OpAccessChain", variable, self.uint(0), index, type=pointer_type, name="p")
        self.b.emit("OpStore", pointer, _to_storage(self.em, value, etype, storage))

    def offsets(
        self, index: str, lens: Sequence[str], strides: Sequence[Sequence[str]], bases: Sequence[str]
    ) -> list[str]:
        """Each binding's element offset for a linear index over `lens` (row-major)."""
        coordinates: list[str] = []
        remaining = index
        for d in range(len(lens) - 1, -1, -1):
            if d == 0:
                coordinates.append(remaining)
                break
            coordinates.append(self.u("OpUMod", remaining, lens[d], name="coord"))
            remaining = self.u("OpUDiv", remaining, lens[d], name="rest")
        coordinates.reverse()
        out = []
        for base, binding_strides in zip(bases, strides):
            total = base
            for coordinate, stride in zip(coordinates, binding_strides):
                total = self.u("OpIAdd", total, self.u("OpIMul", coordinate, stride, name="step"), name="off")
            out.append(total)
        return out

    # control flow --------------------------------------------------------------------------------

    def label(self, hint: str) -> str:
        label = self.b.fresh(hint)
        self.b.emit_as(label, "OpLabel")
        self.block = label
        return label

    def _label_as(self, label: str) -> None:
        self.b.emit_as(label, "OpLabel")
        self.block = label

    def branch(self, target: str) -> None:
        self.b.emit("OpBranch", target)

    def loop(
        self,
        start: str,
        limit: str,
        step: str,
        carried: Sequence[Value],
        body: Callable[[str, list[Value]], list[Value]],
    ) -> list[Value]:
        """`for (i = start; i < limit; i += step)` carrying values; returns their final values."""
        b = self.b
        header, body_label, continue_label, merge = (b.fresh(h) for h in ("loop", "body", "next", "done"))
        before = self.block
        self.branch(header)
        self._label_as(header)
        index, index_next = b.fresh("i"), b.fresh("i_next")
        b.emit_as(index, "OpPhi", start, before, index_next, continue_label, type=self.u32)
        phis: list[Value] = []
        nexts: list[str] = []
        for value in carried:
            phi, following = b.fresh("acc"), b.fresh("acc_next")
            b.emit_as(phi, "OpPhi", value.id, before, following, continue_label, type=self.em.type_of(value.kind))
            phis.append(Value(phi, value.kind))
            nexts.append(following)
        inside = self.cond("OpULessThan", index, limit)
        b.emit("OpLoopMerge", merge, continue_label, b.enum("LoopControl", "None"))
        b.emit("OpBranchConditional", inside, body_label, merge)
        self._label_as(body_label)
        updated = body(index, phis)
        self.branch(continue_label)
        self._label_as(continue_label)
        for following, value in zip(nexts, updated):
            b.emit_as(following, "OpCopyObject", value.id, type=self.em.type_of(value.kind))
        b.emit_as(index_next, "OpIAdd", index, step, type=self.u32)
        self.branch(header)
        self._label_as(merge)
        return phis

    def if_then(self, condition: str, body: Callable[[], None]) -> None:
        b = self.b
        then, merge = b.fresh("then"), b.fresh("endif")
        # the condition is computed before: OpSelectionMerge must come right before the branch
        b.emit("OpSelectionMerge", merge, b.enum("SelectionControl", "None"))
        b.emit("OpBranchConditional", condition, then, merge)
        self._label_as(then)
        body()
        self.branch(merge)
        self._label_as(merge)

    def barrier(self) -> None:
        spirv = self.b.spirv
        scope = self.uint(spirv.value("Scope", "Workgroup"))
        semantics = self.uint(spirv.flags("MemorySemantics", "AcquireRelease", "WorkgroupMemory"))
        self.b.emit("OpControlBarrier", scope, scope, semantics)

    def finish(self) -> str:
        b = self.b
        b.emit("OpReturn")
        b.emit("OpFunctionEnd")
        b.header.append(f"OpMemoryModel {b.enum('AddressingModel', 'Logical')} {b.enum('MemoryModel', 'GLSL450')}")
        interface = " ".join(b.interface)
        b.header.append(
            f"OpEntryPoint {b.enum('ExecutionModel', 'GLCompute')} {self.function} "
            f'"{self.layout.entry_point}" {interface}'.rstrip()
        )
        size = self.layout.workgroup_size
        b.header.append(f"OpExecutionMode {self.function} {b.enum('ExecutionMode', 'LocalSize')} {size} 1 1")
        for line in b.header:
            b.spirv.instruction(line.split()[0])
        return b.text()


def _id_hint(name: str) -> str:
    return name.replace("[", "").replace("]", "").replace(".", "_")


def _storage_type(b: ModuleBuilder, t: ElementType) -> str:
    if t.storage == "float":
        return b.float_type(t.width)
    return b.int_type(t.width, t.storage == "int")


def _from_storage(em: ScalarEmitter, raw: str, t: ElementType) -> Value:
    if t.dtype.is_fp8:
        return em.fp8_to_float(em.b.emit("OpUConvert", raw, type=em.b.int_type(32, False), name="w"), t.dtype)
    if t.dtype is DType.bf16:  # the upper half of a float
        u32 = em.b.int_type(32, False)
        wide = em.b.emit("OpUConvert", raw, type=u32, name="w")
        return em.op("OpBitcast", "f", em.b.emit("OpShiftLeftLogical", wide, em.b.const_uint(16), type=u32))
    if t.kind == "d" or (t.kind == "l" and t.width == 64):
        return Value(raw, t.kind)
    if t.kind == "l":  # uint32 in 64-bit int
        return em.op("OpBitcast", "l", em.b.emit("OpUConvert", raw, type=em.b.int_type(64, False), name="w"))
    if t.kind == "f":
        return Value(raw, "f") if t.width == 32 else em.op("OpFConvert", "f", raw)
    if t.kind == "i" and t.width < 32:
        if t.storage == "int":
            return em.op("OpSConvert", "i", raw)
        return em.op("OpBitcast", "i", em.b.emit("OpUConvert", raw, type=em.b.int_type(32, False), name="w"))
    if t.kind == "i":
        return Value(raw, "i")
    wide = em.b.emit("OpUConvert", raw, type=em.b.int_type(32, False), name="w")
    return em.op("OpINotEqual", "b", wide, em.b.const_uint(0))


def _to_storage(em: ScalarEmitter, value: Value, t: ElementType, storage: str) -> str:
    if t.dtype.is_fp8:
        return em.b.emit("OpUConvert", em.float_to_fp8(value, t.dtype), type=storage, name="narrow")
    if t.dtype is DType.bf16:  # values are already rounded to bf16: their upper 16 bits
        u32 = em.b.int_type(32, False)
        bits = em.b.emit("OpBitcast", value.id, type=u32, name="bits")
        upper = em.b.emit("OpShiftRightLogical", bits, em.b.const_uint(16), type=u32)
        return em.b.emit("OpUConvert", upper, type=storage, name="narrow")
    if t.kind == "d" or (t.kind == "l" and t.width == 64):
        return value.id
    if t.kind == "l":  # uint32: the low 32 bits
        unsigned = em.b.emit("OpBitcast", value.id, type=em.b.int_type(64, False), name="w")
        return em.b.emit("OpUConvert", unsigned, type=storage, name="narrow")
    if t.kind == "f":
        return value.id if t.width == 32 else em.b.emit("OpFConvert", value.id, type=storage, name="h")
    if t.kind == "i" and t.width < 32:  # the low bits (values are already in range)
        if t.storage == "int":
            return em.b.emit("OpSConvert", value.id, type=storage, name="narrow")
        unsigned = em.b.emit("OpBitcast", value.id, type=em.b.int_type(32, False), name="w")
        return em.b.emit("OpUConvert", unsigned, type=storage, name="narrow")
    if t.kind == "i":
        return value.id
    u32 = em.b.int_type(32, False)
    wide = em.b.emit("OpSelect", value.id, em.b.const_uint(1), em.b.const_uint(0), type=u32, name="w")
    return em.b.emit("OpUConvert", wide, type=storage, name="byte")


# -- scalar bodies ---------------------------------------------------------------------------------


def inline_pointwise(
    em: ScalarEmitter, module: Module, args: Sequence[Value], arg_types: Sequence[ElementType]
) -> list[Value]:
    """A pointwise body (its kernel plan's steps) on scalar values: its returned values."""
    try:
        plan = plan_body(module)
    except Unplannable as e:
        raise Unsupported(str(e)) from None
    env: dict[Instruction, tuple[Value, ElementType]] = {}
    for parameter, value, etype in zip(plan.parameters, args, arg_types, strict=True):
        env[parameter] = (value, etype)
    for step in plan.steps:
        ins = step.instruction
        etype = element_type(ins.shape.dtype)
        if step.kind is StepKind.LITERAL:
            env[ins] = (literal_value(em, ins.literal.data, etype), etype)
            continue
        values = [env[a][0] for a in ins.args]
        types = [env[a][1] for a in ins.args]
        env[ins] = (lower_scalar(em, ins.op, values, types, ins.shape.dtype), etype)
    return [env[a][0] for a in plan.results]


# -- pointwise kernels -----------------------------------------------------------------------------


def _static(shape: Shape, what: str) -> Shape:
    if shape.is_dynamic or shape.is_tuple:
        raise Unsupported(f"{what} has a {'dynamic' if shape.is_dynamic else 'tuple'} shape")
    return shape


def _view(shape: Shape) -> View:
    return View(shape.lens, shape.strides)


def _result_shapes(ins: Instruction) -> list[Shape]:
    return list(ins.shape.sub_shapes) if ins.shape.is_tuple else [ins.shape]


def _bindings(ins: Instruction) -> list[Binding]:
    bindings = []
    for i, arg in enumerate(ins.args):
        bindings.append(Binding(i, f"x{i}", "input", element_type(_static(arg.shape, f"input {i}").dtype)))
    for k, shape in enumerate(_result_shapes(ins)):
        bindings.append(Binding(len(bindings), f"out{k}", "output", element_type(_static(shape, "the result").dtype)))
    return bindings


def kernel_name(ins: Instruction) -> str:
    return "".join(c if c.isalnum() else "_" for c in ins.module_args[0].name)


def pointwise_kernel(ins: Instruction, options: KernelOptions | None = None) -> Kernel:
    options = options or KernelOptions()
    module = ins.module_args[0]
    bindings = _bindings(ins)
    results = _result_shapes(ins)
    lens = results[0].lens
    views = [_view(a.shape) for a in ins.args] + [_view(s) for s in results]
    rank = len(collapse(lens, [broadcast_strides(v, lens) for v in views])[0])
    layout = KernelLayout(
        kernel_name(ins), "pointwise", bindings, options.workgroup_size or 256, 0, rank, features=_features(bindings)
    )
    layout.check_push_size()
    unroll = options.unroll or 4
    layout.elements_per_invocation = unroll
    w = KernelWriter(layout)
    em = w.em
    inputs = [bd for bd in bindings if bd.role == "input"]
    outputs = [bd for bd in bindings if bd.role == "output"]
    count = w.word("count")
    dims = [w.word(f"lens[{d}]") for d in range(rank)]
    strides = [[w.word(f"{bd.name}.strides[{d}]") for d in range(rank)] for bd in bindings]
    bases = [w.word(f"{bd.name}.offset") for bd in bindings]
    invocations = w.u("OpIMul", w.builtin("NumWorkgroups"), w.uint(layout.workgroup_size), name="invocations")
    step = w.u("OpIMul", invocations, w.uint(unroll), name="step")
    last = w.u("OpISub", count, w.uint(1), name="last")

    def body(first: str, carried: list[Value]) -> list[Value]:
        slots = []
        for k in range(unroll):
            index = first if k == 0 else w.u("OpIAdd", first, w.u("OpIMul", invocations, w.uint(k)), name="idx")
            valid = None if k == 0 else w.cond("OpULessThan", index, count)
            clamped = index if valid is None else w.b.emit("OpSelect", valid, index, last, type=w.u32, name="idx")
            offsets = w.offsets(clamped, dims, strides, bases)
            values = [w.load(bd.index, offsets[bd.index]) for bd in inputs]
            slots.append((valid, offsets, values))
        computed = [inline_pointwise(em, module, values, [bd.etype for bd in inputs]) for _, _, values in slots]
        for (valid, offsets, _), results_k in zip(slots, computed):

            def store(offsets: list[str] = offsets, results_k: list[Value] = results_k) -> None:
                for bd, value in zip(outputs, results_k, strict=True):
                    w.store(bd.index, offsets[bd.index], value)

            if valid is None:
                store()
            else:
                w.if_then(valid, store)
        return []

    w.loop(w.builtin("GlobalInvocationId"), count, step, [], body)
    layout.features = sorted({*layout.features, *em.features})
    return Kernel(layout, _banner(ins, layout) + w.finish(), module.name)


def _features(bindings: Sequence[Binding]) -> list[str]:
    return sorted({b.etype.capability for b in bindings if b.etype.capability})


def _banner(ins: Instruction, layout: KernelLayout) -> str:
    return f"; kernel {layout.name}: {layout.kind} over {ins.module_args[0].name}\n"


# -- reduction kernels -----------------------------------------------------------------------------


@dataclass
class _Context:
    """Where element values are evaluated: one unrolled slot (values kept across passes), a loop
    iteration, or the row itself (offsets of the group's first element)."""

    offsets: list[str]
    memo: dict[Instruction, Value] = field(default_factory=dict)


class ReduceKernelBuilder:
    def __init__(self, ins: Instruction, options: KernelOptions) -> None:
        self.ins = ins
        self.module = ins.module_args[0]
        self.bindings = _bindings(ins)
        if len(self.bindings) != len(ins.args) + 1:
            raise Unsupported("a fused_reduce with more than one result")
        try:
            self.plan = plan = plan_reduce(self.module, ins.op["axes"], [a.shape for a in ins.args], ins.shape)
        except Unplannable as e:
            raise Unsupported(str(e)) from None
        for p in plan.parameters:
            element_type(p.shape.dtype)
            if tuple(p.shape.lens) != plan.lens:
                lens = list(p.shape.lens)
                raise Unsupported(
                    f"body parameter '{p.param_name}' has lens {lens}, not the iteration's {list(plan.lens)}"
                )
        self.axes, self.lens, self.params = plan.axes, plan.lens, list(plan.parameters)
        outer_rank = len(plan.collapsed(plan.kept)[0])
        inner_rank = len(plan.collapsed(plan.axes)[0])
        reduced = plan.row_length
        size = options.workgroup_size or max(32, min(512, 1 << max(0, (reduced - 1).bit_length())))
        if size & (size - 1):
            raise Unsupported(f"workgroup size {size} is not a power of two")
        self.cached = max(1, min(options.max_cached_elements, -(-reduced // size)))
        self.layout = KernelLayout(
            kernel_name(ins),
            "reduce",
            self.bindings,
            size,
            outer_rank,
            inner_rank,
            axes=self.axes,
            features=_features(self.bindings),
        )
        self.layout.check_push_size()
        self.w = KernelWriter(self.layout)
        self.em = self.w.em
        self.row_values: dict[Instruction, Value] = {}
        self.cache_derived = options.cache_derived

    # evaluation ----------------------------------------------------------------------------------

    def value(self, ins: Instruction, ctx: _Context) -> Value:
        if ins in self.row_values:
            return self.row_values[ins]
        if ins in ctx.memo:
            return ctx.memo[ins]
        em = self.em
        if ins.is_param:
            index = self.params.index(ins)
            result = self.w.load(index, ctx.offsets[index])
            ctx.memo[ins] = result
            return result
        kind = self.plan.step(ins).kind
        if kind is StepKind.LITERAL:
            result = literal_value(em, ins.literal.data, element_type(ins.shape.dtype))
        elif kind is StepKind.REDUCE:
            raise AssertionError(f"reduction {ins} used before its pass")
        elif kind is StepKind.VIEW:
            result = self.value(ins.args[0], ctx)
        elif kind is StepKind.POINTWISE:
            args = [self.value(a, ctx) for a in ins.args]
            types = [element_type(a.shape.dtype) for a in ins.args]
            result = inline_pointwise(em, ins.module_args[0], args, types)[0]
        else:
            args = [self.value(a, ctx) for a in ins.args]
            types = [element_type(a.shape.dtype) for a in ins.args]
            result = lower_scalar(em, ins.op, args, types, ins.shape.dtype)
        ctx.memo[ins] = result
        return result

    # the kernel ----------------------------------------------------------------------------------

    def build(self) -> Kernel:
        w, em, layout = self.w, self.em, self.layout
        size = layout.workgroup_size
        plan = self.plan
        varies = {s.instruction: s.per_element for s in plan.steps}
        levels = {s.instruction: s.level for s in plan.steps}
        body = [s.instruction for s in plan.steps]
        output = plan.result
        reductions = [r.instruction for r in plan.reductions]
        self.reducers = {r.instruction: r.reducer for r in plan.reductions}
        passes = list(plan.passes)
        ro, ri = layout.outer_rank, layout.inner_rank
        groups, count = w.word("groups"), w.word("count")
        outer_lens = [w.word(f"outer_lens[{d}]") for d in range(ro)]
        inner_lens = [w.word(f"inner_lens[{d}]") for d in range(ri)]
        outer_strides = [[w.word(f"{b.name}.outer_strides[{d}]") for d in range(ro)] for b in self.bindings]
        inner_strides = [[w.word(f"{b.name}.inner_strides[{d}]") for d in range(ri)] for b in self.bindings]
        bases = [w.word(f"{b.name}.offset") for b in self.bindings]
        local = w.builtin("LocalInvocationId")
        last = w.u("OpISub", count, w.uint(1), name="last")
        scratch = {}
        for r in reductions:
            kind = self._partial_kind(r)
            array = w.b.array(em.type_of(kind), size)
            scratch[r] = (
                w.b.variable(w.b.pointer("Workgroup", array), "Workgroup", "partials"),
                w.b.pointer("Workgroup", em.type_of(kind)),
            )
        layout.shared_bytes = size * sum(8 if self._partial_kind(r) in ("d", "l") else 4 for r in reductions)

        def group_body(group: str, carried: list[Value]) -> list[Value]:
            row_offsets = w.offsets(group, outer_lens, outer_strides, bases)

            def element_offsets(j: str) -> list[str]:
                within = w.offsets(j, inner_lens, inner_strides, [w.uint(0)] * len(self.bindings))
                return [w.u("OpIAdd", a, b, name="at") for a, b in zip(row_offsets, within)]

            slots: list[tuple[str | None, _Context]] = []
            for k in range(self.cached):
                j = local if k == 0 else w.u("OpIAdd", local, w.uint(k * size), name="j")
                valid = w.cond("OpULessThan", j, count)
                clamped = w.b.emit("OpSelect", valid, j, last, type=w.u32, name="j")
                slots.append((valid, _Context(element_offsets(clamped))))
            beyond = w.u("OpIAdd", local, w.uint(self.cached * size), name="j_rest")
            self.row_values.clear()
            for level in passes:
                self._forget_derived(slots)
                self._row_values(body, varies, levels, level - 1, row_offsets)
                members = [r for r in reductions if levels[r] == level]
                partials = [self._identity(r) for r in members]
                for valid, ctx in slots:
                    for n, r in enumerate(members):
                        x = self._partial_input(r, ctx)
                        partials[n] = em.select(Value(valid, "b"), self._combine(r, partials[n], x), partials[n])

                def rest(j: str, acc: list[Value], members: list[Instruction] = members) -> list[Value]:
                    ctx = _Context(element_offsets(j))
                    return [self._combine(r, a, self._partial_input(r, ctx)) for r, a in zip(members, acc)]

                partials = w.loop(beyond, count, w.uint(size), partials, rest)
                for r, partial in zip(members, partials):
                    self.row_values[r] = self._tree(r, partial, scratch[r], local, count)
            self._forget_derived(slots)
            self._row_values(body, varies, levels, max(passes, default=0), row_offsets)
            out = len(self.bindings) - 1
            if not varies[output]:
                value = self.value(output, _Context(row_offsets))
                w.if_then(w.cond("OpIEqual", local, w.uint(0)), lambda: w.store(out, row_offsets[out], value))
            else:
                for valid, ctx in slots:
                    result = self.value(output, ctx)
                    w.if_then(valid, lambda ctx=ctx, result=result: w.store(out, ctx.offsets[out], result))

                def write(j: str, acc: list[Value]) -> list[Value]:
                    ctx = _Context(element_offsets(j))
                    w.store(out, ctx.offsets[out], self.value(output, ctx))
                    return []

                w.loop(beyond, count, w.uint(size), [], write)
            w.barrier()  # the next group reuses the partials
            return []

        w.loop(w.builtin("WorkgroupId"), groups, w.builtin("NumWorkgroups"), [], group_body)
        ins = self.ins
        layout.features = sorted({*layout.features, *w.em.features})
        return Kernel(layout, _banner(ins, layout) + w.finish(), self.module.name)

    def _forget_derived(self, slots: list[tuple[str | None, _Context]]) -> None:
        """Without cache_derived, a pass recomputes what it needs from the cached loads (fewer live
        registers per invocation)."""
        if not self.cache_derived:
            for _, ctx in slots:
                ctx.memo = {ins: value for ins, value in ctx.memo.items() if ins.is_param}

    def _row_values(
        self,
        body: list[Instruction],
        varies: dict[Instruction, bool],
        levels: dict[Instruction, int],
        known: int,
        row_offsets: list[str],
    ) -> None:
        """Evaluates (once, outside the element loops) every row value the finished passes allow."""
        ctx = _Context(row_offsets)
        for ins in body:
            if not varies[ins] and ins not in self.row_values and levels[ins] <= known:
                if ins not in self.reducers:
                    self.row_values[ins] = self.value(ins, ctx)

    def _partial_kind(self, r: Instruction) -> Kind:
        """Partials are of the input's compute kind; truthy folds (any/all) and folds of bools
        fold 0/1 ints (bool cannot live in workgroup memory portably); integer means fold 64-bit
        partials where 32-bit ones could wrap before the division (MIGraphX divides the 64-bit
        sum; sums and products need not: they wrap modulo the type anyway)."""
        reducer, source = self.reducers[r], r.args[0].shape.dtype
        kind = element_type(source).kind
        if reducer.truthy or kind == "b":
            return "i"
        if reducer.mean and kind == "i" and self.plan.row_length >= 2 ** (32 - 8 * source.itemsize):
            return "l"
        return kind

    def _identity(self, r: Instruction) -> Value:
        kind = self._partial_kind(r)
        return self.em.const(kind, self.reducers[r].identity(_KIND_TYPES[kind]))

    def _combine(self, r: Instruction, a: Value, b: Value) -> Value:
        return COMBINERS[self.reducers[r].combine](self.em, a, b)

    def _partial_input(self, r: Instruction, ctx: _Context) -> Value:
        x = self.value(r.args[0], ctx)
        if self.reducers[r].truthy:
            x = self.em.truthy(x)
        return self.em.astype(x, self._partial_kind(r))

    def _tree(self, r: Instruction, partial: Value, scratch: tuple[str, str], local: str, count: str) -> Value:
        """Combines the workgroup's partials in workgroup memory; every invocation gets the total."""
        w, em = self.w, self.em
        variable, pointer_type = scratch
        kind = partial.kind
        value_type = em.type_of(kind)

        def at(index: str) -> str:
            return w.b.emit("OpAccessChain", variable, index, type=pointer_type, name="s")

        w.b.emit("OpStore", at(local), partial.id)
        w.barrier()
        half = self.layout.workgroup_size // 2
        while half >= 1:

            def fold(half: int = half) -> None:
                mine = Value(w.b.emit("OpLoad", at(local), type=value_type, name="s"), kind)
                other = w.u("OpIAdd", local, w.uint(half), name="peer")
                theirs = Value(w.b.emit("OpLoad", at(other), type=value_type, name="s"), kind)
                w.b.emit("OpStore", at(local), self._combine(r, mine, theirs).id)

            w.if_then(w.cond("OpULessThan", local, w.uint(half)), fold)
            w.barrier()
            half //= 2
        total = Value(w.b.emit("OpLoad", at(w.uint(0)), type=value_type, name="total"), kind)
        w.barrier()  # everyone has read the total before the partials are overwritten
        if self.reducers[r].mean:
            if kind in ("f", "d"):
                total = em.op("OpFDiv", kind, total, em.op("OpConvertUToF", kind, count))
            else:
                total = em.op("OpSDiv", kind, total, em.astype(Value(count, "i"), kind))
        result = element_type(r.shape.dtype)
        return em.round_to(em.astype(total, result.kind), result)


def reduce_kernel(ins: Instruction, options: KernelOptions | None = None) -> Kernel:
    return ReduceKernelBuilder(ins, options or KernelOptions()).build()


def make_kernel(ins: Instruction, options: KernelOptions | None = None) -> Kernel:
    """The kernel for a `pointwise` or `fused_reduce` instruction; raises Unsupported with the reason."""
    if ins.op.defn is POINTWISE:
        return pointwise_kernel(ins, options)
    if ins.op.defn is FUSED_REDUCE:
        return reduce_kernel(ins, options)
    raise Unsupported(f"'{ins.op.name}' is neither pointwise nor fused_reduce")
