"""ONNX's backend node conformance suite (generated from the installed onnx's cases) on mgxir's ONNX
backend (the reference interpreter) and on onnxruntime, measured in the same run with ONNX's rule
(shape, dtype, rtol/atol per case).

    python bench/onnx_node_suite.py [--peer] [--write-expected] [--json OUT.json]

--write-expected rewrites test/unit/data/onnx_node_passes.txt, the list CI holds mgxir to.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from mgxir.drivers.onnx_backend import check_node_case, node_test_cases

EXPECTED = Path(__file__).resolve().parents[1] / "test" / "unit" / "data" / "onnx_node_passes.txt"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", action="store_true", help="also run onnxruntime's backend on every case")
    parser.add_argument("--write-expected", action="store_true", help=f"rewrite {EXPECTED.name}")
    parser.add_argument("--json", help="write every case's outcome here")
    args = parser.parse_args()
    cases = node_test_cases()
    runners = {"mgxir": None}
    if args.peer:
        import onnxruntime
        import onnxruntime.backend

        onnxruntime.set_default_logger_severity(4)
        runners["onnxruntime"] = onnxruntime.backend.prepare
    outcomes: dict[str, dict[str, tuple[str, str]]] = {}
    for name, prepare in runners.items():
        start = time.perf_counter()
        outcomes[name] = {
            c.name: (check_node_case(c) if prepare is None else check_node_case(c, prepare)) for c in cases
        }
        counts = Counter(status for status, _ in outcomes[name].values())
        print(
            f"{name:12} {len(cases)} cases: "
            + ", ".join(f"{counts[k]} {k}" for k in ("pass", "fail", "refused", "error"))
            + f" ({time.perf_counter() - start:.1f} s)"
        )
    if args.peer:
        mine = {k for k, (s, _) in outcomes["mgxir"].items() if s == "pass"}
        peer = {k for k, (s, _) in outcomes["onnxruntime"].items() if s == "pass"}
        print(f"both pass {len(mine & peer)}, only mgxir {len(mine - peer)}, only onnxruntime {len(peer - mine)}")
    if args.json:
        Path(args.json).write_text(json.dumps(outcomes, indent=1))
    if args.write_expected:
        passing = sorted(k for k, (s, _) in outcomes["mgxir"].items() if s == "pass")
        EXPECTED.write_text("\n".join(passing) + "\n")
        print(f"wrote {len(passing)} names to {EXPECTED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
