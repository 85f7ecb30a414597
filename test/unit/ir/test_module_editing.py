"""The editing API keeps the instruction order and every use list right."""

from __future__ import annotations

import gc
import time

import pytest

from mgxir import DType, Program, Shape, make_op, print_program, verify
from mgxir.ir.literal import Literal


def _program():
    p = Program()
    m = p.main
    s = Shape.make(DType.float, (2, 3))
    x = m.add_parameter("x", s)
    y = m.add_parameter("y", s)
    a = m.add_instruction("add", [x, y])
    r = m.add_instruction("relu", [a])
    ret = m.add_return([r])
    return p, m, x, y, a, r, ret


def test_parameters_and_literals_go_to_the_front():
    p, m, x, y, *_ = _program()
    assert [i.name for i in m][:2] == ["@param", "@param"]
    assert m.first is y  # added last, so first, as in MIGraphX
    lit = m.add_literal(Literal(Shape.scalar_of(DType.float), [2.0]))
    assert m.first is lit


def test_use_lists_follow_edits():
    p, m, x, y, a, r, ret = _program()
    assert list(x.users) == [a] and list(a.users) == [r]
    t = m.insert(r, make_op("tanh"), [a])
    r.replace_arg(a, t)
    assert list(a.users) == [t] and list(t.users) == [r]
    a.replace_all_uses_with(x)
    assert a.users == {} and t.args == [x] and t in x.users
    m.remove(a)
    assert a.parent is None and a not in x.users and a not in y.users
    verify(p)


def test_remove_refuses_an_instruction_in_use():
    p, m, x, y, a, *_ = _program()
    with pytest.raises(ValueError, match="still has 1 users"):
        m.remove(a)


def test_replace_recomputes_the_shape_and_keeps_users():
    p, m, x, y, a, r, ret = _program()
    m.replace(a, make_op("mul"), [x, x])
    assert a.name == "mul" and a.args == [x, x]
    assert a not in y.users and a in x.users and r in a.users
    assert a.shape == Shape.make(DType.float, (2, 3))


def test_move_before_and_iteration_order():
    p, m, x, y, a, r, ret = _program()
    t = m.add_instruction("tanh", [x])
    m.move_before(t, a)
    assert [i.name for i in m] == ["@param", "@param", "tanh", "add", "relu", "@return"]
    assert [i.name for i in reversed(m)][-1] == "@param"
    m.move_before(t, None)
    assert m.last is t


def test_printed_names_count_every_instruction():
    p, *_ = _program()
    text = print_program(p)
    assert "@2 = add(x,y)" in text and "y = @param:y" in text


def test_editing_is_linear():
    """Appending, replacing uses and removing 100k instructions takes time proportional to n."""

    def run(n):
        p = Program()
        m = p.main
        prev = m.add_parameter("x", Shape.make(DType.float, (4,)))
        gc.disable()  # a collection's cost depends on everything alive, not on this loop
        start = time.process_time()  # this process's CPU: other work on a loaded machine does not count
        chain = []
        for _ in range(n):
            prev = m.add_instruction("relu", [prev])
            chain.append(prev)
        for ins in reversed(chain[1:]):
            ins.replace_all_uses_with(ins.args[0])
            m.remove(ins)
        elapsed = time.process_time() - start
        gc.enable()
        return elapsed

    small, large = run(10_000), run(100_000)
    assert large < small * 25  # linear is 10x; quadratic would be 100x
