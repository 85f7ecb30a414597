"""How much of MIGraphX's ONNX test models the GPU target leaves for the host: each model under
../shared/onnx-models (or --models DIR) is imported and run through the `gpu` pipeline (for sm_90;
NVRTC compiles the kernels, no GPU needed), and the instructions of the lowered main module that
are neither target ops, allocations nor views are counted by operator.

    python bench/bench_host_steps.py [--models DIR] [--match REGEX]
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.drivers.common import register_target_ops
from mgxir.ops import register_all_ops
from mgxir.passes.manager import PassManager
from mgxir.passes.registry import parse_pipeline
from mgxir.targets.gpu.lowering import GPU_PIPELINE, GpuLowering
from mgxir.translate.onnx import import_model
from mgxir.verifier import verify

TARGET_STEPS = ("allocate", "load")
MODELS = Path(__file__).resolve().parent.parent.parent / "shared" / "onnx-models"


def host_steps(path: Path) -> list[str] | None:
    """The operators the lowered program runs on the host; None where it does not import."""
    try:
        program = import_model(str(path), sink=DiagnosticSink())
        verify(program, DiagnosticSink())
    except (MgxError, ValueError, KeyError):
        return None
    passes = parse_pipeline(GPU_PIPELINE)
    for p in passes:
        if isinstance(p, GpuLowering):
            p.arch = "sm_90"
    PassManager(passes).run(program, DiagnosticSink())
    return [
        ins.op.defn.name
        for ins in program.main
        if not (ins.is_param or ins.is_literal or ins.is_return or ins.op.defn.is_view)
        and not ins.op.defn.name.startswith("gpu::")
        and ins.op.defn.name not in TARGET_STEPS
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=MODELS, help="default: ../shared/onnx-models")
    parser.add_argument("--match", default=".", help="only models whose file name matches this")
    args = parser.parse_args(argv)
    register_all_ops()
    register_target_ops()
    pattern = re.compile(args.match)
    counts: collections.Counter[str] = collections.Counter()
    lowered = with_host = failed = 0
    for path in sorted(args.models.glob("*.onnx")):
        if not pattern.search(path.name):
            continue
        try:
            steps = host_steps(path)
        except MgxError:
            failed += 1
            continue
        if steps is None:
            continue
        lowered += 1
        with_host += bool(steps)
        counts.update(steps)
    print(f"{lowered} models lowered, {with_host} with host steps, {failed} failed in the pipeline")
    for name, n in counts.most_common():
        print(f"  {name}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
