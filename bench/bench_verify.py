"""mgx-verify's figures (issue 27): the ONNX models of ../shared/onnx-models on one target, run by
mgx-verify with each executor in one run of this script:

- `inline` (one process, the peer) against `process` (one worker per core): the speed-up;
- `process` again with nothing changed: the second run's time as a share of the first;
- `ray` (a local cluster started for the run): its verdicts against `process`'s.

Each run is the command itself (`python -m mgxir.tools.mgx_verify`), with its own result cache
folder; wall seconds and the machine's load average are printed with each figure.

    nice python bench/bench_verify.py [--models DIR] [--targets ref] [--limit N] [--skip-ray] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT.parent / "shared" / "onnx-models"


def run_verify(inputs: list[str], folder: Path, name: str, executor: str, cache: str, args: argparse.Namespace) -> dict:
    out = folder / f"{name}.json"
    command = [
        sys.executable,
        "-m",
        "mgxir.tools.mgx_verify",
        *inputs,
        f"--targets={args.targets}",
        f"--executor={executor}",
        f"--cache-dir={folder / cache}",
        f"--timeout={args.timeout}",
        f"--report={out}",
        "-q",
    ]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{name}: mgx-verify exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    records = json.loads(out.read_text())["records"]
    verdicts = {(r["input"], r["target"]): r["status"] for r in records}
    counts: dict[str, int] = {}
    for status in verdicts.values():
        counts[status] = counts.get(status, 0) + 1
    return {
        "name": name,
        "seconds": seconds,
        "load_before": load,
        "load_after": os.getloadavg()[0],
        "counts": counts,
        "verdicts": verdicts,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=str(MODELS))
    parser.add_argument("--targets", default="ref")
    parser.add_argument("--limit", type=int, default=0, help="only the first N models")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    models = sorted(str(p) for p in Path(args.models).glob("*.onnx"))
    if args.limit:
        models = models[: args.limit]
    with tempfile.TemporaryDirectory(prefix="bench_verify") as tmp:
        folder = Path(tmp)
        runs = [run_verify(models, folder, "inline", "inline", "cache-inline", args)]
        runs.append(run_verify(models, folder, "process", "process", "cache-process", args))
        runs.append(run_verify(models, folder, "process, second run", "process", "cache-process", args))
        if not args.skip_ray:
            runs.append(run_verify(models, folder, "ray", "ray", "cache-ray", args))
    inline, process, second = runs[0], runs[1], runs[2]
    print(f"{len(models)} models on {args.targets}, {os.cpu_count()} cores")
    print("| run | seconds | load before/after | statuses | verdicts as process |")
    print("| --- | --- | --- | --- | --- |")
    for run in runs:
        same = run["verdicts"] == process["verdicts"]
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(run["counts"].items()))
        print(
            f"| {run['name']} | {run['seconds']:.1f} | {run['load_before']:.2f}/{run['load_after']:.2f} | "
            f"{statuses} | {'identical' if same else 'DIFFERENT'} |"
        )
    print(f"process / inline speed-up: {inline['seconds'] / process['seconds']:.2f}x")
    print(f"second run: {100 * second['seconds'] / process['seconds']:.1f}% of the first")
    differing = [k for k in inline["verdicts"] if inline["verdicts"][k] != process["verdicts"].get(k)]
    if differing:
        print(f"inline and process differ on {len(differing)}: {differing[:10]}")
    if args.json:
        Path(args.json).write_text(
            json.dumps([{k: v for k, v in r.items() if k != "verdicts"} for r in runs], indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
