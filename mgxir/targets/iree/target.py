"""`--target=iree` (IREE's devices: local-task, local-sync, cuda, hip, vulkan) and `--target=cpu`
(IREE's local-task, the host's CPU): lower to MLIR, compile with IREE (cached on disk by the
program's fingerprint), load with iree.runtime.

MLIR that mgx-translate wrote is read as a program too (`read`) and compiled as it is: the
program read from it remembers its source."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.program import Program
from mgxir.targets.base import CompiledProgram, Target
from mgxir.targets.iree import IreeModule, IreeOptions, Timings, compiled_module, read_any_program

# a program read from MLIR -> that MLIR, compiled instead of the program's own lowering
_MLIR_SOURCES: weakref.WeakKeyDictionary[Program, bytes] = weakref.WeakKeyDictionary()


class IreeTarget(Target):
    name = "iree"
    options_type: type = IreeOptions
    reports_timing = True

    def read(
        self, path: str, sink: DiagnosticSink, options: IreeOptions, from_log: bool, log_pass: str | None
    ) -> Program:
        program, mlir = read_any_program(path, sink, self.iree_options(options), from_log, log_pass)
        if mlir is not None:
            _MLIR_SOURCES[program] = mlir
        return program

    def iree_options(self, options: IreeOptions) -> IreeOptions:
        return options

    def compile(self, program: Program, options: IreeOptions, sink: DiagnosticSink) -> CompiledProgram:
        iree = self.iree_options(options)
        timings = Timings()
        path = compiled_module(program, iree, sink, _MLIR_SOURCES.get(program), timings)
        return CompiledProgram(self.name, program, options, (path, timings))

    def load(self, compiled: CompiledProgram, device: str | None, sink: DiagnosticSink) -> IreeModule:
        iree = self.iree_options(compiled.options)
        if device is not None and device != iree.device:
            iree = IreeOptions(device, iree.cache_dir, iree.timing)
        path, timings = compiled.artifact
        return IreeModule(compiled.program, path, iree, timings)


CPU_DEVICES = ("local-task", "local-sync")


@dataclass(frozen=True)
class CpuOptions(IreeOptions):
    device: str = field(default="local-task", metadata={"help": "local-task (threads, default) or local-sync."})


class CpuTarget(IreeTarget):
    """IREE's local-task device under its own name: the program compiled for this CPU."""

    name = "cpu"
    options_type = CpuOptions

    def iree_options(self, options: IreeOptions) -> IreeOptions:
        if options.device not in CPU_DEVICES:
            raise MgxError(f"--device for --target=cpu is local-task or local-sync, not '{options.device}'")
        return options
