"""The ONNX models of ../shared/onnx-models through IREE on GPUs, against mgxir's reference interpreter.

Two steps: `prepare` (any machine with iree-base-compiler; no GPU) imports each model, runs it on the
reference interpreter with random inputs (bench/onnx_oracle.py's), lowers it to MLIR and compiles it
for each device, writing OUT/cases.npz (inputs and expected outputs), OUT/NAME.DEVICE.vmfb and
OUT/prepare.json (what happened to each model). `run` (the GPU machine; iree-base-runtime only) runs
each compiled module on its device and compares every output with the reference by MIGraphX's rms
rule (tolerance 1e-3; integer and bool outputs exactly).

    python bench/bench_iree_onnx.py prepare OUT [--device cuda --device vulkan] [--jobs 2] [--models-dir DIR]
                                             [MODEL ...]
    python bench/bench_iree_onnx.py run OUT [--device cuda --device vulkan] [--json results.json]

The table: per device, models imported (and ran on the reference), lowered to MLIR, compiled, ran,
matched; then the reasons models stopped at each step, grouped by message.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing as mp
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT.parent / "shared" / "onnx-models"
RMS_TOLERANCE = 1e-3
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:160]


def compiled(mlir: bytes, target, cache: str) -> bytes:
    """The module of `mlir` for `target`, from `cache` (a folder keyed by the MLIR's bytes, the device
    and its flags; '' for none) where compiled before."""
    import hashlib

    from mgxir.targets.iree.cache import compiler_version
    from mgxir.targets.iree.compile import compile_module

    if not cache:
        return compile_module(mlir, target, list(target.flags))
    key = hashlib.sha256(mlir + repr((target.name, target.flags, compiler_version())).encode()).hexdigest()
    path = Path(cache) / f"{key[:32]}.vmfb"
    if path.exists():
        return path.read_bytes()
    vmfb = compile_module(mlir, target, list(target.flags))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".tmp").write_bytes(vmfb)
    path.with_suffix(".tmp").replace(path)
    return vmfb


def prepare_one(task: tuple[str, str, list[str], str, dict | None]) -> dict:
    """Imports, runs on the reference, lowers and compiles one model; the arrays go back as npz bytes."""
    started = time.perf_counter()
    record = _prepare(*task)
    record["seconds"] = round(time.perf_counter() - started, 1)
    return record


def _prepare(path: str, out: str, devices: list[str], cache: str, known: dict | None = None) -> dict:
    """`known`: the model's record from an earlier prepare that reached the compile step: its inputs
    and reference outputs are kept, the model is lowered and compiled again."""
    from onnx_oracle import random_inputs

    from mgxir.diagnostics import DiagnosticSink, MgxError
    from mgxir.drivers.run import flatten_outputs
    from mgxir.interp import Interpreter
    from mgxir.translate.mlir.api import mlir_bytecode
    from mgxir.translate.onnx import import_model
    from mgxir.verifier import verify

    name = Path(path).stem
    record: dict = {"model": name, "stage": "import", "message": "", "devices": {}}
    sink = DiagnosticSink()
    try:
        program = import_model(path, sink=sink)
        verify(program, sink)
        if known is not None:
            record = {**known, "devices": {}}
            return _compile(record, mlir_bytecode(program, None, sink), out, devices, cache)
        if any(p.shape.is_dynamic for p in program.main.parameters()):
            record["message"] = "dynamic input shapes"
            return record
        inputs = random_inputs(program, 0)
        record["stage"] = "reference"
        with np.errstate(all="ignore"):
            expected = flatten_outputs(Interpreter(program, sink).run(inputs))
        record["stage"] = "lower"
        mlir = mlir_bytecode(program, None, sink)
    except MgxError as e:
        record["message"] = _first_line(e.message.replace(path + ": ", ""))
        return record
    except Exception as e:
        record["message"] = f"internal error: {type(e).__name__}: {_first_line(str(e))}"
        return record
    record["stage"] = "compile"
    buffer = io.BytesIO()
    arrays = {f"in.{k}": v for k, v in inputs.items()} | {f"out.{k}": v for k, v in expected.items()}
    np.savez(buffer, **{k: _storable(v) for k, v in arrays.items()})
    record["arrays"] = buffer.getvalue().hex()
    record["inputs"] = [p.param_name for p in program.main.parameters()]
    record["outputs"] = list(expected)
    record["types"] = {k: str(v.dtype) for k, v in arrays.items()}
    return _compile(record, mlir, out, devices, cache)


def _compile(record: dict, mlir: bytes, out: str, devices: list[str], cache: str) -> dict:
    from mgxir.diagnostics import MgxError
    from mgxir.targets.iree.devices import device

    name = record["model"]
    for name_ in devices:
        target = device(name_)
        try:
            vmfb = compiled(mlir, target, cache)
        except MgxError as e:
            record["devices"][name_] = _first_line(e.message)
            continue
        (Path(out) / f"{name}.{name_}.vmfb").write_bytes(vmfb)
        record["devices"][name_] = "compiled"
    return record


def _storable(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.name.startswith(("bfloat16", "float8")) else a


def prepare(
    out: Path,
    devices: list[str],
    jobs: int,
    models: list[str],
    folder: Path = MODELS,
    deadline: float = 1e9,
    cache: str = "",
    relower: bool = False,
) -> None:
    """Models still unfinished `deadline` seconds after the start are recorded as not reached."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [str(folder / f"{m}.onnx") for m in models] or sorted(str(p) for p in folder.glob("*.onnx"))
    earlier: dict[str, dict] = {}
    if relower:
        earlier = {r["model"]: r for r in json.loads((out / "prepare.json").read_text()) if r["stage"] == "compile"}
    tasks = [(p, str(out), devices, cache, earlier.get(Path(p).stem)) for p in paths]
    records, arrays = [], {}
    started = time.perf_counter()
    with mp.get_context("spawn").Pool(jobs, maxtasksperchild=50) as pool:
        pending = pool.imap_unordered(prepare_one, tasks)
        for i in range(len(tasks)):
            try:
                record = pending.next(timeout=max(deadline - (time.perf_counter() - started), 0.01))
            except mp.TimeoutError:
                break
            data = record.pop("arrays", None)
            if data is not None:
                with np.load(io.BytesIO(bytes.fromhex(data))) as z:
                    arrays.update({f"{record['model']}/{k}": z[k] for k in z.files})
            records.append(record)
            if record.get("seconds", 0) > 30:
                print(f"{record['model']}: {record['seconds']} s", flush=True)
            if i % 50 == 0:
                print(f"{i}/{len(tasks)} {time.perf_counter() - started:.0f}s", flush=True)
        pool.terminate()
    done = {r["model"] for r in records}
    for p in paths:
        if Path(p).stem not in done:
            records.append({"model": Path(p).stem, "stage": "not reached", "message": "deadline", "devices": {}})
    if relower:  # the inputs and reference outputs of the models lowered again
        relowered = {r["model"] for r in records if r["model"] in earlier}
        with np.load(out / "cases.npz") as old:
            arrays.update({k: old[k] for k in old.files if k.split("/")[0] in relowered})
    np.savez_compressed(out / "cases.npz", **arrays)
    (out / "prepare.json").write_text(json.dumps(sorted(records, key=lambda r: r["model"]), indent=1))


def run(prepared: Path, devices: list[str], time_limit: float = 1e9, shard: tuple[int, int] = (0, 1)) -> dict:
    """Models still unrun `time_limit` seconds after the start are left out (and counted). `shard`
    (K, N): only every Nth compiled model from the Kth, for N processes side by side."""
    from mgxir.diagnostics import MgxError
    from mgxir.drivers.run import rms_error
    from mgxir.ir.dtype import DType
    from mgxir.targets.iree.devices import device
    from mgxir.targets.iree.runtime import LoadedModule, runtime_config

    records = [r for r in json.loads((prepared / "prepare.json").read_text()) if r["stage"] == "compile"]
    records = records[shard[0] :: shard[1]]
    cases = np.load(prepared / "cases.npz")
    results: dict = {d: {} for d in devices}
    configs = {d: runtime_config(device(d)) for d in devices}
    started = time.perf_counter()
    for record in records:
        if record["stage"] != "compile":
            continue
        if time.perf_counter() - started > time_limit:
            for d in devices:
                if record["devices"].get(d) == "compiled":
                    results[d][record["model"]] = ("not run", "time limit")
            continue
        name = record["model"]
        inputs = [_typed(cases[f"{name}/in.{p}"], record["types"][f"in.{p}"]) for p in record["inputs"]]
        wanted = [_typed(cases[f"{name}/out.{o}"], record["types"][f"out.{o}"]) for o in record["outputs"]]
        for d in devices:
            if record["devices"].get(d) != "compiled":
                continue
            try:
                module = LoadedModule(prepared / f"{name}.{d}.vmfb", device(d), configs[d])
                types = [DType.from_numpy(w.dtype) for w in wanted]
                got = module(inputs, types)
            except MgxError as e:
                results[d][name] = ("run-error", _first_line(e.message))
                continue
            except Exception as e:  # the runtime's own errors (copies back to the host, ...)
                results[d][name] = ("run-error", f"{type(e).__name__}: {_first_line(str(e))}")
                continue
            results[d][name] = _compare(got, wanted, rms_error)
    return results


def _typed(a: np.ndarray, dtype: str) -> np.ndarray:
    import ml_dtypes  # noqa: F401  (registers bfloat16 and the float8 names with numpy)

    wanted = np.dtype(dtype)
    return a.view(wanted) if a.dtype != wanted else a


def _compare(got: list[np.ndarray], wanted: list[np.ndarray], rms_error) -> tuple[str, str]:
    worst = 0.0
    for index, (g, w) in enumerate(zip(got, wanted)):
        g, w = np.asarray(g), np.asarray(w)
        if g.size != w.size:
            return "mismatch", f"output {index}: {g.size} elements, reference {w.size}"
        g64, w64 = g.astype(np.float64).ravel(), w.astype(np.float64).ravel()
        if w.dtype.kind in "biu":
            if not np.array_equal(g64, w64):
                return "mismatch", f"output {index}: integers differ at {int(np.sum(g64 != w64))} elements"
            continue
        nan_g, nan_w = np.isnan(g64), np.isnan(w64)
        if not np.array_equal(nan_g, nan_w):
            return "mismatch", f"output {index}: NaN at {int(nan_g.sum())} elements, reference {int(nan_w.sum())}"
        error = rms_error(g64[~nan_g], w64[~nan_w]) if (~nan_g).any() else 0.0
        if not (error <= RMS_TOLERANCE or np.array_equal(g64, w64, equal_nan=True)):
            return "mismatch", f"output {index}: rms error {error:.3g}"
        worst = max(worst, error)
    return "match", f"{worst:.2e}"


def report(prepared: Path, results: dict) -> str:
    records = json.loads((prepared / "prepare.json").read_text())
    stages = Counter(r["stage"] for r in records)
    imported = len(records) - stages["import"] - stages["not reached"]
    reference = imported - stages["reference"]
    lowered = stages["compile"]
    lines = [
        f"models: {len(records)} ({stages['not reached']} not reached before the deadline); imported: {imported}; "
        f"ran on the reference: {reference}; lowered to MLIR: {lowered}",
        "",
        "| device | lowered | compiled | ran | matched | worst rms of matched |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for d, found in results.items():
        compiled = sum(1 for r in records if r["devices"].get(d) == "compiled")
        ran = sum(1 for status, _ in found.values() if status not in ("run-error", "not run"))
        matched = [float(m) for status, m in found.values() if status == "match"]
        worst = f"{max(matched):.2e}" if matched else "-"
        lines.append(f"| {d} | {lowered} | {compiled} | {ran} | {len(matched)} | {worst} |")
    lines.append("")
    not_lowered = Counter(r["message"] for r in records if r["stage"] == "lower")
    lines.append(f"not lowered ({sum(not_lowered.values())}), by reason:")
    for message, n in _by_reason(not_lowered).most_common(25):
        lines.append(f"  {n:4d}  {message}")
    for d, found in results.items():
        failed = Counter(
            message for r in records for dev, message in r["devices"].items() if dev == d and message != "compiled"
        )
        lines.append(f"{d}: not compiled ({sum(failed.values())}):")
        for message, n in failed.most_common(10):
            lines.append(f"  {n:4d}  {message}")
        unrun = sum(1 for status, _ in found.values() if status == "not run")
        if unrun:
            lines.append(f"{d}: not run before the time limit: {unrun}")
        bad = Counter(f"{s}: {m}" for s, m in found.values() if s not in ("match", "not run"))
        lines.append(f"{d}: run errors and mismatches ({sum(bad.values())}):")
        for name, (status, message) in sorted(found.items()):
            if status not in ("match", "not run"):
                lines.append(f"  {name}: {status}: {message}")
    return "\n".join(lines)


def _by_reason(messages: Counter) -> Counter:
    """Lowering errors without the instruction and position: `cannot lower 'OP' ...: WHY`."""
    grouped: Counter = Counter()
    for message, n in messages.items():
        head, _, why = message.partition(" to MLIR: ")
        op = head.split("'")[1] if "'" in head else head
        grouped[f"{op}: {why}" if why else message] += n
    return grouped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["prepare", "run", "report"], help="report: from run --json files")
    parser.add_argument("out", type=Path)
    parser.add_argument("models", nargs="*")
    parser.add_argument("--device", action="append", default=[])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", type=Path, action="append", default=[], help="run: write; report: read")
    parser.add_argument("--shard", default="0/1", help="run: K/N, every Nth model from the Kth")
    parser.add_argument("--models-dir", type=Path, default=MODELS)
    parser.add_argument("--deadline", type=float, default=1e9, help="seconds for prepare")
    parser.add_argument("--time-limit", type=float, default=1e9, help="seconds for run")
    parser.add_argument("--compile-cache", default="", help="folder of modules compiled before, by MLIR digest")
    parser.add_argument(
        "--relower",
        action="store_true",
        help="prepare: keep OUT's inputs and expected outputs, lower again",
    )
    args = parser.parse_args(argv)
    devices = args.device or ["cuda", "vulkan"]
    if args.step == "prepare":
        prepare(
            args.out, devices, args.jobs, args.models, args.models_dir, args.deadline, args.compile_cache, args.relower
        )
        print(report(args.out, {}))
        return 0
    if args.step == "report":  # the results of several runs (shards) together
        results: dict = {d: {} for d in devices}
        for path in args.json:
            for d, found in json.loads(path.read_text()).items():
                results.setdefault(d, {}).update({name: tuple(r) for name, r in found.items()})
        print(report(args.out, results))
        return 0
    k, n = (int(x) for x in args.shard.split("/"))
    results = run(args.out, devices, args.time_limit, (k, n))
    for path in args.json:
        path.write_text(json.dumps(results, indent=1))
    print(report(args.out, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
