"""Program.clone() and the structural fingerprint: copies without printing, keys without printing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mgxir import DType, Literal, Program, Shape, make_op, parse_program, print_program, verify
from mgxir.ir.fingerprint import module_fingerprint, program_fingerprint
from mgxir.text.printer import PrintOptions

EXAMPLES = Path(__file__).resolve().parents[4] / "shared" / "reference" / "migraphx-examples"
REPO = Path(__file__).resolve().parents[3]
LOSSLESS = PrintOptions(lossless=True)


def _texts() -> list[tuple[str, str]]:
    files = sorted(EXAMPLES.glob("*.read.txt")) + sorted(EXAMPLES.glob("*.compiled_ref.txt"))
    files += sorted((REPO / "examples").glob("*.mgx"))
    return [(f.name, f.read_text()) for f in files]


PROGRAM = """\
x = @param:x -> float_type, {2, 3}, {3, 1}
y = @param:y -> float_type, {2, 3}, {3, 1}
@2 = @literal{0.5, -0, 1, 2, 3, 4} -> float_type, {2, 3}, {3, 1}
@3 = add(x,y) -> float_type, {2, 3}, {3, 1}
@4 = mul(@3,@2) -> float_type, {2, 3}, {3, 1}
@5 = transpose[permutation={1, 0}](@4) -> float_type, {3, 2}, {1, 3}
@6 = @return(@5,@3)
"""


def _changed(old: str, new: str) -> str:
    assert old in PROGRAM
    return PROGRAM.replace(old, new)


def test_clone_prints_identically_and_is_independent() -> None:
    program = parse_program(PROGRAM)
    copy = program.clone()
    assert print_program(copy, LOSSLESS) == print_program(program, LOSSLESS)
    add = next(i for i in copy.main if i.name == "add")
    copy.main.replace(add, make_op("sub"))
    assert "sub" in print_program(copy) and "sub" not in print_program(program)
    assert all(i.parent is program.main for i in program.main)


def test_clone_keeps_use_lists_in_order() -> None:
    program = parse_program(PROGRAM)
    copy = program.clone()
    for old, new in zip(program.main, copy.main):
        assert [u.op for u in old.users] == [u.op for u in new.users]
        assert [a.op for a in old.args] == [a.op for a in new.args]
        assert all(u.parent is copy.main for u in new.users)
        assert new.line == old.line


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"no MIGraphX reference outputs at {EXAMPLES}")
@pytest.mark.parametrize(("name", "text"), _texts(), ids=lambda v: v if len(v) < 60 else "")
def test_clone_and_fingerprint_of_every_reference_program(name: str, text: str) -> None:
    program = parse_program(text)
    verify(program)  # fills in the result shapes a hand-written example leaves out
    copy = program.clone()
    assert print_program(copy, LOSSLESS) == print_program(program, LOSSLESS)
    verify(copy)
    assert program_fingerprint(copy) == program_fingerprint(program)
    reread = parse_program(print_program(program, LOSSLESS))
    assert program_fingerprint(reread) == program_fingerprint(program)


def test_names_and_lines_do_not_count() -> None:
    renamed = PROGRAM.replace("@3", "sum").replace("@4", "scaled")
    assert program_fingerprint(parse_program(renamed)) == program_fingerprint(parse_program(PROGRAM))
    assert program_fingerprint(parse_program("\n" + PROGRAM)) == program_fingerprint(parse_program(PROGRAM))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("-0, 1", "0, 1"),  # one bit of a literal
        (
            "permutation={1, 0}](@4) -> float_type, {3, 2}, {1, 3}",
            "permutation={0, 1}](@4) -> float_type, {2, 3}, {3, 1}",
        ),
        ("add(x,y)", "add(y,x)"),  # argument order
        ("add(x,y)", "sub(x,y)"),
        ("@return(@5,@3)", "@return(@3,@5)"),
        ("@param:y", "@param:z"),  # the interface
    ],
)
def test_every_difference_counts(old: str, new: str) -> None:
    assert program_fingerprint(parse_program(_changed(old, new))) != program_fingerprint(parse_program(PROGRAM))


def test_attribute_floats_count_by_their_bits() -> None:
    program = parse_program(
        "x = @param:x -> float_type, {4}, {1}\n@1 = leaky_relu[alpha=0.1](x) -> float_type, {4}, {1}\n"
    )
    other = program.clone()
    ins = other.main.last
    other.main.replace(ins, make_op("leaky_relu", alpha=np.nextafter(np.float32(0.1), np.float32(1)).item()))
    assert program_fingerprint(other) != program_fingerprint(program)


def test_shapes_count_with_their_strides_and_types() -> None:
    def program_of(shape: Shape) -> Program:
        p = Program()
        x = p.main.add_parameter("x", shape)
        p.main.add_return([p.main.add_instruction("relu", [x])])
        return p

    base = program_fingerprint(program_of(Shape.make(DType.float, (2, 3))))
    assert program_fingerprint(program_of(Shape.make(DType.float, (2, 3), (1, 2)))) != base
    assert program_fingerprint(program_of(Shape.make(DType.half, (2, 3)))) != base
    assert program_fingerprint(program_of(Shape.make(DType.float, (2, 3)))) == base


def test_literal_data_is_hashed_once_and_large_literals_count() -> None:
    p = Program()
    data = np.arange(1 << 16, dtype=np.float32)
    lit = Literal(Shape.make(DType.float, data.shape), data)
    p.main.add_return([p.main.add_literal(lit)])
    first = program_fingerprint(p)
    assert lit.digest is not None
    q = Program()
    changed = data.copy()
    changed[-1] += 1
    q.main.add_return([q.main.add_literal(Literal(Shape.make(DType.float, data.shape), changed))])
    assert program_fingerprint(q) != first


def test_module_fingerprint_covers_its_submodules() -> None:
    text = """\
module: "main"
x = @param:x -> float_type, {2}, {1}
@1 = pointwise(x), [pw] -> float_type, {2}, {1}
@2 = @return(@1)

module: "pw"
pw:x0 = @param:x0 -> float_type, {1}, {0}
pw:@1 = relu(pw:x0) -> float_type, {1}, {0}
pw:@2 = @return(pw:@1)
"""
    program = parse_program(text)
    other = parse_program(text.replace("relu(pw:x0)", "neg(pw:x0)"))
    assert module_fingerprint(program.main) != module_fingerprint(other.main)
    assert module_fingerprint(program.main) == program_fingerprint(program)
    copy = program.clone()
    assert copy.main.first.next.module_args[0] is copy.get_module("pw")
    assert program_fingerprint(copy) == program_fingerprint(program)


@pytest.mark.parametrize("dtype", [DType.bf16, DType.fp8e4m3fn, DType.half, DType.bool, DType.int64])
def test_literals_of_every_type_are_digested_by_their_bits(dtype: DType) -> None:
    def program(values: list[float]) -> Program:
        p = Program()
        data = np.array(values).astype(dtype.numpy)
        p.main.add_return([p.main.add_literal(Literal(Shape.make(dtype, data.shape), data))])
        return p

    assert program_fingerprint(program([0, 1, 1])) == program_fingerprint(program([0, 1, 1]))
    assert program_fingerprint(program([0, 1, 1])) != program_fingerprint(program([1, 1, 0]))
