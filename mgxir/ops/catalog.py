"""Imports every operator family so that each registers its definitions."""

from mgxir.ops import (  # noqa: F401
    builtin,
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
