"""ResNet-50 and BERT-base through IREE's CUDA target under several compiler flag sets, against a
float64 torch reference and torch eager (and torch.compile) measured in the same run.

The graphs are bench/resnet_onnx.py's and bench/bert_onnx.py's (bench_models.py's models written out
as ONNX without torch, weights as inputs named by the torch state dict), so the modules are compiled
here, without a GPU, and on the GPU machine fed the seeded torch model's own weights. ResNet-50 can
also be run in parts (stem, block0..block15, head), each on the float64 activation entering it.

    python bench/iree_cuda_variants.py prepare OUT JOB ...   # JOB: MODEL:DTYPE:BATCH:PART:VARIANT,
                                                             # e.g. resnet50:f16:1:all:im2col
    python bench/iree_cuda_variants.py run OUT [--torch-compile] [--time-limit S]

VARIANT names a flag set of VARIANTS, added to mgxir's own flags for the cuda device (`mgxir`: none
added). A module's rms error (MIGraphX's rule) is against the float64 torch model on the same input;
times are the median of synchronous calls (inputs on the device, result copied to the host) for
IREE, CUDA-event-timed loops for torch.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

VARIANTS: dict[str, list[str]] = {
    "mgxir": [],
    "im2col": ["--iree-global-opt-use-im2col-for-convs"],
    "padconv": ["--iree-codegen-llvmgpu-igemm-pad-convolution"],
    "noigemm": ["--iree-codegen-llvmgpu-use-igemm=false"],
    "direct": ["--iree-codegen-llvmgpu-use-direct-convolution"],
    "datatiling": ["--iree-opt-data-tiling"],
    "aggfusion": ["--iree-dispatch-creation-enable-aggressive-fusion"],
    "transposes": ["--iree-global-opt-propagate-transposes"],
    "transconv": ["--iree-global-opt-propagate-transposes", "--iree-global-opt-propagate-transposes-through-conv"],
    "outerconcat": ["--iree-opt-outer-dim-concat"],
    "prefetch2": ["--iree-llvmgpu-prefetch-num-stages=2"],
    "sm80": ["--iree-cuda-target=sm_80"],
    "O3": ["--iree-opt-level=O3"],
    "reddist": ["--iree-codegen-llvmgpu-use-reduction-vector-distribution=true"],
    "reshapes": ["--iree-dispatch-creation-enable-aggressive-reshape-movement"],
}
# variants that lower otherwise: the switch of mgxir.translate.mlir.families.nn they turn on (none
# now: the lowering of half convolutions as im2col was tried as one)
LOWERINGS: dict[str, str] = {}
DTYPES = {"f32": (1, np.float32), "f16": (10, np.float16)}


def stem(model: str, dtype: str, batch: int, part: str) -> str:
    return f"{model}.{dtype}.b{batch}.{part}"


def build(model: str, dtype: str, batch: int, part: str) -> object:
    if model == "bert":
        from bert_onnx import build as build_bert

        return build_bert(batch, DTYPES[dtype][0])
    from resnet_onnx import build as build_resnet

    return build_resnet(part, batch, DTYPES[dtype][0])


def prepare(out: Path, jobs: list[str], device_name: str = "cuda") -> None:
    import onnx

    from mgxir.diagnostics import DiagnosticSink, MgxError
    from mgxir.targets.iree.compile import compile_module
    from mgxir.targets.iree.devices import device
    from mgxir.translate.mlir.api import mlir_bytecode
    from mgxir.translate.mlir.families import nn
    from mgxir.translate.onnx import import_model

    out.mkdir(parents=True, exist_ok=True)
    cuda = device(device_name)
    lowered: dict[tuple[str, str], bytes] = {}
    for job in jobs:
        model, dtype, batch, part, variant = job.split(":")
        name = stem(model, dtype, int(batch), part)
        started = time.perf_counter()
        lowering = LOWERINGS.get(variant, "")
        if (name, lowering) not in lowered:
            graph = out / f"{name}.onnx"
            onnx.save(build(model, dtype, int(batch), part), str(graph))
            program = import_model(str(graph), sink=DiagnosticSink())
            if lowering:
                setattr(nn, lowering, True)
            try:
                lowered[name, lowering] = mlir_bytecode(program, None, DiagnosticSink())
            finally:
                if lowering:
                    setattr(nn, lowering, False)
            (out / f"{name}.params").write_text("\n".join(program.main.parameter_names()) + "\n")
            graph.unlink()
        try:
            vmfb = compile_module(lowered[name, lowering], cuda, [*cuda.flags, *VARIANTS[variant]])
        except MgxError as e:
            print(f"{job}: {e.message}", flush=True)
            continue
        (out / f"{name}.{variant}.vmfb").write_bytes(vmfb)
        print(f"{job}: {len(vmfb)} bytes, {time.perf_counter() - started:.1f} s", flush=True)


class Reference:
    """The seeded torch model of one (model, batch): its weights, input, float64 activations."""

    def __init__(self, model: str, batch: int) -> None:
        import copy

        import torch
        from bench_models import MODELS

        torch.manual_seed(0)
        self.model, make_input = MODELS[model]()
        torch.manual_seed(1)
        self.example = make_input(batch)
        self.weights = {k: v.detach().float().numpy() for k, v in self.model.state_dict().items()}
        m = copy.deepcopy(self.model).double().cuda()
        x = self.example.cuda() if model == "bert" else self.example.double().cuda()
        self.acts: dict[str, np.ndarray] = {}
        with torch.no_grad():
            if model == "bert":
                self.acts["output"] = m(x)
            else:
                self.acts["stem"] = x
                x = m.pool(torch.relu(m.stem(x)))
                for i, block in enumerate(m.blocks):
                    self.acts[f"block{i}"] = x
                    x = block(x)
                self.acts["head"] = x
                self.acts["output"] = m.fc(torch.flatten(torch.mean(x, dim=(2, 3), keepdim=True), 1))
        self.acts = {k: v.cpu().numpy() for k, v in self.acts.items()}
        del m
        torch.cuda.empty_cache()

    def span(self, part: str) -> tuple[str, str]:
        """The activations entering and leaving `part`."""
        if part == "all":
            return "stem", "output"
        order = ["stem", *(f"block{i}" for i in range(16)), "head", "output"]
        return part, order[order.index(part) + 1]

    def feed(self, model: str, part: str, names: list[str], dtype: str) -> dict[str, np.ndarray]:
        np_type = DTYPES[dtype][1]
        if model == "bert":
            from bert_onnx import feed

            found = {k: v.astype(np_type) for k, v in feed(self.weights, names).items()}
            return {**found, "input": self.example.numpy()}
        entering, _ = self.span(part)
        return {"input": self.acts[entering].astype(np_type), **{k: v.astype(np_type) for k, v in self.weights.items()}}

    def torch_cells(self, model: str, dtype: str, compiled: bool) -> list[str]:
        """torch eager's (cuDNN's and cuBLAS's defaults) or torch.compile's time and rms."""
        import copy

        import torch
        from bench_models import torch_time

        from mgxir.drivers.run import rms_error

        m = copy.deepcopy(self.model).cuda()
        x = self.example.cuda()
        if dtype == "f16":
            m = m.half()
            x = x if model == "bert" else x.half()
        if compiled:
            torch._dynamo.reset()
            m = torch.compile(m)
        iterations = 20 if self.example.shape[0] > 1 else 50
        with torch.inference_mode():
            error = rms_error(m(x).float().cpu().numpy(), self.acts["output"])
            cells = [f"{torch_time(lambda: m(x), iterations):.3f}", f"{error:.2e}"]
        if compiled:
            torch._dynamo.reset()
        return cells


def run(prepared: Path, compile_too: bool, time_limit: float, driver: str = "cuda") -> None:
    import iree.runtime as rt

    from mgxir.drivers.run import rms_error

    started = time.perf_counter()
    config = rt.Config(driver)
    groups: dict[tuple[str, int], list[Path]] = {}
    for path in sorted(prepared.glob("*.vmfb")):
        model, _, batch = path.name.split(".")[:3]
        groups.setdefault((model, int(batch[1:])), []).append(path)
    print("| model | dtype | batch | part | variant | rms | iree ms | load s |", flush=True)
    torch_rows: dict[tuple[str, str, int], list[str]] = {}
    references = {}
    # batch 1 first, then ResNet-50's parts last within a group
    for (model, batch), paths in sorted(groups.items(), key=lambda g: (g[0][1], g[0][0] != "resnet50")):
        if time.perf_counter() - started > time_limit:
            print(f"time limit: {model} b{batch} not run", flush=True)
            continue
        try:
            reference = references[model, batch] = Reference(model, batch)
        except Exception as e:
            print(f"{model} b{batch}: no reference: {type(e).__name__}: {str(e)[:200]}", flush=True)
            continue
        for dtype in sorted({p.name.split(".")[1] for p in paths if p.name.split(".")[3] == "all"}):
            try:
                torch_rows[model, dtype, batch] = reference.torch_cells(model, dtype, compiled=False)
            except Exception as e:
                print(f"torch eager {model} {dtype} b{batch}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            print(f"torch eager: {model} {dtype} b{batch}: " + " | ".join(torch_rows[model, dtype, batch]), flush=True)
        paths.sort(key=lambda p: (p.name.split(".")[3] != "all", p.name))
        for path in paths:
            if time.perf_counter() - started > time_limit:
                print(f"time limit: {path.name} not run", flush=True)
                continue
            _, dtype, _, part, variant = path.name.split(".")[:5]
            names = (prepared / f"{stem(model, dtype, batch, part)}.params").read_text().split()
            feed = reference.feed(model, part, names, dtype)
            try:
                loading = time.perf_counter()
                context = rt.SystemContext(config=config)
                context.add_vm_module(rt.VmModule.copy_buffer(config.vm_instance, path.read_bytes()))
                main = context.modules.module["main"]
                args = [rt.asdevicearray(config.device, np.ascontiguousarray(feed[n])) for n in names]
                got = np.asarray(main(*args).to_host())
                load = time.perf_counter() - loading
                error = rms_error(got.astype(np.float64), reference.acts[reference.span(part)[1]])
                ms = "-"
                if part == "all":
                    times = []
                    for i in range(3 + (10 if batch > 1 else 30)):
                        tick = time.perf_counter()
                        main(*args).to_host()
                        if i >= 3:
                            times.append(time.perf_counter() - tick)
                    ms = f"{1000 * float(np.median(times)):.3f}"
                row = [model, dtype, str(batch), part, variant, f"{error:.2e}", ms, f"{load:.1f}"]
                del args, main, context
            except Exception as e:
                row = [model, dtype, str(batch), part, variant, f"error: {type(e).__name__}: {str(e)[:100]}", "", ""]
            print("| " + " | ".join(row) + " |", flush=True)
    for (model, dtype, batch), cells in torch_rows.items():  # torch.compile last: it takes the longest
        if compile_too and time.perf_counter() - started < time_limit:
            try:
                cells += references[model, batch].torch_cells(model, dtype, compiled=True)
            except Exception as e:
                print(f"torch.compile {model} {dtype} b{batch}: {type(e).__name__}: {str(e)[:200]}", flush=True)
            print(f"torch.compile: {model} {dtype} b{batch}: " + " | ".join(cells), flush=True)
    print("\n| model | dtype | batch | eager ms | eager rms | compile ms | compile rms |")
    for (model, dtype, batch), cells in torch_rows.items():
        print(f"| {model} | {dtype} | {batch} | " + " | ".join([*cells, "-", "-"][:4]) + " |")
    print(f"total {time.perf_counter() - started:.0f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("out", type=Path)
    p.add_argument("jobs", nargs="+")
    p.add_argument("--device", default="cuda", help="an IREE device of mgxir's (local-task: a smoke test here)")
    r = sub.add_parser("run")
    r.add_argument("prepared", type=Path)
    r.add_argument("--torch-compile", action="store_true")
    r.add_argument("--time-limit", type=float, default=1e9)
    r.add_argument("--driver", default="cuda")
    args = parser.parse_args(argv)
    if args.step == "prepare":
        prepare(args.out, args.jobs, args.device)
    else:
        run(args.prepared, args.torch_compile, args.time_limit, args.driver)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
