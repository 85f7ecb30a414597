"""Portable programs (issue 21, docs/compiled-programs.md): ResNet-50 and BERT-base made into portable
compiled files (`mgx-opt -p gpu --portable [--offload-arch=...]`), then finished and run per target, whole
process, cold (empty kernel and module caches) and warm, each output compared with the reference
interpreter's by MIGraphX's rms rule; the file's size against the weights it holds.

    python bench/bench_portable.py [--targets cpu,vulkan,gpu] [--models resnet50,bert] [--runs 3]
                                   [--offload-arch sm_90,gfx942] [--work DIR]

Peers in the same run: the reference interpreter on the uncompiled program (outputs and time), and per
target the uncompiled program run there (`mgx-run MODEL.mgx --target=T`, which compiles it from the
program on every process start but for its caches). The models are made here without torch:
bench/resnet_onnx.py (random He-scaled weights as initializers) and bench/bert_onnx.py (12 layers; its
weights are graph inputs, filled at random, so the file holds none of them). `--target=gpu` needs a GPU;
Vulkan uses the first GPU (MGXIR_VULKAN_DEVICE=N picks another device)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# how each model is made (bench/: without torch), into the folder given last
MAKERS = {"resnet50": ["bench/resnet_onnx.py", "--random-weights"], "bert": ["bench/bert_onnx.py"]}
TOOLS = {"opt": "mgxir.tools.mgx_opt", "run": "mgxir.tools.mgx_run", "translate": "mgxir.tools.mgx_translate"}


def tool(name: str, *args: str, env: dict[str, str] | None = None) -> float:
    """Runs an mgxir tool in a fresh process; its wall time (it must succeed)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", TOOLS[name], *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"failed: mgx-{name} {' '.join(args)}\n{done.stderr[-2000:]}")
    return seconds


def make_models(work: Path, names: list[str]) -> dict[str, Path]:
    """Each model as lossless program text (its weights in the .npz beside it)."""
    made = {}
    for name in names:
        text = work / f"{name}.mgx"
        if not text.exists():
            folder = work / f"{name}-onnx"
            subprocess.run([sys.executable, *MAKERS[name], str(folder)], cwd=ROOT, check=True)
            onnx = next(folder.glob("*.onnx"))
            tool("translate", "--from-onnx", str(onnx), "--to-mgx-lossless", "-o", str(text))
        made[name] = text
    return made


def rms(got: np.ndarray, want: np.ndarray) -> float:
    sys.path.insert(0, str(ROOT))
    from mgxir.drivers.run import rms_error

    return rms_error(got, want)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", default="cpu,vulkan")
    parser.add_argument("--models", default="resnet50,bert")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--offload-arch", default="")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "mgxir-bench-portable")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    targets = [t for t in args.targets.split(",") if t]
    rows = []
    for name, text in make_models(args.work, [m for m in args.models.split(",") if m]).items():
        portable = args.work / f"{name}.mxr"
        flags = ["-p", "gpu", "--portable", *([f"--offload-arch={args.offload_arch}"] if args.offload_arch else [])]
        made = tool("opt", *flags, str(text), "-o", str(portable))
        weights = text.with_suffix(".npz")
        weight_bytes = weights.stat().st_size if weights.exists() else 0
        print(
            f"{name}: mgx-opt {' '.join(flags)}: {made:.2f} s; {portable.stat().st_size} bytes, weights {weight_bytes}"
        )
        common = ["--fill=random", "--seed=7", "-q"]
        reference = args.work / f"{name}.ref.npz"
        ref_seconds = tool("run", str(text), *common, f"--output=@{reference}")
        want = dict(np.load(reference))
        for target in targets:
            caches = args.work / f"caches-{name}-{target}"
            shutil.rmtree(caches, ignore_errors=True)
            env = dict(os.environ, MGXIR_KERNEL_CACHE=str(caches / "kernels"), MGXIR_CACHE_DIR=str(caches / "iree"))
            out = args.work / f"{name}.{target}.npz"
            run = ["--target", target, *common, f"--output=@{out}"]
            cold = tool("run", str(portable), *run, env=env)
            warm = [tool("run", str(portable), *run, env=env) for _ in range(args.runs)]
            got = dict(np.load(out))
            error = max(rms(got[k], want[k]) for k in want)
            peer = [tool("run", str(text), *run, env=env) for _ in range(args.runs)]
            rows.append((name, target, cold, warm, peer, ref_seconds, error, portable.stat().st_size, weight_bytes))
    print()
    print(
        "| model | target | cold finish s | warm s | uncompiled program on the target s | ref s | rms vs ref "
        "| file bytes | x weights |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, target, cold, warm, peer, ref_seconds, error, size, weight_bytes in rows:
        ratio = f"{size / weight_bytes:.3f}" if weight_bytes else "(weights are inputs)"
        print(
            f"| {name} | {target} | {cold:.2f} | {' '.join(f'{t:.2f}' for t in warm)} | "
            f"{' '.join(f'{t:.2f}' for t in peer)} | {ref_seconds:.2f} | {error:.2e} | {size} | {ratio} |"
        )


if __name__ == "__main__":
    main()
