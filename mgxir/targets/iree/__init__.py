"""Running programs through IREE: lower to MLIR, compile for a device (cached on disk), run with
iree.runtime. Where and how it runs is the `IreeOptions` given to each call (nothing is kept
between calls); `mgxir.targets.iree.target` is the `iree` and `cpu` targets' interface."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.fingerprint import program_fingerprint
from mgxir.ir.operation import RuntimeValue
from mgxir.ir.program import Program
from mgxir.targets.iree.cache import ModuleCache, cache_key
from mgxir.targets.iree.compile import compile_module
from mgxir.targets.iree.devices import Device, check_types
from mgxir.targets.iree.devices import device as find_device
from mgxir.targets.iree.runtime import LoadedModule
from mgxir.text.parser import read_program

FLAGS_ENV = "MGXIR_IREE_FLAGS"  # extra compiler flags, space-separated


@dataclass(frozen=True)
class IreeOptions:
    device: str = field(
        default="local-task", metadata={"help": "local-task (default), local-sync, cuda, hip or vulkan."}
    )
    cache_dir: Path | None = field(
        default=None, metadata={"help": "The compiled modules' cache (default: $MGXIR_CACHE_DIR or ~/.cache)."}
    )
    timing: bool = field(default=False, metadata={"help": "Print the compile, load and run times.", "run_only": True})

    def __post_init__(self) -> None:
        if isinstance(self.cache_dir, str):  # as the command line gives it
            object.__setattr__(self, "cache_dir", Path(self.cache_dir))


@dataclass
class Timings:
    """Where one run's time went, and whether the module came from the cache."""

    seconds: dict[str, float] = field(default_factory=dict)
    warm: bool = False

    def render(self, device: str) -> str:
        parts = [f"{k} {1000 * v:.1f} ms" for k, v in self.seconds.items()]
        return f"timing: {device}: cache {'warm' if self.warm else 'cold'}: {', '.join(parts)}"


def _module_key(source: bytes, options: IreeOptions) -> tuple[Device, list[str], str]:
    """The device, its compiler flags and the cache key of a program's (or an MLIR file's) module."""
    device = find_device(options.device)
    flags = [*device.flags, *os.environ.get(FLAGS_ENV, "").split()]
    return device, flags, cache_key(source, device.name, flags, host_tuned=device.backend == "llvm-cpu")


def compiled_module(
    program: Program,
    options: IreeOptions,
    sink: DiagnosticSink,
    mlir: bytes | None = None,
    timings: Timings | None = None,
) -> Path:
    """The cached `.vmfb` for the program (or for `mlir`, MLIR given instead of it, compiled as it
    is) on the device, compiling it on a miss (which alone needs IREE's compiler: a warm cache runs
    with iree-base-runtime only)."""
    timings = timings if timings is not None else Timings()
    start = time.perf_counter()
    source = mlir if mlir is not None else program_fingerprint(program).encode()
    device, flags, key = _module_key(source, options)
    check_types(device, element_types(program))
    cache = ModuleCache(options.cache_dir)
    found = cache.get(key)
    timings.warm = found is not None
    timings.seconds["cache lookup"] = time.perf_counter() - start
    if found is not None:
        return found
    _require_compiler(f"IREE device '{device.name}': {cache.directory} holds no module compiled for this program")
    start = time.perf_counter()
    if mlir is None:
        from mgxir.translate.mlir.api import mlir_bytecode  # the MLIR bindings load only on a miss

        mlir = mlir_bytecode(program, None, sink)
        stored_program = False
    else:
        stored_program = True
    timings.seconds["translate"] = time.perf_counter() - start
    start = time.perf_counter()
    vmfb = compile_module(mlir, device, flags)
    timings.seconds["compile"] = time.perf_counter() - start
    if stored_program:  # what the MLIR reads back as, for a warm run without the bindings
        cache.put_program(key, program)
    return cache.put(key, vmfb)


def _require_compiler(why: str) -> None:
    """One line where IREE's compiler (and its MLIR bindings) is needed and not installed."""
    try:
        import iree.compiler  # noqa: F401
    except ImportError:
        raise MgxError(
            f"{why}, and compiling one needs IREE's compiler (iree-base-compiler), which is not installed: "
            "pip install 'mgxir[mlir]'"
        ) from None


def element_types(program: Program) -> set[str]:
    """The names of the element types of every value of the program (tuples' elements included)."""
    found: set[str] = set()
    shapes = [ins.shape for module in program.modules.values() for ins in module if ins.shape is not None]
    while shapes:
        shape = shapes.pop()
        if shape.is_tuple:
            shapes.extend(shape.sub_shapes)
        else:
            found.add(shape.dtype.name)
    return found


class IreeModule:
    """A compiled module loaded on an IREE device; `run` calls its `main`."""

    def __init__(self, program: Program, path: Path, options: IreeOptions, timings: Timings) -> None:
        self.program = program
        self.options = options
        self.timings = timings
        start = time.perf_counter()
        self.module = LoadedModule(path, find_device(options.device))
        timings.seconds["load"] = time.perf_counter() - start

    def run(self, params: Mapping[str, np.ndarray]) -> list[RuntimeValue]:
        main = self.program.main
        inputs = [params[p.param_name] for p in main.parameters()]
        ret = main.return_instruction
        outputs = list(ret.args) if ret is not None else ([main.last] if main.last is not None else [])
        # a tuple output is its elements, flattened in place in the module's results
        shapes = [list(o.shape.sub_shapes) if o.shape.is_tuple else [o.shape] for o in outputs]
        self.timings.seconds.pop("run", None)
        self.timings.seconds["ready"] = sum(self.timings.seconds.values())  # lookup, compile and load
        start = time.perf_counter()
        flat = self.module(inputs, [s.dtype for group in shapes for s in group])
        self.timings.seconds["run"] = time.perf_counter() - start
        results: list[RuntimeValue] = []
        for o, group in zip(outputs, shapes):
            elements, flat = flat[: len(group)], flat[len(group) :]
            results.append(tuple(elements) if o.shape.is_tuple else elements[0])
        if self.options.timing:
            print(self.timings.render(self.options.device), file=sys.stderr)
        return results


def run_on_iree(
    program: Program, params: Mapping[str, np.ndarray], sink: DiagnosticSink, options: IreeOptions | None = None
) -> list[RuntimeValue]:
    """`program` compiled (or found in the cache), loaded and run on the options' device."""
    options = options or IreeOptions()
    timings = Timings()
    path = compiled_module(program, options, sink, timings=timings)
    return IreeModule(program, path, options, timings).run(params)


def read_any_program(
    path: str, sink: DiagnosticSink, options: IreeOptions, from_log: bool = False, log_pass: str | None = None
) -> tuple[Program, bytes | None]:
    """MIGraphX text, or MLIR that mgx-translate wrote (returned too, to compile as it is). MLIR
    whose module is in the cache is read from the program stored beside it: a warm run needs no MLIR
    bindings."""
    if path != "-" and Path(path).suffix in (".mlir", ".mlirbc"):
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise MgxError(f"cannot read {path}: {e.strerror or e}") from None
        device, _, key = _module_key(data, options)
        cache = ModuleCache(options.cache_dir)
        stored = cache.program(key, sink)
        if stored is not None:
            return stored, data
        _require_compiler(f"{path}: {cache.directory} holds no module compiled from it for IREE device '{device.name}'")
        from mgxir.translate.mlir.api import program_from_mlir

        return program_from_mlir(data, path), data
    return read_program(path, sink, from_log=from_log, log_pass=log_pass), None
