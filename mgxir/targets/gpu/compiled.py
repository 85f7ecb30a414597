"""Compiled programs as files, loaded without compiling (docs/compiled-programs.md).

`mgx-opt -p gpu PROG -o OUT.mxr` (or `.json`) writes the lowered program: every `gpu::code_object`
with its binary and MIGraphX's fields, library calls with their solutions, and the `targets` entry
that says where the code objects run (mgxir.translate.mxr). `mgx-run OUT.mxr --target=gpu` reads
it here, checks that the code objects run on the device (architecture, platform, payload format
version, all read from the file before anything is put on the GPU) and loads it: no pass runs and
nothing is compiled."""

from __future__ import annotations

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.program import Program
from mgxir.targets.gpu.ops import CodeObject, arch_platform

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
        if code.arch != arch:
            raise MgxError(
                f"{filename}: compiled for {code.arch}, not for this GPU's {arch} ({code.payload} payloads run "
                f"only on the architecture they were compiled for): compile the program again for {arch}"
            )
