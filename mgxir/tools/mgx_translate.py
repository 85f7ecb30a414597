"""mgx-translate: convert programs between formats (the driver and its format tables:
`mgxir.drivers.translate`; its options are declared in `TranslateOptions`)."""

from __future__ import annotations

import sys
from typing import Any

from mgxir.drivers.translate import TranslateOptions, conflicting_formats, spelled_formats, translate_main
from mgxir.tools.cli import declared, run_command


@declared(TranslateOptions)
def mgx_translate(**fields: Any) -> None:
    """Translate a MIGraphX program to another format.

    Reads program text, MIGraphX logs, ONNX models (as `migraphx-driver read`), .mxr, JSON, --py
    reproducers and MLIR; writes text (mgx, mgx-lossless), MLIR text and bytecode, SPIR-V kernels
    (-o DIR) or assembly, .mxr, JSON, Python reproducers, DOT and SVG.
    """
    raise SystemExit(translate_main(TranslateOptions(**fields)))


def main() -> None:
    problem = conflicting_formats(sys.argv[1:])
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(1)
    run_command(mgx_translate, spelled_formats(sys.argv[1:]))


if __name__ == "__main__":
    main()
