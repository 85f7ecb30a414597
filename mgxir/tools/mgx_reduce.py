"""mgx-reduce: cut a program down to the smallest one on which a test still shows the bug, and
write it as a self-contained reproducer. The driver is `mgxir.drivers.reduce`; its options are
declared in `ReduceOptions`."""

from __future__ import annotations

from typing import Any

from mgxir.drivers.reduce.driver import ReduceOptions, reduce_main
from mgxir.tools.cli import declared, run_command


@declared(ReduceOptions)
def mgx_reduce(**fields: Any) -> None:
    """Reduce a program to a small reproducer of a crash, a mismatch, a miscompile or any test."""
    raise SystemExit(reduce_main(ReduceOptions(**fields)))


def main() -> None:
    run_command(mgx_reduce)


if __name__ == "__main__":
    main()
