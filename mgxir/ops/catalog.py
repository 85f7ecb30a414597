"""Imports every operator family so that each registers its definitions."""

from mgxir.ops import builtin, control, elementwise, layout, memory, nn, tensor  # noqa: F401
