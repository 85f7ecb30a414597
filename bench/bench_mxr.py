"""Save and load speed of MIGraphX's program files (.mxr msgpack, .json), next to ONNX's protobuf
files for the same graph.

Usage: python bench/bench_mxr.py [N ...]   (default: 10000 100000 instructions)

The program is the chain of add/mul/tanh over two parameters of bench/gen.py. Save = the program
to bytes on disk; load = bytes on disk to a verified program. MIGraphX itself is not available
here (it takes over 10 minutes to save such a program, see the issue), so the peer measured in the
same run is `onnx.save`/`onnx.load` plus `onnx.checker.check_model` of the same graph as an ONNX
model (Add/Mul/Tanh nodes on float[4, 8] tensors, protobuf in C++). Times are CPU seconds.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import chain_program

from mgxir import Program, parse_program, verify
from mgxir.translate.mxr import json_text, load_json, load_mxr, mxr_bytes


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """The best CPU time of `repeat` runs (CPU time, so that other work on a shared machine does
    not skew either side)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def onnx_chain(n: int):  # type: ignore[no-untyped-def]
    import onnx
    from onnx import TensorProto, helper

    info = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [4, 8]) for name in ("x", "y")]
    nodes = []
    prev = "x"
    for i in range(2, n - 1):
        kind = i % 3
        out = f"v{i}"
        if kind == 0:
            nodes.append(helper.make_node("Add", [prev, "y"], [out]))
        elif kind == 1:
            nodes.append(helper.make_node("Mul", [prev, prev], [out]))
        else:
            nodes.append(helper.make_node("Tanh", [prev], [out]))
        prev = out
    output = helper.make_tensor_value_info(prev, TensorProto.FLOAT, [4, 8])
    graph = helper.make_graph(nodes, "chain", info, [output])
    return onnx.helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main(sizes: list[int]) -> None:
    try:
        import onnx
    except ImportError:
        onnx = None
        print("(ONNX peer unavailable: pip install onnx)")
    folder = Path(tempfile.mkdtemp(prefix="bench_mxr."))
    print(
        f"{'instructions':>12} {'format':>6} {'mgxir save s':>12} {'mgxir load s':>12} {'MB':>6} "
        f"{'onnx save s':>11} {'onnx load s':>11} {'save ratio':>10} {'load ratio':>10}"
    )
    for n in sizes:
        program = parse_program(chain_program(n))
        verify(program)
        t_onnx_save = t_onnx_load = float("nan")
        if onnx is not None:
            model = onnx_chain(n)
            onnx_path = folder / "chain.onnx"

            def onnx_save(model=model, onnx_path=onnx_path) -> None:
                onnx.save(model, str(onnx_path))

            def onnx_load(onnx_path=onnx_path) -> None:
                onnx.checker.check_model(onnx.load(str(onnx_path)))

            t_onnx_save = best_of(onnx_save)
            t_onnx_load = best_of(onnx_load)
        for fmt in ("mxr", "json"):
            path = folder / f"chain.{fmt}"

            def save(fmt: str = fmt, path: Path = path, program: Program = program) -> None:
                if fmt == "mxr":
                    path.write_bytes(mxr_bytes(program))
                else:
                    path.write_text(json_text(program))

            def load(fmt: str = fmt, path: Path = path, n: int = n) -> None:
                loaded = load_mxr(path.read_bytes()) if fmt == "mxr" else load_json(path.read_text())
                verify(loaded)
                assert len(loaded.main) == n

            t_save = best_of(save)
            t_load = best_of(load)
            size = path.stat().st_size / 1e6
            print(
                f"{n:>12} {fmt:>6} {t_save:>12.3f} {t_load:>12.3f} {size:>6.1f} {t_onnx_save:>11.3f} "
                f"{t_onnx_load:>11.3f} {t_save / t_onnx_save:>9.1f}x {t_load / t_onnx_load:>9.1f}x"
            )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10_000, 100_000])
