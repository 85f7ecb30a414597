"""The operator catalogue: one declarative definition per MIGraphX operator, filed by family.

Nothing is registered by importing this package: `register_all_ops()` registers every family (as
MLIR's `registerAllDialects`), and the entry points call it (`import mgxir`'s API, the text parser,
the tools, the tests' conftest).
"""

from __future__ import annotations

_registered = False


def register_all_ops() -> None:
    """Registers the definitions of every operator family with `mgxir.ir.registry` (idempotent)."""
    global _registered
    if _registered:
        return
    _registered = True
    # importing a family module registers its definitions (each class is decorated with @register)
    from mgxir.ops import (  # noqa: F401
        control,
        elementwise,
        indexing,
        layout,
        memory,
        nn,
        rnn,
        runtime,
        tensor,
        vision,
    )
