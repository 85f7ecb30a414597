"""The GPU target's lowered operators, printed as MIGraphX prints its compiled programs.

Each writes its result into its last argument (an allocation that memory_coloring turns into a
`load` of the scratch buffer): `gpu::code_object` (a generated kernel: MIGraphX prints the size of
its binary, the symbol, and the launch's global and local sizes), `gpu::gemm` (a BLAS-library
matrix product; `epilogue=` appears only where a bias or activation is fused, which MIGraphX's
rocBLAS gemm does not have) and `gpu::convolution` (a DNN-library convolution, the inner op as
MIGraphX prints `gpu::miopen_op`'s). `tf32=1` (printed only when set, as MIGraphX has no such
mode) lets a float32 gemm or convolution multiply in TF32 on tensor cores (`--fp32-math=tf32`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mgxir.diagnostics import MgxError
from mgxir.ir.attributes import BOOL, FLOAT, INT, SHAPE, STRING, Attr, AttributeError_, Kind, OptionalKind
from mgxir.ir.format import format_shape
from mgxir.ir.operation import OpDef, Operation
from mgxir.ir.registry import register
from mgxir.ir.shape import Shape
from mgxir.ir.values import OpNode, Value
from mgxir.ops.common import fail, lens_text
from mgxir.records import FrozenRecord, fields

if TYPE_CHECKING:
    from mgxir.ir.module import Module


# architecture prefix -> (platform, threads per wave)
PLATFORMS = {"sm_": ("cuda", 32), "gfx": ("hip", 64)}
# a code object's own payload (MIGraphX's `code_object` field), named as MLIR's #gpu.object names
# them: a binary for one architecture (cubin, HSACO) or its assembly (PTX, AMDGCN)
PAYLOAD_FORMATS = ("bin", "isa")
# the payloads `--portable` keeps beside it (the gpu target entry's `payloads`): #gpu.object's
# formats (`offload`: LLVM/NVVM IR, `isa`, `bin`, `fatbin`) and the portable ones: the kernel's
# CUDA/HIP C++ `source`, a Vulkan `spirv` kernel and the kernel's operation as MLIR bytecode `mlirbc`
PORTABLE_FORMATS = ("offload", "isa", "bin", "fatbin", "source", "spirv", "mlirbc")
# the `targets` entry's text fields
TEXT_FIELDS = ("architecture", "payload", "toolchain", "producer")


def arch_platform(arch: str) -> tuple[str, int] | None:
    """(platform, wave size) of an architecture name (`sm_90`, `gfx942`); None for another name."""
    return next((found for prefix, found in PLATFORMS.items() if arch.startswith(prefix)), None)


# the version of what mgxir adds to a compiled program's `targets` entry; another is refused
COMPILED_FORMAT = 1


def producer() -> str:
    """`mgxir 0.1.0`: what made a compiled program."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"mgxir {version('mgxir')}"
    except PackageNotFoundError:
        return "mgxir"


class Payload(FrozenRecord):
    """One more form of a code object's kernel (`--portable`, docs/compiled-programs.md): its
    `format` (PORTABLE_FORMATS), what it is for (`target`: the architecture of a `bin`, `vulkan1.1`
    for `spirv`, the MLIR version that wrote an `mlirbc`), the bytes, and `meta`, what running it
    needs besides them (a `bin`'s toolchain; a `spirv` kernel's launch, as JSON text)."""

    format: str
    target: str
    data: bytes
    meta: str

    def __init__(self, format: str, target: str, data: bytes, meta: str = "") -> None:
        object.__setattr__(self, "format", format)
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "meta", meta)

    @property
    def digest(self) -> str:
        import hashlib

        return hashlib.sha256(self.data).hexdigest()

    def to_value(self) -> dict[str, Any]:
        from mgxir.translate.mxr.values import Binary

        return {"format": self.format, "target": self.target, "data": Binary(self.data), "meta": self.meta}

    @classmethod
    def from_value(cls, v: Any, what: str) -> Payload:
        from mgxir.translate.mxr.values import ValueError_, as_binary, as_object, as_str

        item = as_object(v, what)
        unknown = sorted(set(item) - {"format", "target", "data", "meta"})
        if unknown:
            raise ValueError_(f"{what}: unknown field '{unknown[0]}'")
        kind = as_str(item.get("format"), f"{what}'s 'format'")
        if kind not in PORTABLE_FORMATS:
            raise ValueError_(f"{what}: unknown payload format '{kind}' (one of {', '.join(PORTABLE_FORMATS)})")
        data = as_binary(item.get("data"), f"{what}'s 'data'")
        return cls(kind, as_str(item.get("target", ""), f"{what}'s 'target'"), data, as_str(item.get("meta", ""), what))


class CodeObject(FrozenRecord):
    """A compiled kernel: the binary (empty when read back from text, which keeps only its size),
    the source it was compiled from, the architecture it targets, the payload's format and the
    compiler (`nvrtc-12.8`) that made it. In a program file the binary is MIGraphX's
    `code_object` field and the rest is the program's `targets` entry (mgxir.targets.gpu.compiled);
    with `keeps_source` (`--portable`) the entry's `sources` keep the source too, by the binary's
    digest, so that another architecture compiles it where it runs."""

    binary: bytes
    size: int
    source: str
    arch: str
    payload: str
    toolchain: str
    producer: str
    keeps_source: bool
    payloads: tuple[Payload, ...]
    body: Any

    def __init__(
        self,
        binary: bytes = b"",
        size: int = 0,
        source: str = "",
        arch: str = "",
        payload: str = "bin",
        toolchain: str = "",
        producer: str = "",
        keeps_source: bool = False,
        payloads: tuple[Payload, ...] = (),
        body: Any = None,
    ):
        object.__setattr__(self, "binary", binary)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "arch", arch)
        object.__setattr__(self, "payload", payload)
        object.__setattr__(self, "toolchain", toolchain)
        object.__setattr__(self, "producer", producer)
        object.__setattr__(self, "keeps_source", keeps_source)
        object.__setattr__(self, "payloads", tuple(payloads))
        # what the kernel computes, while the lowering's process has it (never saved): the
        # instruction's operator and its module, which `--portable` makes the other payloads from
        object.__setattr__(self, "body", body)

    def replace(self, **changes: Any) -> CodeObject:
        """This code object with the fields named in `changes` changed."""
        return CodeObject(**{**{name: getattr(self, name) for name in fields(CodeObject)}, **changes})

    @classmethod
    def compiled(cls, binary: bytes, source: str, arch: str, payload: str = "bin", toolchain: str = "") -> CodeObject:
        return cls(binary, len(binary), source, arch, payload, toolchain, producer())

    def target_entry(self, where: str) -> tuple[str, dict[str, Any]]:
        """The program file's `targets` entry this code object needs (`gpu`, its metadata)."""
        if not self.binary:
            raise MgxError(
                f"cannot save {where}: its code object holds no binary (a program read from text keeps only "
                "its size); save the program as mgx-opt -p gpu compiles it"
            )
        if not self.arch:  # one MIGraphX compiled: its entry is MIGraphX's, the name alone
            return "gpu", {}
        platform = arch_platform(self.arch)
        entry = {
            "architecture": self.arch,
            "platform": platform[0] if platform else "",
            "wave_size": platform[1] if platform else 0,
            "payload": self.payload,
            "toolchain": self.toolchain,
            "producer": self.producer,
            "format": COMPILED_FORMAT,
            "binaries": {self.digest: self.size},  # merged: every binary's digest, to find a corrupted one
        }
        if self.keeps_source:  # merged with the other code objects' (mgxir.translate.mxr.program)
            entry["sources"] = {self.digest: self.source}
        if self.payloads:
            entry["payloads"] = {self.digest: [p.to_value() for p in self.payloads]}
        return "gpu", entry

    @property
    def digest(self) -> str:
        """What `sources` keeps the source under: the binary's SHA-256."""
        import hashlib

        return hashlib.sha256(self.binary).hexdigest()

    @classmethod
    def from_file(cls, binary: bytes, entry: Mapping[str, Any] | None, what: str) -> CodeObject:
        """A code object read from a program file: the binary and the file's `gpu` target entry
        (MIGraphX's own files have none beyond `name`: architecture and formats unknown)."""
        from mgxir.translate.mxr.values import ValueError_, as_array, as_int, as_object, as_str

        entry = entry or {}
        fields = {key: as_str(entry.get(key, ""), f"the gpu target's '{key}'") for key in TEXT_FIELDS}
        if "format" in entry and as_int(entry["format"], "the gpu target's 'format'") != COMPILED_FORMAT:
            raise ValueError_(
                f"compiled program format {entry['format']} (by {fields['producer'] or 'an unknown producer'}); "
                f"this mgxir reads format {COMPILED_FORMAT}: compile the program again"
            )
        payload = fields["payload"] or "bin"
        if payload not in PAYLOAD_FORMATS:
            raise ValueError_(f"{what}: unknown payload format '{payload}' (one of {', '.join(PAYLOAD_FORMATS)})")
        arch, toolchain, made_by = fields["architecture"], fields["toolchain"], fields["producer"]
        code = cls(binary, len(binary), "", arch, payload, toolchain, made_by)
        if "binaries" in entry and code.digest not in as_object(entry["binaries"], "the gpu target's 'binaries'"):
            raise ValueError_(f"{what}: the binary is not one the file was written with (another digest): corrupted")
        payloads = tuple(
            Payload.from_value(p, f"{what}: payload {i}")
            for i, p in enumerate(
                as_array(as_object(entry.get("payloads", {}), "the gpu target's 'payloads'").get(code.digest, []), what)
            )
        )
        source = as_object(entry.get("sources", {}), "the gpu target's 'sources'").get(code.digest)
        if source is None:
            return cls(binary, len(binary), "", arch, payload, toolchain, made_by, payloads=payloads)
        source = as_str(source, "a source in the gpu target's 'sources'")
        return cls(binary, len(binary), source, arch, payload, toolchain, made_by, True, payloads)


class CodeObjectKind(Kind):
    """Printed as its size; in a program file (`to_value`/`from_value`, the value form that
    mgxir.translate.mxr asks a kind from outside mgxir.ir for) the binary itself."""

    description = "a code object (printed as its size in bytes)"

    def read(self, v: Value) -> CodeObject:
        if not isinstance(v, str) or not v.isdigit():
            raise AttributeError_("expected the code object's size in bytes")
        return CodeObject(size=int(v))

    def coerce(self, x: Any) -> CodeObject:
        if not isinstance(x, CodeObject):
            raise TypeError("expected a CodeObject")
        return x

    def format(self, x: CodeObject) -> str:
        return str(x.size)

    def to_value(self, x: CodeObject) -> Any:
        from mgxir.translate.mxr.values import Binary

        return Binary(x.binary)

    def from_value(self, v: Any, what: str, target_entry: Mapping[str, Any] | None = None) -> CodeObject:
        from mgxir.translate.mxr.values import as_binary

        return CodeObject.from_file(as_binary(v, what), target_entry, what)


class ShapeListKind(Kind):
    """`std::vector<shape>` (code_object's `expected_inputs`): `{float_type, {2}, {1}; ...}` is
    not MIGraphX's text (its printer leaves the field out), so text keeps none of it."""

    description = "shapes"

    def read(self, v: Value) -> tuple[Shape, ...]:
        raise AttributeError_("expected_inputs is not written in text (MIGraphX does not print it)")

    def coerce(self, x: Any) -> tuple[Shape, ...]:
        return tuple(x)

    def format(self, x: Sequence[Shape]) -> str:
        return str(len(x))

    def to_value(self, x: Sequence[Shape]) -> Any:
        from mgxir.translate.mxr.values import shape_to_value

        return [shape_to_value(s) for s in x]

    def from_value(self, v: Any, what: str, target_entry: Mapping[str, Any] | None = None) -> tuple[Shape, ...]:
        from mgxir.translate.mxr.values import as_array, shape_from_mxr_value

        return tuple(shape_from_mxr_value(s, what) for s in as_array(v, what))


class OperationKind(Kind):
    """One operator as a value: `op=convolution[padding={0, 0},...]`."""

    description = "an operator"

    def read(self, v: Value) -> Operation:
        from mgxir.ir.registry import operation_from_node

        if isinstance(v, str):
            v = OpNode(v, ())
        if not isinstance(v, OpNode):
            raise AttributeError_("expected an operator")
        return operation_from_node(v)

    def format(self, x: Operation) -> str:
        return x.text

    def to_value(self, x: Operation) -> Any:
        """`{name, operator}`, as MIGraphX serialises an `operation` field."""
        from mgxir.translate.mxr.values import named_operation_value

        name, fields = named_operation_value(x)
        return {"name": name, "operator": fields}

    def from_value(self, v: Any, what: str, target_entry: Mapping[str, Any] | None = None) -> Operation:
        from mgxir.translate.mxr.values import EMPTY_OBJECT, as_object, as_str, operation_from_value

        item = as_object(v, what)
        return operation_from_value(as_str(item.get("name"), f"{what}: 'name'"), item.get("operator", EMPTY_OBJECT))


CODE_OBJECT = CodeObjectKind()
SHAPES = ShapeListKind()
OPERATION = OperationKind()


class _WritesOutput(OpDef):
    """A lowered op: inputs, then the output allocation; its result is that allocation."""

    arity = (1, None)
    writes_last_argument = True

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        return inputs[-1]


@register
class CodeObjectOp(_WritesOutput):
    name = "gpu::code_object"
    attributes = (
        Attr("code_object", CODE_OBJECT, CodeObject()),
        Attr("symbol_name", STRING, ""),
        Attr("global", INT, 0),
        Attr("local", INT, 0),
        Attr("expected_inputs", SHAPES, ()),
        Attr("output", OptionalKind(SHAPE), None),
        Attr("output_arg", INT, -1),
    )

    def format(self, op: Operation) -> str:
        code, symbol, global_size, local_size, _, _, output_arg = op.values
        text = f"{self.name}[code_object={code.size},symbol_name={symbol},global={global_size},local={local_size},"
        if output_arg != -1:
            text += f"output_arg={output_arg},"
        return text + "]"

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        """The output argument, as MIGraphX's `code_object_op::compute_shape`: the kernel was
        compiled for `expected_inputs` and writes `output` (where the program keeps them: text does
        not), so other arguments are refused. A launch of no threads or of blocks larger than any
        GPU runs (1024 threads) is refused too: a program file can say anything."""
        global_size, local_size, output_arg = op["global"], op["local"], op["output_arg"]
        if not -len(inputs) <= output_arg < len(inputs):
            raise fail(self.name, f"output_arg {output_arg} is out of range for {len(inputs)} arguments")
        if op["code_object"].binary and not (0 < local_size <= MAX_BLOCK and 0 < global_size):
            raise fail(self.name, f"cannot launch {global_size} threads in blocks of {local_size} (1 to {MAX_BLOCK})")
        expected = op["expected_inputs"]
        if expected and tuple(expected) != tuple(inputs):
            shapes = ", ".join(format_shape(s) for s in expected)
            given = ", ".join(format_shape(s) for s in inputs)
            raise fail(self.name, f"input shapes have changed: [{shapes}] -> [{given}]")
        output = inputs[output_arg]
        if op["output"] is not None and op["output"] != output:
            raise fail(self.name, f"the kernel writes {format_shape(op['output'])}, not {format_shape(output)}")
        return output

    def compute(self, op: Operation, inputs: list, modules: Sequence[Module], run_module: Any) -> Any:
        """A compiled kernel has no reference meaning of its own: a target finishes it from its
        payloads (the gpu, vulkan, cpu and auto targets)."""
        from mgxir.ir.operation import ComputeError

        raise ComputeError(
            f"'{op['symbol_name']}' is a compiled kernel: run the program with --target=auto, gpu, vulkan or cpu"
        )


MAX_BLOCK = 1024  # threads in one block, on every NVIDIA and AMD GPU


def _without_defaults(text: str, defaults: Sequence[str]) -> str:
    """The op's text without the attributes MIGraphX's op has no field for, where they are at
    their defaults (`,name=value` followed by `,` or `]`)."""
    return re.sub(r",(?:" + "|".join(re.escape(d) for d in defaults) + r")(?=[,\]])", "", text)


# how a gemm's result is finished inside the library call (cuBLASLt / hipBLASLt epilogues)
EPILOGUES = ("none", "bias", "relu", "relu_bias", "gelu", "gelu_bias")


@register
class Gemm(_WritesOutput):
    """Inputs (A, B[, bias], output): `output = epilogue(alpha * A @ B)`; the bias is a vector along
    the last dimension of the output."""

    name = "gpu::gemm"
    attributes = (
        Attr("alpha", FLOAT, 1.0),
        Attr("beta", FLOAT, 0.0),
        Attr("compute_fp32", BOOL, True),
        Attr("trans_batch", INT, 0),
        Attr("solution_idx", INT, 0),
        Attr("epilogue", STRING, "none"),
        Attr("tf32", BOOL, False),
    )
    arity = (3, 4)

    def format(self, op: Operation) -> str:
        return _without_defaults(super().format(op), ("epilogue=none", "tf32=0"))

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        if op["epilogue"] not in EPILOGUES:
            raise fail(self.name, f"unknown epilogue '{op['epilogue']}' (one of {', '.join(EPILOGUES)})")
        with_bias = op["epilogue"].endswith("bias")
        if len(inputs) != (4 if with_bias else 3):
            raise fail(self.name, f"epilogue '{op['epilogue']}' takes {4 if with_bias else 3} arguments")
        a, b, out = inputs[0], inputs[1], inputs[-1]
        _matrices(self.name, (a, b, out))
        if a.lens[-1] != b.lens[-2] or out.lens[-2:] != (a.lens[-2], b.lens[-1]):
            raise fail(
                self.name, f"cannot multiply {lens_text(a.lens)} by {lens_text(b.lens)} into {lens_text(out.lens)}"
            )
        return out

    def compute(self, op: Operation, inputs: list, modules: Sequence[Module], run_module: Any) -> Any:
        """What the BLAS library computes: `alpha * A @ B + beta * out (+ bias)`, accumulated in
        float32 (int32 for integers), then the epilogue's activation; gelu as cuBLASLt's (tanh)."""
        import numpy as np

        a, b, out = inputs[0], inputs[1], inputs[-1]
        accumulate = np.int32 if out.dtype.kind in "iu" else np.float32
        result = op["alpha"] * np.matmul(a.astype(accumulate), b.astype(accumulate))
        if op["beta"]:
            result = result + op["beta"] * out.astype(accumulate)
        if op["epilogue"].endswith("bias"):
            result = result + inputs[2].astype(accumulate)
        activation = op["epilogue"].removesuffix("_bias")
        if activation == "relu":
            result = np.maximum(result, 0)
        elif activation == "gelu":
            result = 0.5 * result * (1 + np.tanh(0.7978845608028654 * (result + 0.044715 * result**3)))
        return np.asarray(result).astype(out.dtype)


def _matrices(name: str, shapes: Sequence[Shape]) -> None:
    """A product's operands and result: static, of rank 2 or more (batches of matrices)."""
    for i, shape in enumerate(shapes):
        if shape.is_dynamic or shape.is_tuple or len(shape.lens) < 2:
            raise fail(name, f"input {i} must be a static matrix or batch of matrices, not {lens_text(shape.lens)}")


@register
class QuantGemm(Gemm):
    name = "gpu::quant_gemm"


@register
class Convolution(_WritesOutput):
    """Inputs (x, w, epilogue operands..., output): `output = epilogue(convolution(x, w), ...)` in
    the DNN library. The epilogue, where there is one, is the pointwise module it fused (its
    parameter number `conv_arg` in name order is the convolution's result; `epilogue=` names its
    operators). `solution_id` is the library plan chosen by --exhaustive-tune (-1: the library's
    first choice)."""

    name = "gpu::convolution"
    attributes = (
        Attr("op", OPERATION, None),
        Attr("algo", INT, 0),
        Attr("solution_id", INT, -1),
        Attr("epilogue", STRING, "none"),
        Attr("conv_arg", INT, 0),
        Attr("tf32", BOOL, False),
    )
    arity = (3, None)
    module_arity = (0, 1)

    def format(self, op: Operation) -> str:
        return _without_defaults(super().format(op), ("epilogue=none", "conv_arg=0", "tf32=0"))

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        if (op["epilogue"] == "none") != (not modules) or (not modules and len(inputs) != 3):
            raise fail(self.name, "an epilogue needs its module, and only an epilogue takes extra inputs")
        return inputs[-1]

    def compute(self, op: Operation, inputs: list, modules: Sequence[Module], run_module: Any) -> Any:
        """The inner convolution's reference result, then the epilogue module on it (parameter
        `conv_arg` in name order) and the extra inputs (the others, in order)."""
        import numpy as np

        inner: Operation = op["op"]
        x, w, extras, out = inputs[0], inputs[1], inputs[2:-1], inputs[-1]
        result = inner.defn.compute(inner, [x, w], [], run_module)
        if modules:
            operands = list(extras)
            operands.insert(op["conv_arg"], result)
            result = run_module(modules[0], operands)[0]
        return np.asarray(result).astype(out.dtype)


@register
class Attention(_WritesOutput):
    """Inputs (Q, K^T, V, output): `output = softmax(scale * Q @ K^T) @ V` in the DNN library (one
    fused kernel, flash-attention style): the lowering's fusion of dot -> scaled softmax -> dot.
    Q is (..., s, d), K^T (..., d, s_kv) and V (..., s_kv, d_v), any strides."""

    name = "gpu::attention"
    attributes = (Attr("scale", FLOAT, 1.0),)
    arity = (4, 4)

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape:
        q, k_t, v, out = inputs
        _matrices(self.name, (q, k_t, v, out))
        if q.lens[-1] != k_t.lens[-2] or k_t.lens[-1] != v.lens[-2] or out.lens[-2:] != (q.lens[-2], v.lens[-1]):
            lens = ", ".join(lens_text(s.lens) for s in (q, k_t, v))
            raise fail(self.name, f"cannot attend {lens} (query, transposed key, value) into {lens_text(out.lens)}")
        return out

    def compute(self, op: Operation, inputs: list, modules: Sequence[Module], run_module: Any) -> Any:
        """`softmax(scale * Q @ K^T) @ V`, in float32."""
        import numpy as np

        q, k_t, v, out = (a.astype(np.float32) if a is not inputs[-1] else a for a in inputs)
        scores = op["scale"] * np.matmul(q, k_t)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return np.matmul(scores / scores.sum(axis=-1, keepdims=True), v).astype(out.dtype)
