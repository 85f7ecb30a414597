"""Differential tests: every pass and named pipeline keeps what a program computes.

Random programs (chains and DAGs of pointwise, layout and constant operations) and the golden
MIGraphX programs run on the reference interpreter before and after each pass; the outputs must
agree by MIGraphX's rms rule. CI runs a fixed small budget; `MGXIR_DIFFERENTIAL_PROGRAMS=2000 pytest
test/unit/test_pass_differential.py` is the long run.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from mgxir.diagnostics import MgxError
from mgxir.interp.interpreter import generated_literal, run_program
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes.base import PassContext
from mgxir.passes.registry import PASSES, PIPELINES, parse_pipeline
from mgxir.text.parser import parse_program
from mgxir.text.printer import PrintOptions, print_program
from mgxir.verifier import verify

RANDOM_PROGRAMS = int(os.environ.get("MGXIR_DIFFERENTIAL_PROGRAMS", "12"))
EXAMPLES = Path(__file__).resolve().parents[3] / "shared" / "reference" / "migraphx-examples"
# target lowerings leave code the interpreter cannot run (test_gpu_target runs it on the GPU)
PIPELINE_NAMES = [
    name for name in sorted(PASSES) + sorted(PIPELINES) if not any(p.lowers_to_target for p in parse_pipeline(name))
]
TOLERANCE = 1e-3

_LAYOUTS: dict[int, list[tuple[int, ...]]] = {24: [(2, 3, 4), (6, 4), (4, 6), (24,), (2, 12), (1, 24), (2, 3, 4, 1)]}
_UNARY = ("neg", "tanh", "sigmoid", "relu", "abs", "identity", "contiguous")
_BINARY = ("add", "mul", "sub", "max", "min")


def rms_ok(result: np.ndarray, reference: np.ndarray) -> bool:
    """MIGraphX's verify rule on two arrays of the same shape."""
    t = np.asarray(result, dtype=np.float64).ravel()
    r = np.asarray(reference, dtype=np.float64).ravel()
    if t.shape != r.shape:
        return False
    if t.size == 0:
        return True
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(r))):
        return bool(np.array_equal(t, r, equal_nan=True))
    scale = max(float(np.max(np.abs(t))), float(np.max(np.abs(r))), np.finfo(np.float64).tiny)
    return math.sqrt(float(np.sum((t - r) ** 2))) / (math.sqrt(t.size) * scale) <= TOLERANCE


def random_program(seed: int, size: int = 40) -> Program:
    """A random program over one element count in several layouts, with literals that fold."""
    rng = np.random.default_rng(seed)
    program = Program()
    main = program.create_module("main")
    float_shape = Shape.make(DType.float, (2, 3, 4))
    values: list[Instruction] = [main.add_parameter("x", float_shape), main.add_parameter("y", float_shape)]

    def literal(lens: tuple[int, ...]) -> Instruction:
        data = rng.uniform(-1, 1, size=lens).astype(np.float32)
        return main.add_literal(Literal(Shape.make(DType.float, lens), data))

    def same_lens(lens: tuple[int, ...]) -> list[Instruction]:
        return [v for v in values if tuple(v.shape.lens) == lens]

    for _ in range(size):
        a = values[int(rng.integers(len(values)))]
        lens = tuple(a.shape.lens)
        choice = rng.random()
        if choice < 0.3:
            partners = same_lens(lens)
            b = partners[int(rng.integers(len(partners)))] if rng.random() < 0.7 else literal(lens)
            new = main.add_instruction(str(rng.choice(_BINARY)), [a, b])
        elif choice < 0.45:
            new = main.add_instruction(str(rng.choice(_UNARY)), [a])
        elif choice < 0.55:
            permutation = tuple(int(p) for p in rng.permutation(len(lens)))
            new = main.add_instruction("transpose", [a], permutation=permutation)
        elif choice < 0.65:
            dims = _LAYOUTS[24][int(rng.integers(len(_LAYOUTS[24])))]
            source = a if a.shape.standard else main.add_instruction("contiguous", [a])
            new = main.add_instruction("reshape", [source], dims=dims)
        elif choice < 0.75:
            scalar = literal((1,))
            wide = main.add_instruction("multibroadcast", [scalar], out_lens=lens)
            new = main.add_instruction(str(rng.choice(("add", "mul"))), [a, wide] if rng.random() < 0.5 else [wide, a])
        elif choice < 0.82:
            axis = int(rng.integers(len(lens)))
            row = literal((lens[axis],))
            wide = main.add_instruction("broadcast", [row], axis=axis, out_lens=lens)
            new = main.add_instruction("add", [a, wide])
        elif choice < 0.9:
            there = main.add_instruction("convert", [a], target_type=DType.double)
            new = main.add_instruction("convert", [there], target_type=DType.float)
        else:
            k = literal(lens)
            folded = main.add_instruction("mul", [k, literal(lens)])
            new = main.add_instruction("add", [a, folded])
        values.append(new)
    outputs = [values[-1], *(values[int(i)] for i in rng.integers(2, len(values), size=2))]
    main.add_return(list(dict.fromkeys(outputs)))
    return program


def parameter_values(program: Program, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = {}
    for p in program.main.parameters():
        s = p.shape
        if s.dtype.is_float:
            data = rng.uniform(-1, 1, size=s.lens)
        else:
            data = rng.integers(0, 2, size=s.lens)
        values[p.param_name] = np.asarray(data).astype(s.dtype.numpy)
    return values


def copy_of(program: Program) -> Program:
    return parse_program(print_program(program, PrintOptions(lossless=True)))


def _as_arrays(outputs: list) -> list[np.ndarray]:
    flat: list[np.ndarray] = []
    for o in outputs:
        flat.extend(o if isinstance(o, tuple) else [o])
    return [np.asarray(o) for o in flat]


def fill_elided_literals(program: Program) -> None:
    """Elided literals get the interpreter's stand-in data now, since that data depends on the
    literal's position, which passes may change."""
    for module in program.modules.values():
        for index, ins in enumerate(module):
            if ins.is_literal and ins.literal.elided:
                ins.literal.data = generated_literal(ins.literal.shape, index)


def check_pipeline(program: Program, pipeline: str, seed: int) -> None:
    fill_elided_literals(program)
    params = parameter_values(program, seed)
    before = _as_arrays(run_program(copy_of(program), params))
    transformed = copy_of(program)
    for p in parse_pipeline(pipeline):
        p.apply(transformed, PassContext())
    verify(transformed)
    after = _as_arrays(run_program(transformed, params))
    assert len(before) == len(after), f"{pipeline}: {len(before)} outputs before, {len(after)} after"
    for i, (b, a) in enumerate(zip(before, after)):
        assert b.shape == a.shape, f"{pipeline}: output {i} shape {b.shape} became {a.shape}"
        assert rms_ok(a, b), f"{pipeline}: output {i} differs\n{print_program(transformed)}"


@pytest.mark.parametrize("pipeline", PIPELINE_NAMES)
@pytest.mark.parametrize("seed", range(RANDOM_PROGRAMS))
def test_random_programs(pipeline: str, seed: int) -> None:
    check_pipeline(random_program(seed), pipeline, seed)


def _runnable_examples() -> list[Path]:
    if not EXAMPLES.is_dir():
        return []
    found = []
    for path in sorted(EXAMPLES.glob("*.txt")):
        if path.name.endswith(".cpp.txt") or "compiled" in path.name:
            continue
        try:
            program = parse_program(path.read_text(), str(path), base_dir=path.parent)
            run_program(program, parameter_values(program, 0))
        except (MgxError, ValueError, KeyError):
            continue
        found.append(path)
    return found


@pytest.mark.parametrize("pipeline", PIPELINE_NAMES)
@pytest.mark.parametrize("path", _runnable_examples(), ids=lambda p: p.name)
def test_golden_examples(pipeline: str, path: Path) -> None:
    program = parse_program(path.read_text(), str(path), base_dir=path.parent)
    check_pipeline(program, pipeline, 0)


def test_rms_rule() -> None:
    assert rms_ok(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    assert not rms_ok(np.array([1.0, 2.1]), np.array([1.0, 2.0]))
