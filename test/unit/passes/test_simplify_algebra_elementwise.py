"""simplify_algebra's elementwise and broadcast rewrites keep results: every case of
test/opt/simplify_algebra_elementwise.mgx and test/opt/simplify_algebra_broadcast.mgx, and programs
built here with scalar and broadcast constants, give the same outputs on the interpreter before and
after the pass, and every rewrite of the family fires somewhere. Also checks `_has_value` against
MIGraphX's tolerance rule."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from lit_cases import lit_cases
from test_pass_differential import rms_ok

from mgxir.interp.interpreter import run_program
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes.base import PassContext
from mgxir.passes.matchers import has_value as _has_value
from mgxir.passes.simplify_algebra import SimplifyAlgebra, broadcast, elementwise
from mgxir.text.parser import parse_program
from mgxir.text.printer import PrintOptions, print_program
from mgxir.verifier import verify

OPT = Path(__file__).resolve().parents[2] / "opt"
LIT_FILES = (OPT / "simplify_algebra_elementwise.mgx", OPT / "simplify_algebra_broadcast.mgx")
FAMILY = [rewrite.__name__ for rewrite in elementwise.REWRITES + broadcast.REWRITES]


def all_lit_cases() -> list[str]:
    return [case for path in LIT_FILES for case in lit_cases(path)]


def parameter_values(program: Program, seed: int) -> dict[str, np.ndarray]:
    """Floats of both signs; integers from 1 so that no integer division is by zero."""
    rng = np.random.default_rng(seed)
    values = {}
    for p in program.main.parameters():
        s = p.shape
        data = rng.uniform(-2, 2, size=s.lens) if s.dtype.is_float else rng.integers(1, 6, size=s.lens)
        values[p.param_name] = np.asarray(data).astype(s.dtype.numpy)
    return values


def check_same_results(program: Program, seed: int) -> Counter[str]:
    """Runs simplify_algebra on a copy; returns the pass statistics."""
    params = parameter_values(program, seed)
    with np.errstate(all="ignore"):
        before = [np.asarray(o) for o in run_program(program, params)]
        transformed = parse_program(print_program(program, PrintOptions(lossless=True)))
        context = PassContext()
        SimplifyAlgebra().apply(transformed, context)
        verify(transformed)
        after = [np.asarray(o) for o in run_program(transformed, params)]
    assert len(before) == len(after)
    for b, a in zip(before, after):
        assert b.shape == a.shape and b.dtype == a.dtype, print_program(transformed)
        assert rms_ok(a, b), print_program(transformed)
    return context.statistics


@pytest.mark.parametrize("index", range(len(all_lit_cases())))
def test_lit_cases_keep_results(index: int) -> None:
    check_same_results(parse_program(all_lit_cases()[index]), index)


def _float(*lens: int) -> Shape:
    return Shape.make(DType.float, lens)


def _constant(main: Module, value: list[float] | float, lens: tuple[int, ...], axis: int | None = None) -> Instruction:
    """A literal broadcast to `lens`: a scalar by multibroadcast, a vector by broadcast on `axis`."""
    if isinstance(value, list):
        literal = main.add_literal(Literal(_float(len(value)), np.array(value, dtype=np.float32)))
        return main.add_instruction("broadcast", [literal], axis=axis, out_lens=lens)
    literal = main.add_literal(Literal(Shape.scalar_of(DType.float), np.array([value], dtype=np.float32)))
    return main.add_instruction("multibroadcast", [literal], out_lens=lens)


def unit_and_zero_chain(main: Module) -> None:
    """((1 * x) / 1 + 0 - 0) * -1 / -1, then 0 - that, then times 0 beside it."""
    lens = (2, 3, 4)
    x = main.add_parameter("x", _float(*lens))
    one, zero, minus_one = _constant(main, 1.0, lens), _constant(main, 0.0, lens), _constant(main, -1.0, lens)
    y = main.add_instruction("mul", [one, x])
    y = main.add_instruction("div", [y, _constant(main, [1.0, 1.0, 1.0], lens, axis=1)])
    y = main.add_instruction("add", [y, zero])
    y = main.add_instruction("sub", [y, zero])
    y = main.add_instruction("mul", [y, minus_one])
    y = main.add_instruction("div", [y, minus_one])
    y = main.add_instruction("sub", [zero, y])
    z = main.add_instruction("mul", [zero, y])
    w = main.add_instruction("div", [zero, main.add_instruction("exp", [x])])
    main.add_return([y, main.add_instruction("add", [z, w])])


def constants_divide_and_subtract(main: Module) -> None:
    """x / broadcast(c) - multibroadcast(d), pow(x, 2) and x / 3 on a scalar literal."""
    lens = (3, 4)
    x = main.add_parameter("x", _float(*lens))
    y = main.add_instruction("div", [x, _constant(main, [2.0, 4.0, -8.0], lens, axis=0)])
    y = main.add_instruction("sub", [y, _constant(main, 0.5, lens)])
    squared = main.add_instruction("pow", [x, _constant(main, 2.0, lens)])
    s = main.add_parameter("s", _float(1))
    three = main.add_literal(Literal(Shape.scalar_of(DType.float), np.array([3.0], dtype=np.float32)))
    main.add_return([main.add_instruction("add", [y, squared]), main.add_instruction("div", [s, three])])


def logs_and_roots(main: Module) -> None:
    """rsqrt of a positive value, log softmax, log(exp) of a broadcast."""
    lens = (2, 5)
    x = main.add_parameter("x", _float(*lens))
    root = main.add_instruction("recip", [main.add_instruction("sqrt", [main.add_instruction("abs", [x])])])
    e = main.add_instruction("exp", [x])
    total = main.add_instruction("reduce_sum", [e], axes=[1])
    softmax = main.add_instruction("div", [e, main.add_instruction("multibroadcast", [total], out_lens=lens)])
    log_softmax = main.add_instruction("log", [softmax])
    v = main.add_parameter("v", _float(5))
    wide = main.add_instruction("broadcast", [v], axis=1, out_lens=lens)
    back = main.add_instruction("log", [main.add_instruction("exp", [wide])])
    main.add_return([root, log_softmax, main.add_instruction("mul", [back, root])])


def quantize_round_trip(main: Module) -> None:
    lens = (2, 6)
    x = main.add_parameter("x", _float(*lens))
    scale = _constant(main, 0.125, lens)
    zero = main.add_literal(Literal(Shape.scalar_of(DType.int8), np.array([0], dtype=np.int8)))
    zero_point = main.add_instruction("multibroadcast", [zero], out_lens=lens)
    q = main.add_instruction("quantizelinear", [x, scale, zero_point])
    main.add_return([main.add_instruction("dequantizelinear", [q, scale, zero_point])])


def inner_broadcasts(main: Module) -> None:
    """Same and different broadcasts under add, mul and where."""
    a = main.add_parameter("a", _float(4))
    b = main.add_parameter("b", _float(4, 1, 1))
    c = main.add_parameter("c", _float(3, 1, 5))
    d = main.add_parameter("d", _float(3, 1, 1))
    lens = (2, 4, 3, 5)
    ab = main.add_instruction(
        "add",
        [
            main.add_instruction("broadcast", [a], axis=1, out_lens=lens),
            main.add_instruction("multibroadcast", [b], out_lens=lens),
        ],
    )
    cd_lens = (3, 6, 5)
    cd = main.add_instruction(
        "mul",
        [
            main.add_instruction("multibroadcast", [c], out_lens=cd_lens),
            main.add_instruction("multibroadcast", [d], out_lens=cd_lens),
        ],
    )
    same = main.add_instruction(
        "sub",
        [
            main.add_instruction("broadcast", [a], axis=0, out_lens=(4, 7)),
            main.add_instruction("broadcast", [main.add_instruction("neg", [a])], axis=0, out_lens=(4, 7)),
        ],
    )
    main.add_return([ab, cd, same])


def mul_add_convolution(main: Module) -> None:
    """broadcast(a) * (z + convolution(x, w)): the product distributes over the convolution too."""
    lens = (1, 2, 4, 4)
    x = main.add_parameter("x", _float(*lens))
    z = main.add_parameter("z", _float(*lens))
    weights = np.array([0.5, -1.0, 2.0, 0.25], dtype=np.float32)
    w = main.add_literal(Literal(_float(2, 2, 1, 1), weights))
    sum_ = main.add_instruction("add", [z, main.add_instruction("convolution", [x, w])])
    main.add_return([main.add_instruction("mul", [sum_, _constant(main, [2.0, -3.0], lens, axis=1)])])


BUILT: dict[str, Callable[[Module], None]] = {
    f.__name__: f
    for f in (
        unit_and_zero_chain,
        constants_divide_and_subtract,
        logs_and_roots,
        quantize_round_trip,
        inner_broadcasts,
        mul_add_convolution,
    )
}


def built_program(name: str) -> Program:
    program = Program()
    BUILT[name](program.create_module("main"))
    verify(program)
    return program


@pytest.mark.parametrize("name", sorted(BUILT))
def test_built_programs_keep_results(name: str) -> None:
    check_same_results(built_program(name), 3)


def random_broadcasts(seed: int) -> Program:
    """A pointwise op on one to three broadcasts (broadcast on an axis, multibroadcast from a lower
    rank, or a multibroadcast of a multibroadcast) of random parameters, to one output shape."""
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 5))
    out = tuple(int(rng.integers(1, 4)) for _ in range(ndim))
    program = Program()
    main = program.create_module("main")
    count = int(rng.integers(1, 4))
    broadcasts = []
    for k in range(count):
        kind = int(rng.integers(0, 3))
        if kind == 1:
            axis = int(rng.integers(0, ndim))
            lens = out[axis : axis + int(rng.integers(1, ndim - axis + 1))]
            p = main.add_parameter(f"p{k}", _float(*lens))
            broadcasts.append(main.add_instruction("broadcast", [p], axis=axis, out_lens=out))
            continue
        rank = int(rng.integers(1, ndim + 1))
        lens = tuple(out[ndim - rank + i] if rng.random() < 0.5 else 1 for i in range(rank))
        if kind == 2:
            narrower = tuple(n if rng.random() < 0.5 else 1 for n in lens)
            p = main.add_parameter(f"p{k}", _float(*narrower))
            p = main.add_instruction("multibroadcast", [p], out_lens=lens)
        else:
            p = main.add_parameter(f"p{k}", _float(*lens))
        broadcasts.append(main.add_instruction("multibroadcast", [p], out_lens=out))
    main.add_return([main.add_instruction(("exp", "add", "clip")[count - 1], broadcasts)])
    return program


@pytest.mark.parametrize("seed", range(0, 300, 30))
def test_random_inner_broadcasts_keep_results(seed: int) -> None:
    for offset in range(30):
        check_same_results(random_broadcasts(seed + offset), seed + offset)


def test_every_rewrite_fires() -> None:
    fired: Counter[str] = Counter()
    for index, case in enumerate(all_lit_cases()):
        fired += check_same_results(parse_program(case), index)
    for name in BUILT:
        fired += check_same_results(built_program(name), 5)
    missing = [name for name in FAMILY if fired[f"{name} applied"] == 0]
    assert not missing, missing


def _literal(values: list[float], dtype: DType) -> Instruction:
    module = Module("m")
    data = np.array(values).astype(dtype.numpy)
    return module.add_literal(Literal(Shape.make(dtype, (len(values),)), data))


@pytest.mark.parametrize(
    ("values", "dtype", "value", "tolerances", "expected"),
    [
        ([1.0, 1.0], DType.float, 1.0, (10, 10), True),
        ([1.0, 1.0 + 2e-6], DType.float, 1.0, (10, 10), True),
        ([1.0, 1.0 + 3e-6], DType.float, 1.0, (10, 10), False),
        ([1.0, 2.0], DType.float, 1.0, (10, 10), False),
        ([0.0, -0.0], DType.float, 0.0, (0, 0), True),
        ([0.0, 1e-30], DType.float, 0.0, (0, 0), False),
        ([2.0, 2.0], DType.float, 2.0, (0, 1), True),
        ([2.0, 2.0000002], DType.float, 2.0, (0, 1), False),
        ([1.0, 1.0099], DType.half, 1.0, (10, 10), True),
        ([1.0, 1.03], DType.half, 1.0, (10, 10), False),
        ([-1, -1], DType.int32, -1.0, (10, 10), True),
        ([255], DType.uint8, -1.0, (10, 10), True),
        ([1, 2], DType.int32, 1.0, (10, 10), False),
        ([float("nan")], DType.float, 0.0, (0, 0), False),
        ([1.0], DType.bf16, 1.0, (10, 10), True),
    ],
)
def test_has_value_tolerance(
    values: list[float], dtype: DType, value: float, tolerances: tuple[int, int], expected: bool
) -> None:
    assert _has_value(_literal(values, dtype), value, *tolerances) is expected
