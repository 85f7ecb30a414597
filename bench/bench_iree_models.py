"""ResNet-50 and BERT-base through IREE's CUDA target against PyTorch eager and torch.compile, with the
compiled module made on a machine without a GPU (IREE's compiler does not travel to the GPU machine:
its wheel is larger than what may be carried there).

The models are bench_models.py's (plain torch, seeded, exported to ONNX opset 14 on the GPU machine),
in float32 and float16 at batch 1 and 32 (CONFIGS). Three steps, the first and last on the GPU machine:

    python bench/bench_iree_models.py export DIR       # weightless ONNX graphs (large float initializers
                                                       # emptied: their shapes stay)
    python bench/bench_iree_models.py prepare DIR OUT  # here: import each graph, lift the large float
                                                       # literals into parameters, lower to MLIR, compile
                                                       # for cuda into OUT/CASE.vmfb (+ OUT/CASE.txt, the
                                                       # lifted program's text digest); CASE is
                                                       # NAME_DTYPE_bBATCH
    python bench/bench_iree_models.py run OUT          # GPU: export again (same seed, same torch), import,
                                                       # lift the same literals (the digest must match),
                                                       # run the module with the weights as inputs; time
                                                       # it against torch eager and torch.compile

The rms error (MIGraphX's rule) is against PyTorch's float32 eager output with TF32 off, for the
float16 models too (PyTorch's default convolutions use TF32; its default eager output's error is
printed beside). Times are ms per inference,
median of CUDA-event-timed loops for torch, wall time per synchronous call for IREE (inputs already on
the device).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mgxir.ir.builtin import make_param
from mgxir.ir.program import Program
from mgxir.text.printer import print_program

LIFT_ELEMENTS = 1024  # float literals at least this large become parameters
NAMES = ("resnet50", "bert")
# batch 1 first: the rows that finish when the GPU machine's time runs short
CONFIGS = tuple((name, dtype, batch) for batch in (1, 32) for dtype in ("f32", "f16") for name in NAMES)


def case(name: str, dtype: str, batch: int) -> str:
    return f"{name}_{dtype}_b{batch}"


def lift_weights(program: Program) -> list[np.ndarray]:
    """Turns `main`'s large float literals into parameters `weightN` (in instruction order) and
    returns their values in that order."""
    main = program.main
    weights = []
    for ins in list(main):
        if not ins.is_literal or ins.literal.data is None:
            continue
        shape = ins.shape
        if not shape.dtype.is_float or shape.elements < LIFT_ELEMENTS:
            continue
        param = main.insert(main.first, make_param(f"weight{len(weights)}"), (), (), shape.with_lens(shape.lens))
        weights.append(np.asarray(ins.literal.data).reshape(shape.lens))
        ins.replace_all_uses_with(param)
        main.remove(ins)
    return weights


def digest(program: Program) -> str:
    return hashlib.sha256(print_program(program).encode()).hexdigest()[:16]


def _torch_model(name: str, dtype: str = "f32", batch: int = 1):
    """The float32 model and input on the GPU, and the model and input of `dtype`."""
    import copy

    import torch
    from bench_models import MODELS

    torch.manual_seed(0)
    model32, make_input = MODELS[name]()
    torch.manual_seed(1)
    example32 = make_input(batch)
    model32, example32 = model32.cuda(), example32.cuda()
    if dtype == "f32":
        return model32, example32, model32, example32
    example = example32.half() if example32.is_floating_point() else example32
    return model32, example32, copy.deepcopy(model32).half(), example


LIFTED = {1: np.float32, 10: np.float16}  # ONNX float and float16 initializers: emptied and lifted


def export_graphs(out: Path) -> None:
    import onnx
    import torch
    from bench_models import export

    out.mkdir(parents=True, exist_ok=True)
    for config in CONFIGS:
        name = case(*config)
        _, _, model, example = _torch_model(*config)
        with tempfile.TemporaryDirectory() as tmp, torch.inference_mode():
            path = Path(tmp) / f"{name}.onnx"
            export(model, example, path)
            graph = onnx.load(str(path))
        for init in graph.graph.initializer:
            if init.data_type in LIFTED and int(np.prod(init.dims)) >= LIFT_ELEMENTS:
                init.ClearField("raw_data")
                init.ClearField("float_data")
                init.ClearField("int32_data")
        onnx.save(graph, str(out / f"{name}.onnx"))
        print(f"{name}: {(out / f'{name}.onnx').stat().st_size} bytes", flush=True)


def _import(path: Path, fill_weights: bool) -> Program:
    import onnx

    from mgxir.diagnostics import DiagnosticSink
    from mgxir.translate.onnx import import_model

    if fill_weights:  # the emptied initializers as zeros of their shapes
        model = onnx.load(str(path))
        for init in model.graph.initializer:
            empty = not init.raw_data and not init.float_data and not init.int32_data
            if init.data_type in LIFTED and empty and int(np.prod(init.dims)) > 0:
                init.raw_data = np.zeros(int(np.prod(init.dims)), LIFTED[init.data_type]).tobytes()
        with tempfile.TemporaryDirectory() as tmp:
            filled = Path(tmp) / path.name
            onnx.save(model, str(filled))
            return import_model(str(filled), sink=DiagnosticSink())
    return import_model(str(path), sink=DiagnosticSink())


def prepare(graphs: Path, out: Path, cases: list[str]) -> None:
    from mgxir.diagnostics import DiagnosticSink
    from mgxir.targets.iree.compile import compile_module
    from mgxir.targets.iree.devices import device
    from mgxir.translate.mlir.api import mlir_bytecode

    out.mkdir(parents=True, exist_ok=True)
    cuda = device("cuda")
    for name in cases:
        started = time.perf_counter()
        program = _import(graphs / f"{name}.onnx", fill_weights=True)
        weights = lift_weights(program)
        mlir = mlir_bytecode(program, None, DiagnosticSink())
        vmfb = compile_module(mlir, cuda, list(cuda.flags))
        (out / f"{name}.vmfb").write_bytes(vmfb)
        (out / f"{name}.txt").write_text(digest(program) + "\n")
        print(
            f"{name}: {len(weights)} weights lifted, {len(vmfb)} bytes of vmfb, {time.perf_counter() - started:.1f} s",
            flush=True,
        )


def _iree_time(call, iterations: int) -> float:
    for _ in range(3):
        call()
    times = []
    for _ in range(iterations):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return 1000 * float(np.median(times))


def measure(config: tuple[str, str, int], prepared: Path, check_cpu: bool = False) -> list[str] | None:
    import iree.runtime as rt
    import torch
    from bench_models import export, torch_time

    from mgxir.drivers.run import rms_error

    name, dtype, batch = config
    iterations = 50 if batch == 1 else 20
    model32, example32, model, example = _torch_model(*config)
    tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    with torch.inference_mode():  # the reference in float32 proper (PyTorch's convolutions default to TF32)
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
        reference = model32(example32).float().cpu().numpy()
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32
        eager_error = rms_error(model(example).float().cpu().numpy(), reference)
        eager = torch_time(lambda: model(example), iterations)
    torch._dynamo.reset()
    compiled = torch.compile(model)
    with torch.inference_mode():
        compiled(example)
        inductor = torch_time(lambda: compiled(example), iterations)
        torch_error = rms_error(compiled(example).float().cpu().numpy(), reference)
    torch._dynamo.reset()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{case(*config)}.onnx"
        with torch.inference_mode():
            export(model, example, path)
        program = _import(path, fill_weights=False)
    weights = lift_weights(program)
    expected = (prepared / f"{case(*config)}.txt").read_text().strip()
    if digest(program) != expected:
        print(f"{case(*config)}: the program differs from the one compiled ({digest(program)} != {expected})")
        return None
    config_ = rt.Config("cuda")
    context = rt.SystemContext(config=config_)
    vmfb = (prepared / f"{case(*config)}.vmfb").read_bytes()
    context.add_vm_module(rt.VmModule.copy_buffer(config_.vm_instance, vmfb))
    main = context.modules.module["main"]
    feed = {"input": example.cpu().numpy(), **{f"weight{i}": w for i, w in enumerate(weights)}}
    args = [rt.asdevicearray(config_.device, np.ascontiguousarray(feed[p])) for p in program.main.parameter_names()]
    got = np.asarray(main(*args).to_host()).astype(np.float32)
    iree_ms = _iree_time(lambda: main(*args).to_host(), iterations)
    error = rms_error(got.reshape(reference.shape), reference)
    if check_cpu:  # the same MLIR through IREE's CPU backend on this machine, next to its CUDA result
        from mgxir.diagnostics import DiagnosticSink
        from mgxir.targets.iree.compile import compile_module
        from mgxir.targets.iree.devices import device
        from mgxir.targets.iree.runtime import LoadedModule
        from mgxir.translate.mlir.api import mlir_bytecode

        cpu = device("local-task")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "cpu.vmfb"
            path.write_bytes(compile_module(mlir_bytecode(program, None, DiagnosticSink()), cpu, list(cpu.flags)))
            inputs = [np.ascontiguousarray(feed[p]) for p in program.main.parameter_names()]
            on_cpu = LoadedModule(path, cpu)(inputs, [program.main.return_instruction.args[0].shape.dtype])[0]
        print(
            f"{name}: IREE local-task vs reference rms {rms_error(on_cpu.reshape(reference.shape), reference):.2e}, "
            f"IREE cuda vs IREE local-task rms {rms_error(got.reshape(on_cpu.shape), on_cpu):.2e}",
            flush=True,
        )
    best = min(eager, inductor)
    times = [f"{iree_ms:.3f}", f"{eager:.3f}", f"{inductor:.3f}", f"{best / iree_ms:.2f}"]
    return [name, dtype, str(batch), *times, f"{error:.2e}", f"{eager_error:.2e}", f"{torch_error:.2e}"]


def run(prepared: Path, cases: list[str], check_cpu: tuple[str, ...] = ()) -> list[list[str]]:
    rows = []
    for config in CONFIGS:
        if case(*config) not in cases:
            continue
        row = measure(config, prepared, case(*config) in check_cpu)
        if row is not None:
            rows.append(row)
            print("| " + " | ".join(row) + " |", flush=True)
    return rows


HEADER = ["model", "dtype", "batch", "iree cuda ms", "eager ms", "compile ms", "torch best / iree", "rms iree"]
HEADER += ["rms eager (TF32 default)", "rms torch.compile"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    sub.add_parser("export").add_argument("out", type=Path)
    p = sub.add_parser("prepare")
    p.add_argument("graphs", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("cases", nargs="*", help="CASEs (NAME_DTYPE_bBATCH); default all")
    r = sub.add_parser("run")
    r.add_argument("prepared", type=Path)
    r.add_argument("cases", nargs="*", help="CASEs (NAME_DTYPE_bBATCH); default all")
    r.add_argument("--check-cpu", default="", help="CASEs also compiled and run on IREE's CPU backend here")
    args = parser.parse_args(argv)
    if args.step == "export":
        export_graphs(args.out)
    elif args.step == "prepare":
        prepare(args.graphs, args.out, args.cases or [case(*c) for c in CONFIGS])
    else:
        rows = run(args.prepared, args.cases or [case(*c) for c in CONFIGS], tuple(args.check_cpu.split(",")))
        print("| " + " | ".join(HEADER) + " |")
        print("|" + " --- |" * len(HEADER))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
