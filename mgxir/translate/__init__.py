"""Translations between mgxir programs and other formats (ONNX import, ...)."""
