"""ONNX import: the program MIGraphX's ONNX parser builds for a model, instruction for instruction.

The core here loads the model (with external data beside it), walks each graph in MIGraphX's order
(initializers as literals, then the inputs as parameters, then the nodes), keeps MIGraphX's names
and sizes for parameters, and hands each node to its parser in `registry.PARSERS`.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mgxir.diagnostics import DiagnosticSink, MgxError, check_allocation
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.operation import ComputeError, Operation, ShapeError
from mgxir.ir.program import Program
from mgxir.ir.registry import make_op
from mgxir.ir.shape import DynamicDimension, Shape
from mgxir.ops.layout import common_dyn_dims
from mgxir.translate.onnx.registry import PARSERS

# The largest literal the importer builds (initializers, ConstantOfShape, ...): a hostile model
# must not make it allocate more.
MAX_LITERAL_BYTES = 1 << 30

# ONNX TensorProto.DataType -> MIGraphX type, as MIGraphX's get_type maps them (COMPLEX64/128 as
# bf16 included); the types missing here are the ones MIGraphX refuses.
ONNX_TYPES: dict[int, DType] = {
    1: DType.float,
    2: DType.uint8,
    3: DType.int8,
    4: DType.uint16,
    5: DType.int16,
    6: DType.int32,
    7: DType.int64,
    9: DType.bool,
    10: DType.half,
    11: DType.double,
    12: DType.uint32,
    13: DType.uint64,
    14: DType.bf16,
    15: DType.bf16,
    16: DType.bf16,
    18: DType.fp8e4m3fnuz,
    21: DType.uint8,
    22: DType.int8,
    23: DType.fp4x2,
}
_PACKED_INT4 = (21, 22)


class ParseError(Exception):
    """What MIGraphX's parsers throw (MIGRAPHX_THROW): the model is refused with this message."""


def onnx_type(code: int) -> DType:
    found = ONNX_TYPES.get(code)
    if found is None:
        raise ParseError(f"Prototensor data type {code} not supported")
    return found


@dataclass
class ImportOptions:
    """MIGraphX's onnx_options, with the driver's defaults."""

    default_dim_value: int = 1
    default_dyn_dim_value: DynamicDimension | None = None
    input_dims: dict[str, list[int]] = field(default_factory=dict)
    dyn_input_dims: dict[str, list[DynamicDimension]] = field(default_factory=dict)
    dim_params: dict[str, DynamicDimension] = field(default_factory=dict)
    skip_unknown_operators: bool = False
    max_loop_iterations: int = 10
    limit_max_iterations: int = 65535
    use_dyn_output: bool = False
    external_data_path: str | None = None


def parse_dynamic_dimension(text: str | dict | int) -> DynamicDimension:
    """`4` or `{min:1, max:8, optimals:[2,4]}` (the driver's relaxed JSON) as a dimension."""
    value = _relaxed_json(text) if isinstance(text, str) else text
    if isinstance(value, int):
        if value < 0:
            raise MgxError(f"dimension {value} is negative")
        return DynamicDimension(value, value)
    if isinstance(value, dict) and "min" in value and "max" in value:
        lo, hi = int(value["min"]), int(value["max"])
        optimals = tuple(int(x) for x in value.get("optimals", ()))
        if lo < 0 or hi < lo:
            raise MgxError(f"dynamic dimension {text!r} needs 0 <= min <= max")
        return DynamicDimension(lo, hi, optimals)
    raise MgxError(f"expected a dimension (N or {{min:N, max:M, optimals:[...]}}), got {text!r}")


def parse_dynamic_dimensions(text: str) -> list[DynamicDimension]:
    """`[{min:1, max:4}, 3, 224, 224]` as dimensions."""
    value = _relaxed_json(text)
    if not isinstance(value, list):
        raise MgxError(f"expected a list of dimensions, got {text!r}")
    return [parse_dynamic_dimension(v) for v in value]


def _relaxed_json(text: str) -> Any:
    quoted = re.sub(r"([A-Za-z_][A-Za-z0-9_]*)\s*:", r'"\1":', text)
    try:
        return json.loads(quoted)
    except json.JSONDecodeError:
        raise MgxError(f"cannot read {text!r} as a dimension") from None


# -- node information --------------------------------------------------------------------------


@dataclass
class NodeInfo:
    """One node as its parser sees it (MIGraphX's node_info): attributes, outputs, a unique name,
    and the module instructions go into."""

    attributes: dict[str, Any]
    num_outputs: int
    name: str
    module: Module
    parser: OnnxParser
    op_type: str = ""

    # -- attributes ------------------------------------------------------------------------------

    def has(self, name: str) -> bool:
        return name in self.attributes

    def value(self, name: str) -> np.ndarray | None:
        """The attribute as MIGraphX's parse_value reads it (None where absent or not a value)."""
        attr = self.attributes.get(name)
        return None if attr is None else self.parser.parse_value(attr)

    def attr_int(self, name: str, default: int | None = None) -> int | None:
        v = self.value(name)
        return default if v is None or v.size == 0 else int(v.reshape(-1)[0])

    def attr_float(self, name: str, default: float | None = None) -> float | None:
        v = self.value(name)
        return default if v is None or v.size == 0 else float(v.reshape(-1)[0])

    def attr_ints(self, name: str, default: Sequence[int] | None = None) -> list[int] | None:
        v = self.value(name)
        return (None if default is None else list(default)) if v is None else [int(x) for x in v.reshape(-1)]

    def attr_floats(self, name: str, default: Sequence[float] | None = None) -> list[float] | None:
        v = self.value(name)
        return (None if default is None else list(default)) if v is None else [float(x) for x in v.reshape(-1)]

    def attr_str(self, name: str, default: str | None = None) -> str | None:
        attr = self.attributes.get(name)
        if attr is None:
            return default
        return attr.s.decode("utf-8", errors="replace")

    def attr_strs(self, name: str) -> list[str]:
        attr = self.attributes.get(name)
        return [] if attr is None else [s.decode("utf-8", errors="replace") for s in attr.strings]

    def attr_graph(self, name: str) -> Any:
        attr = self.attributes.get(name)
        return None if attr is None or not attr.HasField("g") else attr.g

    # -- building --------------------------------------------------------------------------------

    def add(self, op: Operation | str, *args: Instruction, modules: Sequence[Module] = (), **attrs: Any) -> Instruction:
        """Appends `op(args)` (an op name with attributes as keywords, or an Operation)."""
        if isinstance(op, str):
            op = make_op(op, **attrs)
        return self.module.insert(None, op, args, modules)

    def add_literal(self, data: Any, dtype: DType | None = None, lens: Sequence[int] | None = None) -> Instruction:
        """A literal of `data`; without `lens` a scalar ({1}, {0}) when `data` is one value."""
        return self.module.add_literal(make_literal(data, dtype, lens))

    def add_common_op(self, name: str | Operation, *args: Instruction) -> Instruction:
        return self.add(name if isinstance(name, Operation) else make_op(name), *common_args(self, list(args)))

    def add_bias(self, args: Sequence[Instruction], current: Instruction, axis: int) -> Instruction:
        if len(args) != 3:
            return current
        if current.shape.is_dynamic:
            bias = self.add("broadcast", args[2], current, axis=axis)
        else:
            bias = self.add("broadcast", args[2], axis=axis, out_lens=current.shape.lens)
        return self.add("add", current, bias)

    def make_contiguous(self, ins: Instruction) -> Instruction:
        if not ins.shape.standard:
            return self.add("contiguous", ins)
        return ins

    def eval(self, ins: Instruction) -> np.ndarray | None:
        return self.parser.eval(ins)


def make_literal(data: Any, dtype: DType | None = None, lens: Sequence[int] | None = None) -> Literal:
    array = np.asarray(data)
    if dtype is None:
        dtype = _default_dtype(array)
    if lens is None:
        shape = Shape.scalar_of(dtype) if array.size == 1 and array.ndim <= 1 else Shape.make(dtype, array.shape)
    else:
        shape = Shape.make(dtype, tuple(int(n) for n in lens))
    check_literal_size(shape)
    if shape.elements == 0:
        return Literal(shape, np.zeros(0, dtype.numpy))
    return Literal(shape, np.asarray(array).reshape(-1).astype(dtype.numpy).reshape(shape.lens))


def _default_dtype(array: np.ndarray) -> DType:
    if array.dtype == np.float64 and array.ndim == 0:
        return DType.float
    return DType.from_numpy(array.dtype)


def check_literal_size(shape: Shape) -> None:
    if any(n < 0 for n in shape.lens):
        raise ParseError(f"tensor dimensions {list(shape.lens)} are negative")
    size = math.prod(shape.lens) * max(shape.dtype.itemsize, 1)
    if size > MAX_LITERAL_BYTES:
        raise ParseError(
            f"a constant of {list(shape.lens)} {shape.dtype.type_name} elements ({size} bytes) is larger than "
            f"the importer builds ({MAX_LITERAL_BYTES} bytes)"
        )
    try:  # and a float64 temporary it may be converted from
        check_allocation(size + math.prod(shape.lens) * 8, f"a constant of {list(shape.lens)} {shape.dtype.type_name}")
    except MgxError as e:
        raise ParseError(e.message) from None


def common_type(types: Iterable[DType]) -> DType:
    """std::common_type of MIGraphX's element types, as compute_common_types takes it."""
    out: DType | None = None
    for t in types:
        out = t if out is None else _common_type2(out, t)
    assert out is not None
    return out


def _common_type2(a: DType, b: DType) -> DType:
    if a is b:
        return a
    # C++'s usual arithmetic conversions: floats win by rank; integers promote to at least int
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            return a if _FLOAT_RANK[a] >= _FLOAT_RANK[b] else b
        return a if a.is_float else b
    small, big = sorted((a, b), key=lambda t: (_INT_RANK[t], not t.is_unsigned))
    if _INT_RANK[big] < _INT_RANK[DType.int32]:
        return DType.int32
    if big.is_unsigned or not small.is_unsigned or _INT_RANK[small] < _INT_RANK[big]:
        return big
    return {DType.int32: DType.uint32, DType.int64: DType.uint64}.get(big, big)


# rank of float types under std::common_type with MIGraphX's half/bf16/fp8 classes
_FLOAT_RANK = {
    DType.fp8e4m3fnuz: 0,
    DType.fp8e4m3fn: 0,
    DType.fp8e5m2: 0,
    DType.fp8e5m2fnuz: 0,
    DType.half: 1,
    DType.bf16: 1,
    DType.float: 2,
    DType.double: 3,
}
_INT_RANK = {
    DType.bool: 0,
    DType.int8: 1,
    DType.uint8: 1,
    DType.int16: 2,
    DType.uint16: 2,
    DType.int32: 3,
    DType.uint32: 3,
    DType.int64: 4,
    DType.uint64: 4,
}


def broadcast_lens(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """MIGraphX's compute_broadcasted_lens."""
    if tuple(a) == tuple(b):
        return tuple(a)
    s0, s1 = (list(a), list(b)) if len(a) <= len(b) else (list(b), list(a))
    out = list(s1)
    offset = len(s1) - len(s0)
    for i, x in enumerate(s0):
        y = s1[offset + i]
        if x != y and x != 1 and y != 1:
            raise ParseError(
                f"COMPUTE_BROADCASTLEN: shape {{{', '.join(map(str, s0))}}} and {{{', '.join(map(str, s1))}}} mismatch!"
            )
        out[offset + i] = max(x, y)
    return tuple(out)


def broadcast_dyn_dims(shapes: Sequence[Shape]) -> tuple[DynamicDimension, ...]:
    """MIGraphX's compute_common_dyn_dims, with its parser's message."""
    try:
        return common_dyn_dims("multibroadcast", shapes)
    except ShapeError:
        raise ParseError("COMPUTE_BROADCASTED_DYN_DIMS: dynamic shapes mismatch!") from None


def common_args(info: NodeInfo, inputs: list[Instruction], lens: bool = True, types: bool = True) -> list[Instruction]:
    """MIGraphX's insert_common_args: multibroadcast to common lens, convert to the common type."""
    shapes = [i.shape for i in inputs]
    if any(s.is_dynamic for s in shapes):
        if lens:
            dims = broadcast_dyn_dims(shapes)
            first = info.add("multibroadcast", *inputs, out_dyn_dims=dims)
            inputs = [first] + [info.add("multibroadcast", i, first, out_dyn_dims=dims) for i in inputs[1:]]
        if types:
            target = common_type(s.dtype for s in shapes)
            inputs = [i if i.shape.dtype is target else info.add("convert", i, target_type=target) for i in inputs]
        return inputs
    out_lens = shapes[0].lens
    for s in shapes[1:]:
        out_lens = broadcast_lens(out_lens, s.lens)
    target = common_type(s.dtype for s in shapes)
    result = []
    for i in inputs:
        if lens and i.shape.lens != out_lens:
            i = info.add("multibroadcast", i, out_lens=out_lens)
        if types and i.shape.dtype is not target:
            i = info.add("convert", i, target_type=target)
        result.append(i)
    return result


# -- the parser ---------------------------------------------------------------------------------


class OnnxParser:
    """MIGraphX's onnx_parser: the state shared by the graphs of one model."""

    def __init__(self, options: ImportOptions, path: str, sink: DiagnosticSink):
        self.options = options
        self.path = path
        self.directory = os.path.dirname(os.path.abspath(path))
        self.sink = sink
        self.program = Program()
        self.program.main  # noqa: B018  (MIGraphX's program starts with its main module)
        self.instructions: dict[str, Instruction] = {}
        self.parent_input_nodes: set[str] = set()
        self.opset_version = 13
        self._evaluated: dict[Instruction, np.ndarray | None] = {}
        if options.default_dim_value != 0:
            if options.default_dyn_dim_value not in (None, DynamicDimension(1, 1)):
                raise MgxError("both default_dim_value and default_dyn_dim_value set to non-default value")
            self.default_dyn_dim = DynamicDimension(options.default_dim_value, options.default_dim_value)
        else:
            self.default_dyn_dim = options.default_dyn_dim_value or DynamicDimension(1, 1)
        if options.input_dims and options.dyn_input_dims:
            raise MgxError("both map_input_dims and map_dyn_input_dims non-empty, only one should be used")

    # -- values ----------------------------------------------------------------------------------

    def parse_value(self, attr: Any) -> np.ndarray | None:
        """An attribute's value (MIGraphX's parse_value): one float or int, a list, a tensor."""
        kind = attr.type
        if kind == 1:  # FLOAT
            return np.array([attr.f], np.float32)
        if kind == 2:  # INT
            return np.array([attr.i], np.int64)
        if kind == 4:  # TENSOR
            return self.parse_tensor(attr.t).data
        if kind == 6:  # FLOATS
            return np.array(list(attr.floats), np.float32)
        if kind == 7:  # INTS
            return np.array(list(attr.ints), np.int64)
        return None

    def parse_tensor(self, t: Any) -> Literal:
        """A TensorProto as a literal (raw data, typed fields, or external data)."""
        code = t.data_type
        dtype = onnx_type(code)
        dims = [int(d) for d in t.dims]
        if any(d < 0 for d in dims):
            raise ParseError(f"tensor '{t.name}' has negative dimensions {dims}")
        if code in _PACKED_INT4:
            if dims and dims[-1] > 0 and dims[-1] % 2 == 0:
                dims[-1] //= 2
            else:
                raise ParseError("Int4: currently supports only even-sized packed tensors")
        shape = Shape.make(dtype, dims) if dims else Shape.scalar_of(dtype)
        check_literal_size(shape)
        elements = math.prod(dims)
        if elements == 0:
            return Literal(Shape.make(dtype, ()), np.zeros(0, dtype.numpy))
        if t.data_location == 1:  # EXTERNAL
            raw = self._external_bytes(t, elements * dtype.itemsize)
            return Literal(shape, self._from_bytes(t, raw, dtype, elements))
        if t.HasField("raw_data"):
            return Literal(shape, self._from_bytes(t, t.raw_data, dtype, elements))
        values = self._typed_values(t, code)
        if len(values) < elements:
            raise ParseError(f"tensor '{t.name}' holds {len(values)} values for {elements} elements")
        return Literal(shape, np.asarray(values[:elements]).astype(dtype.numpy))

    @staticmethod
    def _typed_values(t: Any, code: int) -> Sequence[Any]:
        if code == 1:
            return t.float_data
        if code == 11:
            return t.double_data
        if code == 7:
            return t.int64_data
        if code in (12, 13):
            return t.uint64_data
        if code == 10:  # FLOAT16 bit patterns in int32_data
            return np.array(t.int32_data, np.uint16).view(np.float16)
        if code in (14, 15, 16):
            return np.array(t.int32_data, np.uint16).view(DType.bf16.numpy)
        if code == 18:
            return np.array(t.int32_data, np.float32)
        return t.int32_data

    @staticmethod
    def _from_bytes(t: Any, raw: bytes, dtype: DType, elements: int) -> np.ndarray:
        need = elements * dtype.itemsize
        if len(raw) < need:
            raise ParseError(
                f"tensor '{t.name}' has {len(raw)} bytes of data for {elements} {dtype.type_name} elements"
            )
        return np.frombuffer(raw, dtype=dtype.numpy, count=elements).copy()

    def _external_bytes(self, t: Any, nbytes: int) -> bytes:
        entries = {e.key: e.value for e in t.external_data}
        location = entries.get("location", "")
        if not isinstance(location, str):  # protobuf gives bytes for a string field that is not UTF-8
            raise ParseError(f"tensor '{t.name}': external data location {location!r} is not UTF-8 text")
        try:
            offset = int(entries.get("offset", "0"))
            length = int(entries.get("length", str(nbytes)))
        except ValueError:
            raise ParseError(f"tensor '{t.name}': bad external data offset or length") from None
        if not location or os.path.isabs(location):
            raise ParseError(f"tensor '{t.name}': external data location {location!r} is not a relative path")
        base = self.options.external_data_path or self.directory
        file = os.path.join(base, location)
        try:
            size = os.path.getsize(file)
            if offset < 0 or length < 0 or offset + length > size:
                raise ParseError(f"tensor '{t.name}': external data {file} has {size} bytes, not {offset}+{length}")
            with open(file, "rb") as f:
                f.seek(offset)
                return f.read(min(length, nbytes))
        except OSError as e:
            raise ParseError(f"tensor '{t.name}': cannot read external data {file}: {e.strerror}") from None

    def parse_type(self, type_proto: Any, dims: Sequence[int] | None = None) -> Shape:
        dtype = onnx_type(type_proto.tensor_type.elem_type)
        if dims is not None:
            return Shape.make(dtype, dims) if dims else Shape.scalar_of(dtype)
        dyn: list[DynamicDimension] = []
        for d in type_proto.tensor_type.shape.dim:
            kind = d.WhichOneof("value")
            if kind == "dim_param" and d.dim_param in self.options.dim_params:
                dyn.append(self.options.dim_params[d.dim_param])
            elif kind == "dim_value" and _as_int32(d.dim_value) > 0:
                dyn.append(DynamicDimension(d.dim_value, d.dim_value))
            else:
                dyn.append(self.default_dyn_dim)
        if not dyn:
            return Shape.scalar_of(dtype)
        return shape_from_dyn_dims(dtype, dyn)

    # -- constant evaluation (MIGraphX's instruction::can_eval / eval) -------------------------

    def eval(self, ins: Instruction) -> np.ndarray | None:
        """The value of an instruction computed from literals only, else None."""
        done = self._evaluated
        stack: list[tuple[Instruction, bool]] = [(ins, False)]
        while stack:
            cur, ready = stack.pop()
            if cur in done:
                continue
            if not _evaluable(cur):
                done[cur] = None
            elif cur.is_literal:
                done[cur] = cur.literal.data
            elif not ready:
                stack.append((cur, True))
                stack.extend((a, False) for a in cur.args if a not in done)
            else:
                done[cur] = self._compute(cur, [done[a] for a in cur.args])
        return done[ins]

    @staticmethod
    def _compute(ins: Instruction, args: list[np.ndarray | None]) -> np.ndarray | None:
        if any(a is None for a in args):
            return None
        try:
            kernel = ins.op.defn.kernel(ins.op, [a.shape for a in ins.args], (), _no_modules)
            with np.errstate(all="ignore"):
                return np.asarray(kernel(*args))
        except (ComputeError, ShapeError, ValueError, IndexError, TypeError) as e:
            raise ParseError(f"cannot evaluate constant {ins.op.name}: {e}") from None

    # -- graphs ----------------------------------------------------------------------------------

    def parse_model(self, model: Any) -> Program:
        versions = [o.version for o in model.opset_import if o.HasField("version")]
        if versions:
            self.opset_version = max(versions)
        if model.HasField("graph"):
            self.parse_graph(self.program.main, model.graph)
        return self.program

    def parse_graph(self, module: Module, graph: Any, inlining: bool = False) -> list[Instruction]:
        order = list(range(len(graph.node)))
        if not self._check_sorted(graph):
            self.sink.warn("onnx model is not topologically sorted. Attempting to sort...", once_key="toposort")
            order = _toposort(graph)
        mod_insts: dict[str, Instruction] = {}
        for init in graph.initializer:
            try:
                lit = module.add_literal(self.parse_tensor(init))
                if init.data_type in _PACKED_INT4:
                    lit = module.insert(None, make_op("unpack_int4"), [lit])
            except ParseError as e:
                raise ParseError(f"initializer '{init.name}': {e}") from None
            mod_insts[init.name] = lit
        for value_info in graph.input:
            name = value_info.name
            if name in mod_insts:
                continue
            if name in self.instructions:
                raise ParseError(f'module "{module.name}" has parameter name "{name}" existing in parent graph!')
            try:
                if name in self.options.input_dims:
                    shape = self.parse_type(value_info.type, self.options.input_dims[name])
                elif name in self.options.dyn_input_dims:
                    dtype = onnx_type(value_info.type.tensor_type.elem_type)
                    shape = shape_from_dyn_dims(dtype, self.options.dyn_input_dims[name])
                else:
                    shape = self.parse_type(value_info.type)
            except ParseError as e:
                raise ParseError(f"input '{name}': {e}") from None
            mod_insts[name] = module.add_parameter(name, shape)
        self.instructions.update(mod_insts)

        for index in order:
            node = graph.node[index]
            args: list[Instruction] = []
            for name in node.input:
                if not name and name not in self.instructions:
                    self.instructions[name] = module.insert(None, make_op("undefined"), [])
                found = self.instructions.get(name)
                if found is None:
                    raise ParseError(
                        f'PARSE_GRAPH: invalid onnx file. Input "{name}" is unavailable due to unordered nodes!'
                    )
                args.append(found)
            num_outputs = len(node.output)
            info = NodeInfo(
                {a.name: a for a in node.attribute},
                num_outputs,
                f"{node.op_type}_{len(module)}",
                module,
                self,
                node.op_type,
            )
            parser = PARSERS.get(node.op_type)
            try:
                if parser is None:
                    if not self.options.skip_unknown_operators:
                        raise ParseError(
                            f"Unknown operator: {node.op_type} (mgxir's ONNX importer has no parser for it)"
                        )
                    unknown = make_op("unknown:", op=node.op_type)
                    result: Any = module.insert(None, unknown, args, (), args[0].shape if args else None)
                else:
                    result = parser(self, info, args)
            except (ParseError, MgxError):
                raise
            except ShapeError as e:
                raise ParseError(f"{_node_label(node)}: {e}") from None
            except (ComputeError, ValueError, IndexError, TypeError, KeyError, ZeroDivisionError, OverflowError) as e:
                raise ParseError(f"{_node_label(node)}: {type(e).__name__}: {e}") from None
            results = result if isinstance(result, list) else [result]
            for name, ins in zip(node.output, results):
                self.instructions[name] = ins

        outputs = [self.instructions[o.name] for o in graph.output if o.name and o.name in self.instructions]
        if not inlining:
            module.add_return(outputs)
            mine = {id(i) for i in module}
            for name in [n for n, i in self.instructions.items() if id(i) in mine]:
                del self.instructions[name]
        return outputs

    def _check_sorted(self, graph: Any) -> bool:
        for value_info in graph.input:
            if value_info.name in self.parent_input_nodes:
                raise ParseError(
                    f'subgraph "{graph.name}" has parameter name "{value_info.name}" existing in parent graph!'
                )
            self.parent_input_nodes.add(value_info.name)
        for init in graph.initializer:
            self.parent_input_nodes.add(init.name)
        visited = set(self.parent_input_nodes)
        for node in graph.node:
            if any(name and name not in visited for name in node.input):
                return False
            visited.update(node.output)
        return True


def _node_label(node: Any) -> str:
    return f"{node.op_type} node '{node.name}'" if node.name else f"{node.op_type} node"


def _as_int32(value: int) -> int:
    """MIGraphX tests `static_cast<int>(dim_value) <= 0`."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def shape_from_dyn_dims(dtype: DType, dims: Sequence[DynamicDimension]) -> Shape:
    if all(d.min == d.max for d in dims):
        return Shape.make(dtype, [d.max for d in dims])
    return Shape.dynamic(dtype, dims)


def _evaluable(ins: Instruction) -> bool:
    if ins.is_literal:
        return True
    defn = ins.op.defn
    return not (
        ins.is_param
        or defn.is_builtin
        or defn.is_opaque
        or ins.module_args
        or not defn.has_compute
        or defn.name == "undefined"
    )


def _no_modules(module: Module, args: list[np.ndarray]) -> list[np.ndarray]:
    raise ComputeError("constant evaluation cannot run modules")


def _toposort(graph: Any) -> list[int]:
    """MIGraphX's toposort: depth first over consumers, each node before everything it feeds."""
    consumers: dict[str, list[int]] = {}
    for index, node in enumerate(graph.node):
        for name in node.input:
            if name:
                consumers.setdefault(name, []).append(index)
    sorted_nodes: list[int] = []
    visited: set[int] = set()
    for start in range(len(graph.node)):
        if start in visited:
            continue
        visited.add(start)
        stack = [(start, _successors(graph, start, consumers))]
        while stack:
            node, successors = stack[-1]
            for nxt in successors:
                if nxt not in visited:
                    visited.add(nxt)
                    stack.append((nxt, _successors(graph, nxt, consumers)))
                    break
            else:
                stack.pop()
                sorted_nodes.append(node)
    sorted_nodes.reverse()
    return sorted_nodes


def _successors(graph: Any, index: int, consumers: dict[str, list[int]]) -> Iterable[int]:
    return iter([c for out in graph.node[index].output if out for c in consumers.get(out, ())])


# -- entry ---------------------------------------------------------------------------------------


def load_model(path: str) -> Any:
    """The ModelProto of a file, without its external data (read later, tensor by tensor)."""
    try:
        import onnx
        from google.protobuf.message import DecodeError
    except ImportError:
        raise MgxError("ONNX import needs the 'onnx' package (pip install 'mgxir[onnx]')") from None

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise MgxError(f"{path}: cannot read: {e.strerror}") from None
    try:
        model = onnx.ModelProto()
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise MgxError(f"{path}: PARSE_FROM: Failed reading onnx file: {e}") from None
    return model


def options_from_text(
    input_dims: Sequence[str] = (),
    dim_params: Sequence[str] = (),
    dyn_input_dims: Sequence[str] = (),
    default_dim_value: int | None = None,
    batch: int | None = None,
    skip_unknown_operators: bool = False,
) -> ImportOptions:
    """Import options from the driver's option texts: `@name d1 d2 ...`, `N=V` (V a number or
    `{min:x, max:y, optimals:[...]}`), `@name [dims]`; `--batch` sets the default dimension."""
    options = ImportOptions(skip_unknown_operators=skip_unknown_operators)
    if batch is not None and default_dim_value is not None and batch != default_dim_value:
        raise MgxError("--batch and --default-dim-value disagree")
    chosen = default_dim_value if default_dim_value is not None else batch
    if chosen is not None:
        if chosen < 0:
            raise MgxError(f"default dimension {chosen} is negative")
        options.default_dim_value = chosen
    for text in input_dims:
        name, dims = _named(text, "--input-dim", "@name d1 d2 ...")
        try:
            lens = [int(d) for d in dims.replace(",", " ").split()]
        except ValueError:
            raise MgxError(f"--input-dim {text!r}: dimensions must be integers") from None
        if any(d < 0 for d in lens):
            raise MgxError(f"--input-dim {text!r}: dimensions must not be negative")
        options.input_dims[name] = lens
    for text in dyn_input_dims:
        name, dims = _named(text, "--dyn-input-dim", "@name [dims]")
        options.dyn_input_dims[name] = parse_dynamic_dimensions(dims)
    for text in dim_params:
        name, sep, value = text.lstrip("@").partition("=")
        if not sep or not name:
            raise MgxError(f"--dim-param {text!r}: expected NAME=VALUE")
        options.dim_params[name] = parse_dynamic_dimension(value.strip())
    return options


def _named(text: str, option: str, form: str) -> tuple[str, str]:
    text = text.strip()
    if not text.startswith("@") or " " not in text:
        raise MgxError(f"{option} {text!r}: expected {form}")
    name, _, rest = text[1:].partition(" ")
    return name, rest.strip()
