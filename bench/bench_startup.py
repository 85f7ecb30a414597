"""Start-up time of the tools next to `python -c 'import numpy'`, measured in the same run.

Usage: VENV/bin/python bench/bench_startup.py [--repeat N]

It measures the tools of the Python that runs it (an editable install or a `pip install .` one; the
first line says which). Each command runs N times (default 15), interleaved with the peer so that load
on the machine hits both alike; the figures are the medians of a whole process's wall time and of its
CPU time (user + system, which other work on a busy machine disturbs less), and the minimum wall time
(the run least disturbed by other work). The input is a 10-line program
(examples/conv_relu_pool.mgx). The goal is at most 1.5x the peer: numpy is the floor, as every
tool needs it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
EXAMPLE = str(REPO / "examples" / "conv_relu_pool.mgx")

# as installed packages are: with bytecode caches (a tool run from a checkout writes its own)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
PEER = [sys.executable, "-c", "import numpy"]
COMMANDS: dict[str, list[str]] = {
    "mgx-opt FILE": [str(BIN / "mgx-opt"), EXAMPLE],
    "mgx-opt FILE -p dce": [str(BIN / "mgx-opt"), EXAMPLE, "-p", "dce"],
    "mgx-run FILE": [str(BIN / "mgx-run"), EXAMPLE, "--quiet", "--fill=random"],
    "mgx-translate FILE": [str(BIN / "mgx-translate"), EXAMPLE],
}


def measure(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in ["import numpy", *COMMANDS]}
    for command in COMMANDS.values():  # warm the file cache and write the bytecode caches
        measure(command)
    for _ in range(args.repeat):
        for name, command in [("import numpy", PEER), *COMMANDS.items()]:
            samples[name].append(measure(command))
    peer_wall = statistics.median(s[0] for s in samples["import numpy"])
    peer_cpu = statistics.median(s[1] for s in samples["import numpy"])
    peer_least = min(s[0] for s in samples["import numpy"])
    print(f"mgxir: {installation()}; {args.repeat} runs each")
    print(f"{'command':<22} {'wall s':>7} {'/ numpy':>8} {'CPU s':>7} {'/ numpy':>8} {'min wall':>9} {'/ numpy':>8}")
    for name, runs in samples.items():
        wall = statistics.median(s[0] for s in runs)
        cpu = statistics.median(s[1] for s in runs)
        least = min(s[0] for s in runs)
        print(
            f"{name:<22} {wall:>7.3f} {wall / peer_wall:>7.2f}x {cpu:>7.3f} {cpu / peer_cpu:>7.2f}x"
            f" {least:>9.3f} {least / peer_least:>7.2f}x"
        )


def installation() -> str:
    """Where the measured tools' mgxir is: this checkout (an editable install) or an installed copy."""
    spec = importlib.util.find_spec("mgxir")
    where = Path(spec.origin).parent if spec is not None and spec.origin else None
    if where is None:
        return "not importable"
    kind = "editable install of this checkout" if where.is_relative_to(REPO) else "installed copy"
    return f"{kind} ({where})"


if __name__ == "__main__":
    main()
