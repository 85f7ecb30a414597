"""The ONNX operator parsers, one module per family; importing this package fills the table."""

from mgxir.translate.onnx.parsers import (
    control,
    elementwise,
    loss,
    nn,
    norms,
    quantized,
    random,
    rnn,
    sampling,
    tensor,
    transformer,
)

__all__ = [
    "control",
    "elementwise",
    "loss",
    "nn",
    "norms",
    "quantized",
    "random",
    "rnn",
    "sampling",
    "tensor",
    "transformer",
]
