"""mgx-opt: read a program, verify it, run passes, and print it (the driver: `mgxir.drivers.opt`;
its options are declared in `OptOptions`)."""

from __future__ import annotations

from typing import Any

from mgxir.drivers.opt import OptOptions, opt_main
from mgxir.tools.cli import declared, run_command


@declared(OptOptions)
def mgx_opt(**fields: Any) -> None:
    """Parse, verify, transform and print a MIGraphX program.

    Without passes the output is byte-identical to what MIGraphX prints for the same program.
    """
    raise SystemExit(opt_main(OptOptions(**fields)))


def main() -> None:
    run_command(mgx_opt)


if __name__ == "__main__":
    main()
