"""A candidate of a reduction: a program with the values of its `main` parameters, the edits the
delta passes share (cutting a value into a new parameter, tidying), and the size they shrink."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.module import compute_shape

if TYPE_CHECKING:
    from mgxir.ir.instruction import Instruction
    from mgxir.ir.module import Module
    from mgxir.ir.program import Program

CUT_PREFIX = "cut"  # the name of a parameter that stands for a value cut out of the program


class Skip(Exception):
    """A delta pass cannot make this candidate (the edit would give a program with no meaning)."""


class Candidate:
    """A program and its inputs (by parameter name of `main`)."""

    def __init__(self, program: Program, inputs: dict[str, np.ndarray]):
        self.program = program
        self.inputs = inputs
        self._values: list | None = None
        self.origin: tuple[int, int] | None = None  # (chunk size, first entity) of the delta pass that made it

    def copy(self) -> Candidate:
        return Candidate(self.program.clone(), dict(self.inputs))

    def size(self) -> tuple[int, int, int, int]:
        """What the delta passes shrink, most important first: instructions (outside parameters and
        returns, in every module main reaches), elements of the inputs and literals, distinct
        literal values, attributes set to other values than their defaults."""
        instructions = elements = distinct = attributes = 0
        for module in self.program.reachable_modules():
            for ins in module:
                if ins.is_param or ins.is_return:
                    continue
                instructions += 1
                if ins.is_literal:
                    data = ins.literal.data
                    elements += ins.literal.elements
                    distinct += 0 if data is None else len(np.unique(data.reshape(-1)))
                else:
                    attributes += non_default_attributes(ins)
        elements += sum(int(np.asarray(v).size) for v in self.inputs.values())
        return instructions, elements, distinct, attributes

    def values(self) -> list:
        """The value of each instruction of `main` (by position) on the reference interpreter."""
        if self._values is None:
            from mgxir.interp.interpreter import Interpreter

            interpreter = Interpreter(self.program, DiagnosticSink())
            try:
                with np.errstate(all="ignore"):
                    interpreter.run(self.inputs)
            except MgxError:  # a program the interpreter cannot run (a crash's): cut values are zeros
                pass
            self._values = [interpreter.env.get(ins) for ins in self.program.main]
        return self._values


def non_default_attributes(ins: Instruction) -> int:
    return sum(1 for a, v in zip(ins.op.defn.attributes, ins.op.values) if a.default is not None and v != a.default)


def fresh_name(module: Module, prefix: str) -> str:
    taken = set(module.parameter_names())
    n = 0
    while f"{prefix}{n}" in taken:
        n += 1
    return f"{prefix}{n}"


def cut(candidate: Candidate, ins: Instruction, value: object) -> Instruction:
    """Replaces `ins` of main by a new parameter whose input is `value` (the value `ins` had in the
    run of the program this candidate was made from, zeros where it did not run) and removes it."""
    if ins.shape.is_tuple or ins.shape.is_dynamic:
        raise Skip
    if not isinstance(value, np.ndarray):
        value = np.zeros(ins.shape.lens, ins.shape.dtype.numpy)
    module = candidate.program.main
    name = fresh_name(module, CUT_PREFIX)
    param = module.add_parameter(name, ins.shape.as_standard())
    candidate.inputs[name] = np.ascontiguousarray(value)
    ins.replace_all_uses_with(param)
    module.remove(ins)
    return param


def refresh_shapes(module: Module) -> None:
    """Computes every instruction's shape again from its arguments' (after a parameter's shape, an
    attribute or a replaced value changed them); raises Skip where a shape rule refuses."""
    for ins in module:
        if ins.is_param or ins.is_literal:
            continue
        try:
            shape = compute_shape(ins.op, ins.args, ins.module_args)
        except Exception:  # a shape rule's own refusal, of whatever class it raises
            raise Skip from None
        if shape != ins.shape:
            ins.shape = shape


def tidy(candidate: Candidate) -> None:
    """Removes what nothing uses any more: dead instructions in every module, modules nothing
    reaches, and parameters of main (with their inputs) nothing reads."""
    from mgxir.passes.dead_code_elimination import eliminate_dead_code, remove_unused_modules

    program = candidate.program
    for module in list(program.modules.values()):
        if module.name in program.modules:
            eliminate_dead_code(module)
    remove_unused_modules(program)
    main = program.main
    for param in main.parameters():
        if not param.users and len(main) > 1:
            main.remove(param)
    names = set(main.parameter_names())
    candidate.inputs = {k: v for k, v in candidate.inputs.items() if k in names}


def ensure_return(program: Program) -> None:
    """Gives main an explicit `@return` of its last instruction (the value it returns anyway), so
    that cutting the last instruction keeps the program's outputs where they are."""
    main = program.main
    last = main.last
    if last is not None and not last.is_return:
        main.add_return([last])


def by_position(program: Program) -> list[Instruction]:
    return list(program.main)


def instruction_count(program: Program) -> int:
    return sum(1 for m in program.reachable_modules() for i in m if not (i.is_param or i.is_return))


__all__ = [
    "CUT_PREFIX",
    "Candidate",
    "Skip",
    "by_position",
    "cut",
    "ensure_return",
    "fresh_name",
    "instruction_count",
    "refresh_shapes",
    "tidy",
]
