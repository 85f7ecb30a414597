"""The importer's entry: a model file in, the program MIGraphX's ONNX parser builds out."""

from __future__ import annotations

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.program import Program
from mgxir.ops import register_all_ops
from mgxir.translate.onnx import parsers  # noqa: F401  (importing the parsers fills their table)
from mgxir.translate.onnx.importer import ImportOptions, OnnxParser, ParseError, load_model


def import_model(path: str, options: ImportOptions | None = None, sink: DiagnosticSink | None = None) -> Program:
    """The program MIGraphX's ONNX parser builds for the model at `path`."""
    return import_model_proto(load_model(path), path, options, sink)


def import_model_proto(
    model: object, path: str, options: ImportOptions | None = None, sink: DiagnosticSink | None = None
) -> Program:
    """`import_model` of a ModelProto in memory; `path` names it in messages and locates external data."""
    register_all_ops()
    options = options or ImportOptions()
    sink = sink or DiagnosticSink()
    parser = OnnxParser(options, path, sink)
    try:
        return parser.parse_model(model)
    except ParseError as e:
        raise MgxError(f"{path}: " + " ".join(str(e).split())) from None
    except RecursionError:
        raise MgxError(f"{path}: the model nests its graphs too deeply") from None
