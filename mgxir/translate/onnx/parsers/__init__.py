"""The ONNX operator parsers, one module per family; importing this package fills the table."""

from mgxir.translate.onnx.parsers import (
    control,
    einsum,
    elementwise,
    loss,
    lowbit,
    nn,
    norms,
    qlinear,
    quantized,
    random,
    rnn,
    sampling,
    tensor,
    transformer,
)

__all__ = [
    "control",
    "einsum",
    "elementwise",
    "loss",
    "lowbit",
    "nn",
    "norms",
    "qlinear",
    "quantized",
    "random",
    "rnn",
    "sampling",
    "tensor",
    "transformer",
]
