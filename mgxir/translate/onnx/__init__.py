"""ONNX import: `import_model(path, options, sink)` builds the program MIGraphX's parser builds."""

from mgxir.translate.onnx.importer import (
    ImportOptions,
    options_from_text,
    parse_dynamic_dimension,
    parse_dynamic_dimensions,
)
from mgxir.translate.onnx.model import import_model, import_model_proto

__all__ = [
    "ImportOptions",
    "import_model",
    "import_model_proto",
    "options_from_text",
    "parse_dynamic_dimension",
    "parse_dynamic_dimensions",
]
