"""mgx-run's driver: inputs in iree-run-module's conventions, a run on a target, the outputs printed,
saved and compared with MIGraphX's rms rule.

`mgxir.tools.mgx_run` only declares the options and calls `run_main(RunOptions(...))`. The pieces are
library functions: `gather_inputs` (`--input` specs to parameter values), `IREE_TYPES` (IREE's
element type names), `format_value` (IREE's printing), `rms_error`/`compare` (MIGraphX's verify
rule). Targets plug in through the table of `mgxir.targets.base` (`find_target`).
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
from collections.abc import Callable

import numpy as np

from mgxir.arrayfiles import ArrayFileError, load_arrays
from mgxir.diagnostics import DiagnosticSink, MgxError, check_allocation
from mgxir.drivers.common import check_output_path, run_guarded
from mgxir.drivers.formats import input_format, read_input
from mgxir.drivers.options import DeclaredOptions, Option, flag
from mgxir.interp import Interpreter, check_memory
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import RuntimeValue
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.progress import progress, set_quiet
from mgxir.targets.base import Target, find_target, option_fields
from mgxir.targets.timing import collect_timing
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


def run_on_ref(program: Program, params: dict[str, np.ndarray], sink: DiagnosticSink) -> list[RuntimeValue]:
    """The reference interpreter (numpy), floating-point warnings silenced as MIGraphX's ref does."""
    with np.errstate(all="ignore"):
        return Interpreter(program, sink).run(params)


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


def gather_inputs(program: Program, specs: list[str], fill: str | None, seed: int) -> dict[str, np.ndarray]:
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
        elif fill is None or fill == "none":
            raise MgxError(
                f"no input for parameter '{name}' ({shape.dtype.type_name}, {_dims(shape.lens)}): give it with "
                "--input, or --fill=random to fill it as migraphx-driver does by default"
            )
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


class RunOptions(DeclaredOptions):
    """What mgx-run was asked to do: each field, its default, help text and command-line spellings."""

    DECLARED = (
        Option("input_file", help="Program ('-' for standard input).", default="-", positional=True, metavar="PROGRAM"),
        Option(
            "inputs",
            ("--input",),
            "NAME=@x.npy, @inputs.npz, or NAME=2x3xf32=1 2 3 4 5 6 (repeatable).",
            many=True,
        ),
        Option(
            "fill",
            ("--fill",),
            "Values for parameters not given: random, zeros or ones (default: none, a missing input is an error).",
        ),
        Option("seed", ("--seed",), "Seed for --fill=random.", default=0, kind=int),
        Option(
            "output",
            ("--output",),
            "Where an output goes, one --output per output in order: @f.npy, - (standard output); "
            "or one @f.npz for all of them (out0, out1, ...).",
            many=True,
        ),
        Option(
            "expected",
            ("--expected-output",),
            "@ref.npz (or @ref.npy, one output): compare outputs; exit 1 on a mismatch.",
            aliases=("--expected_output",),
        ),
        Option("rms_tol", ("--rms-tol",), "MIGraphX's rms tolerance.", default=1e-3, kind=float),
        Option("atol", ("--atol",), "Also require allclose with this atol.", kind=float),
        Option("rtol", ("--rtol",), "Also require allclose with this rtol.", kind=float),
        Option(
            "target",
            ("--target",),
            "Where to run: ref (the numpy reference interpreter), iree (see --device), cpu (IREE), vulkan, gpu, "
            "auto (the first of CUDA, HIP, Vulkan, CPU present). Default: auto for a compiled program file "
            "(.mxr, .json, .mgx with its .payloads), else ref.",
        ),
        flag("verify_against_ref", "--verify", help="Run on the target and on ref, compare with the rms rule."),
        Option("print_max", ("--print-max-elements",), "Elide printed values past this many.", default=64, kind=int),
        flag("quiet", "--quiet", "-q", help="Print neither the outputs nor progress."),
        flag("from_log", "--from-log", help="The input is MIGraphX log output."),
        Option("log_pass", ("--log-pass",), "With --from-log: the program after this pass."),
        Option(
            "device",
            ("--device",),
            "iree: local-task (default), local-sync, cuda, hip or vulkan; gpu: N (CUDA's GPU N), cuda:N or hip:N.",
        ),
        flag(
            "perf",
            "--perf",
            help="Time the run: the whole run on every target; each instruction where the target can (ref, "
            "vulkan; gpu with shares, as migraphx-driver perf).",
        ),
        flag(
            "exhaustive_tune",
            "--exhaustive-tune",
            help="With --target=gpu: time kernel launch configurations and library algorithms; keep the fastest.",
        ),
        Option(
            "fp32_math",
            ("--fp32-math",),
            "With --target=gpu: float32 gemms and convolutions multiply in float32 (ieee, as MIGraphX) "
            "or in TF32 on tensor cores (tf32, as PyTorch's cuDNN convolutions by default).",
            default="ieee",
        ),
        Option(
            "arch",
            ("--arch",),
            "With --target=gpu: compile for this architecture (sm_90, gfx942) instead of the device's; "
            "a compiled program file must be for it.",
        ),
        Option("cache_dir", ("--cache-dir",), "With --target=iree: compiled modules' cache (or $MGXIR_CACHE_DIR)."),
        flag("timing", "--timing", help="iree: compile/load/run times; vulkan: where each instruction ran."),
        Option(
            "batch",
            ("--batch",),
            "ONNX model: the size of dimensions the model leaves open (migraphx-driver's --batch).",
            kind=int,
        ),
        Option(
            "input_dim",
            ("--input-dim",),
            "ONNX model: an input's dims, '@name d1 d2 ...' (repeatable; migraphx-driver's --input-dim).",
            many=True,
        ),
    )


def run_main(options: RunOptions) -> int:
    """Runs mgx-run; returns the exit code (1 also for outputs that do not match)."""
    set_quiet(options.quiet)
    return run_guarded(lambda sink: _run(options, sink))


def _run(o: RunOptions, sink: DiagnosticSink) -> int:
    if o.target is None:
        o.target = default_target(o.input_file, o.from_log or o.log_pass is not None)
    target = find_target(o.target)
    if o.fill is not None and o.fill not in FILLS:
        raise MgxError(f"--fill must be random, zeros, ones or none, not '{o.fill}'")
    if o.fp32_math not in ("ieee", "tf32"):
        raise MgxError(f"--fp32-math must be ieee or tf32, not '{o.fp32_math}'")
    if (o.batch is not None or o.input_dim) and not o.input_file.endswith(".onnx"):
        raise MgxError("--batch and --input-dim size an ONNX model's inputs; this program's shapes are written in it")
    output_specs = [o.output] if isinstance(o.output, str) else list(o.output or [])  # a library caller's one
    destinations = [output_destination(spec) for spec in output_specs]
    for path in destinations:
        if path is not None:
            check_output_path(path)
    options = target_options(target, o)
    with progress(f"reading {o.input_file}"):
        program = _read(target, options, o, sink)
        if not hasattr(program, "filename"):
            program.filename = o.input_file  # type: ignore[attr-defined]  # what a target's refusal names
        verify(program, sink, runnable=True)
    check_memory(program)
    params = gather_inputs(program, o.inputs or [], o.fill, o.seed)
    with collect_timing() as log, progress(f"running on {o.target}" + _compiles.get(o.target, "")):
        started = time.perf_counter()
        if o.perf and o.target == "ref":
            outputs = flatten_outputs(run_on_ref_timed(program, params, sink))
        else:
            outputs = flatten_outputs(target.run(program, params, options, sink))
        seconds = time.perf_counter() - started
    if (o.timing and not target.reports_timing) or (o.perf and log.records and o.target != "gpu"):
        print(log.render(), file=sys.stderr)
    if o.perf:
        print(f"perf: --target={o.target}: the whole run took {seconds * 1e3:.4f} ms", file=sys.stderr)
    sink.flush()
    if not o.quiet:
        print_outputs(outputs, o.print_max)
    if output_specs:
        save_outputs(outputs, output_specs, o.print_max, printed=not o.quiet)
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


# what a target does in its run besides running, for the progress display
_compiles = {"iree": " (compiling with IREE, cached)", "gpu": " (compiling kernels, cached; tuning if asked)"}


def run_on_ref_timed(program: Program, params: dict[str, np.ndarray], sink: DiagnosticSink) -> list[RuntimeValue]:
    """The reference interpreter, each instruction of `main` timed (submodules inside their caller's
    time), named as the printer names it (`@3`), as the Vulkan target's steps are."""
    from mgxir.ir.names import instruction_names
    from mgxir.targets.host import HostFallback

    names = instruction_names(program)

    def timed(ins: Instruction, kernel: Callable[..., RuntimeValue]) -> Callable[..., RuntimeValue]:
        return _timing_kernel(names.get(ins, ins.op.name), ins.op.name, kernel)

    with np.errstate(all="ignore"):
        return HostFallback(program, sink, host_kernel=timed).run(params)


def _timing_kernel(name: str, operator: str, kernel: Callable[..., RuntimeValue]) -> Callable[..., RuntimeValue]:
    from mgxir.targets.timing import record

    def timed(*args: RuntimeValue) -> RuntimeValue:
        started = time.perf_counter()
        try:
            return kernel(*args)
        finally:
            record(name, operator, "ref", time.perf_counter() - started)

    return timed


def target_options(target: Target, o: RunOptions) -> object:
    """The target's options from mgx-run's of the same names; `--perf` on IREE asks for its phase
    times (cache lookup, compile, load, run), the per-step times IREE cannot give."""
    values = {name: getattr(o, name, None) for name in option_fields(target.options_type)}
    if o.perf and "timing" in values:
        values["timing"] = True
    return target.options(values)


def run_on_target(
    program: Program, params: dict[str, np.ndarray], options: RunOptions, sink: DiagnosticSink
) -> list[RuntimeValue]:
    """Runs a program already read on `options.target` with that target's options: the one place
    the Python API (`mgxir.run`) runs a program, as mgx-run does in `_run`."""
    name = options.target or "ref"
    target = find_target(name)
    with progress(f"running on {name}" + _compiles.get(name, "")):
        return target.run(program, params, target_options(target, options), sink)


def default_target(path: str, from_log: bool) -> str:
    """`auto` for a program file that may be compiled (.mxr, .json, or text with its payload
    sidecar: `mgx-opt -p gpu -o` wrote it), else `ref`."""
    if from_log or path == "-":
        return "ref"
    if os.path.exists(os.path.splitext(path)[0] + ".payloads") or input_format(path) in ("mxr", "json"):
        return "auto"
    return "ref"


def _read(target: Target, options: object, o: RunOptions, sink: DiagnosticSink) -> Program:
    """The program to run, read as its content says (`mgxir.drivers.formats.input_format`): by the
    target where it reads that format itself (`Target.reads_formats`: program text and logs; MLIR on
    IREE, compiled as it is; a compiled .mxr/.json on the GPU), else by the driver: an ONNX model
    imported as `--from-onnx` does (sized by --batch and --input-dim), .mxr, .json, MLIR read back."""
    form = "log" if o.from_log or o.log_pass is not None else input_format(o.input_file)
    if form in target.reads_formats:
        return target.read(o.input_file, sink, options, form == "log", o.log_pass)
    return read_input(o.input_file, {"batch": o.batch, "input_dim": o.input_dim}, sink, form)


def _at_path(spec: str) -> str:
    return spec[1:] if spec.startswith("@") else spec


OUTPUT_SUFFIXES = (".npy", ".npz")


def output_destination(spec: str) -> str | None:
    """The file an `--output` writes (None for `-`, standard output), as iree-run-module reads it:
    `@f.npy` (one output) or `@f.npz` (all outputs, or the one in its place)."""
    if spec == "-":
        return None
    path = _at_path(spec)
    if not path.endswith(OUTPUT_SUFFIXES):
        raise MgxError(f"--output={spec}: write @FILE.npy (one output), @FILE.npz (all outputs) or - (standard output)")
    return path


def print_outputs(outputs: dict[str, np.ndarray], limit: int) -> None:
    for key, value in outputs.items():
        print_output(key, value, limit)


def print_output(key: str, value: np.ndarray, limit: int) -> None:
    print(f"{key}: {_type_of(value).type_name}, {_dims(value.shape)}")
    print(format_value(value, limit))


def save_outputs(
    outputs: dict[str, np.ndarray], specs: str | list[str], limit: int = 64, printed: bool = False
) -> None:
    """Each `--output` in turn takes the next output (one `@f.npz` alone takes them all, by name):
    `@f.npy` writes a real .npy, `@f.npz` an .npz (bf16/fp8 as raw bits), `-` prints it (unless all
    are printed already)."""
    specs = [specs] if isinstance(specs, str) else specs
    names = list(outputs)
    if len(specs) == 1 and specs[0].endswith(".npz"):
        _save_npz(outputs, _at_path(specs[0]))
        return
    if len(specs) > len(names):
        raise MgxError(f"{len(specs)} --output given but the program has {len(names)} output(s)")
    if len(specs) < len(names) and any(s.endswith(".npy") for s in specs):
        raise MgxError(
            f"the program has {len(names)} outputs: give one --output per output, or one --output=@FILE.npz for all"
        )
    for spec, name in zip(specs, names):
        if spec == "-":
            if not printed:
                print_output(name, outputs[name], limit)
        elif spec.endswith(".npz"):
            _save_npz({name: outputs[name]}, _at_path(spec))
        else:
            array = _storable(outputs[name])
            _save(lambda file, array=array: np.save(file, array), _at_path(spec))


def _save_npz(outputs: dict[str, np.ndarray], path: str) -> None:
    _save(lambda file: np.savez(file, **{k: _storable(v) for k, v in outputs.items()}), path)


def _save(write: Callable[[object], None], path: str) -> None:
    """Writes atomically, from bytes made in memory, so numpy adds no suffix to the name given."""
    import io

    from mgxir.text.writer import write_atomically

    buffer = io.BytesIO()
    write(buffer)
    try:
        write_atomically(path, buffer.getvalue())
    except OSError as e:
        raise MgxError(f"cannot write {path}: {e.strerror or e}") from None
