"""mgxir: MIGraphX-style graph programs as text that people can read, write, transform and run."""

from mgxir.diagnostics import DiagnosticSink, Location, MgxError
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.program import Program
from mgxir.ir.shape import DynamicDimension, Shape
from mgxir.ops.definition import OpDef, Operation, ShapeError
from mgxir.ops.registry import lookup, make_op
from mgxir.text.parser import parse_program, read_program
from mgxir.text.printer import PrintOptions, print_program
from mgxir.verifier import verify

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
