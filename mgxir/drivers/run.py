"""mgx-run's driver: inputs in iree-run-module's conventions, a run on a target, the outputs printed,
saved and compared with MIGraphX's rms rule.

`mgxir.tools.mgx_run` only declares the options and calls `run_main(RunOptions(...))`. The pieces are
library functions: `gather_inputs` (`--input` specs to parameter values), `IREE_TYPES` (IREE's
element type names), `format_value` (IREE's printing), `rms_error`/`compare` (MIGraphX's verify
rule). Targets plug in through `TARGETS` (below).
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
from collections.abc import Callable, Iterator

import numpy as np

from mgxir.arrayfiles import ArrayFileError, load_arrays
from mgxir.diagnostics import DiagnosticSink, MgxError, check_allocation
from mgxir.drivers.common import check_output_path, load_entry, run_guarded
from mgxir.interp import Interpreter, check_memory
from mgxir.ir.dtype import DType
from mgxir.ir.operation import RuntimeValue
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.records import Record
from mgxir.targets.timing import collect_timing
from mgxir.text.parser import read_program
from mgxir.text.writer import write_atomically
from mgxir.verifier import verify

# IREE's element type spellings
IREE_TYPES: dict[str, DType] = {
    "i1": DType.bool,
    "f16": DType.half,
    "f32": DType.float,
    "f64": DType.double,
    "ui8": DType.uint8,
    "u8": DType.uint8,
    "i8": DType.int8,
    "si8": DType.int8,
    "ui16": DType.uint16,
    "i16": DType.int16,
    "i32": DType.int32,
    "si32": DType.int32,
    "i64": DType.int64,
    "si64": DType.int64,
    "ui32": DType.uint32,
    "ui64": DType.uint64,
    "bf16": DType.bf16,
    "f8E4M3FNUZ": DType.fp8e4m3fnuz,
    "f8E4M3FN": DType.fp8e4m3fn,
    "f8E5M2": DType.fp8e5m2,
    "f8E5M2FNUZ": DType.fp8e5m2fnuz,
}
IREE_NAMES = {t: name for name, t in reversed(list(IREE_TYPES.items()))}
_DIMS_AND_TYPE = re.compile(r"^(?:\d+x)*([A-Za-z][A-Za-z0-9]*)$")

# (program, parameter values by name, sink for warnings) -> the values `main` returns
Runner = Callable[[Program, dict[str, np.ndarray], DiagnosticSink], list[RuntimeValue]]

# Where targets plug in, one entry each: `--target` name -> "module:function" of its Runner. The
# module is imported only when its target is asked for, so a target's heavy dependencies (IREE,
# Vulkan, CUDA) cost nothing to the others. A target package lives in `mgxir/targets/<name>/`.
TARGETS: dict[str, str] = {
    "ref": "mgxir.drivers.run:run_on_ref",
    "iree": "mgxir.targets.iree:run_on_iree",
    "vulkan": "mgxir.targets.vulkan:run_on_vulkan",
    "gpu": "mgxir.targets.gpu.driver:run_on_gpu",
}


def run_on_ref(program: Program, params: dict[str, np.ndarray], sink: DiagnosticSink) -> list[RuntimeValue]:
    """The reference interpreter (numpy), floating-point warnings silenced as MIGraphX's ref does."""
    with np.errstate(all="ignore"):
        return Interpreter(program, sink).run(params)


def runner(target: str) -> Runner:
    """The runner of a `--target` name; a name not in TARGETS is a user error listing the names."""
    if target not in TARGETS:
        raise MgxError(f"unknown target '{target}' (available: {', '.join(TARGETS)})")
    return load_entry(TARGETS[target])


# -- inputs ---------------------------------------------------------------------------------------


def _is_raw_bits(t: DType) -> bool:
    return t is DType.bf16 or t.is_fp8


def to_parameter_type(name: str, array: np.ndarray, shape: Shape) -> np.ndarray:
    """An input array in the parameter's type; bf16/fp8 accept their raw bits or any floats, and
    numpy's void types (`|V2`, `|V1`: how ml_dtypes' bf16 and int4 arrays are saved) are read as
    the parameter's type when their item size is the parameter's."""
    want = shape.dtype.numpy
    _check_shape(name, tuple(array.shape), shape)
    if array.shape != tuple(shape.lens):
        array = array.reshape(shape.lens)
    if array.dtype == want:
        return array
    if array.dtype.kind == "V":
        if array.dtype.itemsize != want.itemsize:
            raise MgxError(
                f"input '{name}' holds {array.dtype.itemsize}-byte {array.dtype} values but parameter '{name}' "
                f"is {shape.dtype.type_name} ({want.itemsize} bytes each)"
            )
        return np.ascontiguousarray(array).view(shape.dtype.bits_dtype).view(want)
    if _is_raw_bits(shape.dtype) and array.dtype == shape.dtype.bits_dtype:
        return array.view(want)
    if array.dtype.kind not in "biuf":
        raise MgxError(f"input '{name}' holds {array.dtype} values, not numbers")
    if array.dtype.kind == "f" and shape.dtype.is_integral:
        raise MgxError(f"input '{name}' holds {array.dtype} values but parameter '{name}' is {shape.dtype.type_name}")
    check_allocation(shape.elements * max(want.itemsize, 1), f"input '{name}' as {shape.dtype.type_name}")
    return array.astype(want)


def _check_shape(name: str, lens: tuple[int, ...], shape: Shape) -> None:
    """An input's dimensions must be the parameter's (one value may fill a one-element shape)."""
    if lens == tuple(shape.lens) or (math.prod(lens) == shape.elements == 1 and len(lens) <= 1):
        return
    raise MgxError(
        f"input '{name}' has shape {_dims(lens)} but parameter '{name}' is {shape.dtype.type_name}, {_dims(shape.lens)}"
    )


def _dims(lens: tuple[int, ...] | list[int]) -> str:
    return "{" + ", ".join(map(str, lens)) + "}"


def parse_inline(name: str, text: str, shape: Shape | None = None) -> np.ndarray:
    """`2x3xf32=1 2 3 4 5 6` (or one value, repeated): IREE's inline buffer syntax. With the
    parameter's `shape`, the dimensions are checked against it before anything is allocated."""
    spec, _, values = text.partition("=")
    parts = spec.split("x")
    type_name = parts[-1]
    if type_name not in IREE_TYPES:
        raise MgxError(f"input '{name}': unknown element type '{type_name}' (use f32, f16, bf16, i64, i1, ...)")
    if not all(p.isdigit() for p in parts[:-1]):
        raise MgxError(f"input '{name}': bad dimensions in '{spec}' (expected DIMxDIMx...xTYPE, as 2x3xf32)")
    lens = tuple(int(p) for p in parts[:-1])
    dtype = IREE_TYPES[type_name]
    if shape is not None and not shape.is_dynamic and lens:
        _check_shape(name, lens, shape)
    count = math.prod(lens)  # Python integers: no wrap-around
    # the values are parsed as float64 and then converted
    check_allocation(count * (8 + max(dtype.itemsize, 1)), f"input '{name}' ({spec})")
    words = values.replace(",", " ").replace("[", " ").replace("]", " ").split()
    try:
        numbers = np.array([float(w) for w in words], dtype=np.float64)
    except ValueError:
        raise MgxError(f"input '{name}': values must be numbers, got '{values}'") from None
    if numbers.size == 1 and count != 1:
        numbers = np.full(count, numbers[0])
    if numbers.size != count:
        raise MgxError(f"input '{name}': {spec} needs {count} values, got {numbers.size}")
    return numbers.reshape(lens).astype(dtype.numpy)


def _load_file(name: str, path: str) -> np.ndarray | dict[str, np.ndarray]:
    try:
        return load_arrays(path)
    except ArrayFileError as e:
        raise MgxError(f"input file '{path}' for '{name}' {e}") from None


def gather_inputs(program: Program, specs: list[str], fill: str, seed: int) -> dict[str, np.ndarray]:
    params = {p.param_name: p.shape for p in program.main.parameters()}
    order = list(params)
    given: dict[str, np.ndarray] = {}
    for spec in specs:
        if spec.startswith("@"):
            loaded = _load_file(spec, spec[1:])
            if not isinstance(loaded, dict):
                raise MgxError(f"'{spec}' is one array: name the parameter, as --input=x={spec}")
            given.update(loaded)
            continue
        head, sep, rest = spec.partition("=")
        if not sep:
            raise MgxError(f"input '{spec}' is neither NAME=..., @file.npz nor DIMSxTYPE=VALUES")
        if _DIMS_AND_TYPE.match(head) and head.split("x")[-1] in IREE_TYPES and head not in params:
            name = next((n for n in order if n not in given), None)
            if name is None:
                raise MgxError(f"input '{spec}' is one more than the {len(order)} parameters of main")
            given[name] = parse_inline(name, spec, params[name])
            continue
        name = head
        if rest.startswith("@"):
            loaded = _load_file(name, rest[1:])
            if isinstance(loaded, dict):
                if name not in loaded:
                    raise MgxError(f"'{rest[1:]}' has no array named '{name}'")
                loaded = loaded[name]
            given[name] = loaded
        elif name in params:
            given[name] = parse_inline(name, rest, params[name])
        else:
            raise MgxError(f"input '{name}' is not a parameter of main (parameters: {', '.join(order) or 'none'})")
    extra = [n for n in given if n not in params]
    if extra:
        raise MgxError(f"input '{extra[0]}' is not a parameter of main (parameters: {', '.join(order) or 'none'})")
    rng = np.random.default_rng(seed)
    values: dict[str, np.ndarray] = {}
    for name, shape in params.items():
        if shape.is_dynamic:
            if name not in given:
                raise MgxError(f"parameter '{name}' has a dynamic shape: give its value with --input")
            values[name] = given[name]
            continue
        if name in given:
            values[name] = to_parameter_type(name, np.asarray(given[name]), shape)
        elif fill == "none":
            raise MgxError(f"no input for parameter '{name}' ({shape.dtype.type_name}, {_dims(shape.lens)})")
        else:
            values[name] = filled(shape, fill, rng)
    return values


def filled(shape: Shape, fill: str, rng: np.random.Generator) -> np.ndarray:
    want = shape.dtype.numpy
    # a random fill draws float64 (or int64) values first, then converts them
    temporary = 0 if fill in ("zeros", "ones") else 8 + 4
    check_allocation(
        shape.elements * (max(want.itemsize, 1) + temporary),
        f"a {fill} fill of {shape.dtype.type_name}, {_dims(shape.lens)}",
    )
    if fill == "zeros":
        return np.zeros(shape.lens, want)
    if fill == "ones":
        return np.ones(shape.lens, want)
    if shape.dtype is DType.bool:
        return rng.integers(0, 2, size=shape.lens).astype(bool)
    if shape.dtype.is_integral:
        return rng.integers(0, 4, size=shape.lens).astype(want)
    return rng.uniform(-1.0, 1.0, size=shape.lens).astype(np.float32).astype(want)


# -- outputs ---------------------------------------------------------------------------------------


def flatten_outputs(outputs: list[RuntimeValue]) -> dict[str, np.ndarray]:
    """`out0`, `out1`, ...; element j of a tuple output i as `out{i}_{j}`."""
    named: dict[str, np.ndarray] = {}
    for i, value in enumerate(outputs):
        if isinstance(value, tuple):
            for j, element in enumerate(value):
                named[f"out{i}_{j}"] = np.asarray(element)
        else:
            named[f"out{i}"] = np.asarray(value)
    return named


def _storable(array: np.ndarray) -> np.ndarray:
    """bf16/fp8 as raw bits: numpy's file formats cannot record those dtypes."""
    if array.dtype.name.startswith(("bfloat16", "float8")):
        return np.ascontiguousarray(array).view(np.dtype(f"u{array.dtype.itemsize}"))
    return np.ascontiguousarray(array)


def _type_of(array: np.ndarray) -> DType:
    try:
        return DType.from_numpy(array.dtype)
    except KeyError:
        return DType.float


def format_value(array: np.ndarray, limit: int) -> str:
    """IREE's `2x3xf32=[1 2 3][4 5 6]`, elided after `limit` elements."""
    t = _type_of(array)
    head = "x".join([*map(str, array.shape), IREE_NAMES.get(t, t.name)])
    shown = array.astype(np.float32) if array.dtype.name.startswith(("bfloat16", "float8")) else array
    if array.dtype == np.bool_:
        shown = array.astype(np.int8)
    if array.size > limit:
        flat = " ".join(_number(v) for v in np.asarray(shown).reshape(-1)[:limit])
        return f"{head}=[{flat} ...] ({array.size} elements, {array.size - limit} not shown)"
    return f"{head}={_nested(np.asarray(shown))}"


def _nested(a: np.ndarray, outermost: bool = True) -> str:
    """IREE nests brackets below the outermost level: `2x2x2xi32=[[1 2][3 4]][[5 6][7 8]]`."""
    if a.ndim == 0:
        return _number(a[()])
    if a.ndim == 1:
        return "[" + " ".join(_number(v) for v in a) + "]"
    inner = "".join(_nested(sub, outermost=False) for sub in a)
    return inner if outermost else "[" + inner + "]"


def _number(v: object) -> str:
    if isinstance(v, float | np.floating):
        return f"{float(v):.6g}"
    return str(v)


# -- comparison ------------------------------------------------------------------------------------


def rms_error(target: np.ndarray, ref: np.ndarray) -> float:
    """MIGraphX's verify rule: sqrt(sum((t-r)^2)) / (sqrt(n) * max(max|t|, max|r|, DBL_MIN))."""
    t = target.astype(np.float64).reshape(-1)
    r = ref.astype(np.float64).reshape(-1)
    if t.size == 0:
        return 0.0
    scale = max(float(np.max(np.abs(t))), float(np.max(np.abs(r))), np.finfo(np.float64).tiny)
    return float(np.sqrt(np.sum((t - r) ** 2)) / (np.sqrt(t.size) * scale))


def compare(
    actual: dict[str, np.ndarray],
    expected: dict[str, np.ndarray],
    rms_tol: float,
    atol: float | None,
    rtol: float | None,
) -> bool:
    ok = True
    for key, ref in expected.items():
        if key not in actual:
            print(f"{key}: missing (the program has outputs {', '.join(actual)})")
            ok = False
            continue
        got = actual[key]
        if ref.dtype != got.dtype and ref.dtype == _storable(got).dtype:
            ref = ref.view(got.dtype)
        if tuple(ref.shape) != tuple(got.shape):
            print(f"{key}: shape {_dims(got.shape)} but expected {_dims(ref.shape)}")
            ok = False
            continue
        g = got.astype(np.float64)
        r = ref.astype(np.float64)
        error = rms_error(g, r)
        passed = error <= rms_tol or (np.isnan(error) and np.array_equal(g, r, equal_nan=True))
        if atol is not None or rtol is not None:
            close = np.allclose(
                g, r, atol=atol if atol is not None else 1e-3, rtol=rtol if rtol is not None else 1e-3, equal_nan=True
            )
            passed = passed and bool(close)
        diff = np.abs(g - r)
        if diff.size:
            worst = np.unravel_index(int(np.nanargmax(diff)) if not np.all(np.isnan(diff)) else 0, diff.shape)
            where = ", ".join(map(str, worst))
            detail = f"worst element [{where}]: {_number(g[worst])} vs expected {_number(r[worst])}"
        else:
            detail = "no elements"
        verdict = "ok" if passed else "MISMATCH"
        print(f"{key}: {verdict}: rms error {error:.6g} (tolerance {rms_tol:g}), {detail}")
        ok = ok and passed
    return ok


# -- the command ---------------------------------------------------------------------------------

FILLS = ("random", "zeros", "ones", "none")


class RunOptions(Record):
    """What mgx-run was asked to do; the field names are the front end's option names."""

    def __init__(
        self,
        input_file: str = "-",
        inputs: list[str] | None = None,
        fill: str = "random",
        seed: int = 0,
        output: str | None = None,
        expected: str | None = None,
        rms_tol: float = 1e-3,
        atol: float | None = None,
        rtol: float | None = None,
        target: str = "ref",
        verify_against_ref: bool = False,
        print_max: int = 64,
        quiet: bool = False,
        from_log: bool = False,
        log_pass: str | None = None,
        device: str | None = None,
        perf: bool = False,
        exhaustive_tune: bool = False,
        fp32_math: str = "ieee",
        cache_dir: str | None = None,
        timing: bool = False,
    ):
        self.input_file = input_file
        self.inputs = inputs
        self.fill = fill
        self.seed = seed
        self.output = output
        self.expected = expected
        self.rms_tol = rms_tol
        self.atol = atol
        self.rtol = rtol
        self.target = target
        self.verify_against_ref = verify_against_ref
        self.print_max = print_max
        self.quiet = quiet
        self.from_log = from_log
        self.log_pass = log_pass
        self.device = device  # iree: local-task (default), local-sync, cuda, hip or vulkan; gpu: N, cuda:N, hip:N
        self.perf = perf  # gpu: per-instruction times and shares
        # gpu: time launch configurations and library algorithms, keep the fastest
        self.exhaustive_tune = exhaustive_tune
        # gpu: float32 gemms and convolutions multiply in float32 (ieee) or TF32 (tf32)
        self.fp32_math = fp32_math
        self.cache_dir = cache_dir  # iree: the compiled modules' cache
        self.timing = timing  # iree: compile/load/run times; vulkan: where each instruction ran


def run_main(options: RunOptions) -> int:
    """Runs mgx-run; returns the exit code (1 also for outputs that do not match)."""
    return run_guarded(lambda sink: _run(options, sink))


def _run(o: RunOptions, sink: DiagnosticSink) -> int:
    run = runner(o.target)
    if o.fill not in FILLS:
        raise MgxError(f"--fill must be random, zeros, ones or none, not '{o.fill}'")
    if o.fp32_math not in ("ieee", "tf32"):
        raise MgxError(f"--fp32-math must be ieee or tf32, not '{o.fp32_math}'")
    if o.output is not None:
        check_output_path(_at_path(o.output))
    with _target_context(o) as read:
        program = read(o.input_file, sink, from_log=o.from_log or o.log_pass is not None, log_pass=o.log_pass)
        verify(program, sink, runnable=True)
        check_memory(program)
        params = gather_inputs(program, o.inputs or [], o.fill, o.seed)
        with collect_timing() as log:
            outputs = flatten_outputs(run(program, params, sink))
    if o.timing and o.target != "iree":
        print(log.render(), file=sys.stderr)
    sink.flush()
    if not o.quiet:
        print_outputs(outputs, o.print_max)
    if o.output is not None:
        save_outputs(outputs, _at_path(o.output))
    ok = True
    if o.verify_against_ref:
        if o.target == "ref":
            # the interpreter against itself would prove nothing: compare with the program as the
            # ref pipeline compiles it (normalize_ops, insert_pad, auto_contiguous, ref_lowering),
            # which is what MIGraphX's verify runs on ref
            from mgxir.drivers.compiled_for_ref import run_compiled_for_ref

            reference = flatten_outputs(run_compiled_for_ref(program, params, sink))
            print("verify: ref against ref (compiled by the ref pipeline)")
        else:
            reference = flatten_outputs(run_on_ref(program, params, sink))
            print(f"verify: {o.target} against ref")
        ok = compare(outputs, reference, o.rms_tol, o.atol, o.rtol) and ok
    if o.expected is not None:
        loaded = _load_file("--expected-output", _at_path(o.expected))
        if not isinstance(loaded, dict):
            loaded = {"out0": loaded}
        ok = compare(outputs, loaded, o.rms_tol, o.atol, o.rtol) and ok
    return 0 if ok else 1


@contextlib.contextmanager
def _target_context(o: RunOptions) -> Iterator[Callable[..., Program]]:
    """The program reader for the run, inside the target's options: an ONNX model is imported as
    `--from-onnx` does; IREE also reads the MLIR that mgx-translate wrote (`prog.mlirbc`) and compiles
    it as it is."""
    is_mlir = o.input_file.endswith((".mlir", ".mlirbc"))
    if o.input_file.endswith(".onnx"):
        yield lambda path, sink, from_log, log_pass: load_entry("mgxir.drivers.formats:read_onnx")(path, {}, sink)
        return
    if o.target == "gpu":
        from mgxir.targets.gpu.driver import gpu_options, select_device

        select_device(o.device)
        gpu_options.perf, gpu_options.exhaustive_tune = o.perf, o.exhaustive_tune
        gpu_options.fp32_math = o.fp32_math
    if o.target != "iree" and not is_mlir:
        yield read_program
        return
    if o.target != "iree":
        raise MgxError(f"an MLIR input runs with --target=iree, not --target={o.target}")
    from pathlib import Path

    from mgxir.targets.iree import IreeOptions, read_any_program, using

    options = IreeOptions(o.device or "local-task", None if o.cache_dir is None else Path(o.cache_dir), o.timing)
    with using(options):
        yield lambda path, sink, from_log, log_pass: read_any_program(path, sink, options, from_log, log_pass)


def _at_path(spec: str) -> str:
    return spec[1:] if spec.startswith("@") else spec


def print_outputs(outputs: dict[str, np.ndarray], limit: int) -> None:
    for key, value in outputs.items():
        print(f"{key}: {_type_of(value).type_name}, {_dims(value.shape)}")
        print(format_value(value, limit))


def save_outputs(outputs: dict[str, np.ndarray], path: str) -> None:
    """An .npz of the outputs by name (bf16/fp8 as raw bits), written atomically (numpy's savez
    writes in place: a failure left half an archive); `.npz` is added as numpy adds it."""
    import io

    buffer = io.BytesIO()
    np.savez(buffer, **{k: _storable(v) for k, v in outputs.items()})
    write_atomically(path if path.endswith(".npz") else path + ".npz", buffer.getvalue())
