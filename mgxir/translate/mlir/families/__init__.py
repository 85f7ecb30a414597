"""The lowering rules, one file per op family; importing this package registers them all."""

from mgxir.translate.mlir.families import control, elementwise, layout, movement, nn, recurrent, scatter, vision  # noqa: F401
