"""ONNX import: `import_model(path, options, sink)` builds the program MIGraphX's parser builds."""

from mgxir.translate.onnx.importer import (
    ImportOptions,
    import_model,
    options_from_text,
    parse_dynamic_dimension,
    parse_dynamic_dimensions,
)

__all__ = ["ImportOptions", "import_model", "options_from_text", "parse_dynamic_dimension", "parse_dynamic_dimensions"]
