"""Depthwise convolutions on mgxir's GPU target: the generated kernel (conv_kernels.py) against
cuDNN's grouped convolution, and PyTorch's (cuDNN through torch) as a peer, in the same run.

The shapes are the depthwise layers of MobileNetV3, EfficientNet-B0 and ConvNeXt-T (channels,
spatial size, window, stride), at batch 1 and 8; float16 channels-last (the layout mgxir's
float16 convolutions hand on) and float32 channels-first. Each program is one convolution (its weights a literal) whose
result is returned (the same copy to standard layout follows it in both variants), timed as a
replayed CUDA graph (median of several timings of 200 replays); ms per call.

    python bench/bench_depthwise.py [--batches 1,8] [--dtypes f16,f32] [--out table.md]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

from mgxir.diagnostics import DiagnosticSink
from mgxir.drivers.run import rms_error
from mgxir.interp import Interpreter
from mgxir.ir.literal import Literal
from mgxir.ir.program import Program
from mgxir.passes.manager import PassManager
from mgxir.passes.registry import parse_pipeline
from mgxir.targets.gpu.lowering import GPU_PIPELINE
from mgxir.targets.gpu.runtime import GpuExecutable
from mgxir.text.parser import parse_program
from mgxir.verifier import verify

# (model, channels, spatial, window, stride)
SHAPES = [
    ("mobilenetv3", 64, 56, 3, 2),
    ("mobilenetv3", 72, 28, 5, 2),
    ("mobilenetv3", 240, 14, 5, 1),
    ("mobilenetv3", 480, 14, 3, 1),
    ("mobilenetv3", 960, 7, 5, 1),
    ("efficientnet", 96, 112, 3, 2),
    ("efficientnet", 144, 56, 3, 1),
    ("efficientnet", 240, 28, 5, 1),
    ("efficientnet", 672, 14, 5, 1),
    ("convnext", 96, 56, 7, 1),
    ("convnext", 192, 28, 7, 1),
    ("convnext", 384, 14, 7, 1),
    ("convnext", 768, 7, 7, 1),
]
TYPES = {"f16": ("half_type", np.float16), "f32": ("float_type", np.float32)}


def program_text(dtype: str, batch: int, channels: int, spatial: int, window: int, stride: int) -> str:
    type_name = TYPES[dtype][0]
    if dtype == "f16":  # channels-last, as a float16 convolution before it leaves it
        strides = f"{spatial * spatial * channels}, 1, {spatial * channels}, {channels}"
    else:
        strides = f"{spatial * spatial * channels}, {spatial * spatial}, {spatial}, 1"
    pad = window // 2
    return (
        'module: "main"\n'
        f"x = @param:x -> {type_name}, {{{batch}, {channels}, {spatial}, {spatial}}}, {{{strides}}}\n"
        f"w = @param:w -> {type_name}, {{{channels}, 1, {window}, {window}}}, "
        f"{{{window * window}, {window * window}, {window}, 1}}\n"
        f"@2 = convolution[padding={{{pad}, {pad}}},stride={{{stride}, {stride}}},dilation={{1, 1}},"
        f"group={channels}](x,w)\n"
        "@3 = @return(@2)\n"
    )


def with_literal_weights(text: str, weights: np.ndarray) -> Program:
    """The program with its weights a literal, as a model's are (laid out once when lowered)."""
    program = parse_program(text)
    verify(program, DiagnosticSink())
    main = program.main
    param = main.get_parameter("w")
    literal = main.add_literal(Literal(param.shape, weights))
    main.replace_all_uses(param, literal)
    main.remove(param)
    return program


def timed(executable: GpuExecutable) -> float:
    return statistics.median(executable.time_call(executable.execute, 200) for _ in range(5))


def torch_time(dtype: str, batch: int, channels: int, spatial: int, window: int, stride: int) -> float:
    import torch

    torch_type = torch.float16 if dtype == "f16" else torch.float32
    conv = torch.nn.Conv2d(channels, channels, window, stride, window // 2, groups=channels, bias=False)
    conv = conv.cuda().to(torch_type)
    x = torch.randn(batch, channels, spatial, spatial, device="cuda", dtype=torch_type)
    if dtype == "f16":
        conv, x = conv.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    with torch.inference_mode():
        for _ in range(3):
            conv(x)
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(200):
            conv(x)
        stop.record()
        stop.synchronize()
    return start.elapsed_time(stop) / 200


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--dtypes", default="f16,f32")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    import torch

    columns = ["model", "dtype", "batch", "channels", "size", "window", "stride", "kernel ms", "cuDNN ms", "torch ms"]
    header = "| " + " | ".join([*columns, "rms kernel"]) + " |"
    lines = [f"# {torch.cuda.get_device_name()}, torch {torch.__version__}", header, "|" + " --- |" * 11]
    print("\n".join(lines), flush=True)
    rng = np.random.default_rng(0)
    for dtype in args.dtypes.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            for model, channels, spatial, window, stride in SHAPES:
                text = program_text(dtype, batch, channels, spatial, window, stride)
                weights = rng.uniform(-1, 1, (channels, 1, window, window)).astype(TYPES[dtype][1])
                reference = with_literal_weights(text, weights)
                params = {"x": rng.uniform(-1, 1, (batch, channels, spatial, spatial)).astype(TYPES[dtype][1])}
                times, error = {}, float("nan")
                for variant in ("kernel", "library"):
                    program = with_literal_weights(text, weights)
                    pipeline = GPU_PIPELINE.replace("gpu_lowering", f"gpu_lowering{{depthwise={variant}}}")
                    try:
                        PassManager(parse_pipeline(pipeline)).run(program)
                        executable = GpuExecutable(program)
                        got = np.asarray(executable.run(params)[0], np.float64)
                        times[variant] = f"{timed(executable):.4f}"
                        if variant == "kernel":
                            want = np.asarray(Interpreter(reference).run(params)[0], np.float64)
                            error = rms_error(got, want)
                    except Exception as e:  # a variant cuDNN refuses is reported, the others go on
                        times[variant] = f"failed: {str(e).splitlines()[0][:60]}"
                peer = torch_time(dtype, batch, channels, spatial, window, stride)
                cells = [model, dtype, str(batch), str(channels), str(spatial), str(window), str(stride)]
                cells += [times["kernel"], times["library"], f"{peer:.4f}", f"{error:.1e}"]
                lines.append("| " + " | ".join(cells) + " |")
                print(lines[-1], flush=True)
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
