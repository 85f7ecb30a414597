"""The reference target: the numpy interpreter runs the program as it is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mgxir.diagnostics import DiagnosticSink
from mgxir.records import FrozenRecord
from mgxir.targets.base import CompiledProgram, Executable, Target
from mgxir.targets.host import HostFallback

if TYPE_CHECKING:
    import numpy as np

    from mgxir.ir.operation import RuntimeValue
    from mgxir.ir.program import Program


class RefOptions(FrozenRecord):
    """The reference interpreter has no options (a record, not a dataclass: mgx-run's start-up)."""

    __slots__ = ()

    def __init__(self) -> None:
        pass


class RefExecutable:
    def __init__(self, program: Program, sink: DiagnosticSink) -> None:
        self.program = program
        self.sink = sink

    def run(self, params: Mapping[str, np.ndarray]) -> list[RuntimeValue]:
        return HostFallback(self.program, self.sink).run(params)


class RefTarget(Target):
    name = "ref"
    options_type = RefOptions
    keeps_compiled = False

    def compile(self, program: Program, options: RefOptions, sink: DiagnosticSink) -> CompiledProgram:
        return CompiledProgram(self.name, program, options)

    def load(self, compiled: CompiledProgram, device: str | None, sink: DiagnosticSink) -> Executable:
        return RefExecutable(compiled.program, sink)
