"""One interface for every place a program runs, and one table of them.

A target has a `name`, an options class (a frozen dataclass whose fields carry their help text in
`metadata["help"]`; mgx-run's options of the same names fill it), and two separate steps:
`compile(program, options, sink) -> CompiledProgram` and `load(compiled, device, sink) ->
Executable`, whose `run(params)` returns the outputs. A compiled program is kept per process by
the program's fingerprint and the options (`compiled`), so a second run of the same program loads
what the first compiled. Instructions a target has no kernel for run on the reference interpreter
through `mgxir.targets.host.HostFallback`.

`TARGETS` is the table: `--target` name -> `TargetEntry` ("module:Class", and the passes and
operators the target registers). Nothing of a target is imported until it is asked for, so IREE,
Vulkan and CUDA cost nothing to the others (and this module imports no dataclasses: start-up).
"""

from __future__ import annotations

import abc
import importlib
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from mgxir.diagnostics import DiagnosticSink, MgxError, did_you_mean
from mgxir.records import FrozenRecord, Record

if TYPE_CHECKING:
    import numpy as np

    from mgxir.ir.operation import RuntimeValue
    from mgxir.ir.program import Program


class TargetEntry(FrozenRecord):
    """A target in the table: its class ("module:Class"), the passes and pipelines it registers (by
    name, with the module that registers them) and the module that registers its operators."""

    __slots__ = ("entry", "ops_module", "passes", "passes_module")

    def __init__(self, entry: str, passes: tuple[str, ...] = (), passes_module: str = "", ops_module: str = "") -> None:
        object.__setattr__(self, "entry", entry)
        object.__setattr__(self, "passes", passes)
        object.__setattr__(self, "passes_module", passes_module)
        object.__setattr__(self, "ops_module", ops_module)


TARGETS: dict[str, TargetEntry] = {
    "ref": TargetEntry("mgxir.targets.ref:RefTarget"),
    "iree": TargetEntry("mgxir.targets.iree.target:IreeTarget"),
    # the cpu and vulkan targets also finish compiled programs (mgx-opt -p gpu --portable)
    "cpu": TargetEntry("mgxir.targets.portable:PortableCpuTarget"),
    "vulkan": TargetEntry("mgxir.targets.portable:PortableVulkanTarget"),
    "gpu": TargetEntry(
        "mgxir.targets.gpu.target:GpuTarget",
        passes=("gpu", "gpu_lowering"),
        passes_module="mgxir.targets.gpu.lowering",
        ops_module="mgxir.targets.gpu.ops",
    ),
    # a compiled program on the first of CUDA, HIP, Vulkan and the CPU present (mgxir.targets.portable)
    "auto": TargetEntry("mgxir.targets.portable:AutoTarget"),
}


def target_passes() -> dict[str, str]:
    """Pass and pipeline names that targets register -> the module to import first."""
    return {name: t.passes_module for t in TARGETS.values() for name in t.passes}


def target_ops_modules() -> tuple[str, ...]:
    """The modules that register targets' operators (gpu::code_object, ...)."""
    return tuple(t.ops_module for t in TARGETS.values() if t.ops_module)


class Executable(Protocol):
    """A compiled program loaded on a device."""

    def run(self, params: Mapping[str, np.ndarray]) -> list[RuntimeValue]: ...


class CompiledProgram(Record):
    """What a target's `compile` made: `program` is the program as compiled (lowered, fused; the
    outputs are its main's), `artifact` what the target loads besides it (IREE's module file,
    Vulkan's kernels), `key` the fingerprint-and-options key it is kept under."""

    def __init__(self, target: str, program: Program, options: Any, artifact: Any = None, key: str = "") -> None:
        self.target = target
        self.program = program
        self.options = options
        self.artifact = artifact
        self.key = key

    def with_options(self, options: Any) -> CompiledProgram:
        """The same compiled program under another run's options (that differ only in options
        that are read when loading and running, `perf`, `timing`, ...)."""
        return CompiledProgram(self.target, self.program, options, self.artifact, self.key)


class Target(abc.ABC):
    name: ClassVar[str] = ""
    options_type: ClassVar[type]  # a frozen dataclass; each field's metadata["help"] is its help text
    # whether compiling costs enough to keep the result (the reference's compile is the program itself)
    keeps_compiled: ClassVar[bool] = True
    # whether the target prints its own `--timing` report (else the driver prints where each step ran)
    reports_timing: ClassVar[bool] = False
    # the input formats (mgxir.drivers.formats' names) the target's `read` takes itself; the driver
    # reads the others (ONNX, .mxr, .json, MLIR read back) and hands the target the program
    reads_formats: ClassVar[frozenset[str]] = frozenset({"mgx", "log"})

    def options(self, values: Mapping[str, Any] | object = None) -> Any:
        """The target's options from `values` (a mapping, or an object such as mgx-run's options)
        by field name: a value of None keeps the field's default; other names are ignored."""
        if isinstance(values, Mapping):
            given = {name: values.get(name) for name in option_fields(self.options_type)}
        else:
            given = {name: getattr(values, name, None) for name in option_fields(self.options_type)}
        return self.options_type(**{name: value for name, value in given.items() if value is not None})

    def read(self, path: str, sink: DiagnosticSink, options: Any, from_log: bool, log_pass: str | None) -> Program:
        """The program in `path` (mgxir's text, or what else this target reads)."""
        from mgxir.text.parser import read_program

        if path.endswith((".mlir", ".mlirbc")):
            raise MgxError(f"an MLIR input runs with --target=iree, not --target={self.name}")

        return read_program(path, sink, from_log=from_log, log_pass=log_pass)

    @abc.abstractmethod
    def compile(self, program: Program, options: Any, sink: DiagnosticSink) -> CompiledProgram:
        """`program` compiled for this target (`program` itself is left as it was)."""

    @abc.abstractmethod
    def load(self, compiled: CompiledProgram, device: str | None, sink: DiagnosticSink) -> Executable:
        """`compiled` loaded on `device` (None: the options' device, or the target's default)."""

    def run(
        self, program: Program, params: Mapping[str, np.ndarray], options: Any, sink: DiagnosticSink
    ) -> list[RuntimeValue]:
        """Compiles (once per process for the same program and options), loads and runs."""
        executable = self.load(compiled(self, program, options, sink), getattr(options, "device", None), sink)
        return executable.run(params)


def option_fields(options_type: type) -> dict[str, str]:
    """An options class's fields -> their help text (none for a class without fields)."""
    fields = getattr(options_type, "__dataclass_fields__", {})
    return {name: f.metadata.get("help", "") for name, f in fields.items()}


def compile_options(options: Any) -> tuple[Any, ...]:
    """The options that decide what compiling makes: every field but those whose metadata says
    `run_only` (read when loading or running: `perf`, `timing`, ...)."""
    fields = getattr(type(options), "__dataclass_fields__", {})
    kept = tuple((name, getattr(options, name)) for name, f in fields.items() if not f.metadata.get("run_only"))
    return (type(options).__qualname__, *kept)


def find_target(name: str) -> Target:
    """The target of a `--target` name; a name not in TARGETS is a user error listing the names."""
    entry = TARGETS.get(name)
    if entry is None:
        raise MgxError(f"unknown target '{name}'{did_you_mean(name, TARGETS)} (available: {', '.join(TARGETS)})")
    module, _, attribute = entry.entry.partition(":")
    return getattr(importlib.import_module(module), attribute)()


# -- compile once, load many ----------------------------------------------------------------------

KEPT = 16  # compiled programs kept, the least recently used dropped first
_COMPILED: dict[tuple[str, str, Any], CompiledProgram] = {}
# compilations per target in this process (what a second run of the same program must not add to)
COMPILATIONS: Counter[str] = Counter()


def compiled(target: Target, program: Program, options: Any, sink: DiagnosticSink) -> CompiledProgram:
    """`target.compile(program, options)`, kept for this process by the program's fingerprint and
    the options that decide what compiling makes: the same program (any copy of it) compiled with
    the same options compiles once."""
    if not target.keeps_compiled:
        COMPILATIONS[target.name] += 1
        return target.compile(program, options, sink)
    from mgxir.ir.fingerprint import program_fingerprint

    key = (target.name, program_fingerprint(program), compile_options(options))
    found = _COMPILED.pop(key, None)
    if found is None:
        found = target.compile(program, options, sink)
        found.key = f"{target.name}:{key[1]}"
        COMPILATIONS[target.name] += 1
        while len(_COMPILED) >= KEPT:
            del _COMPILED[next(iter(_COMPILED))]
    _COMPILED[key] = found  # last: the most recently used
    return found if found.options == options else found.with_options(options)


def forget_compiled() -> None:
    """Drops every compiled program kept by this process."""
    _COMPILED.clear()
