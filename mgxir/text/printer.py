"""Writes programs exactly as MIGraphX prints them, or losslessly (every literal value kept)."""

from __future__ import annotations

import numpy as np

from mgxir.ir.format import format_shape_lossless
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.names import local_names, module_prefix
from mgxir.ir.operation import Operation
from mgxir.ir.program import Program
from mgxir.ir.shape import format_shape
from mgxir.records import Record
from mgxir.text.literals import format_lossless, format_migraphx


class PrintOptions(Record):
    def __init__(
        self,
        lossless: bool = False,
        sidecar_name: str | None = None,
        sidecar: dict[str, np.ndarray] | None = None,
    ):
        self.lossless = lossless
        # with lossless: arrays for the sidecar .npz are collected here, named as `sidecar_name`
        self.sidecar_name = sidecar_name
        self.sidecar: dict[str, np.ndarray] = {} if sidecar is None else sidecar
        self.exact_texts: dict[Operation, str] = {}  # with lossless: each operation's exact text, once


def print_program(program: Program, options: PrintOptions | None = None) -> str:
    options = options or PrintOptions()
    out: list[str] = []
    names: dict[Instruction, str] = {}
    for module in program.print_order():
        out.append(f'module: "{module.name}"')
        _print_module(module, names, out, options)
        out.append("")
    # MIGraphX ends every module with a blank line, and `migraphx-driver` adds one more
    return "\n".join(out) + "\n\n" if out else ""


def instruction_lines(program: Program, options: PrintOptions | None = None) -> dict[Instruction, str]:
    """Each instruction's line as `print_program` prints it (where it is printed first)."""
    options = options or PrintOptions()
    out: list[str] = []
    names: dict[Instruction, str] = {}
    lines: dict[Instruction, str] = {}
    for module in program.print_order():
        start = len(out)
        _print_module(module, names, out, options)
        for ins, line in zip(module, out[start:]):
            lines.setdefault(ins, line)
    return lines


def undefined_name(ins: Instruction) -> str:
    """How an argument defined nowhere prints: its name from the input, or `?` where it has none
    or had a position name (`@4`, `m:@4`), which would mean another value once renumbered."""
    name = ins.op.values[0] if ins.op.defn.name == "?" and ins.op.values else ""
    return "?" if not name or name.startswith("@") or ":@" in name else name


def print_module(module: Module, options: PrintOptions | None = None) -> str:
    out: list[str] = []
    _print_module(module, {}, out, options or PrintOptions())
    return "\n".join(out) + "\n"


def _print_module(module: Module, names: dict[Instruction, str], out: list[str], options: PrintOptions) -> None:
    lossless = options.lossless
    shape_text = format_shape_lossless if lossless else format_shape
    append = out.append
    get = names.get
    exact_texts = options.exact_texts
    for ins, name in zip(module, local_names(module, module_prefix(module, not names))):
        op = ins.op
        kind = op.defn.name
        name = names.setdefault(ins, name)
        if lossless:  # float attributes with all their bits
            text = exact_texts.get(op) or exact_texts.setdefault(op, op.defn.format_exact(op))
        else:
            text = op._text if op._text is not None else op.text
        if kind == "@literal":
            lit = op.values[0]
            if lossless:
                key = name.replace(":", "_")
                sidecar = options.sidecar if options.sidecar_name else None
                text += format_lossless(lit, sidecar, options.sidecar_name, key)
            else:
                text += format_migraphx(lit)
        if ins.args:
            text += "(" + ",".join([get(a) or undefined_name(a) for a in ins.args]) + ")"
        if ins.module_args:
            text += ", [" + ", ".join([m.name for m in ins.module_args]) + "]"
        shape = ins.shape
        if kind != "@return" and shape is not None:  # None: an unknown op written without a shape, unverified
            text += " -> " + (shape.text if shape.text is not None and not lossless else shape_text(shape))
        if ins.target_id:
            text += f", target_id={ins.target_id}"
        if ins.symbols:
            text += " # " + ", ".join(ins.symbols)
        append(f"{name} = {text}")
