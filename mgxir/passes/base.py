"""What every pass is: a small class with a MIGraphX name, a description and typed option fields."""

from __future__ import annotations

import abc
import dataclasses
from collections import Counter
from typing import ClassVar

from mgxir.diagnostics import DiagnosticSink, Location, MgxError
from mgxir.ir.module import Module
from mgxir.ir.program import Program
from mgxir.ir.traits import FusedBody
from mgxir.records import Record


class PassContext(Record):
    """What a pass reports while it runs: named counters for `--pass-statistics`, and warnings."""

    def __init__(
        self, statistics: Counter[str] | None = None, main_only: bool = False, sink: DiagnosticSink | None = None
    ):
        self.statistics: Counter[str] = Counter() if statistics is None else statistics
        self.main_only = main_only  # run module passes on the main module only (`read -O` does)
        self.sink = sink if sink is not None else DiagnosticSink()

    def count(self, what: str, n: int = 1) -> None:
        self.statistics[what] += n

    def warn(self, message: str, location: Location | None = None, source_line: str | None = None) -> None:
        self.sink.warn(message, location, source_line)


class PassRefusal(MgxError):
    """A pass declines the program it was given, by a rule the user asked for (`--no-host`): the
    pass manager reports it as it is, at its place in the input, with no reproducer."""


@dataclasses.dataclass
class Pass(abc.ABC):
    """A program pass. Subclasses are dataclasses; their fields are the pass's options."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    lowers_to_target: ClassVar[bool] = False  # leaves target code the reference interpreter cannot run

    @abc.abstractmethod
    def apply(self, program: Program, context: PassContext) -> None: ...

    @classmethod
    def options(cls) -> list[dataclasses.Field]:
        """The fields a pipeline sets; a `_private` field is the pass's own state, not an option."""
        return [f for f in dataclasses.fields(cls) if not f.name.startswith("_")]

    def pipeline_text(self) -> str:
        """`name` or `name{option=value ...}` for the options that differ from their defaults."""
        changed = [
            f"{f.name}={_format_option(getattr(self, f.name))}"
            for f in self.options()
            if getattr(self, f.name) != f.default
        ]
        return f"{self.name}{{{' '.join(changed)}}}" if changed else self.name


def _format_option(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclasses.dataclass
class ModulePass(Pass):
    """A pass that rewrites one module at a time, run as MIGraphX runs module passes: on the
    submodules of main (innermost last listed first) and then main, skipping bypass modules
    (and, for a pass with `skips_fused_bodies`, the bodies of fused instructions)."""

    # a fusion pass: a body already fused (read from text, where `bypass` is not written) stays as it is
    skips_fused_bodies: ClassVar[bool] = False

    def apply(self, program: Program, context: PassContext) -> None:
        for module in modules_to_run(program, context.main_only, self.skips_fused_bodies):
            self.apply_module(module, context)

    @abc.abstractmethod
    def apply_module(self, module: Module, context: PassContext) -> None: ...


def modules_to_run(program: Program, main_only: bool, skip_fused_bodies: bool = False) -> list[Module]:
    main = program.main
    if main_only:
        return [main]
    order = [main, *_submodules_depth_first(main)]
    seen: set[int] = fused_bodies(order) if skip_fused_bodies else set()
    result: list[Module] = []
    for module in reversed(order):
        if module.bypass or id(module) in seen:
            continue
        seen.add(id(module))
        result.append(module)
    return result


def fused_bodies(modules: list[Module]) -> set[int]:
    """The ids of the modules that `modules` use as fused bodies (`pointwise`, `fused_reduce`, ...)."""
    return {id(body) for module in modules for ins in module if ins.op.defn.has(FusedBody) for body in ins.module_args}


def _submodules_depth_first(root: Module) -> list[Module]:
    out: list[Module] = []
    seen = {id(root)}
    stack = [root]
    while stack:
        module = stack.pop()
        for sub in module.submodules():
            if id(sub) not in seen:
                seen.add(id(sub))
                out.append(sub)
                stack.append(sub)
    return out
