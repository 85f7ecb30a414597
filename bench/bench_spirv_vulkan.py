"""SPIR-V kernels on a Vulkan GPU, against peers measured in the same run:

1. a chain of 8 pointwise ops over 64M float32 elements, fused into one kernel, against the
   device's copy bandwidth (vkCmdCopyBuffer of a buffer of the same size; goal: at least 85%);
2. softmax over the rows of an 8192x8192 float32 matrix (one fused_reduce kernel) against
   PyTorch's torch.softmax on the same GPU (skipped where PyTorch or CUDA is missing).

Times come from Vulkan timestamps around `--repeat` back-to-back dispatches (CUDA events for
PyTorch), after warm-up runs; results are checked against numpy. `--small` runs the same code on
small sizes (for lavapipe)."""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from mgxir.diagnostics import DiagnosticSink
from mgxir.ir.program import Program
from mgxir.targets.vulkan.device import Buffer, Device
from mgxir.text.parser import parse_program
from mgxir.translate.spirv import binary, translate_program
from mgxir.translate.spirv.kernels import Kernel, KernelOptions
from mgxir.translate.spirv.layout import View
from mgxir.verifier import verify

CHAIN = """
x = @param:x -> float_type, {{{n}}}
y = @param:y -> float_type, {{{n}}}
@2 = add(x,y)
@3 = mul(@2,x)
@4 = sub(@3,y)
@5 = relu(@4)
@6 = neg(@5)
@7 = abs(@6)
@8 = sqrt(@7)
@9 = mul(@8,y)
@10 = @return(@9)
"""

COPY = """module: "main"
x = @param:x -> float_type, {{{n}}}
@1 = pointwise(x), [copy]
@2 = @return(@1)

module: "copy"
copy:x0 = @param:x0 -> float_type, {{1}}, {{0}}
copy:@1 = @return(copy:x0)
"""

SOFTMAX = """
x = @param:x -> float_type, {{{rows}, {cols}}}
@1 = softmax[axis=1](x)
@2 = @return(@1)
"""


def chain_numpy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.sqrt(np.abs(-np.maximum((x + y) * x - y, 0))) * y


def load(text: str) -> Program:
    program = parse_program(text)
    verify(program, DiagnosticSink())
    return program


def one_kernel(program: Program, options: KernelOptions, fuse: bool = True) -> Kernel:
    translation = translate_program(program, DiagnosticSink(), options, fuse=fuse)
    if len(translation.kernels) != 1 or translation.skipped:
        raise SystemExit(f"expected one fused kernel, got {len(translation.kernels)}: {translation.skipped}")
    return next(iter(translation.kernels.values()))


def time_kernel(
    device: Device, kernel: Kernel, buffers: list[Buffer], views: list[View], lens: tuple[int, ...], repeat: int
) -> float:
    """Seconds per dispatch, the best of three timed submissions of `repeat` dispatches."""
    layout = kernel.layout
    pipeline = device.pipeline(binary(kernel), len(layout.bindings), 4 * len(layout.push_names))
    descriptor = device.descriptor_set(pipeline, buffers)
    push = layout.push_values(views, lens)
    limit = int(device.limits.maxComputeWorkGroupCount[0])
    if layout.kind == "reduce":
        groups = min(push[0], limit)
    else:
        groups = min(-(-push[0] // (layout.workgroup_size * layout.elements_per_invocation)), limit)
    device.dispatch(pipeline, descriptor, push, groups, repeat=2)  # warm-up (and the driver's compile)
    best = min(device.dispatch(pipeline, descriptor, push, groups, repeat=repeat) for _ in range(3)) / repeat
    device.release_set(descriptor)
    device.destroy_pipeline(pipeline)
    return best


def copy_bandwidth(device: Device, source: Buffer, target: Buffer, size: int, repeat: int) -> float:
    """Bytes per second moved (read + written) by a device-to-device vkCmdCopyBuffer."""
    device.copy(source, target, size, repeat=2)
    seconds = min(device.copy(source, target, size, repeat=repeat) for _ in range(3)) / repeat
    return 2 * size / seconds


def download(device: Device, buffer: Buffer, count: int) -> np.ndarray:
    return device.download(buffer, 4 * count).view(np.float32)


def torch_copy_bandwidth(n: int, repeat: int) -> float | None:
    """Bytes per second moved by PyTorch's device-to-device copy (dst.copy_(src))."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    source = torch.ones(n, device="cuda", dtype=torch.float32)
    target = torch.empty_like(source)
    for _ in range(3):
        target.copy_(source)
    best = float("inf")
    for _ in range(3):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeat):
            target.copy_(source)
        stop.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(stop) / 1e3 / repeat)
    return 2 * 4 * n / best


def bench_chain(device: Device, n: int, repeat: int, report: dict) -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, n).astype(np.float32)
    y = rng.uniform(-2, 2, n).astype(np.float32)
    bx, by, out = device.upload(x), device.allocate(4 * n), device.allocate(4 * n)
    view = View((n,), (1,))
    peers = {"vkCmdCopyBuffer": copy_bandwidth(device, bx, out, 4 * n, repeat)}
    for unroll in (1, 4):
        kernel = one_kernel(load(COPY.format(n=n)), KernelOptions(unroll=unroll), fuse=False)
        seconds = time_kernel(device, kernel, [bx, out], [view, view], (n,), repeat)
        assert np.array_equal(download(device, out, n), x)
        peers[f"Vulkan copy kernel ({unroll} per invocation)"] = 2 * 4 * n / seconds
    torch_copy = torch_copy_bandwidth(n, repeat)
    if torch_copy is not None:
        peers["torch copy_"] = torch_copy
    for name, bandwidth in peers.items():
        print(f"copy {4 * n >> 20} MiB, {name}: {bandwidth / 1e9:8.1f} GB/s (read + write)")
    peer_name = max(peers, key=lambda k: peers[k])
    peer = peers[peer_name]
    report["copy_GBps"] = {k: v / 1e9 for k, v in peers.items()}
    print(f"peer: {peer_name}, {peer / 1e9:.1f} GB/s")
    device.free(by)
    by = device.upload(y)
    program = load(CHAIN.format(n=n))
    expected = chain_numpy(x, y)
    results = {}
    for workgroup, unroll in ((256, 4), (256, 1), (256, 2), (128, 2), (512, 2)):
        kernel = one_kernel(program, KernelOptions(workgroup_size=workgroup, unroll=unroll))
        seconds = time_kernel(device, kernel, [bx, by, out], [view] * 3, (n,), repeat)
        got = download(device, out, n)
        error = float(np.max(np.abs(got - expected)) / max(float(np.max(np.abs(expected))), 1e-30))
        bandwidth = 3 * 4 * n / seconds
        results[f"wg{workgroup}_u{unroll}"] = {
            "ms": seconds * 1e3,
            "GBps": bandwidth / 1e9,
            "of_peer": bandwidth / peer,
            "max_rel_error": error,
        }
        print(
            f"8-op pointwise chain, workgroup {workgroup:4d}, {unroll} per invocation: {seconds * 1e3:8.4f} ms, "
            f"{bandwidth / 1e9:8.1f} GB/s = {100 * bandwidth / peer:5.1f}% of the peer (max rel error {error:.2e})"
        )
    report["chain"] = results
    for b in (bx, by, out):
        device.free(b)


def bench_softmax(device: Device, rows: int, cols: int, repeat: int, report: dict) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    bx, out = device.upload(x), device.allocate(4 * rows * cols)
    program = load(SOFTMAX.format(rows=rows, cols=cols))
    view = View((rows, cols), (cols, 1))
    shifted = np.exp(x - x.max(axis=1, keepdims=True))
    expected = shifted / shifted.sum(axis=1, keepdims=True)
    results = {}
    configurations = [(None, 4, True)] + [
        (w, k, derived)
        for w in (256, 512, 1024)
        for k in (4, 8, 16, 32)
        for derived in (True, False)
        if w * k <= 2 * cols
    ]
    for workgroup, cached, derived in configurations:
        options = KernelOptions(workgroup_size=workgroup, max_cached_elements=cached, cache_derived=derived)
        kernel = one_kernel(program, options)
        seconds = time_kernel(device, kernel, [bx, out], [view, view], (rows, cols), repeat)
        got = download(device, out, rows * cols).reshape(rows, cols)
        error = float(np.max(np.abs(got - expected)))
        workgroup = kernel.layout.workgroup_size
        results[f"wg{workgroup}_k{cached}_{'derived' if derived else 'loads'}"] = {
            "ms": seconds * 1e3,
            "max_abs_error": error,
            "GBps": 2 * 4 * rows * cols / seconds / 1e9,
        }
        print(
            f"softmax {rows}x{cols}, workgroup {workgroup:4d}, cache {cached:2d} {'values' if derived else 'loads '}: "
            f"{seconds * 1e3:8.4f} ms, {2 * 4 * rows * cols / seconds / 1e9:8.1f} GB/s (max abs error {error:.2e})"
        )
    report["softmax"] = results
    device.free(bx)
    device.free(out)
    torch_ms = torch_softmax_ms(x, repeat)
    if torch_ms is not None:
        report["torch_softmax_ms"] = torch_ms
        best = min(r["ms"] for r in results.values())
        print(
            f"softmax {rows}x{cols}, torch.softmax: {torch_ms:8.4f} ms; best Vulkan kernel / torch = "
            f"{best / torch_ms:.2f}x the time"
        )


def torch_softmax_ms(x: np.ndarray, repeat: int) -> float | None:
    try:
        import torch
    except ImportError:
        print("torch.softmax: not measured (no PyTorch)")
        return None
    if not torch.cuda.is_available():
        print("torch.softmax: not measured (no CUDA device for PyTorch)")
        return None
    t = torch.from_numpy(x).cuda()
    for _ in range(3):
        torch.softmax(t, dim=1)
    best = float("inf")
    for _ in range(3):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeat):
            torch.softmax(t, dim=1)
        stop.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(stop) / repeat)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="small sizes (for a CPU driver such as lavapipe)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    started = time.perf_counter()
    device = Device()
    print(f"device: {device.name}")
    report: dict = {"device": device.name}
    n = 1 << 16 if args.small else 64 << 20
    rows, cols = (64, 1024) if args.small else (8192, 8192)
    bench_chain(device, n, args.repeat, report)
    bench_softmax(device, rows, cols, args.repeat, report)
    print(f"total {time.perf_counter() - started:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    device.close()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
