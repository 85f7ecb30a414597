"""mgxir: MIGraphX-style graph programs as text that people can read, write, transform and run.

The names below load on first use, so that `import mgxir.ir` or a tool does not pay for the rest;
using any of them registers the operator catalogue (`mgxir.ops.register_all_ops()`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mgxir.diagnostics import DiagnosticSink, Location, MgxError
    from mgxir.ir.dtype import DType
    from mgxir.ir.instruction import Instruction
    from mgxir.ir.literal import Literal
    from mgxir.ir.module import Module
    from mgxir.ir.operation import OpDef, Operation, ShapeError
    from mgxir.ir.program import Program
    from mgxir.ir.registry import lookup, make_op
    from mgxir.ir.shape import DynamicDimension, Shape
    from mgxir.text.parser import parse_program, read_program
    from mgxir.text.printer import PrintOptions, print_program
    from mgxir.verifier import verify

_HOMES = {
    "DiagnosticSink": "mgxir.diagnostics",
    "Location": "mgxir.diagnostics",
    "MgxError": "mgxir.diagnostics",
    "DType": "mgxir.ir.dtype",
    "Instruction": "mgxir.ir.instruction",
    "Literal": "mgxir.ir.literal",
    "Module": "mgxir.ir.module",
    "OpDef": "mgxir.ir.operation",
    "Operation": "mgxir.ir.operation",
    "ShapeError": "mgxir.ir.operation",
    "Program": "mgxir.ir.program",
    "lookup": "mgxir.ir.registry",
    "make_op": "mgxir.ir.registry",
    "DynamicDimension": "mgxir.ir.shape",
    "Shape": "mgxir.ir.shape",
    "parse_program": "mgxir.text.parser",
    "read_program": "mgxir.text.parser",
    "PrintOptions": "mgxir.text.printer",
    "print_program": "mgxir.text.printer",
    "verify": "mgxir.verifier",
}
__all__ = [
    "DType",
    "DiagnosticSink",
    "DynamicDimension",
    "Instruction",
    "Literal",
    "Location",
    "MgxError",
    "Module",
    "OpDef",
    "Operation",
    "PrintOptions",
    "Program",
    "Shape",
    "ShapeError",
    "lookup",
    "make_op",
    "parse_program",
    "print_program",
    "read_program",
    "verify",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'mgxir' has no attribute '{name}'")
    importlib.import_module("mgxir.ops").register_all_ops()
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
