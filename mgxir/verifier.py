"""Checks a program: definitions before uses, module references, arity, and every shape rule.

An instruction read without a result shape gets the one its shape rule gives.
"""

from __future__ import annotations

from mgxir.diagnostics import DiagnosticSink, Location, MgxError, did_you_mean
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.operation import ShapeError
from mgxir.ir.program import Program
from mgxir.ir.registry import all_ops, lookup
from mgxir.ir.shape import Shape, format_shape


class _Where:
    """Turns an instruction into a source location for messages (or a description if unparsed)."""

    def __init__(self, program: Program):
        self.source = getattr(program, "source", None)

    def error(self, ins: Instruction, message: str, column_hint: str | None = None) -> MgxError:
        if self.source is not None and ins.line:
            line = self.source.line(ins.line)
            col = 1
            if column_hint:
                found = line.find(column_hint)
                if found >= 0:
                    col = found + 1 + (len(column_hint) if column_hint == " -> " else 0)
            return self.source.error(message, ins.line, col)
        return MgxError(f"{message} (in {ins.op.text})")

    def location(self, ins: Instruction) -> tuple[Location | None, str | None]:
        if self.source is not None and ins.line:
            return self.source.location(ins.line, 1), self.source.line(ins.line)
        return None, None


def verify(program: Program, sink: DiagnosticSink | None = None, *, runnable: bool = False) -> None:
    """Raises MgxError at the first problem; warnings go to `sink`. `runnable`: the program is about
    to run, so an argument MIGraphX printed as '?' (no definition, a warning otherwise) is an error."""
    sink = sink if sink is not None else DiagnosticSink()
    where = _Where(program)
    _check_module_graph(program, where)
    checker = _Checker(where, sink, runnable)
    main = program.modules.get("main")
    if main is not None:
        checker.module(main, set())
    for m in program.modules.values():
        if id(m) not in checker.done:
            checker.module(m, set())


def _check_module_graph(program: Program, where: _Where) -> None:
    state: dict[int, int] = {}  # 1 = on the current path, 2 = done

    def visit(m: Module) -> None:
        state[id(m)] = 1
        for ins in m:
            for sub in ins.module_args:
                if state.get(id(sub)) == 1:
                    raise where.error(ins, f"module '{sub.name}' refers back to itself through '{m.name}'", sub.name)
                if id(sub) not in state:
                    visit(sub)
        state[id(m)] = 2

    for m in program.modules.values():
        if id(m) not in state:
            visit(m)


class _Checker:
    """Checks modules depth first: a submodule before the instruction that uses it, so that
    its result shapes are known, with the values of the enclosing modules visible to it."""

    def __init__(self, where: _Where, sink: DiagnosticSink, runnable: bool = False):
        self.where = where
        self.sink = sink
        self.runnable = runnable
        self.cache: dict[tuple, Shape] = {}
        self.done: set[int] = set()

    def module(self, module: Module, outer: set[Instruction]) -> None:
        self.done.add(id(module))
        where = self.where
        defined: set[Instruction] = set()
        define = defined.add
        last = module.last
        cache = self.cache
        for ins in module:
            op = ins.op
            defn = op.defn
            args = ins.args
            shapes = []
            unknown_input = False
            for arg in args:
                shape = arg.shape
                shapes.append(shape)
                if shape is None:
                    unknown_input = True
                if arg in defined or arg in outer:
                    continue
                if arg.parent is None and arg.op.defn.name == "?":
                    if self.runnable:
                        raise where.error(
                            ins, "an argument printed as '?' has no definition: the program cannot run", "?"
                        )
                    if not arg.op.values[0]:  # a named one was reported where it was read
                        loc, src = where.location(ins)
                        self.sink.warn(
                            "an argument printed as '?' has no definition; its shape is unknown",
                            loc,
                            src,
                            once_key="?",
                        )
                    continue
                if arg.parent is module:
                    raise where.error(ins, "an argument is used before its definition", "(")
                raise where.error(
                    ins,
                    f"an argument comes from module '{arg.parent.name if arg.parent else '?'}', "
                    f"which does not enclose '{module.name}'",
                    "(",
                )
            if defn.name == "@return" and ins is not last:
                raise where.error(ins, "@return must be the last instruction of its module")
            if ins.module_args:
                inner = outer | defined
                for sub in ins.module_args:
                    if id(sub) not in self.done:
                        self.module(sub, inner)
            elif not unknown_input:
                # the same operation on the same input shapes was checked before (arity included)
                expected = cache.get((op, *shapes))
                if expected is not None:
                    if ins.shape is None:
                        ins.shape = expected
                    elif expected != ins.shape:
                        raise _disagrees(where, ins, expected)
                    define(ins)
                    continue
            if defn.is_opaque:
                if ins.shape is None:
                    problem, misspelt = unknown_operator_problem(defn.name, ins.op.values[0])
                    raise where.error(ins, problem, misspelt)
            else:
                problem = defn.check_arity(len(args), len(ins.module_args))
                if problem:
                    raise where.error(ins, problem, "(")
                if unknown_input:
                    if ins.shape is None:
                        raise where.error(ins, "the result shape cannot be inferred from an unknown argument")
                else:
                    expected = _rule(ins, shapes, cache, where)
                    if ins.shape is None:
                        if expected is None:
                            raise where.error(
                                ins, f"'{defn.name}' has no shape rule here, so it needs an explicit result shape"
                            )
                        ins.shape = expected
                    elif expected is not None and expected != ins.shape:
                        raise _disagrees(where, ins, expected)
            define(ins)


def _disagrees(where: _Where, ins: Instruction, expected: Shape) -> MgxError:
    return where.error(
        ins,
        f"result shape {format_shape(ins.shape)} disagrees with the shape rule of "
        f"'{ins.op.defn.name}': {format_shape(expected)}",
        " -> ",
    )


def _rule(ins: Instruction, shapes: list[Shape], cache: dict[tuple, Shape], where: _Where) -> Shape | None:
    """The shape rule's result for `ins`, remembered by (operation, input shapes) without submodules."""
    op = ins.op
    try:
        shape = op.defn.shape(op, shapes, ins.module_args)
    except ShapeError as e:  # any other exception is a bug in the rule: an internal error
        raise where.error(ins, str(e)) from None
    if not ins.module_args and shape is not None:
        cache[(op, *shapes)] = shape
    return shape


def unknown_operator_problem(name: str, raw_attributes: str) -> tuple[str, str]:
    """Why an operator kept as written (opaque) cannot be checked, naming what is misspelt (an
    attribute the operator does not have, or the operator itself) with the closest known name; and
    the misspelt text, where the caret goes."""
    known = lookup(name)
    if known is not None:
        declared = [a.name for a in known.attributes]
        for attribute in _attribute_names(raw_attributes):
            if attribute not in known.attribute_index and attribute not in known.legacy_attributes:
                return f"'{name}' has no attribute '{attribute}'{did_you_mean(attribute, declared)}", attribute
    hint = did_you_mean(name, all_ops())
    return f"'{name}' is not a known operator, so it needs an explicit result shape{hint}", name


def _attribute_names(raw: str) -> list[str]:
    """The names in `[a=1,b={2, 3},c=[x]]`: each name before an `=` at the outer level."""
    names: list[str] = []
    depth, start = 0, 0
    for i, c in enumerate(raw):
        if c in "[{(":
            depth += 1
            if depth == 1:
                start = i + 1
        elif c in "]})":
            depth -= 1
        elif depth == 1 and c == ",":
            start = i + 1
        elif depth == 1 and c == "=":
            names.append(raw[start:i].strip())
            start = len(raw)
    return [n for n in names if n]
