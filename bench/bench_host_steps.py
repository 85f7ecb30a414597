"""How much of MIGraphX's ONNX test models the GPU target leaves for the host: each model under
../shared/onnx-models (or --models DIR) is imported and run through the `gpu` pipeline (for sm_90;
NVRTC compiles the kernels, no GPU needed), and the instructions of the lowered main module (and of
the `if`/`loop` bodies it lowers) that are neither target ops, allocations nor views are counted by
operator, and by operator and the reason gpu_lowering gave for leaving it (its warning's text after
"runs on the host: ", numbers and names in quotes folded so that the same reason counts once).

    python bench/bench_host_steps.py [--models DIR] [--match REGEX] [--models-of OP]
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


def host_steps(path: Path) -> list[tuple[str, str]] | None:
    """(operator, why) for each instruction the lowered program runs on the host; None where it
    does not import."""
    try:
        program = import_model(str(path), sink=DiagnosticSink())
        verify(program, DiagnosticSink())
    except (MgxError, ValueError, KeyError):
        return None
    passes = parse_pipeline(GPU_PIPELINE)
    lowering = next(p for p in passes if isinstance(p, GpuLowering))
    lowering.arch = "sm_90"
    sink = DiagnosticSink()
    PassManager(passes).run(program, sink)
    reasons = {ins: why for ins, why in lowering.host_steps}  # main's and the if/loop bodies'
    unexamined = [
        ins
        for ins in program.main
        if not (ins.is_param or ins.is_literal or ins.is_return or ins.op.defn.is_view)
        and not ins.op.defn.name.startswith("gpu::")
        and ins.op.defn.name not in TARGET_STEPS
        and ins not in reasons
    ]
    return [(ins.op.defn.name, folded(why)) for ins, why in reasons.items() if not ins.op.defn.is_view] + [
        (ins.op.defn.name, "(not looked at)") for ins in unexamined
    ]


def folded(why: str) -> str:
    """`why` with numbers and quoted names replaced, so that one reason counts once."""
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'...'", why))[:120]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=MODELS, help="default: ../shared/onnx-models")
    parser.add_argument("--match", default=".", help="only models whose file name matches this")
    parser.add_argument("--models-of", default="", metavar="OP", help="also list the models keeping OP on the host")
    args = parser.parse_args(argv)
    register_all_ops()
    register_target_ops()
    pattern = re.compile(args.match)
    counts: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[tuple[str, str]] = collections.Counter()
    models_of: list[str] = []
    failures: collections.Counter[str] = collections.Counter()
    lowered = with_host = failed = 0
    for path in sorted(args.models.glob("*.onnx")):
        if not pattern.search(path.name):
            continue
        try:
            steps = host_steps(path)
        except MgxError as e:
            failed += 1
            failures[f"{type(e).__name__}: {folded(str(e))}"] += 1
            continue
        except Exception as e:  # an internal error: counted by kind, the run goes on
            failed += 1
            failures[f"internal {type(e).__name__}: {folded(str(e))}"] += 1
            print(f"{path.name}: internal {type(e).__name__}: {e}", file=sys.stderr)
            continue
        if steps is None:
            continue
        lowered += 1
        with_host += bool(steps)
        counts.update(name for name, _ in steps)
        reasons.update(steps)
        if any(name == args.models_of for name, _ in steps):
            models_of.append(path.stem)
    print(f"{lowered} models lowered, {with_host} with host steps, {failed} failed in the pipeline")
    for name, n in counts.most_common():
        print(f"  {name}: {n}")
    print("by reason:")
    for (name, why), n in sorted(reasons.items(), key=lambda item: (-counts[item[0][0]], item[0][0], -item[1])):
        print(f"  {name}: {n}  {why}")
    for why, n in failures.most_common():
        print(f"  failed: {n}  {why}")
    if args.models_of:
        print(f"models keeping {args.models_of}: {' '.join(models_of)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
