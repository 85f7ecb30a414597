"""A plain loop over a module's instructions, each evaluated by its operator's reference compute.

Each module is compiled once into a list of steps `(instruction, kernel, arguments)`; running it is
one dictionary store per instruction. Values are numpy arrays (views where the op is a view) or
tuples of them. Submodules read their parent's values directly (the `if` branches refer to `main`'s
instructions by name), so all modules of one run share one environment.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from mgxir.diagnostics import DiagnosticSink, MgxError, available_memory
from mgxir.ir.dtype import DType
from mgxir.ir.operation import ComputeError, RuntimeValue, ShapeError
from mgxir.ir.shape import Shape

if TYPE_CHECKING:
    from mgxir.ir.instruction import Instruction
    from mgxir.ir.module import Module
    from mgxir.ir.program import Program

Step = tuple["Instruction", Callable[..., RuntimeValue], tuple["Instruction", ...]]
Kernel = Callable[..., RuntimeValue]
# (instruction of main, its reference kernel) -> the kernel to run instead (a target's, or the same)
Substitute = Callable[["Instruction", Kernel], Kernel]


def generated_literal(shape: Shape, seed: int) -> np.ndarray:
    """Deterministic stand-in data for an elided literal: small values that are valid indices too."""
    rng = np.random.default_rng(seed)
    dtype = shape.dtype.numpy
    if shape.dtype.is_float:
        data = rng.uniform(-1.0, 1.0, size=shape.lens).astype(np.float32)
    elif shape.dtype.name == "bool":
        data = rng.integers(0, 2, size=shape.lens).astype(bool)
    else:
        data = rng.integers(0, 2, size=shape.lens)
    return np.asarray(data).astype(dtype)


class Interpreter:
    """Runs a program's modules on numpy. `run(params)` evaluates `main` (or another module).

    `substitute` is where a target takes over: it is given each instruction of `main` (literals
    and parameters aside) with its reference kernel and returns the kernel to run, so the
    instructions it has no kernel for run here (mgxir.targets.host)."""

    def __init__(self, program: Program, sink: DiagnosticSink | None = None, substitute: Substitute | None = None):
        self.program = program
        self.sink = sink or DiagnosticSink()
        self.substitute = substitute
        self._plans: dict[int, tuple[list[Step], list[Instruction], list[Instruction]]] = {}
        self.env: dict[Instruction, RuntimeValue] = {}
        self.generated: set[Instruction] = set()

    # -- compilation ------------------------------------------------------------------------

    def _plan(self, module: Module) -> tuple[list[Step], list[Instruction], list[Instruction]]:
        plan = self._plans.get(id(module))
        if plan is not None:
            return plan
        steps: list[Step] = []
        params: list[Instruction] = []
        outputs: list[Instruction] = []
        last: Instruction | None = None
        for index, ins in enumerate(module):
            if ins.is_param:
                params.append(ins)
                continue
            if ins.is_return:
                outputs = list(ins.args)
                break
            last = ins
            if ins.is_literal:
                steps.append((ins, _constant(self._literal_value(module, ins, index)), ()))
                continue
            defn = ins.op.defn
            if defn.is_opaque:
                message = f"no reference implementation for '{defn.name}' (unknown operator)"
                steps.append((ins, _fails(ins, message), ()))
                continue
            if not defn.has_compute:
                steps.append((ins, _fails(ins, f"no reference implementation for '{defn.name}'"), ()))
                continue
            kernel = defn.kernel(ins.op, [a.shape for a in ins.args], ins.module_args, self.run_module)
            steps.append((ins, kernel, tuple(ins.args)))
        else:
            if last is not None:
                outputs = [last]
        if self.substitute is not None and module is self.program.main:
            substitute = self.substitute
            steps = [(ins, kernel if ins.is_literal else substitute(ins, kernel), args) for ins, kernel, args in steps]
        plan = (steps, params, outputs)
        self._plans[id(module)] = plan
        return plan

    def _literal_value(self, module: Module, ins: Instruction, index: int) -> np.ndarray:
        literal = ins.literal
        if literal.data is not None:
            if literal.shape.scalar and literal.data.size:
                # stride 0 as in its shape, so ops that tell a scalar by its strides (gather) see one
                return np.broadcast_to(literal.data.reshape(-1)[0], literal.data.shape)
            return literal.data
        self.sink.warn(
            f"literal {_where(ins)} in module '{module.name}' was printed elided ({{ ... }}); "
            "using deterministic generated values"
        )
        self.generated.add(ins)
        return generated_literal(literal.shape, index)

    # -- evaluation -------------------------------------------------------------------------

    def run(self, params: Mapping[str, np.ndarray], module: Module | None = None) -> list[RuntimeValue]:
        """Evaluates `module` (default `main`) with parameters by name; returns its outputs."""
        module = module or self.program.main
        _, param_instructions, _ = self._plan(module)
        env = self.env
        for p in param_instructions:
            if p.param_name not in params:
                raise MgxError(f"no value for parameter '{p.param_name}' of module '{module.name}'")
            env[p] = params[p.param_name]
        return self._execute(module)

    def run_module(self, module: Module, args: list[RuntimeValue]) -> list[RuntimeValue]:
        """Evaluates a submodule whose parameters, sorted by name, take `args` (pointwise and
        fused_reduce bodies); `if` branches have no parameters and read their parent's values."""
        _, param_instructions, _ = self._plan(module)
        if args:
            by_name = sorted(param_instructions, key=lambda p: p.param_name)
            if len(by_name) != len(args):
                raise ComputeError(f"module '{module.name}' has {len(by_name)} parameters but gets {len(args)} values")
            for p, value in zip(by_name, args):
                self.env[p] = value
        return self._execute(module)

    def _execute(self, module: Module) -> list[RuntimeValue]:
        steps, _, outputs = self._plan(module)
        env = self.env
        ins = None
        try:
            for ins, kernel, args in steps:
                n = len(args)
                if n == 1:
                    env[ins] = kernel(env[args[0]])
                elif n == 2:
                    env[ins] = kernel(env[args[0]], env[args[1]])
                else:
                    env[ins] = kernel(*[env[a] for a in args])
        except (ComputeError, ShapeError) as e:
            raise MgxError(f"{_where(ins)}: {e}{self._generated_note(ins)}") from None
        except MgxError:
            raise
        except (ValueError, TypeError, IndexError, FloatingPointError, ZeroDivisionError) as e:
            name = ins.op.name if ins is not None else "?"
            raise MgxError(f"{_where(ins)}: {name} failed: {e}{self._generated_note(ins)}") from None
        return [env[o] for o in outputs]

    def _generated_note(self, ins: Instruction | None) -> str:
        """Where a failing instruction reads an elided literal's stand-in values, says so: those
        values are not the program's (an index literal folded by a pass and printed `{ ... }`)."""
        if ins is None or not self.generated:
            return ""
        seen: set[Instruction] = set()
        stack = list(ins.args)
        while stack:
            cur = stack.pop()
            if cur in seen:
                continue
            seen.add(cur)
            if cur in self.generated:
                return (
                    f" (it reads literal {_where(cur)}, printed elided ({{ ... }}) and run on generated values; "
                    "print the program with --lossless to keep literal values)"
                )
            stack.extend(cur.args)
        return ""


def _where(ins: Instruction | None) -> str:
    if ins is None:
        return "?"
    name = ins.symbols[0] if getattr(ins, "symbols", ()) else ins.op.name
    return f"'{name}' (line {ins.line})" if ins.line else f"'{name}'"


def _constant(value: np.ndarray) -> Callable[[], np.ndarray]:
    def literal() -> np.ndarray:
        return value

    return literal


def _fails(ins: Instruction, message: str) -> Callable[..., RuntimeValue]:
    def missing(*_: np.ndarray) -> RuntimeValue:
        raise ComputeError(message)

    return missing


def memory_limit() -> tuple[int, str]:
    """The bytes the interpreter may still allocate, and the limit that sets it (physical memory
    less what the process holds, RLIMIT_AS, the cgroup's limit: diagnostics.available_memory)."""
    return available_memory()


def check_memory(program: Program, limit: int | None = None) -> None:
    """Refuses, before anything is allocated, a program whose values would not fit in memory:
    one value alone, or all of them together (the interpreter keeps every value until the end;
    views share their input's memory; literals are already in memory) with a float64 temporary
    as large as the largest value, which numpy's kernels may make."""
    available, why = memory_limit() if limit is None else (limit, "the given limit")
    total = largest = 0
    for module in program:
        for ins in module:
            shape = ins.shape
            if shape is None or shape.is_dynamic or shape.dtype is DType.tuple:
                continue
            size = math.prod(shape.lens) * max(shape.dtype.itemsize, 1)
            if size > available:
                raise MgxError(
                    f"{_where(ins)} in module '{module.name}' needs {size} bytes for {shape.dtype.type_name} "
                    f"{{{', '.join(map(str, shape.lens))}}}, more than the {available} bytes this process can still "
                    f"allocate (under {why})"
                )
            if ins.op.defn.is_view or ins.op.name == "@literal":
                continue
            total += size
            largest = max(largest, math.prod(shape.lens) * 8)
    if total + largest > available:
        raise MgxError(
            f"the program's values need {total} bytes together, and {largest} more for a float64 temporary, "
            f"more than the {available} bytes this process can still allocate (under {why})"
        )


def run_program(
    program: Program, params: Mapping[str, np.ndarray], sink: DiagnosticSink | None = None
) -> list[RuntimeValue]:
    return Interpreter(program, sink).run(params)
