"""mgx-run in a Python that cannot import IREE's compiler, as where only iree-base-runtime is
installed: `import iree.compiler` (and its MLIR bindings) fails."""

import sys

sys.modules["iree.compiler"] = None  # type: ignore[assignment]

from mgxir.tools.mgx_run import main  # noqa: E402

sys.argv[0] = "mgx-run"
main()
