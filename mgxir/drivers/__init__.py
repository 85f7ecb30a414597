"""The drivers behind the tools (as MLIR's MlirOptMain): everything but option declarations."""
