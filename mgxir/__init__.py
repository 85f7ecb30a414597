"""mgxir: MIGraphX-style graph programs as text that people can read, write, transform and run.

    >>> import mgxir
    >>> p = mgxir.parse("x = @param:x -> float_type, {2}, {1}\\n@1 = relu(x)\\n")
    >>> mgxir.run(p, {"x": [-1, 2]})
    [array([0., 2.], dtype=float32)]

`parse`/`load`, `print`/`to_text`, `verify`, `run_passes`, `compile`, `run` and `save` are the
tools' work as functions (`mgxir.drivers.api`, docs/api.md); the IR's classes are here too. The
names below load on first use, so that `import mgxir` or a tool does not pay for the rest; using
any of them registers the operator catalogue (`mgxir.ops.register_all_ops()`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mgxir.diagnostics import DiagnosticSink, Location, MgxError
    from mgxir.drivers.api import Compiled, compile, load, parse, run, run_passes, save, to_text, verify
    from mgxir.drivers.api import print_text as print
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

# name -> "module" (the same name there) or "module:name"
_HOMES = {
    "parse": "mgxir.drivers.api",
    "load": "mgxir.drivers.api",
    "print": "mgxir.drivers.api:print_text",
    "to_text": "mgxir.drivers.api",
    "verify": "mgxir.drivers.api",
    "run_passes": "mgxir.drivers.api",
    "compile": "mgxir.drivers.api",
    "Compiled": "mgxir.drivers.api",
    "run": "mgxir.drivers.api",
    "save": "mgxir.drivers.api",
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
}
__all__ = [
    "Compiled",
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
    "compile",
    "load",
    "parse",
    "print",
    "run",
    "run_passes",
    "save",
    "to_text",
    "verify",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'mgxir' has no attribute '{name}'")
    importlib.import_module("mgxir.ops").register_all_ops()
    module, _, attribute = home.partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value
    return value
