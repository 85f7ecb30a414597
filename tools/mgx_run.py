"""mgx-run: run a program's `main` on the reference interpreter (or a target) and print its outputs.

Inputs follow iree-run-module's conventions: `--input=x=@x.npy`, `--input=@inputs.npz`,
`--input="x=2x3xf32=1 2 3 4 5 6"`; parameters left over are filled per `--fill`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated

import numpy as np
import typer

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.interp import Interpreter
from mgxir.ir.dtype import DType
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.ops.definition import RuntimeValue
from mgxir.targets.gpu.driver import gpu_options, run_on_gpu
from mgxir.text.parser import read_program
from mgxir.tools.common import run_guarded
from mgxir.translate.onnx import import_model
from mgxir.verifier import verify

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)

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

Runner = Callable[[Program, dict[str, np.ndarray], DiagnosticSink], list[RuntimeValue]]


def run_on_ref(program: Program, params: dict[str, np.ndarray], sink: DiagnosticSink) -> list[RuntimeValue]:
    with np.errstate(all="ignore"):
        return Interpreter(program, sink).run(params)


# where GPU targets plug in: name -> runner
TARGETS: dict[str, Runner] = {"ref": run_on_ref, "gpu": run_on_gpu}


# -- inputs ---------------------------------------------------------------------------------------


def _is_raw_bits(t: DType) -> bool:
    return t is DType.bf16 or t.is_fp8


def to_parameter_type(name: str, array: np.ndarray, shape: Shape) -> np.ndarray:
    """An input array in the parameter's type; bf16/fp8 accept their raw bits or any floats."""
    want = shape.dtype.numpy
    if tuple(array.shape) != tuple(shape.lens):
        if array.size == shape.elements and array.ndim <= 1 and shape.elements == 1:
            array = array.reshape(shape.lens)
        else:
            raise MgxError(
                f"input '{name}' has shape {_dims(array.shape)} but parameter '{name}' is "
                f"{shape.dtype.type_name}, {_dims(shape.lens)}"
            )
    if array.dtype == want:
        return array
    if _is_raw_bits(shape.dtype) and array.dtype == shape.dtype.bits_dtype:
        return array.view(want)
    if array.dtype.kind == "f" and shape.dtype.is_integral:
        raise MgxError(f"input '{name}' holds {array.dtype} values but parameter '{name}' is {shape.dtype.type_name}")
    return array.astype(want)


def _dims(lens: tuple[int, ...] | list[int]) -> str:
    return "{" + ", ".join(map(str, lens)) + "}"


def parse_inline(name: str, text: str) -> np.ndarray:
    """`2x3xf32=1 2 3 4 5 6` (or one value, repeated): IREE's inline buffer syntax."""
    spec, _, values = text.partition("=")
    parts = spec.split("x")
    type_name = parts[-1]
    if type_name not in IREE_TYPES:
        raise MgxError(f"input '{name}': unknown element type '{type_name}' (use f32, f16, bf16, i64, i1, ...)")
    try:
        lens = tuple(int(p) for p in parts[:-1])
    except ValueError:
        raise MgxError(f"input '{name}': bad dimensions in '{spec}'") from None
    dtype = IREE_TYPES[type_name]
    words = values.replace(",", " ").replace("[", " ").replace("]", " ").split()
    try:
        numbers = np.array([float(w) for w in words], dtype=np.float64)
    except ValueError:
        raise MgxError(f"input '{name}': values must be numbers, got '{values}'") from None
    count = int(np.prod(lens)) if lens else 1
    if numbers.size == 1 and count != 1:
        numbers = np.full(count, numbers[0])
    if numbers.size != count:
        raise MgxError(f"input '{name}': {spec} needs {count} values, got {numbers.size}")
    return numbers.reshape(lens).astype(dtype.numpy)


def _load_file(name: str, path: str) -> np.ndarray | dict[str, np.ndarray]:
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise MgxError(f"cannot read input file '{path}' for '{name}': {e}") from None
    if isinstance(loaded, np.lib.npyio.NpzFile):
        return {k: loaded[k] for k in loaded.files}
    return loaded


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
            given[name] = parse_inline(name, spec)
            continue
        name = head
        if rest.startswith("@"):
            loaded = _load_file(name, rest[1:])
            if isinstance(loaded, dict):
                if name not in loaded:
                    raise MgxError(f"'{rest[1:]}' has no array named '{name}'")
                loaded = loaded[name]
            given[name] = loaded
        else:
            given[name] = parse_inline(name, rest)
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
            close = np.allclose(g, r, atol=atol if atol is not None else 1e-3, rtol=rtol if rtol is not None else 1e-3)
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


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def mgx_run(
    input_file: Annotated[
        str, typer.Argument(metavar="PROGRAM", help="Program text ('-' for standard input) or an ONNX model (.onnx).")
    ] = "-",
    inputs: Annotated[
        list[str] | None,
        typer.Option("--input", help="NAME=@x.npy, @inputs.npz, or NAME=2x3xf32=1 2 3 4 5 6 (repeatable)."),
    ] = None,
    fill: Annotated[str, typer.Option(help="Values for parameters not given: random, zeros, ones or none.")] = "random",
    seed: Annotated[int, typer.Option(help="Seed for --fill=random.")] = 0,
    output: Annotated[str | None, typer.Option("--output", help="@out.npz: write outputs as out0, out1, ...")] = None,
    expected: Annotated[
        str | None, typer.Option("--expected-output", help="@ref.npz: compare outputs; exit 1 on a mismatch.")
    ] = None,
    rms_tol: Annotated[float, typer.Option("--rms-tol", help="MIGraphX's rms tolerance.")] = 1e-3,
    atol: Annotated[float | None, typer.Option("--atol", help="Also require allclose with this atol.")] = None,
    rtol: Annotated[float | None, typer.Option("--rtol", help="Also require allclose with this rtol.")] = None,
    target: Annotated[str, typer.Option(help="Where to run: ref (the numpy reference interpreter) or gpu.")] = "ref",
    device: Annotated[int, typer.Option("--device", help="With --target=gpu: the GPU to run on.")] = 0,
    perf: Annotated[bool, typer.Option("--perf", help="With --target=gpu: time each instruction.")] = False,
    exhaustive_tune: Annotated[
        bool,
        typer.Option(
            "--exhaustive-tune",
            help="With --target=gpu: time kernel launch configurations and library algorithms; keep the fastest.",
        ),
    ] = False,
    verify_against_ref: Annotated[
        bool, typer.Option("--verify", help="Run on the target and on ref, compare with the rms rule.")
    ] = False,
    print_max: Annotated[int, typer.Option("--print-max-elements", help="Elide printed values past this many.")] = 64,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the outputs.")] = False,
    from_log: Annotated[bool, typer.Option("--from-log", help="The input is MIGraphX log output.")] = False,
    log_pass: Annotated[
        str | None, typer.Option("--log-pass", help="With --from-log: the program after this pass.")
    ] = None,
) -> None:
    """Run a MIGraphX program's main module and print its outputs."""

    def body(sink: DiagnosticSink) -> int:
        if target not in TARGETS:
            raise MgxError(f"unknown target '{target}' (available: {', '.join(TARGETS)})")
        if fill not in ("random", "zeros", "ones", "none"):
            raise MgxError(f"--fill must be random, zeros, ones or none, not '{fill}'")
        gpu_options.device, gpu_options.perf, gpu_options.exhaustive_tune = device, perf, exhaustive_tune
        if input_file.endswith(".onnx"):
            program = import_model(input_file, sink=sink)
        else:
            program = read_program(input_file, sink, from_log=from_log or log_pass is not None, log_pass=log_pass)
        verify(program, sink)
        params = gather_inputs(program, inputs or [], fill, seed)
        outputs = flatten_outputs(TARGETS[target](program, params, sink))
        sink.flush()
        if not quiet:
            for key, value in outputs.items():
                print(f"{key}: {_type_of(value).type_name}, {_dims(value.shape)}")
                print(format_value(value, print_max))
        if output is not None:
            path = output[1:] if output.startswith("@") else output
            np.savez(path, **{k: _storable(v) for k, v in outputs.items()})
        ok = True
        if verify_against_ref:
            reference = flatten_outputs(run_on_ref(program, params, sink))
            print(f"verify: {target} against ref")
            ok = compare(outputs, reference, rms_tol, atol, rtol) and ok
        if expected is not None:
            path = expected[1:] if expected.startswith("@") else expected
            loaded = _load_file("--expected-output", path)
            if not isinstance(loaded, dict):
                loaded = {"out0": loaded}
            ok = compare(outputs, loaded, rms_tol, atol, rtol) and ok
        return 0 if ok else 1

    raise typer.Exit(run_guarded(body))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
