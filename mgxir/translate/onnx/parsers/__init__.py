"""The ONNX operator parsers, one module per family; importing this package fills the table."""

from mgxir.translate.onnx.parsers import control, elementwise, nn, quantized, rnn, sampling, tensor

__all__ = ["control", "elementwise", "nn", "quantized", "rnn", "sampling", "tensor"]
