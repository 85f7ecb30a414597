"""The one table of ONNX operator parsers: ONNX op type -> function building MIGraphX instructions.

A parser takes the parser state, the node's information and its argument instructions, and returns
the instruction (or list of instructions) standing for the node's outputs, as MIGraphX's
`src/onnx/parse_*.cpp` parsers do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mgxir.ir.instruction import Instruction
    from mgxir.translate.onnx.importer import NodeInfo, OnnxParser

ParseResult = "Instruction | list[Instruction]"
Parser = Callable[["OnnxParser", "NodeInfo", list["Instruction"]], Any]

PARSERS: dict[str, Parser] = {}


def onnx_op(*op_types: str) -> Callable[[Parser], Parser]:
    """Registers a parser for ONNX op types (each type at most once)."""

    def register(fn: Parser) -> Parser:
        for op_type in op_types:
            if op_type in PARSERS:
                raise ValueError(f"ONNX operator '{op_type}' has two parsers")
            PARSERS[op_type] = fn
        return fn

    return register


def onnx_ops(table: dict[str, str], make: Callable[[str], Parser]) -> None:
    """Registers `make(migraphx_name)` for each ONNX op type of a name table."""
    for op_type, name in table.items():
        onnx_op(op_type)(make(name))


def supported_operators() -> Sequence[str]:
    return sorted(PARSERS)
