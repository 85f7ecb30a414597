"""The lowering rules, one file per op family; importing this package registers them all."""

from mgxir.translate.mlir.families import (  # noqa: F401
    control,
    detection,
    dynamic,
    elementwise,
    layout,
    movement,
    nn,
    random,
    recurrent,
    scatter,
    unique,
    vision,
)
