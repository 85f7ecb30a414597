"""Random valid programs print, parse and print again identically; lossless data is bit-exact;
random damage to valid text gives a clean error or a valid program, never a crash or a hang."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mgxir import DType, Literal, MgxError, PrintOptions, Program, Shape, make_op, parse_program, print_program, verify
from mgxir.ir.shape import DynamicDimension
from mgxir.text.writer import write_program

ELEMENT_TYPES = [t for t in DType if t not in (DType.tuple, DType.fp4x2)]
FLOAT_TYPES = [t for t in ELEMENT_TYPES if t.is_float]


def _random_bits(draw, dtype: DType, n: int) -> np.ndarray:
    if dtype is DType.bool:
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    width = dtype.itemsize * 8
    raw = draw(st.lists(st.integers(0, 2**width - 1), min_size=n, max_size=n))
    return np.array(raw, dtype=dtype.bits_dtype).view(dtype.numpy)


@st.composite
def programs(draw) -> Program:
    p = Program()
    main = p.main
    rank = draw(st.integers(1, 3))
    lens = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    dtype = draw(st.sampled_from(FLOAT_TYPES))
    s = Shape.make(dtype, lens)
    values = [main.add_parameter("x", s)]
    if draw(st.booleans()):
        values.append(main.add_parameter("y", s))
    for _ in range(draw(st.integers(0, 4))):
        lt = draw(st.sampled_from(ELEMENT_TYPES))
        n = draw(st.integers(1, 14))
        main.add_literal(Literal(Shape.make(lt, (n,)), _random_bits(draw, lt, n)))
    if draw(st.booleans()):
        main.add_parameter("dyn", Shape.dynamic(dtype, [DynamicDimension(1, 4, (2,)), DynamicDimension(3, 3)]))
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["unary", "binary", "transpose", "broadcast", "reduce", "convert", "if"]))
        a = draw(st.sampled_from(values))
        if kind == "unary":
            op = make_op(draw(st.sampled_from(["relu", "tanh", "neg", "exp", "abs"])))
            values.append(main.add_instruction(op, [a]))
        elif kind == "binary":
            same = [v for v in values if v.shape.lens == a.shape.lens and v.shape.dtype == a.shape.dtype]
            b = draw(st.sampled_from(same))
            values.append(main.add_instruction(draw(st.sampled_from(["add", "mul", "sub", "max"])), [a, b]))
        elif kind == "transpose":
            perm = draw(st.permutations(range(len(a.shape.lens))))
            values.append(main.add_instruction("transpose", [a], permutation=perm))
        elif kind == "broadcast":
            values.append(main.add_instruction("multibroadcast", [a], out_lens=(2, *a.shape.lens)))
        elif kind == "reduce":
            axis = draw(st.integers(-len(a.shape.lens), len(a.shape.lens) - 1))
            values.append(main.add_instruction(draw(st.sampled_from(["reduce_sum", "reduce_max"])), [a], axes=(axis,)))
        elif kind == "convert":
            values.append(main.add_instruction("convert", [a], target_type=draw(st.sampled_from(ELEMENT_TYPES))))
        else:
            cond = main.add_parameter(f"c{len(values)}", Shape.scalar_of(DType.bool))
            branches = []
            for suffix in ("then", "else"):
                sub = p.create_module(f"If_{len(values)}_{suffix}")
                r = sub.add_instruction("neg" if suffix == "then" else "exp", [a])
                sub.add_return([r, a])
                branches.append(sub)
            tup = main.add_instruction("if", [cond], branches)
            values.append(main.add_instruction("get_tuple_elem", [tup], index=draw(st.integers(0, 1))))
    main.add_return(values[-draw(st.integers(1, min(3, len(values)))) :])
    return p


def _literal_bits(program: Program) -> list[bytes]:
    out = []
    for m in program.print_order():
        for ins in m:
            if ins.is_literal:
                out.append(np.ascontiguousarray(ins.literal.data).tobytes())
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_round_trip(program):
    verify(program)
    first = print_program(program)
    again = parse_program(first)
    verify(again)
    assert print_program(again) == first


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_lossless_keeps_every_bit(program):
    text = print_program(program, PrintOptions(lossless=True))
    again = parse_program(text)
    verify(again)
    assert print_program(again, PrintOptions(lossless=True)) == text
    assert _literal_bits(again) == _literal_bits(program)
    dyn = [i.shape for i in again.main if i.is_param and i.shape.is_dynamic]
    assert all(s.dyn_dims[0].optimals == (2,) for s in dyn)


def test_sidecar_holds_large_literals(tmp_path):
    p = Program()
    data = np.arange(300_000, dtype=np.float32).reshape(600, 500)
    lit = p.main.add_literal(Literal(Shape.make(DType.float, (600, 500)), data))
    bf = np.arange(8, dtype=np.float32).astype(DType.bf16.numpy)
    lit2 = p.main.add_literal(Literal(Shape.make(DType.bf16, (8,)), bf))
    p.main.add_return([lit, lit2])
    out = tmp_path / "prog.mgx"
    write_program(p, str(out), lossless=True)
    text = out.read_text()
    assert "@1 = @literal{npz:prog.npz:@1} -> float_type, {600, 500}, {500, 1}" in text
    assert (tmp_path / "prog.npz").exists()
    from mgxir import read_program

    again = read_program(out)
    small, big = [i.literal.data for i in again.main if i.is_literal]
    assert np.array_equal(big, data)
    assert small.dtype == DType.bf16.numpy and np.array_equal(small.view(np.uint16), bf.view(np.uint16))


VALID = """module: "main"
@0 = @literal{1, 2} -> float_type, {2}, {1}
x = @param:x -> float_type, {2}, {1}
c = @param:c -> bool_type, {1}, {0}
@3 = add(x,@0) -> float_type, {2}, {1}
@4 = multibroadcast[out_lens={3, 2},out_dyn_dims={}](@3) -> float_type, {3, 2}, {0, 1}
@5 = if(c), [A, B] -> [float_type, {2}, {1}]
@6 = get_tuple_elem[index=0](@5) -> float_type, {2}, {1}
@7 = reduce_sum[axes={1}](@4) -> float_type, {3, 1}, {1, 1}
@8 = @return(@6,@4)

module: "A"
A:@0 = neg(x) -> float_type, {2}, {1}
A:@1 = @return(A:@0)

module: "B"
B:@0 = exp(x) -> float_type, {2}, {1}
B:@1 = @return(B:@0)
"""


@settings(max_examples=300, deadline=2000)
@given(
    st.lists(
        st.tuples(st.integers(0, len(VALID) - 1), st.sampled_from('(){}[],= @:->\n#x0?."-'), st.integers(0, 2)),
        min_size=1,
        max_size=4,
    )
)
def test_damaged_text_gives_a_clean_error(edits):
    text = VALID
    for pos, ch, how in edits:
        pos = min(pos, len(text))
        if how == 0:
            text = text[:pos] + ch + text[pos:]
        elif how == 1:
            text = text[:pos] + text[pos + 1 :]
        else:
            text = text[:pos] + ch + text[pos + 1 :]
    try:
        program = parse_program(text, "fuzz.mgx")
        verify(program)
        print_program(program)
    except MgxError as e:
        check_rendered_error(e.render(), text)


def check_rendered_error(rendered: str, text: str) -> None:
    """`fuzz.mgx:L:C: error: message`, then line L of the text and a caret under column C; or,
    with no place to point at, `error: message` alone."""
    lines = rendered.split("\n")
    head = re.fullmatch(r"fuzz\.mgx:(\d+):(\d+): error: \S.*", lines[0])
    if head is None:
        assert re.fullmatch(r"error: \S.*", lines[0]) and len(lines) == 1, rendered
        return
    line, column = int(head[1]), int(head[2])
    source = text.split("\n")
    assert 1 <= line <= len(source), rendered
    if len(lines) > 1:
        assert len(lines) == 3, rendered
        assert lines[1] == source[line - 1].expandtabs(1), rendered
        assert lines[2] == " " * (column - 1) + "^" and column <= len(lines[1]) + 1, rendered


def test_rendered_error_points_at_the_place():
    text = VALID.replace("@3 = add(x,@0)", "@3 = add(x,@9)")
    with pytest.raises(MgxError) as caught:
        parse_program(text, "fuzz.mgx")
    check_rendered_error(caught.value.render(), text)
    assert caught.value.render().startswith("fuzz.mgx:5:12: error: use of undefined value '@9'")


@pytest.mark.parametrize("bad", ["", "\n\n", "// only a comment\n"])
def test_empty_programs_have_an_empty_main(bad):
    p = parse_program(bad)
    assert list(p.modules) == ["main"] and len(p.main) == 0
