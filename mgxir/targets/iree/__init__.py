"""Running programs through IREE: lower to MLIR, compile for a device (cached on disk), run with
iree.runtime. `run_on_iree` has the signature of mgx-run's reference runner; where and how it runs
comes from the `IreeOptions` in effect (`using(...)`)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from contextvars import ContextVar
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


@dataclass
class IreeOptions:
    device: str = "local-task"
    cache_dir: Path | None = None
    timing: bool = False
    # MLIR that was given instead of a program (mgx-run prog.mlirbc): compiled as it is
    mlir: bytes | None = None
    timings: dict[str, float] = field(default_factory=dict)
    warm: bool = False


_OPTIONS: ContextVar[IreeOptions] = ContextVar("iree_options", default=IreeOptions())  # noqa: B039


@contextlib.contextmanager
def using(options: IreeOptions) -> Iterator[IreeOptions]:
    token = _OPTIONS.set(options)
    try:
        yield options
    finally:
        _OPTIONS.reset(token)


def _module_key(source: bytes, options: IreeOptions) -> tuple[Device, list[str], str]:
    """The device, its compiler flags and the cache key of a program's (or an MLIR file's) module."""
    device = find_device(options.device)
    flags = [*device.flags, *os.environ.get(FLAGS_ENV, "").split()]
    return device, flags, cache_key(source, device.name, flags, host_tuned=device.backend == "llvm-cpu")


def compiled_module(program: Program, options: IreeOptions, sink: DiagnosticSink) -> Path:
    """The cached `.vmfb` for the program on the device, compiling it on a miss (which alone needs
    IREE's compiler: a warm cache runs with iree-base-runtime only)."""
    start = time.perf_counter()
    source = options.mlir if options.mlir is not None else program_fingerprint(program).encode()
    device, flags, key = _module_key(source, options)
    check_types(device, element_types(program))
    cache = ModuleCache(options.cache_dir)
    found = cache.get(key)
    options.warm = found is not None
    options.timings["cache lookup"] = time.perf_counter() - start
    if found is not None:
        return found
    _require_compiler(f"IREE device '{device.name}': {cache.directory} holds no module compiled for this program")
    start = time.perf_counter()
    if options.mlir is not None:
        mlir = options.mlir
    else:
        from mgxir.translate.mlir.api import mlir_bytecode  # the MLIR bindings load only on a miss

        mlir = mlir_bytecode(program, None, sink)
    options.timings["translate"] = time.perf_counter() - start
    start = time.perf_counter()
    vmfb = compile_module(mlir, device, flags)
    options.timings["compile"] = time.perf_counter() - start
    if options.mlir is not None:  # what the MLIR reads back as, for a warm run without the bindings
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


def run_on_iree(program: Program, params: dict[str, np.ndarray], sink: DiagnosticSink) -> list[RuntimeValue]:
    options = _OPTIONS.get()
    entered = time.perf_counter()
    path = compiled_module(program, options, sink)
    start = time.perf_counter()
    module = LoadedModule(path, find_device(options.device))
    options.timings["load"] = time.perf_counter() - start
    main = program.main
    inputs = [params[p.param_name] for p in main.parameters()]
    ret = main.return_instruction
    outputs = list(ret.args) if ret is not None else ([main.last] if main.last is not None else [])
    start = time.perf_counter()
    options.timings["ready"] = start - entered
    # a tuple output is its elements, flattened in place in the module's results
    shapes = [list(o.shape.sub_shapes) if o.shape.is_tuple else [o.shape] for o in outputs]
    flat = module(inputs, [s.dtype for group in shapes for s in group])
    options.timings["run"] = time.perf_counter() - start
    results: list[RuntimeValue] = []
    for o, group in zip(outputs, shapes):
        elements, flat = flat[: len(group)], flat[len(group) :]
        results.append(tuple(elements) if o.shape.is_tuple else elements[0])
    if options.timing:
        parts = [f"{k} {1000 * v:.1f} ms" for k, v in options.timings.items()]
        print(
            f"timing: {options.device}: cache {'warm' if options.warm else 'cold'}: {', '.join(parts)}", file=sys.stderr
        )
    return list(results)


def read_any_program(
    path: str, sink: DiagnosticSink, options: IreeOptions, from_log: bool = False, log_pass: str | None = None
) -> Program:
    """MIGraphX text, or MLIR that mgx-translate wrote (kept in `options` to compile as it is). MLIR
    whose module is in the cache is read from the program stored beside it: a warm run needs no MLIR
    bindings."""
    if path != "-" and Path(path).suffix in (".mlir", ".mlirbc"):
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise MgxError(f"cannot read {path}: {e.strerror or e}") from None
        options.mlir = data
        device, _, key = _module_key(data, options)
        cache = ModuleCache(options.cache_dir)
        stored = cache.program(key, sink)
        if stored is not None:
            return stored
        _require_compiler(f"{path}: {cache.directory} holds no module compiled from it for IREE device '{device.name}'")
        from mgxir.translate.mlir.api import program_from_mlir

        return program_from_mlir(data, path)
    return read_program(path, sink, from_log=from_log, log_pass=log_pass)
