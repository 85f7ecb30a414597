"""Programs run through IREE on a device, next to the reference interpreter: rms error of each output
and the median time of a warm run (the module loaded once, inputs on the host each call).

Usage:
  python bench/bench_iree.py --device cuda --device vulkan            # compile (or use the cache), run
  python bench/bench_iree.py --device cuda --compile-only             # fill the cache (no GPU needed)

The cache is $MGXIR_CACHE_DIR (or --cache-dir): compile on a machine with iree-base-compiler, run on
one with only iree-base-runtime. Programs: the chain of bench/gen.py, the examples, and two blocks
written here (a ResNet basic block with pooling and a classifier; an attention block with layer norm).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from gen import chain_program

from mgxir import DiagnosticSink, parse_program, verify
from mgxir.drivers.run import flatten_outputs, gather_inputs, rms_error
from mgxir.interp import Interpreter
from mgxir.ir.program import Program
from mgxir.targets.iree import IreeOptions, Timings, compiled_module
from mgxir.targets.iree.devices import device as find_device
from mgxir.targets.iree.runtime import LoadedModule

ROOT = Path(__file__).resolve().parents[1]

RESNET_BLOCK = """
x = @param:x -> float_type, {1, 64, 56, 56}
w1 = @param:w1 -> float_type, {64, 64, 3, 3}
w2 = @param:w2 -> float_type, {64, 64, 3, 3}
fc = @param:fc -> float_type, {64, 1000}
@4 = convolution[padding={1, 1},stride={1, 1},dilation={1, 1},group=1](x,w1)
@5 = relu(@4)
@6 = convolution[padding={1, 1},stride={1, 1},dilation={1, 1},group=1](@5,w2)
@7 = add(@6,x)
@8 = relu(@7)
@9 = pooling[mode=average,padding={0, 0},stride={1, 1},lengths={56, 56}](@8)
@10 = reshape[dims={1, 64}](@9)
@11 = dot(@10,fc)
@12 = softmax[axis=1](@11)
@13 = @return(@12)
"""

ATTENTION_BLOCK = """
x = @param:x -> float_type, {1, 128, 256}
wq = @param:wq -> float_type, {1, 256, 256}
wk = @param:wk -> float_type, {1, 256, 256}
wv = @param:wv -> float_type, {1, 256, 256}
@4 = dot(x,wq)
@5 = dot(x,wk)
@6 = dot(x,wv)
@7 = transpose[permutation={0, 2, 1}](@5)
@8 = dot(@4,@7)
@9 = @literal{0.0625} -> float_type, {1}, {0}
@10 = multibroadcast[out_lens={1, 128, 128}](@9)
@11 = mul(@8,@10)
@12 = softmax[axis=2](@11)
@13 = dot(@12,@6)
@14 = add(@13,x)
@15 = reduce_mean[axes={2}](@14)
@16 = multibroadcast[out_lens={1, 128, 256}](@15)
@17 = sub(@14,@16)
@18 = mul(@17,@17)
@19 = reduce_mean[axes={2}](@18)
@20 = rsqrt(@19)
@21 = multibroadcast[out_lens={1, 128, 256}](@20)
@22 = mul(@17,@21)
@23 = @return(@22)
"""


def programs() -> dict[str, Program]:
    texts = {
        "chain-1000": chain_program(1000),
        "conv_relu_pool": (ROOT / "examples" / "conv_relu_pool.mgx").read_text(),
        "fuse": (ROOT / "examples" / "fuse.mgx").read_text(),
        "resnet-block": RESNET_BLOCK,
        "attention-block": ATTENTION_BLOCK,
    }
    out = {}
    for name, text in texts.items():
        program = parse_program(text, name)
        verify(program)
        out[name] = program
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", action="append", default=[])
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    sink = DiagnosticSink()
    print(f"{'program':>16} {'device':>8} {'cache':>6} {'rms error':>10} {'run ms':>9} {'ref ms':>9}")
    for name, program in programs().items():
        params = gather_inputs(program, [], "random", 0)
        reference = None
        ref_ms = float("nan")
        for device in args.device or ["local-task"]:
            options = IreeOptions(device, args.cache_dir)
            timings = Timings()
            path = compiled_module(program, options, sink, timings=timings)
            if args.compile_only:
                print(f"{name:>16} {device:>8} {'warm' if timings.warm else 'cold':>6} (compiled)")
                continue
            if reference is None:
                start = time.perf_counter()
                with np.errstate(all="ignore"):
                    reference = flatten_outputs(Interpreter(program).run(params))
                ref_ms = 1000 * (time.perf_counter() - start)
            module = LoadedModule(path, find_device(device))
            main_module = program.main
            inputs = [params[p.param_name] for p in main_module.parameters()]
            types = [o.shape.dtype for o in main_module.return_instruction.args]
            module(inputs, types)  # warm-up
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                results = module(inputs, types)
                times.append(1000 * (time.perf_counter() - start))
            errors = [rms_error(r, reference[f"out{i}"]) for i, r in enumerate(results)]
            print(
                f"{name:>16} {device:>8} {'warm' if timings.warm else 'cold':>6} {max(errors):>10.3g} "
                f"{statistics.median(times):>9.3f} {ref_ms:>9.1f}"
            )


if __name__ == "__main__":
    main()
