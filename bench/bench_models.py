"""ResNet-50, BERT-base (sequence 128) and torchvision's models with grouped and depthwise
convolutions (MobileNetV3-Large, EfficientNet-B0, ConvNeXt-T, RegNetY-400MF, ResNeXt-50 32x4d,
ShuffleNetV2 x1.0; random weights), and the families in bench/model_zoo.py (DeepLabV3, Swin-T,
ViT-B/16, DenseNet, GoogLeNet, GPT-2, DistilBERT, T5/BART/Whisper encoders, wav2vec2) on mgxir's GPU
target against PyTorch eager and torch.compile, measured in the same run on the same GPU.

ResNet-50 and BERT are written in plain torch code here (the others need torchvision); each is exported
to ONNX on this machine (opset 14), imported with mgxir's ONNX importer, compiled with the `gpu`
pipeline and replayed as CUDA graphs. float32 and float16, batch 1 and 32. The rms error (MIGraphX's
verify rule) is against PyTorch's float32 eager output computed without TF32 (exact float32);
PyTorch's own error at its defaults (float16, or float32 with cuDNN's TF32 convolutions) is printed
beside it. The peers run at PyTorch's defaults: cuDNN may convolve float32 in TF32, matmuls stay
float32. mgxir's float32 rows are measured in each `--fp32-math` mode given (ieee: float32 as
MIGraphX; tf32: TF32 convolutions and gemms, dtype printed `f32 tf32`) against the same peers.
ResNet-50's batch norms are folded into its convolutions (calibrated on a random batch so
activations stay in float16's range) before export, and every peer runs that same folded model.

    python bench/bench_models.py [--models resnet50,bert,mobilenetv3,...] [--dtypes f16,f32] [--batches 1,32]
                                 [--peers eager,compile,reduce-overhead]
                                 [--configs bert:f32:32,...] [--exhaustive-tune] [--deadline SECONDS]
                                 [--fp32-math ieee,tf32] [--peer-tf32 off] [--out table.md] [--perf-dir DIR]

Rows are printed as they are measured; configurations that would start after the deadline are
skipped and listed as such."""

from __future__ import annotations

import argparse
import copy
import math
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from mgxir.diagnostics import DiagnosticSink
from mgxir.drivers.run import rms_error
from mgxir.targets.gpu.driver import load_on_gpu
from mgxir.translate.onnx import import_model

sys.path.insert(0, str(Path(__file__).parent))
from model_zoo import ZOO

# -- the models, in plain torch ---------------------------------------------------------------


def resnet50():
    import torch
    from torch import nn

    class ConvBn(nn.Module):
        def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False)
            self.bn = nn.BatchNorm2d(cout, momentum=1.0)

        def forward(self, x):
            return self.bn(self.conv(x))

        def fold(self) -> nn.Conv2d:
            return torch.nn.utils.fusion.fuse_conv_bn_eval(self.conv, self.bn)

    class Bottleneck(nn.Module):
        def __init__(self, cin: int, width: int, stride: int):
            super().__init__()
            cout = width * 4
            self.a, self.b, self.c = ConvBn(cin, width, 1), ConvBn(width, width, 3, stride), ConvBn(width, cout, 1)
            self.down = ConvBn(cin, cout, 1, stride) if stride != 1 or cin != cout else None

        def forward(self, x):
            identity = x if self.down is None else self.down(x)
            y = torch.relu(self.a(x))
            y = torch.relu(self.b(y))
            return torch.relu(self.c(y) + identity)

    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = ConvBn(3, 64, 7, 2)
            self.pool = nn.MaxPool2d(3, 2, 1)
            blocks, cin = [], 64
            for width, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
                for i in range(count):
                    blocks.append(Bottleneck(cin, width, stride if i == 0 else 1))
                    cin = width * 4
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Linear(2048, 1000)

        def forward(self, x):
            x = self.pool(torch.relu(self.stem(x)))
            x = self.blocks(x)
            return self.fc(torch.flatten(torch.mean(x, dim=(2, 3), keepdim=True), 1))

    def fold(module: nn.Module) -> None:
        for name, child in module.named_children():
            if isinstance(child, ConvBn):
                setattr(module, name, child.fold())
            else:
                fold(child)

    model = ResNet50()
    model.train()
    with torch.no_grad():  # running statistics of one random batch (momentum 1)
        model(torch.randn(8, 3, 224, 224))
    model.eval()
    fold(model)
    return model, lambda batch: torch.randn(batch, 3, 224, 224)


def bert_base(layers: int = 12, hidden: int = 768, heads: int = 12, sequence: int = 128):
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.out = nn.Linear(hidden, hidden)
            self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
            self.up = nn.Linear(hidden, 4 * hidden)
            self.down = nn.Linear(4 * hidden, hidden)
            self.norm2 = nn.LayerNorm(hidden, eps=1e-12)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(x).view(b, s, 3, heads, hidden // heads).permute(2, 0, 3, 1, 4)
            scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(hidden // heads))
            context = torch.matmul(torch.softmax(scores, dim=-1), v)
            x = self.norm1(x + self.out(context.transpose(1, 2).reshape(b, s, hidden)))
            return self.norm2(x + self.down(torch.nn.functional.gelu(self.up(x))))

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.words = nn.Embedding(30522, hidden)
            self.positions = nn.Embedding(512, hidden)
            self.types = nn.Embedding(2, hidden)
            self.norm = nn.LayerNorm(hidden, eps=1e-12)
            self.layers = nn.Sequential(*(Layer() for _ in range(layers)))
            self.register_buffer("position_ids", torch.arange(sequence).unsqueeze(0), persistent=False)

        def forward(self, ids):
            x = self.words(ids) + self.positions(self.position_ids) + self.types(torch.zeros_like(ids))
            return self.layers(self.norm(x))

    model = Bert()
    for p in model.parameters():  # BERT's initialisation scale
        if p.dim() > 1:
            torch.nn.init.normal_(p, std=0.02)
    model.eval()
    return model, lambda batch: torch.randint(0, 30522, (batch, sequence))


def torchvision_model(constructor: str) -> Callable[[], tuple[object, Callable[[int], object]]]:
    """A torchvision image model with random weights (its own initialisation), in eval mode."""

    def build():
        import torch
        import torchvision

        torch.manual_seed(0)
        model = getattr(torchvision.models, constructor)(weights=None).eval()
        return model, lambda batch: torch.randn(batch, 3, 224, 224)

    return build


# the models whose grouped and depthwise convolutions ran on the host before issue 22
TORCHVISION = {
    "mobilenetv3": "mobilenet_v3_large",
    "efficientnet_b0": "efficientnet_b0",
    "convnext_t": "convnext_tiny",
    "regnety": "regnet_y_400mf",
    "resnext50": "resnext50_32x4d",
    "shufflenetv2": "shufflenet_v2_x1_0",
}
MODELS: dict[str, Callable[[], tuple[object, Callable[[int], object]]]] = {
    "resnet50": resnet50,
    "bert": bert_base,
    **{name: torchvision_model(constructor) for name, constructor in TORCHVISION.items()},
    **ZOO,
}
PEERS = ("eager", "compile", "reduce-overhead")
DTYPES = {"f32": "float32", "f16": "float16"}


# -- measuring --------------------------------------------------------------------------------


def torch_time(fn: Callable[[], object], iterations: int) -> float:
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / iterations


def export(model, example, path: Path) -> None:
    import torch

    kwargs = dict(input_names=["input"], output_names=["output"], opset_version=14, do_constant_folding=True)
    # nn.MultiheadAttention's inference fast path is one aten op ONNX has no export for (torchvision's ViT)
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        torch.onnx.export(model, (example,), str(path), dynamo=False, **kwargs)
    except TypeError:  # a torch without the dynamo switch
        torch.onnx.export(model, (example,), str(path), **kwargs)
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)


def exact_float32(run: Callable[[], object]) -> object:
    """`run()` with PyTorch's TF32 switched off for cuDNN and matmuls (then restored)."""
    import torch

    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return run()
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def measure(
    name: str,
    dtype: str,
    batch: int,
    tune: bool,
    log: Callable[[str], None],
    perf_dir: Path | None = None,
    fp32_math: Sequence[str] = ("ieee",),
    deadline: float = math.inf,
    peers: Sequence[str] = PEERS,
) -> list[list[str]]:
    """One configuration's rows: the peers once, mgxir once per float32 math mode (one row for
    float16); modes that would start after `deadline` (perf_counter seconds) are left out."""
    import torch

    torch.manual_seed(0)
    model32, make_input = MODELS[name]()
    model32 = model32.cuda()
    model = model32 if dtype == "f32" else copy.deepcopy(model32).half()
    example = make_input(batch).cuda()
    if example.is_floating_point() and dtype == "f16":
        example = example.half()
    iterations = 50 if batch == 1 else 20
    with torch.inference_mode():
        exact_input = example.float() if example.is_floating_point() else example
        reference = exact_float32(lambda: model32(exact_input).float().cpu().numpy())
        eager_out = model(example).float().cpu().numpy()
        eager = torch_time(lambda: model(example), iterations)
    started = time.perf_counter()
    inductor = graphs = math.inf  # a peer left out of the run (--peers) counts as never fastest
    if "compile" in peers:
        compiled = torch.compile(model)
        with torch.inference_mode():
            compiled(example)
            inductor = torch_time(lambda: compiled(example), iterations)
        torch._dynamo.reset()
    inductor_compile = time.perf_counter() - started
    if "reduce-overhead" in peers:  # torch.compile's CUDA-graph mode: the peer that also replays graphs
        graphed = torch.compile(model, mode="reduce-overhead")
        with torch.inference_mode():
            for _ in range(3):
                graphed(example)
            graphs = torch_time(lambda: graphed(example), iterations)
        torch._dynamo.reset()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}-{dtype}-{batch}.onnx"
        with torch.inference_mode():
            export(model, example, path)
        onnx_bytes = path.read_bytes()
    torch_error = rms_error(eager_out, reference)
    best = min(eager, inductor, graphs)
    rows = []
    for math_mode in fp32_math if dtype == "f32" else ("ieee",):
        if rows and time.perf_counter() > deadline:
            log(f"  {name} {dtype} bs{batch} fp32-math={math_mode}: skipped (deadline)")
            continue
        label = dtype if math_mode == "ieee" else f"{dtype} {math_mode}"
        with tempfile.TemporaryDirectory() as tmp:  # each mode lowers its own import, in place
            path = Path(tmp) / "model.onnx"
            path.write_bytes(onnx_bytes)
            started = time.perf_counter()
            sink = DiagnosticSink()
            program = import_model(str(path), sink=sink)
            imported = time.perf_counter() - started
        started = time.perf_counter()
        executable = load_on_gpu(program, sink, exhaustive_tune=tune, in_place=True, fp32_math=math_mode)
        mgx_compile = time.perf_counter() - started
        feed = {"input": example.cpu().numpy()}
        got = np.asarray(executable.run(feed)[0]).astype(np.float32)
        mgx = executable.time_call(executable.execute, iterations)
        if perf_dir is not None:
            perf_dir.mkdir(parents=True, exist_ok=True)
            (perf_dir / f"{name}-{label.replace(' ', '-')}-bs{batch}.txt").write_text(executable.perf(20))
        host = [s.ins.op.defn.name for s in executable.steps if s.on_host]
        counts: dict[str, int] = {}
        for step in executable.steps:
            counts[step.ins.op.defn.name] = counts.get(step.ins.op.defn.name, 0) + 1
        error = rms_error(got.reshape(reference.shape), reference)
        plans = [p for p in executable.gemm_plans.values() if hasattr(p, "offered")]  # cuBLASLt's plans
        split = sum(p.choice >= p.offered for p in plans)
        log(
            f"  {name} {label} bs{batch}: import {imported:.1f}s, mgxir compile {mgx_compile:.1f}s, "
            f"inductor compile {inductor_compile:.1f}s; steps {counts}; host steps {host}; "
            f"gemm candidates {sum(len(p.algorithms) for p in plans)} ({split} of {len(plans)} gemms run split-K)"
        )
        rows.append(
            [
                name,
                label,
                str(batch),
                f"{mgx:.3f}",
                f"{eager:.3f}",
                f"{inductor:.3f}" if inductor < math.inf else "-",
                f"{graphs:.3f}" if graphs < math.inf else "-",
                f"{best / mgx:.2f}",
                f"{error:.2e}",
                f"{torch_error:.2e}",
            ]
        )
    return rows


HEADER = [
    "model",
    "dtype",
    "batch",
    "mgxir ms",
    "eager ms",
    "compile ms",
    "compile reduce-overhead ms",
    "torch best / mgxir",
    "rms mgxir",
    "rms torch",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,bert", help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--peers", default=",".join(PEERS), help="the torch modes to measure (comma-separated)")
    parser.add_argument("--dtypes", default="f16,f32")
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--configs", default=None, help="model:dtype:batch,... in this order (instead of the lists)")
    parser.add_argument("--exhaustive-tune", action="store_true")
    parser.add_argument("--deadline", type=float, default=1e9, help="seconds; later configurations are skipped")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here (markdown)")
    parser.add_argument("--perf-dir", type=Path, default=None, help="write each program's --perf report here")
    parser.add_argument(
        "--fp32-math", default="ieee", help="float32 rows: mgxir's modes, ieee and/or tf32 (comma-separated)"
    )
    parser.add_argument(
        "--peer-tf32",
        choices=("default", "off"),
        default="default",
        help="off: the peers convolve float32 without TF32 (cudnn.allow_tf32 = False), like mgxir's ieee mode",
    )
    args = parser.parse_args(argv)
    import torch

    if args.peer_tf32 == "off":
        torch.backends.cudnn.allow_tf32 = False

    start = time.perf_counter()
    lines = ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]

    def log(text: str) -> None:
        print(text, flush=True)

    def flush() -> None:
        if args.out is not None:
            args.out.write_text("\n".join(lines) + "\n")

    log(
        f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, "
        f"float32 matmul precision {torch.get_float32_matmul_precision()!r} "
        f"(TF32 {'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'}), "
        f"cuDNN {torch.backends.cudnn.version()} TF32 {'on' if torch.backends.cudnn.allow_tf32 else 'off'}; "
        f"mgxir fp32 math {args.fp32_math}"
    )
    configs = [
        (b, d, m)
        for b in (int(x) for x in args.batches.split(","))
        for d in args.dtypes.split(",")
        for m in args.models.split(",")
    ]
    if args.configs:
        configs = [(int(b), d, m) for m, d, b in (c.split(":") for c in args.configs.split(","))]
    for batch, dtype, name in configs:
        if time.perf_counter() - start > args.deadline:
            lines.append(f"| {name} | {dtype} | {batch} | skipped (deadline) |")
            continue
        try:
            rows = measure(
                name,
                dtype,
                batch,
                args.exhaustive_tune,
                log,
                args.perf_dir,
                args.fp32_math.split(","),
                start + args.deadline,
                args.peers.split(","),
            )
            lines.extend("| " + " | ".join(cells) + " |" for cells in rows)
            for cells in rows:
                log("| " + " | ".join(cells) + " |")
        except Exception as e:  # one configuration's failure is reported and the others go on
            traceback.print_exc()
            lines.append(f"| {name} | {dtype} | {batch} | failed: {type(e).__name__}: {str(e).splitlines()[0][:160]} |")
            log(lines[-1])
        flush()
        torch.cuda.empty_cache()
    print("\n".join(lines))
    flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
