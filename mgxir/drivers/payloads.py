"""A compiled program as text (`-o OUT.mgx`): its code objects' binaries and the fields MIGraphX's
text leaves out go to the payload sidecar OUT.payloads, which reading OUT.mgx takes back
(mgxir.targets.gpu.compiled). Nothing is imported for a program without code objects."""

from __future__ import annotations

from mgxir.ir.program import Program


def has_code_objects(program: Program) -> bool:
    return any(ins.op.defn.name == "gpu::code_object" for ins in program.main)


def read_payloads(program: Program, path: str) -> Program:
    """`program`, read from the text file `path`, with its payload sidecar's code objects."""
    if path != "-" and has_code_objects(program):
        from mgxir.targets.gpu.compiled import attach_payloads

        attach_payloads(program, path)
    return program


def write_payloads(program: Program, output: str | None) -> None:
    """The payload sidecar beside the text file `output` of a compiled `program`."""
    if output not in (None, "-") and has_code_objects(program):
        from mgxir.targets.gpu.compiled import write_payloads as write

        write(program, output)
