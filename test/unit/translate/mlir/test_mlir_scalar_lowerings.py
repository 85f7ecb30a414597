"""Every scalar lowering (the body of the `linalg.generic` a pointwise op becomes) computes what the
reference interpreter computes: one program per element type applies each lowerable pointwise op,
IREE compiles it for the CPU (local-task) and runs it, and each output is compared with the
interpreter's."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("iree.compiler")
pytest.importorskip("iree.runtime")

from mgxir import DiagnosticSink, DType, MgxError, Program, Shape
from mgxir.interp import Interpreter
from mgxir.ir.operation import ShapeError
from mgxir.ir.registry import all_ops
from mgxir.ops.scalar import numpy_float_type
from mgxir.targets.iree import IreeOptions, run_on_iree
from mgxir.translate.mlir.api import mlir_text
from mgxir.translate.mlir.math_functions import F64_UNLINKED_ON_CPU
from mgxir.translate.mlir.registry import scalar_rule

LENS = (2, 8)
# inputs where every op is defined (logarithms, roots, inverse trigonometry, division) or where a
# branch of the lowering shows (negatives for abs, relu, sign, mod; zero for not and logic);
# positive integer divisors and exponents (the interpreter refuses negative integer powers)
INPUTS: dict[DType, tuple[np.ndarray, np.ndarray]] = {
    DType.float: (
        np.linspace(-0.9, 0.9, 16, dtype=np.float32).reshape(LENS),
        np.linspace(0.1, 0.9, 16, dtype=np.float32).reshape(LENS),
    ),
    DType.int32: (
        np.arange(-8, 8, dtype=np.int32).reshape(LENS),
        np.tile(np.array([1, 2, 3, 5], dtype=np.int32), 4).reshape(LENS),
    ),
    DType.uint8: (
        np.arange(0, 16, dtype=np.uint8).reshape(LENS),
        np.tile(np.array([1, 2, 3, 5], dtype=np.uint8), 4).reshape(LENS),
    ),
}
# ops whose results differ by design or need attributes with no default
NOT_COMPARED = {
    "convert": "needs target_type",
    "bit_cast": "needs target_type",
}

# a float function of a 32- or 64-bit integer (erf: of any integer) is computed in f64, as numpy
# computes it; those IREE's CPU backend does not link (docs/mlir-emitter.md) translate, and compile
# for the other IREE devices
NEEDS_F64_LIBM = F64_UNLINKED_ON_CPU
# integer ops of x that divide by it: x holds a zero (for not and the logic ops), where C division
# is undefined; those elements are not compared
DIVIDES_BY_X = {"recip"}


def _scalar_ops() -> list[str]:
    """Pointwise ops with a scalar rule (where a tensor rule comes first, that one is checked too)."""
    ops = all_ops().items()
    return sorted(name for name, defn in ops if scalar_rule(defn) is not None and name not in NOT_COMPARED)


def _program(dtype: DType) -> tuple[Program, list[str]]:
    """x, y -> one output per op that accepts this element type and lowers for it."""
    program = Program()
    main = program.main
    shape = Shape.make(dtype, LENS)
    x, y = main.add_parameter("x", shape), main.add_parameter("y", shape)
    names, outputs = [], []
    for name in _scalar_ops():
        in_double = numpy_float_type(dtype) is DType.double or (name == "erf" and not dtype.is_float)
        if name in NEEDS_F64_LIBM and in_double:
            continue
        lo, hi = all_ops()[name].arity
        args = [x, y, x][: max(lo, 1)] if hi is None or hi >= 1 else []
        try:
            ins = main.add_instruction(name, args)
        except (ShapeError, MgxError, ValueError, TypeError, KeyError):
            continue  # the op refuses this type or arity
        probe = Program()
        probe_main = probe.main
        px, py = probe_main.add_parameter("x", shape), probe_main.add_parameter("y", shape)
        probe_main.add_return([probe_main.add_instruction(ins.op, [px, py, px][: len(args)])])
        try:
            mlir_text(probe, DiagnosticSink())
        except MgxError as e:
            assert "cannot lower" in str(e) or "no lowering" in str(e), f"{name}: {e}"
            main.remove(ins)
            continue
        names.append(name)
        outputs.append(ins)
    main.add_return(outputs)
    return program, names


@pytest.mark.parametrize("dtype", list(INPUTS), ids=lambda t: t.type_name)
def test_scalar_lowerings_compute_what_the_interpreter_computes(dtype: DType, tmp_path) -> None:
    program, names = _program(dtype)
    assert len(names) >= {DType.float: 50, DType.int32: 30, DType.uint8: 30}[dtype], names
    x, y = INPUTS[dtype]
    params = {"x": x, "y": y}
    with np.errstate(all="ignore"):
        expected = [np.asarray(v) for v in Interpreter(program).run(params)]
    got = [
        np.asarray(v)
        for v in run_on_iree(program, params, DiagnosticSink(), IreeOptions(device="local-task", cache_dir=tmp_path))
    ]
    assert len(got) == len(names)
    for name, g, e in zip(names, got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, f"{name}: {g.dtype}{g.shape} vs {e.dtype}{e.shape}"
        if name in DIVIDES_BY_X and e.dtype.kind != "f":
            g, e = g[x != 0], e[x != 0]
        if e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-6, equal_nan=True, err_msg=name)
        else:
            np.testing.assert_array_equal(g, e, err_msg=name)


@pytest.mark.parametrize("dtype", [DType.float, DType.half], ids=lambda t: t.type_name)
def test_pow_of_negative_bases_is_std_pow(dtype: DType, tmp_path) -> None:
    """A negative base to an integral exponent is real (its sign from an odd exponent), to another
    exponent NaN, and x ** 0 and 1 ** y are 1, as std::pow and the interpreter compute (IREE's
    math.powf gave NaN for all of the negative bases, 0 ** 0, inf ** 0 and NaN ** 0)."""
    bases = np.array([-3, -2.5, -1, -0.5, 0, 0.5, 1, 2, np.inf, np.nan], np.float64)
    exponents = np.array([-2, -1, 0, 1, 2, 3, 0.5, 1.5, np.nan], np.float64)
    x, y = (a.astype(dtype.numpy) for a in np.meshgrid(bases, exponents, indexing="ij"))
    program = Program()
    main = program.main
    shape = Shape.make(dtype, x.shape)
    main.add_return([main.add_instruction("pow", [main.add_parameter("x", shape), main.add_parameter("y", shape)])])
    with np.errstate(all="ignore"):
        expected = np.asarray(Interpreter(program).run({"x": x, "y": y})[0])
    got = np.asarray(
        run_on_iree(program, {"x": x, "y": y}, DiagnosticSink(), IreeOptions(device="local-task", cache_dir=tmp_path))[
            0
        ]
    )
    # the four negative bases to 0.5 and 1.5; a NaN base or exponent, except 1 ** NaN and NaN ** 0
    assert np.isnan(expected).sum() == 4 * 2 + 9 + 10 - 1 - 2
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=2e-3, equal_nan=True)
