"""mgx-verify: every input (files, or folders walked) on every target, compared with a reference and
timed, through a pool of processes or a Ray cluster, with a JSON report, a table and an HTML page.
The driver is `mgxir.drivers.verify.driver`; its options are declared in `VerifyOptions`."""

from __future__ import annotations

from typing import Any

from mgxir.drivers.verify.driver import VerifyOptions, verify_main
from mgxir.tools.cli import declared, run_command


@declared(VerifyOptions)
def mgx_verify(**fields: Any) -> None:
    """Verify programs on targets: import, compile, run, compare with the rms rule, time."""
    raise SystemExit(verify_main(VerifyOptions(**fields)))


def main() -> None:
    run_command(mgx_verify)


if __name__ == "__main__":
    main()
