"""mgx-verify's figures (issue 27): the ONNX models of ../shared/onnx-models on one target, run by
mgx-verify with each executor in one run of this script:

- `inline` (one process, the peer) against `process` (one worker per core): the speed-up;
- `process` again with nothing changed: the second run's time as a share of the first;
- `ray` (a local cluster started for the run): its verdicts against `process`'s.

With `--gpus 0,1` (issue 28, on a machine with two GPUs) the runs are on `--targets=gpu`: one GPU
against two (verdicts and time), the second run from the cache, two GPUs with one worker killed
mid-run (nothing lost), and `--tune` on two GPUs writing one problem cache that a later one-GPU
`--tune` run finds filled. With `--executor process` (the default) one worker per GPU
(`--workers`, `--gpus`); with `--executor ray` a local Ray cluster that each run starts, given the
GPUs by `CUDA_VISIBLE_DEVICES` (Ray gives each task one: `num_gpus=1`), and the worker killed is
a Ray worker running a task.

Each run is the command itself (`python -m mgxir.tools.mgx_verify`), with its own result cache
folder; wall seconds and the machine's load average are printed with each figure.

    nice python bench/bench_verify.py [--models DIR] [--targets ref] [--every K] [--skip-ray] [--json out.json]
    python bench/bench_verify.py --gpus 0,1 --every 12 [--executor ray] --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT.parent / "shared" / "onnx-models"


def run_verify(
    inputs: list[str],
    folder: Path,
    name: str,
    executor: str,
    cache: str,
    args: argparse.Namespace,
    flags: tuple[str, ...] = (),
    kill_worker_after: float | None = None,
    environment: dict[str, str] | None = None,
) -> dict:
    out = folder / f"{name.replace(' ', '_').replace(',', '')}.json"
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
        *flags,
    ]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    env = {**os.environ, **(environment or {})}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    killed = None
    if kill_worker_after is not None:
        time.sleep(kill_worker_after)
        killed = kill_a_ray_worker() if executor == "ray" else kill_a_worker(process.pid)
    stdout, stderr = process.communicate()
    seconds = time.perf_counter() - start
    if process.returncode not in (0, 1):
        raise SystemExit(f"{name}: mgx-verify exited {process.returncode}: {stderr.strip()[-2000:]}")
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
        "killed": killed,
        "records": len(records),
        "table_tail": stdout.strip().splitlines()[-3:],
    }


def kill_a_worker(pid: int) -> int | None:
    """SIGKILLs one worker process of the mgx-verify run `pid` (its pool's spawned children)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(c) for c in f.read().split()]
    except OSError:
        return None
    for child in children:
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if b"spawn_main" in f.read():
                    os.kill(child, signal.SIGKILL)
                    return child
        except OSError:
            continue
    return None


def kill_a_ray_worker(wait_s: float = 30.0) -> int | None:
    """SIGKILLs the first Ray worker seen running a task (Ray names the process after the function
    it runs: `ray::_on_ray_worker`), waiting up to `wait_s` for one."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if f.read().startswith(b"ray::_on_ray_worker"):
                        os.kill(int(pid), signal.SIGKILL)
                        return int(pid)
            except OSError:
                continue
        time.sleep(0.05)
    return None


def problem_entries(folder: Path) -> int:
    path = folder / "problems.json"
    return len(json.loads(path.read_text())) if path.exists() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=str(MODELS))
    parser.add_argument("--targets", default="ref")
    parser.add_argument("--every", type=int, default=1, help="every K-th model (sorted by name)")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--gpus", help="GPU numbers (0,1): the GPU runs of issue 28 instead")
    parser.add_argument("--executor", default="process", choices=("process", "ray"), help="with --gpus")
    parser.add_argument(
        "--leave-out",
        help="a report of an earlier run: models stopped there (timeout, memory limit) are left out, as "
        "the inline executor has no limits to stop them",
    )
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--keep", help="keep the runs' reports and caches in this folder (default: a temporary one)")
    args = parser.parse_args()
    models = sorted(str(p) for p in Path(args.models).glob("*.onnx"))[:: args.every]
    if args.leave_out:
        stopped = {
            r["input"]
            for r in json.loads(Path(args.leave_out).read_text())["records"]
            if r["status"] == "error" and any(w in r["message"] for w in ("timed out", "memory", "died"))
        }
        print(f"left out, stopped in {args.leave_out}: {sorted(m for m in models if m in stopped)}")
        models = [m for m in models if m not in stopped]
    print(f"{len(models)} models, {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_verify") as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        runs = gpu_runs(models, folder, args) if args.gpus else cpu_runs(models, folder, args)
    if args.json:
        kept = [{k: v for k, v in r.items() if k != "verdicts"} for r in runs]
        Path(args.json).write_text(json.dumps(kept, indent=1))
    return 0


def cpu_runs(models: list[str], folder: Path, args: argparse.Namespace) -> list[dict]:
    runs = [run_verify(models, folder, "inline", "inline", "cache-inline", args)]
    runs.append(run_verify(models, folder, "process", "process", "cache-process", args))
    runs.append(run_verify(models, folder, "process, second run", "process", "cache-process", args))
    if not args.skip_ray:
        runs.append(run_verify(models, folder, "ray", "ray", "cache-ray", args))
    inline, process, second = runs[0], runs[1], runs[2]
    table(runs, process)
    print(f"process / inline speed-up: {inline['seconds'] / process['seconds']:.2f}x")
    print(f"second run: {100 * second['seconds'] / process['seconds']:.1f}% of the first")
    differing = [k for k in inline["verdicts"] if inline["verdicts"][k] != process["verdicts"].get(k)]
    if differing:
        print(f"inline and process differ on {len(differing)}: {differing[:10]}")
    return runs


def gpu_runs(models: list[str], folder: Path, args: argparse.Namespace) -> list[dict]:
    gpus = args.gpus.split(",")
    args.targets = "gpu"
    executor = args.executor
    if executor == "ray":  # the local cluster finds the GPUs it is shown
        one, both = (), ()
        see_one, see_both = {"CUDA_VISIBLE_DEVICES": gpus[0]}, {"CUDA_VISIBLE_DEVICES": args.gpus}
    else:
        one, both = ("--workers=1", f"--gpus={gpus[0]}"), (f"--workers={len(gpus)}", f"--gpus={args.gpus}")
        see_one = see_both = {}
    print(f"executor: {executor}", flush=True)

    def run(inputs: list[str], name: str, cache: str, flags: tuple[str, ...], see: dict, **more: Any) -> dict:
        return run_verify(inputs, folder, name, executor, cache, args, flags, environment=see, **more)

    runs = [run(models, "1 GPU", "cache-1", one, see_one)]
    runs.append(run(models, f"{len(gpus)} GPUs", "cache-2", both, see_both))
    table(runs, runs[0])
    runs.append(run(models, "1 GPU, second run", "cache-1", one, see_one))
    killed_at = runs[1]["seconds"] * 0.4
    killed_name = f"{len(gpus)} GPUs, a worker killed"
    runs.append(run(models, killed_name, "cache-k", both, see_both, kill_worker_after=killed_at))
    table(runs, runs[0])
    print(f"{len(gpus)} GPUs / 1 GPU speed-up: {runs[0]['seconds'] / runs[1]['seconds']:.2f}x")
    print(f"second run: {100 * runs[2]['seconds'] / runs[0]['seconds']:.1f}% of the first")
    print(f"killed worker {runs[3]['killed']} at {killed_at:.1f} s: {runs[3]['records']} of {len(models)} records")
    tuned = models[: max(1, len(models) // 4)]
    tune = ("--tune", "--no-cache")
    runs.append(run(tuned, f"--tune on {len(gpus)} GPUs", "cache-t", both + tune, see_both))
    entries = problem_entries(folder / "cache-t")
    runs.append(run(tuned, "--tune on 1 GPU, problems cached", "cache-t", one + tune, see_one))
    table(runs[4:], runs[4])
    print(
        f"problem cache after the {len(gpus)}-GPU tuning: {entries} entries; after the 1-GPU run: "
        f"{problem_entries(folder / 'cache-t')}"
    )
    return runs


def table(runs: list[dict], peer: dict) -> None:
    print("| run | seconds | load before/after | statuses | verdicts as the first |")
    print("| --- | --- | --- | --- | --- |")
    for run in runs:
        same = run["verdicts"] == {k: v for k, v in peer["verdicts"].items() if k in run["verdicts"]}
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(run["counts"].items()))
        print(
            f"| {run['name']} | {run['seconds']:.1f} | {run['load_before']:.2f}/{run['load_after']:.2f} | "
            f"{statuses} | {'identical' if same else 'DIFFERENT'} |",
            flush=True,
        )


if __name__ == "__main__":
    raise SystemExit(main())
