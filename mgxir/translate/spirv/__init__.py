"""SPIR-V compute kernels (Vulkan flavour) for the `pointwise` and `fused_reduce` modules that
MIGraphX's fusion makes.

`translate_to_spirv(program, sink)` copies the program, runs the fusion pipeline MIGraphX's GPU
target runs (rewrite_reduce, fuse_pointwise, fuse_reduce) and makes one kernel per fused
instruction of `main`; `write_kernels` writes their binaries and a manifest; `spvasm_text` is the
assembly text of all of them."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.instruction import Instruction
from mgxir.ir.names import instruction_names
from mgxir.ir.program import Program
from mgxir.passes.manager import Instrumentation, PassManager
from mgxir.passes.registry import parse_pipeline
from mgxir.text.printer import instruction_lines
from mgxir.text.writer import write_atomically
from mgxir.translate.spirv.grammar import VULKAN_ENV, SpirvToolError, assemble
from mgxir.translate.spirv.kernels import FUSED_REDUCE, POINTWISE, Kernel, KernelOptions, make_kernel
from mgxir.translate.spirv.types import Unsupported

# what MIGraphX's GPU target runs before compiling its fused kernels
FUSION_PIPELINE = "rewrite_reduce,fuse"


def fused_copy(program: Program, sink: DiagnosticSink) -> Program:
    """A copy of `program` after the fusion pipeline (the original is left as it was)."""
    fused = program.clone()
    PassManager(parse_pipeline(FUSION_PIPELINE), Instrumentation(verify_each=False)).run(fused, sink)
    return fused


@dataclass
class Translation:
    program: Program  # the fused program the kernels belong to
    kernels: dict[Instruction, Kernel] = field(default_factory=dict)
    skipped: dict[Instruction, str] = field(default_factory=dict)  # instruction -> why no kernel


def fusable(ins: Instruction) -> bool:
    return ins.op.defn is POINTWISE or ins.op.defn is FUSED_REDUCE


def translate_program(
    program: Program, sink: DiagnosticSink, options: KernelOptions | None = None, fuse: bool = True
) -> Translation:
    """Kernels for the fused instructions of `main`; those that cannot be made are warned about."""
    fused = fused_copy(program, sink) if fuse else program
    translation = Translation(fused)
    printed = instruction_lines(fused)
    named = instruction_names(fused)
    names: dict[str, int] = {}
    for ins in fused.main:
        if not fusable(ins):
            continue
        try:
            kernel = make_kernel(ins, options)
        except Unsupported as e:
            translation.skipped[ins] = str(e)
            sink.warn(
                f"no SPIR-V kernel for '{named[ins]}' "
                f"({ins.module_args[0].name}): {e}; it runs on the reference interpreter"
            )
            continue
        kernel.instruction = printed[ins]
        count = names.get(kernel.layout.name, 0)
        names[kernel.layout.name] = count + 1
        if count:
            kernel.layout.name = f"{kernel.layout.name}_{count}"
            kernel.text = kernel.text.replace(
                f"; kernel {kernel.layout.name.rsplit('_', 1)[0]}:", f"; kernel {kernel.layout.name}:", 1
            )
        translation.kernels[ins] = kernel
    return translation


def binary(kernel: Kernel) -> bytes:
    """The kernel assembled and validated for Vulkan 1.1; a rejection is a bug in mgxir."""
    try:
        return assemble(kernel.text)
    except SpirvToolError as e:
        raise RuntimeError(f"kernel {kernel.name} does not assemble or validate ({VULKAN_ENV}): {e}") from None


def spvasm_text(translation: Translation) -> str:
    return "".join(kernel.text + "\n" for kernel in translation.kernels.values())


def manifest(translation: Translation) -> dict:
    entries = []
    for kernel in translation.kernels.values():
        entry = {"file": f"{kernel.name}.spv", **kernel.layout.to_json()}
        entry["instruction"] = kernel.instruction
        entry["module"] = kernel.module
        entries.append(entry)
    return {"target_env": VULKAN_ENV, "kernels": entries}


def write_kernels(translation: Translation, directory: str) -> None:
    """`directory/NAME.spv` per kernel and `directory/manifest.json`; written to a temporary
    directory first and moved into place, so a failure leaves nothing half-written."""
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise MgxError(f"'{directory}' exists and is not a directory")
    parent = target.parent if str(target.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    binaries = {kernel.name: binary(kernel) for kernel in translation.kernels.values()}
    with tempfile.TemporaryDirectory(dir=parent, prefix=f".{target.name}.") as scratch:
        for name, data in binaries.items():
            (Path(scratch) / f"{name}.spv").write_bytes(data)
        (Path(scratch) / "manifest.json").write_text(json.dumps(manifest(translation), indent=2) + "\n")
        target.mkdir(exist_ok=True)
        stale = _kernels_listed(target / "manifest.json") - {f"{name}.spv" for name in binaries}
        for entry in os.listdir(scratch):
            os.replace(os.path.join(scratch, entry), target / entry)
        for entry in stale:  # kernels an earlier run wrote here that this program does not have
            (target / entry).unlink(missing_ok=True)


def _kernels_listed(path: Path) -> set[str]:
    """The kernel files an earlier manifest.json names (plain names only: nothing outside the folder)."""
    try:
        kernels = json.loads(path.read_text()).get("kernels", [])
        files = {k.get("file") for k in kernels if isinstance(k, dict)}
    except (OSError, ValueError, AttributeError):
        return set()
    return {f for f in files if isinstance(f, str) and f.endswith(".spv") and os.path.basename(f) == f}


def emit_spirv(program: Program, sink: DiagnosticSink, output: str | None) -> None:
    """`mgx-translate --to-spirv`: the kernels' binaries and manifest.json into directory `output`."""
    if output is None:
        raise MgxError("--to-spirv writes a directory of kernels: name it with -o DIR")
    write_kernels(translate_program(program, sink), output)


def emit_spvasm(program: Program, sink: DiagnosticSink, output: str | None) -> None:
    """`mgx-translate --to-spvasm`: every kernel as SPIR-V assembly (each validated first)."""
    translation = translate_program(program, sink)
    for kernel in translation.kernels.values():
        binary(kernel)
    text = spvasm_text(translation)
    if output is None:
        sys.stdout.write(text)
    else:
        write_atomically(output, text)
