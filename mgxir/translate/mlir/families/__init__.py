"""The lowering rules, one file per op family; importing this package registers them all."""

from mgxir.translate.mlir.families import control, dynamic, elementwise, layout, nn  # noqa: F401
