"""mgx-run: run a program's `main` on the reference interpreter (or a target) and print its outputs.

Inputs and outputs follow iree-run-module's conventions: `--input=x=@x.npy`, `--input=@inputs.npz`,
`--input="x=2x3xf32=1 2 3 4 5 6"`, `--output=@out.npy`, `--output=-`. The driver is
`mgxir.drivers.run`; its options are declared in `RunOptions`.
"""

from __future__ import annotations

from typing import Any

from mgxir.drivers.run import RunOptions, run_main
from mgxir.tools.cli import declared, run_command


@declared(RunOptions)
def mgx_run(**fields: Any) -> None:
    """Run a MIGraphX program's main module and print its outputs."""
    raise SystemExit(run_main(RunOptions(**fields)))


def main() -> None:
    run_command(mgx_run)


if __name__ == "__main__":
    main()
