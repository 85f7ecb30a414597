"""MLIR translation: mgxir programs to upstream MLIR dialects (text or bytecode) and back."""
