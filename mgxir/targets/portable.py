"""Finishing a compiled program where it runs (docs/compiled-programs.md): the `load` step of the
vulkan, cpu and auto targets for a program `mgx-opt -p gpu --portable` wrote.

Each `gpu::code_object` runs from the best of its payloads for the device (`DEVICE_PAYLOADS`): a
Vulkan pipeline from its `spirv` kernel, or a function IREE compiled for this CPU (llvm-cpu) from
its `mlirbc`. MLIR bytecode another MLIR version wrote is passed over with one warning and the next
payload is taken. Library calls (`gpu::gemm`, `gpu::convolution`, `gpu::attention`) have no Vulkan
kernel: on both devices they become CPU functions IREE compiles from their definition (as the GPU
makes cuBLASLt and cuDNN plans when it loads), else they run on the shared host fallback (their
reference compute), each operator warned about once. Everything else (views, `load`s of the
scratch buffer, what the lowering left for the host) is the reference interpreter's, as on every
target. mgxir's passes do not run, and finished kernels are kept per process by (digest, device,
toolchain); IREE's modules also on disk, by its own cache.

`--target=auto` (the default for a compiled file) runs it on the first of CUDA, HIP, Vulkan and
the CPU that is present."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import RuntimeValue
from mgxir.ir.registry import make_op
from mgxir.targets.base import CompiledProgram, Target, find_target
from mgxir.targets.gpu.compiled import is_compiled
from mgxir.targets.gpu.ops import CodeObject, Payload
from mgxir.targets.host import HostFallback
from mgxir.targets.iree.target import CpuTarget
from mgxir.targets.vulkan.runner import VulkanSession, shared_device
from mgxir.targets.vulkan.target import VulkanTarget
from mgxir.translate.spirv import Translation

if TYPE_CHECKING:
    from mgxir.ir.program import Program

# the payloads each device finishes, best first
DEVICE_PAYLOADS: dict[str, tuple[str, ...]] = {"vulkan": ("spirv", "mlirbc"), "cpu": ("mlirbc",)}
# operators that call a GPU library; on Vulkan and the CPU, a CPU function or the host's reference
LIBRARY_OPS = ("gpu::gemm", "gpu::quant_gemm", "gpu::convolution", "gpu::attention")
# what --target=auto tries, in order
AUTO_ORDER = ("cuda", "hip", "vulkan", "cpu")

# (payload digest, device, toolchain) -> the finished kernel (a checked SPIR-V kernel, a loaded
# IREE module): a second load of the same file finishes nothing
FINISHED: dict[tuple[str, str, str], Any] = {}


def _filename(program: Program) -> str:
    return getattr(program, "filename", "the program")


def choose_payload(code: CodeObject, symbol: str, device: str, filename: str, sink: DiagnosticSink) -> Payload:
    """The code object's best payload for `device`; MLIR bytecode of another MLIR version is
    passed over with a one-line warning. One line where none is left."""
    refused: list[str] = []
    for kind in DEVICE_PAYLOADS[device]:
        for payload in code.payloads:
            if payload.format != kind:
                continue
            why = _unusable(payload)
            if why is None:
                return payload
            sink.warn(f"{filename}: '{symbol}': {why}; trying its next payload")
            refused.append(why)
    if not code.binary:
        raise MgxError(
            f"{filename}: its code objects hold no binaries (a compiled program read from text keeps only their "
            "sizes): run the uncompiled program, or save the compiled one as .mxr"
        )
    if not code.arch:
        raise MgxError(
            f"{filename}: compiled by MIGraphX (its code objects keep only a binary, for a GPU it does not name): "
            f"it runs on that GPU, not on {device}"
        )
    kept = ", ".join(sorted({p.format for p in code.payloads} | ({"source"} if code.keeps_source else set())))
    raise MgxError(
        f"{filename}: kernel '{symbol}' has no payload that runs on {device} "
        f"(it keeps {kept or 'only its binary'}; {device} runs {', '.join(DEVICE_PAYLOADS[device])}"
        + (f"; refused: {'; '.join(refused)}" if refused else "")
        + "): compile the program again with -p gpu --portable"
    )


def _unusable(payload: Payload) -> str | None:
    """Why this mgxir cannot finish `payload` (MLIR bytecode of another MLIR), or None."""
    if payload.format != "mlirbc":
        return None
    try:
        from mgxir.translate.mlir.bytecode import check_readable
    except ImportError:
        return "its MLIR bytecode needs IREE's compiler (iree-base-compiler), which is not installed"
    try:
        check_readable(payload.data, "its mlirbc payload")
    except MgxError as e:
        return str(e)
    return None


# -- SPIR-V payloads on Vulkan ---------------------------------------------------------------------


def spirv_kernel(payload: Payload, expected: Sequence[Any], symbol: str, filename: str) -> Any:
    """The SPIR-V payload as the Vulkan runner's kernel: its layout read from `meta` and checked
    against the code object's shapes, the module checked by spirv-val (a file can say anything)."""
    key = (payload.digest, "vulkan", payload.target)
    found = FINISHED.get(key)
    if found is not None:
        return found
    from mgxir.ir.dtype import DType
    from mgxir.translate.spirv.grammar import VULKAN_ENV, SpirvToolError, validate
    from mgxir.translate.spirv.kernels import Kernel
    from mgxir.translate.spirv.layout import Binding, KernelLayout
    from mgxir.translate.spirv.types import Unsupported, element_type

    what = f"{filename}: the spirv payload of '{symbol}'"
    try:
        meta = json.loads(payload.meta)
        bindings = meta["bindings"]
        if not isinstance(bindings, list) or len(bindings) != len(expected):
            raise ValueError(f"it binds {len(bindings)} buffers; the code object has {len(expected)}")
        made = []
        for index, ((role, type_name), shape) in enumerate(zip(bindings, expected, strict=True)):
            want = "output" if index == len(expected) - 1 else "input"
            if role != want or DType.from_name(type_name) is not shape.dtype:
                raise ValueError(f"binding {index} is {role} {type_name}, not {want} {shape.dtype.name}")
            name = "out0" if role == "output" else f"x{index}"
            made.append(Binding(index, name, role, element_type(shape.dtype)))
        layout = KernelLayout(
            _checked(meta["name"], str, "name"),
            _checked(meta["kind"], str, "kind"),
            made,
            _int_in(meta["workgroup_size"], 1, 1024, "workgroup_size"),
            _int_in(meta["outer_rank"], 0, 16, "outer_rank"),
            _int_in(meta["inner_rank"], 0, 16, "inner_rank"),
            tuple(_int_in(a, 0, 64, "axes") for a in meta["axes"]),
            elements_per_invocation=_int_in(meta["elements_per_invocation"], 1, 64, "elements_per_invocation"),
        )
        if layout.kind not in ("pointwise", "reduce"):
            raise ValueError(f"unknown kernel kind '{layout.kind}'")
        layout.check_push_size()
    except (ValueError, KeyError, TypeError, Unsupported) as e:
        raise MgxError(f"{what} is not one mgxir wrote ({e}): the file is corrupted") from None
    if payload.target != VULKAN_ENV:
        raise MgxError(f"{what} is for {payload.target}; this mgxir runs {VULKAN_ENV} kernels")
    try:
        validate(payload.data)
    except SpirvToolError as e:
        raise MgxError(f"{what} does not validate ({e}): the file is corrupted") from None
    kernel = Kernel(layout, "", symbol)
    layout.name = f"{symbol}_{payload.digest[:12]}"  # the runner keeps pipelines by name
    FINISHED[key] = kernel
    return kernel


def _checked(value: Any, kind: type, what: str) -> Any:
    if not isinstance(value, kind):
        raise ValueError(f"'{what}' is not a {kind.__name__}")
    return value


def _int_in(value: Any, low: int, high: int, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"'{what}' is not an integer from {low} to {high}")
    return value


# -- MLIR payloads on the CPU ----------------------------------------------------------------------


def iree_cpu_kernel(payload: Payload, pending: list[CpuCompile]) -> CpuFunction:
    """The mlirbc payload as a function IREE compiles for this CPU (llvm-cpu) and loads: a function
    of the kernel's inputs and the output's dtype."""
    return cpu_function(payload.digest, payload.target, payload.data, lambda: payload.data, pending)


# a kernel on the CPU: (its inputs, the output's dtype) -> the output
CpuFunction = Callable[[list[np.ndarray], Any], np.ndarray]


@dataclass
class CpuCompile:
    """A module IREE's disk cache does not hold yet: compiled with the others (`compile_pending`)."""

    key: str  # the cache's key
    mlir: bytes
    device: Any
    flags: list[str]


def cpu_function(
    digest: str, toolchain: str, source: bytes, mlir: Callable[[], bytes], pending: list[CpuCompile]
) -> CpuFunction:
    """The function IREE compiles for this CPU from `mlir()`, kept per process by (`digest`,
    llvm-cpu, `toolchain`) and on disk by `source` (what the module is made from). Where the disk
    cache does not hold it, the MLIR is made now and its compilation added to `pending`; the module
    is loaded at the first call."""
    from mgxir.targets.iree import IreeOptions, _module_key, _require_compiler
    from mgxir.targets.iree.cache import ModuleCache
    from mgxir.targets.iree.runtime import LoadedModule

    key = (digest, "llvm-cpu", toolchain)
    found = FINISHED.get(key)
    if found is not None:
        return found
    device, flags, module_key = _module_key(source, IreeOptions("local-task"))
    cache = ModuleCache(None)
    compiled = cache.get(module_key) is not None
    if not compiled:
        _require_compiler("finishing a kernel for the CPU")
        pending.append(CpuCompile(module_key, mlir(), device, flags))
    loaded: list[Any] = []

    def run(inputs: list[np.ndarray], dtype: Any) -> np.ndarray:
        if not loaded:
            path = cache.get(module_key)
            if path is None:
                raise MgxError(f"IREE's cache at {cache.directory} lost a module compiled for this run")
            loaded.append(LoadedModule(path, device))
        return loaded[0](inputs, [dtype])[0]

    if compiled:  # kept once its module is on disk (a compilation that failed keeps nothing)
        FINISHED[key] = run
    return run


def compile_pending(pending: list[CpuCompile]) -> None:
    """The modules `pending` names, compiled by IREE side by side (one compiler process per core)
    into its disk cache."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from mgxir.targets.iree.cache import ModuleCache
    from mgxir.targets.iree.compile import compile_module

    unique = list({job.key: job for job in pending}.values())
    if not unique:
        return
    cache = ModuleCache(None)

    def build(job: CpuCompile) -> None:
        cache.put(job.key, compile_module(job.mlir, job.device, job.flags))

    with ThreadPoolExecutor(max_workers=min(len(unique), os.cpu_count() or 1)) as pool:
        list(pool.map(build, unique))


# -- library calls on the CPU: a function IREE compiles from the call's own definition ---------------


def _scaled(main: Any, value: Any, factor: float) -> Any:
    """`value * factor` (a broadcast scalar literal), or `value` where the factor is 1."""
    from mgxir.ir.literal import Literal
    from mgxir.ir.shape import Shape

    if factor == 1:
        return value
    scalar = main.add_literal(Literal(Shape.make(value.shape.dtype, (1,)), np.array([factor])))
    broadcast = main.add_instruction("multibroadcast", [scalar], out_lens=value.shape.lens)
    return main.add_instruction("mul", [value, broadcast])


def _matmul(main: Any, a: Any, b: Any, quantized: bool = False) -> Any:
    """`a @ b`, a `b` of fewer dimensions broadcast over `a`'s batch (a Linear layer on a batch)."""
    if len(b.shape.lens) < len(a.shape.lens):
        b = main.add_instruction("multibroadcast", [b], out_lens=(*a.shape.lens[:-2], *b.shape.lens[-2:]))
    return main.add_instruction("quant_dot" if quantized else "dot", [a, b])


def _gemm_body(main: Any, op: Any, args: list[Any]) -> Any:
    if op["beta"] or op["epilogue"].startswith("gelu"):
        raise ValueError("beta and gelu epilogues are not written as MLIR here")
    result = _scaled(main, _matmul(main, args[0], args[1], op.defn.name == "gpu::quant_gemm"), op["alpha"])
    if op["epilogue"].endswith("bias"):
        result = main.add_instruction("add", [result, args[2]])
    return main.add_instruction("relu", [result]) if op["epilogue"].startswith("relu") else result


def _convolution_body(main: Any, op: Any, args: list[Any], modules: Sequence[Any]) -> Any:
    result = main.insert(None, op["op"], args[:2])
    if not modules:
        return result
    operands = list(args[2:])
    operands.insert(op["conv_arg"], result)
    return main.insert(None, make_op("pointwise"), operands, list(modules))


def _attention_body(main: Any, op: Any, args: list[Any]) -> Any:
    scores = _scaled(main, _matmul(main, args[0], args[1]), op["scale"])
    weights = main.add_instruction("softmax", [scores], axis=len(scores.shape.lens) - 1)
    return _matmul(main, weights, args[2])


# a library operator -> the standard operations that compute it, on the program's parameters
LIBRARY_BODIES: dict[str, Callable[[Any, Any, list[Any], Sequence[Any]], Any]] = {
    "gpu::gemm": lambda main, op, args, modules: _gemm_body(main, op, args),
    "gpu::quant_gemm": lambda main, op, args, modules: _gemm_body(main, op, args),
    "gpu::convolution": _convolution_body,
    "gpu::attention": lambda main, op, args, modules: _attention_body(main, op, args),
}


def library_mlirbc(ins: Instruction) -> bytes | str:
    """A library call (`gpu::gemm`, ...) as MLIR bytecode of `main(x0, x1, ...)`, written from its
    definition: what the CPU compiles instead of calling cuBLASLt or cuDNN. The reason where there
    is none (no MLIR bindings, or a form this does not write)."""
    try:
        from mgxir.translate.mlir.api import mlir_bytecode
    except ImportError:
        return "MLIR's Python bindings (iree-base-compiler) are not installed"
    program = _modules_program(ins)
    main = program.main
    inputs = ins.args[:-1]
    for i in reversed(range(len(inputs))):
        main.add_parameter(f"x{i}", inputs[i].shape)
    try:
        result = LIBRARY_BODIES[ins.op.defn.name](main, ins.op, main.parameters(), ins.module_args)
        if result.shape.lens != ins.shape.lens or result.shape.dtype != ins.shape.dtype:
            return f"its definition gives {result.shape.dtype.name} {list(result.shape.lens)}"
        main.add_return([result])
        return mlir_bytecode(program, None, DiagnosticSink())
    except (MgxError, ValueError, KeyError) as e:
        return str(e).splitlines()[0]


def library_function(ins: Instruction, finished: Finished, pending: list[CpuCompile]) -> str | None:
    """Gives the library call `ins` a CPU function IREE compiled from its definition (on Vulkan and
    the CPU alike: a library call runs on the host there); the reason where it has none."""
    import hashlib

    try:
        from mgxir.translate.mlir.bytecode import mlir_version
    except ImportError:
        return "MLIR's Python bindings (iree-base-compiler) are not installed"
    calls = _modules_program(ins).modules.values()
    bodies = [f"{m.name}:{i.op.text}({','.join(str(a.shape) for a in i.args)})" for m in calls for i in m]
    described = "|".join([ins.op.text, *(str(a.shape) for a in ins.args), *bodies]).encode()

    def mlir() -> bytes:
        found = library_mlirbc(ins)
        if isinstance(found, str):
            raise _NoMlir(found)
        return found

    try:
        digest = hashlib.sha256(described).hexdigest()
        finished.cpu[ins] = cpu_function(digest, mlir_version(), described, mlir, pending)
    except _NoMlir as e:
        return str(e)
    return None


class _NoMlir(Exception):
    """A library call's definition could not be written as MLIR."""


def _modules_program(ins: Instruction) -> Program:
    """A program holding the modules `ins` calls (and theirs)."""
    from mgxir.ir.program import Program

    program = Program()
    for module in ins.module_args:
        for sub in [module, *module.reachable_modules()]:
            program.modules.setdefault(sub.name, sub)
    return program


# -- the executables -------------------------------------------------------------------------------


def _inputs_of(ins: Instruction, args: Sequence[RuntimeValue]) -> list[RuntimeValue]:
    """A code object's or library call's inputs: its arguments but the one it writes (`output_arg`,
    else the last)."""
    written = (ins.op.get("output_arg") if ins.op.defn.name == "gpu::code_object" else -1) % len(args)
    return [a for i, a in enumerate(args) if i != written]


@dataclass
class Finished:
    """Each code object's finished kernel on one device: a SPIR-V kernel (Vulkan) or a CPU function."""

    vulkan: dict[Instruction, Any]
    cpu: dict[Instruction, CpuFunction]
    spirv: dict[str, bytes]  # a Vulkan kernel's name -> its SPIR-V module


def finish(program: Program, device: str, sink: DiagnosticSink) -> Finished:
    """Every code object of `program` finished for `device` (vulkan or cpu) from its best payload;
    each library operator warned about once (it runs on the host)."""
    filename = _filename(program)
    finished = Finished({}, {}, {})
    warned: set[str] = set()
    on_cpu: list[str] = []  # kernels that run from mlirbc on Vulkan's host
    pending: list[CpuCompile] = []  # IREE modules to compile
    for ins in program.main:
        name = ins.op.defn.name
        if name in LIBRARY_OPS and name not in warned:
            why = library_function(ins, finished, pending)
            if why is not None:
                warned.add(name)
                sink.warn(f"{filename}: '{name}' runs on the host (its reference compute) on {device}: {why}")
            elif device == "vulkan":
                warned.add(name)
                sink.warn(f"{filename}: '{name}' runs on the CPU (IREE, from its definition): no Vulkan kernel for it")
        elif name in LIBRARY_OPS:
            library_function(ins, finished, pending)
        if name != "gpu::code_object":
            continue
        code: CodeObject = ins.op["code_object"]
        symbol = ins.op["symbol_name"]
        payload = choose_payload(code, symbol, device, filename, sink)
        if payload.format == "spirv":
            kernel = finished.vulkan[ins] = spirv_kernel(payload, ins.op["expected_inputs"], symbol, filename)
            finished.spirv[kernel.name] = payload.data
        else:
            if device == "vulkan":
                on_cpu.append(symbol)
            finished.cpu[ins] = iree_cpu_kernel(payload, pending)
    compile_pending(pending)
    if on_cpu:
        named = ", ".join(dict.fromkeys(on_cpu))
        sink.warn(
            f"{filename}: {len(on_cpu)} kernel(s) have no spirv payload ({named}); they run on the CPU from mlirbc"
        )
    return finished


def cpu_kernel(finished: Finished, ins: Instruction) -> Callable[..., RuntimeValue] | None:
    """`ins`'s CPU function as the interpreter calls a kernel (its arguments, the output among
    them), or None where it has none."""
    function = finished.cpu.get(ins)
    if function is None:
        return None
    dtype = ins.shape.dtype

    def run(*args: RuntimeValue) -> RuntimeValue:
        return function([np.asarray(a) for a in _inputs_of(ins, args)], dtype).reshape(ins.shape.lens)

    return run


class PortableCpuRun:
    """A compiled program finished for the CPU: code objects through IREE, the rest on the host."""

    def __init__(self, program: Program, finished: Finished, sink: DiagnosticSink) -> None:
        self.fallback = HostFallback(program, sink, lambda ins: cpu_kernel(finished, ins))

    def run(self, params: Mapping[str, np.ndarray]) -> list[RuntimeValue]:
        return self.fallback.run(params)


class _PortableSession(VulkanSession):
    """One run of a compiled program on the Vulkan device: code objects with SPIR-V as device
    kernels (their results stay there), CPU functions on host copies, the rest on the host."""

    def __init__(self, program: Program, finished: Finished, sink: DiagnosticSink) -> None:
        self.finished = finished
        super().__init__(Translation(program), shared_device(), sink, finished.spirv)

    def _device_kernel(self, ins: Instruction) -> Callable[..., RuntimeValue] | None:
        kernel = self.finished.vulkan.get(ins)
        if kernel is not None:
            return lambda *args: self.launch(ins, kernel, _inputs_of(ins, args))
        on_cpu = cpu_kernel(self.finished, ins)
        if on_cpu is None:
            return None
        return lambda *args: on_cpu(*[self.to_host(a) for a in args])


class PortableVulkanRun:
    """A compiled program finished for Vulkan; each run has its own device buffers, freed after it."""

    def __init__(self, program: Program, finished: Finished, sink: DiagnosticSink) -> None:
        self.program = program
        self.finished = finished
        self.sink = sink

    def run(self, params: Mapping[str, np.ndarray]) -> list[RuntimeValue]:
        session = _PortableSession(self.program, self.finished, self.sink)
        try:
            return [session.to_host(o) for o in session.run(params)]
        finally:
            session.close()


PORTABLE_RUNS = {"vulkan": PortableVulkanRun, "cpu": PortableCpuRun}


PORTABLE = "portable"  # the artifact of a compiled program that the vulkan and cpu targets finish


# -- the targets ----------------------------------------------------------------------------------


class _ReadsCompiledText(Target):
    """A target that reads a compiled program's text with its payload sidecar (`X.payloads`)."""

    def read(self, path: str, sink: DiagnosticSink, options: Any, from_log: bool, log_pass: str | None) -> Program:
        """Program text; a compiled program's text takes back its payload sidecar (`X.payloads`)."""
        from mgxir.targets.gpu.compiled import attach_payloads

        program = super().read(path, sink, options, from_log, log_pass)
        if not from_log and path != "-" and is_compiled(program):
            attach_payloads(program, path)
        return program


class _FinishesCompiled(_ReadsCompiledText):
    """A target that runs a compiled program by finishing its payloads (`load`), with no pass and
    no compilation, and any other program as it always has."""

    def run(
        self, program: Program, params: Mapping[str, np.ndarray], options: Any, sink: DiagnosticSink
    ) -> list[RuntimeValue]:
        if is_compiled(program):
            compiled = CompiledProgram(self.name, program, options, artifact=PORTABLE)
            return self.load(compiled, None, sink).run(params)
        return super().run(program, params, options, sink)

    def load(self, compiled: CompiledProgram, device: str | None, sink: DiagnosticSink) -> Any:
        if compiled.artifact == PORTABLE:
            return PORTABLE_RUNS[self.name](compiled.program, finish(compiled.program, self.name, sink), sink)
        return super().load(compiled, device, sink)


class PortableVulkanTarget(_FinishesCompiled, VulkanTarget):
    """`--target=vulkan`: SPIR-V kernels on a Vulkan device; a compiled program's from its payloads."""


class PortableCpuTarget(_FinishesCompiled, CpuTarget):
    """`--target=cpu`: IREE's llvm-cpu; a compiled program's kernels from their mlirbc payloads."""


# -- --target=auto ---------------------------------------------------------------------------------


def _cuda_present() -> bool:
    from mgxir.targets.gpu.compiler import device_arch

    return device_arch() is not None


def _hip_present() -> bool:
    from mgxir.targets.gpu.platforms import open_platform

    try:
        open_platform("hip", 0)
    except (MgxError, ImportError, OSError, RuntimeError):
        return False
    return True  # no cover: needs an AMD GPU


def _vulkan_present() -> bool:
    try:
        from mgxir.targets.vulkan.runner import shared_device

        shared_device()
    except (MgxError, ImportError, OSError):
        return False
    return True


def _cpu_present() -> bool:
    try:
        import iree.runtime  # noqa: F401
    except ImportError:
        return False
    return True


PRESENT: dict[str, Callable[[], bool]] = {
    "cuda": _cuda_present,
    "hip": _hip_present,
    "vulkan": _vulkan_present,
    "cpu": _cpu_present,
}


def auto_device(order: Sequence[str] = AUTO_ORDER) -> str:
    """The first of `order` (cuda, hip, vulkan, cpu) present here."""
    for name in order:
        if PRESENT[name]():
            return name
    raise MgxError(f"--target=auto: none of {', '.join(order)} is present here")


@dataclass(frozen=True)
class AutoOptions:
    """auto has no options of its own: it picks the device (`--target=gpu|vulkan|cpu` pick one)."""


class AutoTarget(_ReadsCompiledText):
    """`--target=auto`: a compiled program runs on the first of CUDA, HIP, Vulkan and the CPU that
    is present (CUDA and HIP through the gpu target, the others finished here); any other program
    on the reference interpreter."""

    name = "auto"
    options_type = AutoOptions
    # program files (.mxr, JSON) are read by the driver, by their content; text here, with its sidecar
    reads_formats = frozenset({"mgx", "log"})

    def run(
        self, program: Program, params: Mapping[str, np.ndarray], options: Any, sink: DiagnosticSink
    ) -> list[RuntimeValue]:
        if not is_compiled(program):
            return find_target("ref").run(program, params, None, sink)
        device = auto_device()
        target = find_target("gpu" if device in ("cuda", "hip") else device)
        chosen = target.options({"device": f"{device}:0"} if device in ("cuda", "hip") else {})
        return target.run(program, params, chosen, sink)

    def compile(self, program: Program, options: Any, sink: DiagnosticSink) -> CompiledProgram:
        return CompiledProgram(self.name, program, options)

    def load(self, compiled: CompiledProgram, device: str | None, sink: DiagnosticSink) -> Any:
        raise MgxError("--target=auto picks a target when it runs; load on that target")
