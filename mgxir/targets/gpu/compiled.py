"""Compiled programs as files, loaded without compiling (docs/compiled-programs.md).

`mgx-opt -p gpu PROG -o OUT.mxr` (or `.json`) writes the lowered program: every `gpu::code_object`
with its binary and MIGraphX's fields, library calls with their solutions, and the `targets` entry
that says where the code objects run (mgxir.translate.mxr). `mgx-run OUT.mxr --target=gpu` reads
it here, checks that the code objects run on the device (architecture, platform, payload format
version, all read from the file before anything is put on the GPU) and loads it: no pass runs and
nothing is compiled."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import Operation
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.targets.gpu.ops import CodeObject, Payload, arch_platform

if TYPE_CHECKING:
    from mgxir.translate.spirv.layout import KernelLayout

# (what the kernel computes, its input shapes, its output's) -> a payload, or why there is none
PayloadMaker = Callable[[tuple[Operation, tuple], Sequence[Shape], Shape], Payload | str]
WIDEST_WAVE = 64  # threads per wave on AMD's wave64 GPUs: a block of a multiple of it serves every wave size
ELF_MAGIC = b"\x7fELF"  # how every cubin and HSACO binary starts
# what mgx-run reads as a program file (the rest is mgxir's text)
PROGRAM_FILE_READERS = {
    ".mxr": "read_mxr",
    ".json": "read_json_program",
}


def read_program_file(path: str, sink: DiagnosticSink) -> Program | None:
    """The program in a `.mxr`/`.json` file; None for another extension."""
    import importlib
    import os

    reader = PROGRAM_FILE_READERS.get(os.path.splitext(path)[1])
    if reader is None:
        return None
    return getattr(importlib.import_module("mgxir.translate.mxr"), reader)(path, sink)


def is_compiled(program: Program) -> bool:
    """Whether `program` is lowered for the GPU (its main holds the target's operators)."""
    return any(ins.op.defn.name.startswith("gpu::") for ins in program.main)


def code_objects(program: Program) -> list[CodeObject]:
    return [ins.op["code_object"] for ins in program.main if ins.op.defn.name == "gpu::code_object"]


def check_runs_on(program: Program, platform: str, arch: str, filename: str) -> None:
    """Raises one line saying why the compiled `program`'s code objects cannot run on a `platform`
    GPU of architecture `arch`: compiled elsewhere, for another architecture, or kept without
    binaries (read from text)."""
    for code in code_objects(program):
        if not code.binary:
            raise MgxError(
                f"{filename}: its code objects hold no binaries (a compiled program read from text keeps only "
                "their sizes): run the uncompiled program, or save the compiled one as .mxr"
            )
        if not code.arch:
            raise MgxError(
                f"{filename}: compiled by MIGraphX (its code objects record no architecture, platform or "
                f"compiler): mgxir runs the code objects it compiled; compile the uncompiled program for {arch}"
            )
        compiled_for = arch_platform(code.arch)
        compiled_platform = compiled_for[0] if compiled_for else "an unknown platform"
        if compiled_platform != platform:
            raise MgxError(
                f"{filename}: compiled for {code.arch} ({compiled_platform}); this GPU is {arch} ({platform}): "
                "compile the program again for it"
            )
        if code.payload == "bin" and not code.binary.startswith(ELF_MAGIC):
            raise MgxError(
                f"{filename}: a code object is not a {code.arch} binary (cubin and HSACO code objects are ELF "
                "files): the file is corrupted"
            )
        has_bin = any(p.format == "bin" and p.target == arch for p in code.payloads)
        if code.arch != arch and not code.keeps_source and not has_bin:  # `finish` makes one for it
            raise MgxError(
                f"{filename}: compiled for {code.arch}, not for this GPU's {arch} ({code.payload} payloads run "
                f"only on the architecture they were compiled for): compile the program again for {arch}"
            )


# -- portable programs: payloads beside the binaries, finished where they run -----------------------


def keep_payloads(
    program: Program,
    offload_archs: Sequence[str] = (),
    sink: DiagnosticSink | None = None,
    makers: Mapping[str, PayloadMaker] | None = None,
) -> None:
    """`--portable`: each code object of the compiled `program` keeps, beside its binary, its
    kernel's CUDA/HIP C++ source (the file's `sources`) and the `payloads` made from what it
    computes: a Vulkan `spirv` kernel where the SPIR-V generator has one, the MLIR of the
    operation as `mlirbc` (pinned to this MLIR's version) where the MLIR translation has one, and a
    ready `bin` for each architecture of `offload_archs` (`--offload-arch`: a fat program). A
    kernel left without a portable payload is warned about once, naming what it lacks."""
    from mgxir.targets.gpu.compiler import compile_source, toolchain_version

    sink = sink or DiagnosticSink()
    for arch in offload_archs:
        if arch_platform(arch) is None:
            raise MgxError(f"--offload-arch: '{arch}' is not a GPU architecture (sm_XY for CUDA, gfxNNN for HIP)")
    missing: dict[tuple[str, str], list[str]] = {}  # (what a kernel lacks, why) -> the kernels
    for ins in program.main:
        if ins.op.defn.name != "gpu::code_object":
            continue
        code: CodeObject = ins.op["code_object"]
        symbol = ins.op["symbol_name"]
        if not code.source:
            raise MgxError(
                f"--portable: code object '{symbol}' keeps no source (a program read from a file keeps only its "
                "binary): compile the uncompiled program with -p gpu --portable"
            )
        if ins.op["local"] % WIDEST_WAVE:
            why = f"its blocks of {ins.op['local']} threads are not whole 64-wide waves"
            missing.setdefault(("no launch that serves every wave size", why), []).append(symbol)
        payloads = list(code.payloads)
        made = {(p.format, p.target) for p in payloads}
        for arch in offload_archs:
            if arch != code.arch and ("bin", arch) not in made:
                payloads.append(
                    Payload("bin", arch, compile_source(code.source, symbol, arch), toolchain_version(arch))
                )
        if code.body is not None:
            expected = list(ins.op["expected_inputs"])
            inputs, output = expected[:-1], expected[-1]
            for kind, make in (PAYLOAD_MAKERS if makers is None else makers).items():
                if not any(p.format == kind for p in payloads):
                    found = make(code.body, inputs, output)
                    if isinstance(found, str):
                        missing.setdefault((f"no {kind} payload", found), []).append(symbol)
                    else:
                        payloads.append(found)
        elif makers is None and not code.payloads:
            missing.setdefault(("no portable payload", "the lowering made it of several operations"), []).append(symbol)
        ins.op = ins.op.replace(code_object=code.replace(keeps_source=True, payloads=tuple(payloads)))
    for (what, why), symbols in missing.items():  # one line per kind of payload and reason
        named = ", ".join(dict.fromkeys(symbols))
        sink.warn(f"--portable: {what} for {len(symbols)} kernel(s) ({named}): {why}")


def keep_sources(program: Program) -> None:
    """Each code object of the compiled `program` keeps its C++ source (`--portable`'s first
    payload), and no other."""
    keep_payloads(program, makers={})


def standalone(body: tuple[Operation, tuple], inputs: Sequence[Shape]) -> tuple[Program, Instruction]:
    """A program of one instruction: the kernel's operation on parameters x0, x1, ... of `inputs`."""
    op, modules = body
    program = Program()
    for module in modules:
        for sub in [module, *module.reachable_modules()]:
            program.modules.setdefault(sub.name, sub)
    main = program.main
    for i in reversed(range(len(inputs))):  # add_parameter inserts at the front: main takes x0, x1, ...
        main.add_parameter(f"x{i}", inputs[i])
    args = main.parameters()
    ins = main.insert(None, op, args, modules)
    main.add_return([ins])
    return program, ins


def spirv_payload(body: tuple[Operation, tuple], inputs: Sequence[Shape], output: Shape) -> Payload | str:
    """The Vulkan kernel of a `pointwise` or `fused_reduce` operation (mgxir.translate.spirv),
    writing `output`'s layout; the reason where there is none."""
    import json

    from mgxir.translate.spirv import binary, fusable
    from mgxir.translate.spirv.grammar import VULKAN_ENV
    from mgxir.translate.spirv.kernels import make_kernel
    from mgxir.translate.spirv.types import Unsupported

    _, ins = standalone(body, inputs)
    if not fusable(ins):
        return f"the SPIR-V generator makes pointwise and fused_reduce kernels, not '{ins.op.defn.name}'"
    ins.shape = output  # the layout the code object writes (channels-last results keep theirs)
    try:
        kernel = make_kernel(ins)
    except Unsupported as e:
        return str(e)
    return Payload("spirv", VULKAN_ENV, binary(kernel), json.dumps(layout_value(kernel.layout), sort_keys=True))


def mlirbc_payload(body: tuple[Operation, tuple], inputs: Sequence[Shape], output: Shape) -> Payload | str:
    """The operation as MLIR bytecode (mgxir.translate.mlir: linalg, tosa, arith, math) of a
    function `main(x0, x1, ...)`, stamped with this MLIR's version; the reason where there is none."""
    try:
        from mgxir.translate.mlir.api import mlir_bytecode
        from mgxir.translate.mlir.bytecode import mlir_version
    except ImportError:
        return "MLIR's Python bindings (iree-base-compiler) are not installed"
    program, _ = standalone(body, inputs)
    sink = DiagnosticSink()
    try:
        data = mlir_bytecode(program, None, sink)
    except MgxError as e:
        return str(e).splitlines()[0]
    return Payload("mlirbc", mlir_version(), data)


# the payloads made from what a kernel computes, in the order a file lists them
PAYLOAD_MAKERS: dict[str, PayloadMaker] = {"spirv": spirv_payload, "mlirbc": mlirbc_payload}


def layout_value(layout: KernelLayout) -> dict:
    """What launching a SPIR-V kernel needs (its payload's `meta`)."""
    return {
        "name": layout.name,
        "kind": layout.kind,
        "workgroup_size": layout.workgroup_size,
        "outer_rank": layout.outer_rank,
        "inner_rank": layout.inner_rank,
        "axes": list(layout.axes),
        "elements_per_invocation": layout.elements_per_invocation,
        "bindings": [[b.role, b.etype.name] for b in layout.bindings],
    }


def finish(program: Program, arch: str) -> int:
    """Gives every code object whose binary is for another architecture one for `arch`: the file's
    `bin` payload for `arch` (a fat program), else its kept source compiled by NVRTC or hiprtc
    (through the kernel cache: keyed by the source, the architecture and the compiler's version);
    returns how many were compiled."""
    from mgxir.targets.gpu.compiler import compile_source, toolchain_version

    finished = 0
    for ins in program.main:
        if ins.op.defn.name != "gpu::code_object":
            continue
        code: CodeObject = ins.op["code_object"]
        if code.arch == arch:
            continue
        ready = next((p for p in code.payloads if p.format == "bin" and p.target == arch), None)
        if ready is not None:
            if not ready.data.startswith(ELF_MAGIC):
                raise MgxError(f"a {arch} payload of '{ins.op['symbol_name']}' is not ELF: the file is corrupted")
            binary, toolchain = ready.data, ready.meta
        elif code.keeps_source:
            binary, toolchain = compile_source(code.source, ins.op["symbol_name"], arch), toolchain_version(arch)
            finished += 1
        else:
            continue
        ins.op = ins.op.replace(
            code_object=code.replace(binary=binary, size=len(binary), arch=arch, toolchain=toolchain)
        )
    return finished


# -- the payload sidecar of a compiled program written as text -------------------------------------

PAYLOADS_SUFFIX = ".payloads"  # OUT.mgx -> OUT.payloads
PAYLOADS_VERSION = 1


def payloads_path(text_path: str) -> str:
    import os

    return os.path.splitext(text_path)[0] + PAYLOADS_SUFFIX


def payloads_bytes(program: Program) -> bytes | None:
    """The sidecar that keeps what MIGraphX's text leaves out of a compiled program: each code
    object's operator value (binary, expected_inputs, output: MIGraphX's fields) in program order,
    and the program file's `targets` entries; None for a program without binaries to keep.
    msgpack, as `.mxr` files are."""
    from mgxir.translate.mxr.encoding import to_msgpack
    from mgxir.translate.mxr.program import program_to_value

    kept = [ins for ins in program.main if ins.op.defn.name == "gpu::code_object"]
    if not kept or not all(ins.op["code_object"].binary for ins in kept):
        return None
    value = program_to_value(program)
    operators = [node["operator"] for node in value["modules"]["main"]["nodes"] if node["name"] == "gpu::code_object"]
    return to_msgpack({"version": PAYLOADS_VERSION, "targets": value["targets"], "code_objects": operators})


def write_payloads(program: Program, text_path: str | None) -> None:
    """Writes the payload sidecar beside `text_path` (a file, not standard output) where
    `program` has code objects with binaries."""
    from mgxir.text.writer import write_atomically

    if text_path is None or text_path == "-":
        return
    data = payloads_bytes(program)
    if data is not None:
        write_atomically(payloads_path(text_path), data)


def attach_payloads(program: Program, text_path: str) -> None:
    """Gives the code objects of `program`, read from the text at `text_path`, what its payload
    sidecar keeps; the sidecar must match the text (the same code objects, in order, of the sizes
    and symbols the text prints): one line says where it does not."""
    import os

    from mgxir.translate.mxr.encoding import from_msgpack
    from mgxir.translate.mxr.values import ValueError_, as_array, as_int, as_object, operation_from_value

    path = payloads_path(text_path)
    kept = [ins for ins in program.main if ins.op.defn.name == "gpu::code_object"]
    if not kept or not os.path.exists(path):
        return
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise MgxError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        top = as_object(from_msgpack(data), "the sidecar")
        version = as_int(top.get("version"), "'version'")
        if version != PAYLOADS_VERSION:
            raise ValueError_(f"payload sidecar version {version}; this mgxir reads version {PAYLOADS_VERSION}")
        targets = {}
        for index, entry in enumerate(as_array(top.get("targets", []), "'targets'")):
            entry = as_object(entry, f"target {index}")
            targets[str(entry.get("name"))] = entry
        operators = as_array(top.get("code_objects"), "'code_objects'")
        if len(operators) != len(kept):
            raise ValueError_(f"it keeps {len(operators)} code object(s); {text_path} has {len(kept)}")
        for index, (ins, fields) in enumerate(zip(kept, operators, strict=True)):
            op = operation_from_value("gpu::code_object", fields, f"code object {index}", targets)
            if _printed_fields(ins.op) != _printed_fields(op):
                raise ValueError_(
                    f"code object {index} is {_describe(ins.op)} in {text_path}, {_describe(op)} in the sidecar"
                )
            ins.op = op
    except ValueError as e:  # ValueError_, and msgpack's
        raise MgxError(f"{path}: not the payload sidecar of {text_path}: {e}") from None


def _printed_fields(op: Operation) -> tuple:
    """What MIGraphX's text keeps of a code object: its size, symbol and launch."""
    return (op["code_object"].size, op["symbol_name"], op["global"], op["local"], op["output_arg"])


def _describe(op: Operation) -> str:
    size, symbol, global_size, local_size, _ = _printed_fields(op)
    return f"'{symbol}' of {size} bytes launched as {global_size}/{local_size}"
