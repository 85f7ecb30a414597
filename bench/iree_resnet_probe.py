"""Where IREE's CUDA code for ResNet-50 first differs, and which compiler flags change that.

bench/resnet_onnx.py's graph (bench_models.py's folded ResNet-50, weights as inputs), whole and in
parts (stem, block0..15, head), is imported, lowered to MLIR and compiled for cuda under several flag
sets here (no GPU needed); on the GPU machine each module runs with the torch model's own weights,
each part on the reference activation entering it, against a float64 torch reference.

    python bench/iree_resnet_probe.py prepare OUT [--variant NAME ...] [--parts-variant NAME ...]
    python bench/iree_resnet_probe.py run OUT            # GPU machine: torch + iree-base-runtime
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

BASE = ["--iree-input-demote-f64-to-f32=false"]
VARIANTS: dict[str, list[str]] = {
    "sm89": ["--iree-cuda-target=sm_89"],
    "sm80": ["--iree-cuda-target=sm_80"],
    "sm75": ["--iree-cuda-target=sm_75"],
    "noigemm": ["--iree-cuda-target=sm_89", "--iree-codegen-llvmgpu-use-igemm=false"],
    "direct": ["--iree-cuda-target=sm_89", "--iree-codegen-llvmgpu-use-direct-convolution"],
    "vecpipe": ["--iree-cuda-target=sm_89", "--iree-codegen-llvmgpu-vectorize-pipeline"],
    "notfconv": ["--iree-cuda-target=sm_89", "--iree-codegen-llvmgpu-use-tile-and-fuse-convolution=false"],
    "noprefetch": ["--iree-cuda-target=sm_89", "--iree-llvmgpu-prefetch-num-stages=0"],
    "O0": ["--iree-cuda-target=sm_89", "--iree-opt-level=O0"],
    "zerofill": ["--iree-cuda-target=sm_89", "--iree-flow-zero-fill-empty-tensors"],
    "im2col": ["--iree-cuda-target=sm_89", "--iree-global-opt-use-im2col-for-convs"],
    "novecdist": ["--iree-cuda-target=sm_89", "--iree-codegen-llvmgpu-use-vector-distribution=false"],
    "noreddist": ["--iree-cuda-target=sm_89", "--iree-codegen-llvmgpu-use-reduction-vector-distribution=false"],
}


def prepare(out: Path, variants: list[str], part_variants: list[str]) -> None:
    import onnx
    from resnet_onnx import EXTRA_PARTS, build, parts

    from mgxir.diagnostics import DiagnosticSink, MgxError
    from mgxir.targets.iree.compile import compile_module
    from mgxir.targets.iree.devices import Device
    from mgxir.translate.mlir.api import mlir_bytecode
    from mgxir.translate.onnx import import_model

    out.mkdir(parents=True, exist_ok=True)
    cuda = Device("cuda", "cuda", "cuda", ())
    jobs = [("all", v) for v in variants] + [(p, v) for p in parts() for v in part_variants]
    jobs += [(p, v) for p in EXTRA_PARTS for v in variants]
    for part, variant in jobs:
        started = time.perf_counter()
        graph = out / f"{part}.onnx"
        if not graph.exists():
            onnx.save(build(part), str(graph))
        program = import_model(str(graph), sink=DiagnosticSink())
        mlir = mlir_bytecode(program, None, DiagnosticSink())
        (out / f"{part}.params").write_text("\n".join(program.main.parameter_names()) + "\n")
        try:
            vmfb = compile_module(mlir, cuda, [*BASE, *VARIANTS[variant]])
        except MgxError as e:
            print(f"{part} {variant}: {e.message}", flush=True)
            continue
        (out / f"{part}.{variant}.vmfb").write_bytes(vmfb)
        print(f"{part} {variant}: {len(vmfb)} bytes, {time.perf_counter() - started:.1f} s", flush=True)


def rms(t: np.ndarray, r: np.ndarray) -> float:
    t, r = t.astype(np.float64).ravel(), r.astype(np.float64).ravel()
    scale = max(float(np.abs(t).max()), float(np.abs(r).max()), 1e-300)
    return float(np.sqrt(np.sum((t - r) ** 2)) / (np.sqrt(t.size) * scale))


def reference_activations(model, example) -> dict[str, np.ndarray]:
    """The float64 activation entering each part (and the final output, under 'output')."""
    import copy

    import torch

    m = copy.deepcopy(model).double().cuda()
    x = example.double().cuda()
    acts = {}
    with torch.no_grad():
        acts["stem"] = x
        x = m.pool(torch.relu(m.stem(x)))
        for i, block in enumerate(m.blocks):
            acts[f"block{i}"] = x
            x = block(x)
        acts["head"] = x
        acts["output"] = m.fc(torch.flatten(torch.mean(x, dim=(2, 3), keepdim=True), 1))
    return {k: v.cpu().numpy() for k, v in acts.items()}


def run(prepared: Path, iterations: int) -> None:
    import iree.runtime as rt
    import torch
    from bench_models import MODELS

    torch.manual_seed(0)
    model, make_input = MODELS["resnet50"]()
    torch.manual_seed(1)
    example = make_input(1)
    weights = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    acts = reference_activations(model, example)
    order = ["all", "stem", *(f"block{i}" for i in range(16)), "head"]
    # the extra parts: the activation entering them and the one they compute
    spans = {"upto3": ("stem", "block4"), "relu_block3": ("block3", "block4")}
    spans |= {p: ("stem" if p == "all" else p, order[i + 1] if p != "head" else "output") for i, p in enumerate(order)}
    spans["all"] = ("stem", "output")
    config = rt.Config("cuda")
    rows = []
    ranks = {p: i for i, p in enumerate(spans)}
    for path in sorted(prepared.glob("*.vmfb"), key=lambda p: (ranks[p.name.split(".")[0]], p.name)):
        part, variant = path.name.split(".")[:2]
        names = (prepared / f"{part}.params").read_text().split()
        entering, following = spans[part]
        feed = {"input": acts[entering].astype(np.float32), **weights}
        try:
            context = rt.SystemContext(config=config)
            context.add_vm_module(rt.VmModule.copy_buffer(config.vm_instance, path.read_bytes()))
            main = context.modules.module["main"]
            args = [rt.asdevicearray(config.device, np.ascontiguousarray(feed[n])) for n in names]
            got = np.asarray(main(*args).to_host())
            error = rms(got, acts[following])
            ms = ""
            if part == "all":
                for _ in range(3):
                    main(*args).to_host()
                started = time.perf_counter()
                for _ in range(iterations):
                    main(*args).to_host()
                ms = f"{1000 * (time.perf_counter() - started) / iterations:.2f}"
            rows.append((part, variant, f"{error:.2e}", ms))
        except Exception as e:
            rows.append((part, variant, f"error: {type(e).__name__}: {str(e).splitlines()[0][:100]}", ""))
        print("| " + " | ".join(rows[-1]) + " |", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["prepare", "run"])
    parser.add_argument("out", type=Path)
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--parts-variant", action="append", default=[])
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args(argv)
    if args.step == "prepare":
        prepare(args.out, args.variant or list(VARIANTS), args.parts_variant)
    else:
        run(args.out, args.iterations)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
