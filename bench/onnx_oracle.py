"""ONNX import checked against onnxruntime: imports every model of a directory (default
../shared/onnx-models), runs each on mgxir's reference interpreter with random inputs, runs the same
inputs through onnxruntime (the peer), and compares outputs: float results by MIGraphX's rms rule
(tolerance 1e-3). onnxruntime's CPU kernels differ between machines (AVX2, AVX-512, VNNI), so it is
never the exact oracle of an integer or bool result nor of a model with quantized operators: those
expectations are ONNX's own reference implementation (onnx.reference, numpy, exact) on the same
inputs. Where onnx.reference has no implementation (com.microsoft's QLinear* operators, random
draws), onnxruntime's integers are taken within one unit; ConvInteger, MatMulInteger, QLinearConv and
QLinearMatMul (whose u8s8 products saturate on AVX2 without VNNI) then have no oracle.
test/unit/translate/onnx/test_onnx_models.py runs check_model on every model in CI.

Prints the counts (imported / ran / matched, and the models onnxruntime itself refuses), the import
errors by message, and the run errors and mismatches by the model's ONNX operators.

    nice python bench/onnx_oracle.py [--timeout 60] [--jobs 1] [--json out.json] [MODEL ...]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import sys
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

# the repairs that let onnxruntime read MIGraphX's test models, shared with mgx-verify --against=onnxruntime
from mgxir.drivers.verify.onnxruntime_peer import INTEGER_RANGES, ort_input, repaired_for_ort

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT.parent / "shared" / "onnx-models"
RMS_TOLERANCE = 1e-3
# operators that say nothing about what a model tests
PLUMBING = {"Constant", "Identity"}
# onnxruntime's CPU kernels that multiply uint8 by int8 with VPMADDUBSW on AVX2 machines without
# VNNI, whose int16 sums saturate: their results depend on the machine, so they are no oracle
ORT_INEXACT_OPS = frozenset({"ConvInteger", "MatMulInteger", "QLinearConv", "QLinearMatMul"})


def needs_exact_oracle(ops: set[str], expected: list[np.ndarray]) -> bool:
    """Whether onnx.reference gives the expectation instead of onnxruntime: onnxruntime's CPU
    kernels differ between machines (AVX2, AVX-512, VNNI), so it is never the oracle of an integer
    or bool result, nor of a model with quantized operators (their float results round through
    integers the same kernels compute)."""
    quantized = any(q in op.lower() for op in ops for q in ("quantize", "qlinear", "integer", "qgemm", "qattention"))
    return quantized or bool(ORT_INEXACT_OPS & ops) or any(np.asarray(e).dtype.kind in "biu" for e in expected)


@dataclass
class Result:
    model: str
    status: str  # import-error, run-error, ort-error, reference-error, dynamic, mismatch, match, timeout
    ops: list[str] = field(default_factory=list)
    message: str = ""
    seconds: float = 0.0


def model_ops(model: object) -> list[str]:
    found: set[str] = set()

    def walk(graph: object) -> None:
        for node in graph.node:  # type: ignore[attr-defined]
            found.add(node.op_type)
            for attr in node.attribute:
                if attr.HasField("g"):
                    walk(attr.g)
                for g in attr.graphs:
                    walk(g)

    walk(model.graph)  # type: ignore[attr-defined]
    return sorted(found - PLUMBING) or sorted(found)


def random_inputs(program: object, seed: int, integers: tuple[int, int] = INTEGER_RANGES[0]) -> dict[str, np.ndarray]:
    from mgxir.ir.dtype import DType

    rng = np.random.default_rng(seed)
    out = {}
    for p in program.main.parameters():  # type: ignore[attr-defined]
        shape = p.shape
        dtype = shape.dtype
        if dtype is DType.bool:
            value = rng.integers(0, 2, size=shape.lens).astype(bool)
        elif dtype.is_integral:
            value = rng.integers(*integers, size=shape.lens).astype(dtype.numpy)
        else:
            value = rng.uniform(-1.0, 1.0, size=shape.lens).astype(np.float32).astype(dtype.numpy)
        out[p.param_name] = value
    return out


def check_model(path: str, seed: int = 0) -> Result:
    """Imports, runs and compares one model."""
    import onnx
    import onnxruntime as ort

    from mgxir.diagnostics import DiagnosticSink, MgxError
    from mgxir.drivers.run import rms_error
    from mgxir.interp import Interpreter
    from mgxir.translate.onnx import import_model
    from mgxir.verifier import verify

    name = Path(path).stem
    start = time.perf_counter()
    try:
        model = onnx.load(path, load_external_data=False)
        ops = model_ops(model)
    except Exception as e:  # the importer must say why; the oracle only needs op names
        ops = []
        model = None
        load_error = str(e)
    else:
        load_error = ""
    result = Result(name, "import-error", ops)
    sink = DiagnosticSink()
    try:
        program = import_model(path, sink=sink)
        verify(program, sink)
    except MgxError as e:
        result.message = e.message.replace(path + ": ", "")
        return result
    except Exception as e:
        result.message = f"internal error: {type(e).__name__}: {e}"
        return result
    if model is None:
        result.status, result.message = "ort-error", load_error
        return result
    if any(p.shape.is_dynamic for p in program.main.parameters()):
        result.status = "dynamic"
        return result
    try:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 4
        repaired = repaired_for_ort(model)
        session = ort.InferenceSession(repaired or path, options, providers=["CPUExecutionProvider"])
    except Exception as e:
        result.status, result.message = "ort-error", str(e).splitlines()[0][:200]
        return result
    for integers in INTEGER_RANGES:
        inputs = random_inputs(program, seed, integers)
        try:
            feeds = {}
            for i in session.get_inputs():
                elem = next((v.type.tensor_type.elem_type for v in model.graph.input if v.name == i.name), 1)
                if i.name not in inputs:
                    raise ValueError(f"input '{i.name}' is not a parameter of the imported program")
                shape = [d if isinstance(d, int) else inputs[i.name].shape[k] for k, d in enumerate(i.shape)]
                feeds[i.name] = ort_input(inputs[i.name], elem).reshape(shape if shape else ())
            expected = session.run(None, feeds)
            break
        except Exception as e:
            result.status, result.message = "ort-error", str(e).splitlines()[0][:200]
    else:
        return result
    # integers are compared exactly against onnx.reference; against onnxruntime (where onnx.reference
    # has no implementation: com.microsoft's QLinear* operators, random draws) within one unit
    integer_slack = 0
    if needs_exact_oracle(set(ops), expected):
        try:
            expected = reference_outputs(model, feeds)
        except Exception as e:  # onnx.reference's own refusals come as many exception types
            if ORT_INEXACT_OPS & set(ops):  # onnxruntime's saturating products are no oracle at all
                result.status, result.message = "reference-error", str(e).splitlines()[0][:200]
                return result
            integer_slack = 1
    try:
        with np.errstate(all="ignore"):
            outputs = Interpreter(program, sink).run(inputs)
    except MgxError as e:
        result.status, result.message = "run-error", e.message
        return result
    except Exception as e:
        result.status, result.message = "run-error", f"internal error: {type(e).__name__}: {e}"
        return result
    result.seconds = time.perf_counter() - start
    flat = [o for out in outputs for o in (out if isinstance(out, tuple) else (out,))]
    if len(flat) != len(expected):
        result.status, result.message = "mismatch", f"{len(flat)} outputs, onnxruntime gives {len(expected)}"
        return result
    for index, (got, want) in enumerate(zip(flat, expected)):
        got, want = np.asarray(got), np.asarray(want)
        if got.size != want.size:
            result.status = "mismatch"
            result.message = f"output {index}: shape {list(got.shape)}, onnxruntime gives {list(want.shape)}"
            return result
        if want.dtype.kind in "biu":
            slack = integer_slack if want.dtype.kind in "iu" else 0
            gap = np.abs(got.ravel().astype(np.int64) - want.ravel().astype(np.int64))
            differ = int(np.sum(gap > slack))
            if differ:
                result.status = "mismatch"
                within = f" by more than {slack}" if slack else ""
                result.message = f"output {index}: {differ} of {want.size} integer elements differ{within}"
                return result
            continue
        g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
        nan_g, nan_w = np.isnan(g), np.isnan(w)
        if not np.array_equal(nan_g, nan_w):
            result.status = "mismatch"
            result.message = (
                f"output {index}: NaN at {int(np.sum(nan_g))} elements, onnxruntime at {int(np.sum(nan_w))}"
            )
            return result
        error = rms_error(g[~nan_g], w[~nan_w])
        if not (error <= RMS_TOLERANCE or np.array_equal(g, w, equal_nan=True)):
            result.status = "mismatch"
            result.message = f"output {index}: rms error {error:.3g}"
            return result
    result.status = "match"
    return result


def reference_outputs(model: object, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """ONNX's reference implementation (numpy, exact in integers) on the model, its nodes put in
    an order where each comes after what it reads (onnxruntime sorts them; onnx.reference does not)."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    model = onnx.ModelProto.FromString(model.SerializeToString())  # type: ignore[attr-defined]
    graph = model.graph
    known = {""} | set(feeds) | {i.name for i in graph.initializer} | {i.name for i in graph.input}
    pending, ordered = list(graph.node), []
    while pending:
        ready = [n for n in pending if set(n.input) <= known] or pending  # a cycle: let the evaluator say
        for node in ready:
            ordered.append(node)
            known.update(node.output)
        pending = [n for n in pending if n not in ready]
    del graph.node[:]
    graph.node.extend(ordered)
    return [np.asarray(v) for v in ReferenceEvaluator(model).run(None, feeds)]


def _worker(tasks: mp.Queue, results: mp.Queue) -> None:
    while True:
        path = tasks.get()
        if path is None:
            return
        try:
            results.put(asdict(check_model(path)))
        except BaseException as e:  # keep the worker alive for the next model
            results.put(asdict(Result(Path(path).stem, "run-error", [], f"oracle: {type(e).__name__}: {e}")))


def run_all(paths: list[str], timeout: float, jobs: int) -> list[Result]:
    """Each model in a worker process; a model that runs past `timeout` is reported and its worker
    replaced."""
    ctx = mp.get_context("fork")
    results: list[Result] = []
    pending = list(paths)
    workers: list[tuple[mp.Process, mp.Queue, mp.Queue, str | None, float]] = []

    def start() -> tuple[mp.Process, mp.Queue, mp.Queue, str | None, float]:
        tq, rq = ctx.Queue(), ctx.Queue()
        proc = ctx.Process(target=_worker, args=(tq, rq), daemon=True)
        proc.start()
        return proc, tq, rq, None, 0.0

    workers = [start() for _ in range(max(1, jobs))]
    done = 0
    while pending or any(w[3] is not None for w in workers):
        for k, (proc, tq, rq, current, since) in enumerate(workers):
            if current is None and pending:
                path = pending.pop(0)
                tq.put(path)
                workers[k] = (proc, tq, rq, path, time.monotonic())
                continue
            if current is None:
                continue
            try:
                got = rq.get(timeout=0.05)
            except queue.Empty:
                if time.monotonic() - since > timeout or not proc.is_alive():
                    status = "timeout" if proc.is_alive() else "run-error"
                    proc.kill()
                    proc.join()
                    results.append(
                        Result(
                            Path(current).stem,
                            status,
                            [],
                            f"past {timeout:g} s" if status == "timeout" else "worker died",
                        )
                    )
                    workers[k] = start()
                    done += 1
                continue
            results.append(Result(**got))
            workers[k] = (proc, tq, rq, None, 0.0)
            done += 1
            if done % 100 == 0:
                print(f"... {done}/{len(paths)}", file=sys.stderr, flush=True)
    for proc, tq, *_ in workers:
        tq.put(None)
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
    return sorted(results, key=lambda r: r.model)


def report(results: list[Result]) -> str:
    counts = Counter(r.status for r in results)
    imported = len(results) - counts["import-error"]
    ran = counts["match"] + counts["mismatch"]
    lines = [
        f"models: {len(results)}",
        f"imported: {imported}   (import errors: {counts['import-error']})",
        f"ran on ref and onnxruntime: {ran}   (ref errors: {counts['run-error']}, onnxruntime refuses: "
        f"{counts['ort-error']}, onnx.reference refuses: {counts['reference-error']}, "
        f"dynamic inputs: {counts['dynamic']}, timeouts: {counts['timeout']})",
        f"matched: {counts['match']}   mismatched: {counts['mismatch']}",
    ]
    sections = (
        ("mismatch", "mismatches"),
        ("run-error", "ref errors"),
        ("timeout", "timeouts"),
        ("ort-error", "onnxruntime refuses"),
        ("reference-error", "onnx.reference refuses (where onnxruntime is inexact)"),
    )
    for status, title in sections:
        by_op: dict[str, list[Result]] = defaultdict(list)
        for r in results:
            if r.status == status:
                by_op[",".join(r.ops) or "?"].append(r)
        if by_op:
            lines.append(f"\n{title} by op:")
            for op, rs in sorted(by_op.items(), key=lambda kv: (-len(kv[1]), kv[0])):
                lines.append(f"  {op}: {len(rs)}")
                lines.extend(f"    {r.model}: {r.message}" for r in rs)
    messages: dict[str, list[str]] = defaultdict(list)
    for r in results:
        if r.status == "import-error":
            messages[r.message.split(":")[0] if r.message.startswith("Unknown operator") else r.message].append(r.model)
    if messages:
        lines.append("\nimport errors:")
        for message, models in sorted(messages.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"  {len(models)} x {message}: {', '.join(models[:6])}{' ...' if len(models) > 6 else ''}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help="models (default: every .onnx in ../shared/onnx-models)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per model")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    paths = args.models or sorted(str(p) for p in MODELS.glob("*.onnx"))
    if not paths:
        print(f"no models in {MODELS}", file=sys.stderr)
        return 1
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    start = time.perf_counter()
    results = run_all(paths, args.timeout, args.jobs)
    print(report(results))
    print(f"\n{len(paths)} models in {time.perf_counter() - start:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
