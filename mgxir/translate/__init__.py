"""Translations between mgxir programs and other formats: MLIR, SPIR-V, ONNX, MIGraphX's .mxr/.json
files, Python reproducers, Graphviz."""
