"""The GPU target against PyTorch on the same GPU, in the same run.

1. HBM copy bandwidth (torch's device-to-device copy of 256 MiB), then 8 fused pointwise ops on
   64M float32 (2 inputs, 1 output): mgxir's generated kernel replayed as a CUDA graph, torch eager
   and torch.compile, each as a share of the copy bandwidth (the goal: mgxir at 90% or more).
2. Reductions (softmax, a layernorm-like normalisation) and gemms (cuBLASLt, with a bias+relu
   epilogue) against torch eager and torch.compile; the rms error against torch's result.
3. ResNet-50 / BERT-base through the ONNX importer (`mgxir.translate.onnx`) where it is present;
   otherwise one line saying so.

Prints one table; `--quick` uses smaller sizes (a smoke test)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import numpy as np

from mgxir.diagnostics import DiagnosticSink
from mgxir.drivers.run import rms_error
from mgxir.targets.gpu.driver import load_on_gpu
from mgxir.text.parser import parse_program
from mgxir.verifier import verify


def torch_time(fn: Callable[[], object], iterations: int) -> float:
    """Milliseconds per call, by CUDA events."""
    import torch

    fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / iterations


def program(text: str):
    p = parse_program('module: "main"\n' + text.strip() + "\n")
    verify(p, DiagnosticSink())
    return p


def mgx_time(p, params: dict[str, np.ndarray], iterations: int) -> tuple[float, list[np.ndarray]]:
    executable = load_on_gpu(p, DiagnosticSink())
    outputs = executable.run(params)
    return executable._time(executable.execute, iterations), outputs


ROWS: list[tuple[str, str, str]] = []


def row(name: str, what: str, value: str) -> None:
    ROWS.append((name, what, value))
    print(f"{name:38s} {what:34s} {value}", flush=True)


def pointwise(n: int, iterations: int) -> None:
    import torch

    text = f"""
x = @param:x -> float_type, {{{n}}}, {{1}}
y = @param:y -> float_type, {{{n}}}, {{1}}
@2 = add(x,y)
@3 = mul(@2,x)
@4 = sub(@3,y)
@5 = relu(@4)
@6 = mul(@5,@5)
@7 = add(@6,x)
@8 = max(@7,y)
@9 = mul(@8,y)
@10 = @return(@9)
"""

    def torch_fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        a = torch.relu((x + y) * x - y)
        return torch.maximum(a * a + x, y) * y

    x = torch.rand(n, device="cuda") * 2 - 1
    y = torch.rand(n, device="cuda") * 2 - 1
    copy_to = torch.empty_like(x)
    nbytes = x.numel() * 4
    t_copy = torch_time(lambda: copy_to.copy_(x), iterations)
    copy_bw = 2 * nbytes / t_copy / 1e6
    row("HBM copy (torch copy_, 256 MiB)", "GB/s", f"{copy_bw:.0f}")
    t_mgx, outputs = mgx_time(program(text), {"x": x.cpu().numpy(), "y": y.cpu().numpy()}, iterations)
    expected = torch_fn(x, y)
    t_eager = torch_time(lambda: torch_fn(x, y), iterations)
    compiled = torch.compile(torch_fn)
    t_compiled = torch_time(lambda: compiled(x, y), iterations)
    for name, t in (("mgxir gpu", t_mgx), ("torch eager", t_eager), ("torch.compile", t_compiled)):
        bw = 3 * nbytes / t / 1e6
        row(
            f"8 pointwise ops, {n} f32: {name}", "ms | GB/s | share of copy", f"{t:.4f} | {bw:.0f} | {bw / copy_bw:.1%}"
        )
    row("8 pointwise ops: rms error vs torch", "", f"{rms_error(outputs[0], expected.cpu().numpy()):.2e}")


def reductions(rows: int, cols: int, iterations: int) -> None:
    import torch

    x = torch.rand(rows, cols, device="cuda")
    cases = {
        "softmax": (
            f"x = @param:x -> float_type, {{{rows}, {cols}}}, {{{cols}, 1}}\n@1 = softmax[axis=1](x)\n@2 = @return(@1)",
            lambda t: torch.softmax(t, dim=1),
        ),
        "layernorm (no affine)": (
            f"""x = @param:x -> float_type, {{{rows}, {cols}}}, {{{cols}, 1}}
@1 = reduce_mean[axes={{1}}](x)
@2 = multibroadcast[out_lens={{{rows}, {cols}}}](@1)
@3 = sub(x,@2)
@4 = mul(@3,@3)
@5 = reduce_mean[axes={{1}}](@4)
@6 = multibroadcast[out_lens={{{rows}, {cols}}}](@5)
@7 = @literal{{1e-05}} -> float_type, {{1}}, {{0}}
@8 = multibroadcast[out_lens={{{rows}, {cols}}}](@7)
@9 = add(@6,@8)
@10 = rsqrt(@9)
@11 = mul(@3,@10)
@12 = @return(@11)""",
            lambda t: torch.nn.functional.layer_norm(t, (cols,)),
        ),
        "reduce_sum over rows": (
            f"x = @param:x -> float_type, {{{rows}, {cols}}}, {{{cols}, 1}}\n"
            "@1 = reduce_sum[axes={1}](x)\n@2 = @return(@1)",
            lambda t: t.sum(dim=1, keepdim=True),
        ),
    }
    for name, (text, fn) in cases.items():
        t_mgx, outputs = mgx_time(program(text), {"x": x.cpu().numpy()}, iterations)
        compiled = torch.compile(fn)
        t_eager = torch_time(lambda fn=fn: fn(x), iterations)
        t_compiled = torch_time(lambda compiled=compiled: compiled(x), iterations)
        error = rms_error(outputs[0], fn(x).cpu().numpy())
        row(
            f"{name} {rows}x{cols} f32",
            "mgxir | eager | compile (ms) | rms",
            f"{t_mgx:.4f} | {t_eager:.4f} | {t_compiled:.4f} | {error:.1e}",
        )


def gemms(m: int, k: int, n: int, iterations: int) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    for dtype, type_name in ((torch.float32, "float_type"), (torch.float16, "half_type")):
        a = torch.rand(m, k, device="cuda", dtype=dtype) - 0.5
        w = torch.rand(k, n, device="cuda", dtype=dtype) - 0.5
        b = torch.rand(n, device="cuda", dtype=dtype) - 0.5
        text = f"""
a = @param:a -> {type_name}, {{{m}, {k}}}, {{{k}, 1}}
w = @param:w -> {type_name}, {{{k}, {n}}}, {{{n}, 1}}
b = @param:b -> {type_name}, {{{n}}}, {{1}}
@3 = dot(a,w)
@4 = broadcast[axis=1,out_lens={{{m}, {n}}}](b)
@5 = add(@3,@4)
@6 = relu(@5)
@7 = @return(@6)
"""

        def fn(a: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.relu(a @ w + b)

        params = {"a": a.cpu().numpy(), "w": w.cpu().numpy(), "b": b.cpu().numpy()}
        t_mgx, outputs = mgx_time(program(text), params, iterations)
        compiled = torch.compile(fn)
        t_eager = torch_time(lambda fn=fn, a=a, w=w, b=b: fn(a, w, b), iterations)
        t_compiled = torch_time(lambda c=compiled, a=a, w=w, b=b: c(a, w, b), iterations)
        error = rms_error(outputs[0].astype(np.float32), fn(a, w, b).float().cpu().numpy())
        tflops = 2 * m * n * k / t_mgx / 1e9
        row(
            f"gemm+bias+relu {m}x{k}x{n} {str(dtype)[6:]}",
            "mgxir | eager | compile (ms) | rms",
            f"{t_mgx:.4f} | {t_eager:.4f} | {t_compiled:.4f} | {error:.1e} ({tflops:.0f} TFLOP/s)",
        )


def models() -> None:
    try:
        from mgxir.translate.onnx import import_model  # noqa: F401
    except ImportError:
        row("ResNet-50 / BERT-base", "", "not run: no ONNX importer (mgxir.translate.onnx) in this checkout")
        return
    row("ResNet-50 / BERT-base", "", "timed by bench/bench_models.py (against eager, torch.compile and its graphs)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    try:
        import torch

        if not torch.cuda.is_available():
            raise ImportError
    except ImportError:
        print("bench_gpu: needs torch with a CUDA GPU")
        sys.exit(1)
    start = time.time()
    iterations = 5 if args.quick else 20
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    pointwise(1 << 20 if args.quick else 64 << 20, iterations)
    reductions(256 if args.quick else 8192, 768 if args.quick else 1024, iterations)
    gemms(*((256, 256, 256) if args.quick else (4096, 4096, 4096)), iterations)
    models()
    print(f"bench_gpu: {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
