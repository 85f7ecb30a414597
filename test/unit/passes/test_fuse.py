"""fuse_pointwise and fuse_reduce keep meaning: every case of their lit tests, and random chains of
pointwise ops, broadcasts and reductions, give the same outputs (MIGraphX's rms rule) on the
reference interpreter before and after `fuse_pointwise,fuse_reduce,dce` (and with
fuse_pointwise's rewrite_broadcasts on)."""

from __future__ import annotations

import numpy as np
import pytest
from lit_cases import lit_cases
from test_pass_differential import check_pipeline, copy_of, parameter_values, rms_ok

from mgxir.interp.interpreter import run_program
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.text.parser import parse_program
from mgxir.verifier import verify

PIPELINE = "fuse_pointwise,fuse_reduce,dce"
PIPELINES = (PIPELINE, "fuse_pointwise{enable_rewrite_broadcasts=true},fuse_reduce,dce")


CASES = [
    (name, i, text)
    for name in ("fuse_reduce.mgx", "fuse_pointwise.mgx")
    for i, text in enumerate(c for c in lit_cases(name) if c.strip())
]


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize(("name", "index", "text"), CASES, ids=[f"{n}-{i}" for n, i, _ in CASES])
def test_lit_cases_keep_meaning(name: str, index: int, text: str, pipeline: str) -> None:
    check_pipeline(parse_program(text), pipeline, index)


def reduction_chain(seed: int, size: int = 12) -> Program:
    """Random pointwise ops, reductions over the last axis and broadcasts back, on {3, 4}."""
    rng = np.random.default_rng(seed)
    program = Program()
    main = program.create_module("main")
    full = Shape.make(DType.float, (3, 4))
    values: list[Instruction] = [main.add_parameter("x", full), main.add_parameter("y", full)]
    for _ in range(size):
        a = values[int(rng.integers(len(values)))]
        b = values[int(rng.integers(len(values)))]
        choice = rng.random()
        if choice < 0.35:
            new = main.add_instruction(str(rng.choice(("add", "mul", "sub", "max"))), [a, b])
        elif choice < 0.5:
            new = main.add_instruction(str(rng.choice(("tanh", "relu", "neg"))), [a])
        elif choice < 0.8:
            reduced = main.add_instruction(str(rng.choice(("reduce_sum", "reduce_max", "reduce_mean"))), [a], axes=[1])
            new = main.add_instruction("multibroadcast", [reduced], out_lens=[3, 4])
            if rng.random() < 0.3:
                new = main.add_instruction("contiguous", [new])
        else:
            new = main.add_instruction("reduce_sum", [a], axes=[1])
            new = main.add_instruction("multibroadcast", [new], out_lens=[3, 4])
            new = main.add_instruction("add", [new, b])
        values.append(new)
    main.add_return([values[-1]])
    return program


@pytest.mark.parametrize("pipeline", PIPELINES)
@pytest.mark.parametrize("seed", range(30))
def test_random_reduction_chains_keep_meaning(seed: int, pipeline: str) -> None:
    check_pipeline(reduction_chain(seed), pipeline, seed)


def test_random_reduction_chains_fuse() -> None:
    """Across the random chains, every matcher fires at least once."""
    statistics: dict[str, int] = {}
    for seed in range(30):
        context = PassContext()
        program = reduction_chain(seed)
        for p in parse_pipeline(PIPELINE):
            p.apply(program, context)
        for key, n in context.statistics.items():
            statistics[key] = statistics.get(key, 0) + n
    for counter in ("pointwise producers fused", "pointwise consumers fused", "reductions merged"):
        assert statistics.get(counter, 0) > 0, statistics


SHARED_MODULE_PROGRAM = """module: "main"
x = @param:x -> float_type, {2, 3}, {3, 1}
y = @param:y -> float_type, {2, 3}, {3, 1}
@2 = pointwise(x), [m0] -> float_type, {2, 3}, {3, 1}
@3 = pointwise(@2), [m1] -> float_type, {2, 3}, {3, 1}
@4 = pointwise(y), [m1] -> float_type, {2, 3}, {3, 1}
@5 = @return(@3,@4)

module: "m0"
m0:x0 = @param:x0 -> float_type, {1}, {0}
m0:@1 = neg(m0:x0) -> float_type, {1}, {0}
m0:@2 = @return(m0:@1)

module: "m1"
m1:x0 = @param:x0 -> float_type, {1}, {0}
m1:@1 = exp(m1:x0) -> float_type, {1}, {0}
m1:@2 = @return(m1:@1)
"""


def test_merge_keeps_a_module_another_instruction_uses() -> None:
    """The consumer's module is copied, not moved, when another pointwise uses it too."""
    program = parse_program(SHARED_MODULE_PROGRAM)
    for name in ("m0", "m1"):
        program.modules[name].bypass = True
    params = parameter_values(program, 0)
    before = run_program(copy_of(program), params)
    parse_pipeline("fuse_pointwise")[0].apply(program, PassContext())
    verify(program)
    after = run_program(program, params)
    assert [ins.op.defn.name for ins in program.modules["m1"]] == ["@param", "exp", "@return"]
    assert all(rms_ok(a, b) for a, b in zip(after, before))


def fuse_checked(text: str, bypass: tuple[str, ...] = ()) -> tuple[Program, dict[str, int]]:
    """fuse_pointwise on `text` (with the `bypass` modules marked so, as fused modules are): the
    result verifies and computes what the input did; returns it and the pass's statistics."""
    program = parse_program(text)
    for name in bypass:
        program.modules[name].bypass = True
    params = parameter_values(program, 0)
    before = run_program(copy_of(program), params)
    context = PassContext()
    parse_pipeline("fuse_pointwise")[0].apply(program, context)
    verify(program)
    after = run_program(program, params)
    assert len(after) == len(before)
    assert all(rms_ok(np.asarray(a), np.asarray(b)) for a, b in zip(after, before))
    return program, dict(context.statistics)


def calls(program: Program, module: str = "main") -> list[tuple[str, list[str]]]:
    """Each instruction of `module` as its op's name and the names of the modules it calls."""
    return [(ins.op.defn.name, [m.name for m in ins.module_args]) for ins in program.modules[module]]


def body_ops(program: Program, module: str) -> list[str]:
    return [ins.op.defn.name for ins in program.modules[module]]


FLOAT_23 = "float_type, {2, 3}, {3, 1}"
CHAINS = f"""module: "main"
x = @param:x -> {FLOAT_23}
y = @param:y -> {FLOAT_23}
@2 = neg(x) -> {FLOAT_23}
@3 = tanh(y) -> {FLOAT_23}
@4 = sin(x) -> {FLOAT_23}
@5 = add(@2,@3) -> {FLOAT_23}
@6 = cos(@4) -> {FLOAT_23}
@7 = convert[target_type=3](@6) -> double_type, {{2, 3}}, {{3, 1}}
@8 = identity(@5) -> {FLOAT_23}
@9 = exp(y) -> {FLOAT_23}
@10 = clip(x,x,y) -> {FLOAT_23}
@11 = @return(@8,@6,@7,@10)
"""


def test_fuse_pointwise_names_counts_and_rounds() -> None:
    """One module per pointwise op, numbered in program order (MIGraphX's `main:pointwise<n>`), dead
    ones dropped; add(neg, tanh) takes its two producers in two rounds (one merge per consumer a
    round), cos(sin) merges in the first; clip(x, x, y) has one parameter for both x; the convert's
    module returns double. The statistics count what was created and merged, and the identity and
    dead instructions its eliminate_identity and DCE steps removed."""
    program, statistics = fuse_checked(CHAINS)
    assert calls(program) == [
        ("@param", []),
        ("@param", []),
        ("pointwise", ["main:pointwise1"]),
        ("pointwise", ["main:pointwise2"]),
        ("pointwise", ["main:pointwise5"]),
        ("pointwise", ["main:pointwise7"]),
        ("@return", []),
    ]
    assert set(program.modules) == {"main", "main:pointwise1", "main:pointwise2", "main:pointwise5", "main:pointwise7"}
    assert body_ops(program, "main:pointwise1") == ["@param", "@param", "tanh", "neg", "add", "@return"]
    assert body_ops(program, "main:pointwise2") == ["@param", "sin", "cos", "@return"]
    assert body_ops(program, "main:pointwise7") == ["@param", "@param", "clip", "@return"]
    assert all(program.modules[name].bypass for name in program.modules if name != "main")
    assert statistics == {
        "identities removed": 1,
        "pointwise modules created": 8,
        "instructions removed": 1,
        "modules removed": 1,
        "pointwise instructions fused": 3,
    }


def test_fuse_pointwise_leaves_layout_and_constants() -> None:
    """`layout` is pointwise but stays itself, and a pointwise op on constants only gets no module
    (its number is used up); the ops after them still fuse, also when the module has no @return."""
    program, statistics = fuse_checked(f"""module: "main"
x = @param:x -> {FLOAT_23}
@1 = @literal{{3}} -> float_type, {{1}}, {{0}}
@2 = neg(@1) -> float_type, {{1}}, {{0}}
@3 = layout[permutation={{1, 0}}](x) -> float_type, {{2, 3}}, {{1, 2}}
@4 = exp(x) -> {FLOAT_23}
@5 = add(@4,@3) -> {FLOAT_23}
@6 = multibroadcast[out_lens={{2, 3}},out_dyn_dims={{}}](@2) -> float_type, {{2, 3}}, {{0, 0}}
@7 = mul(@5,@6) -> {FLOAT_23}
""")
    names = ["@param", "@literal", "neg", "layout", "multibroadcast", "pointwise"]
    assert [name for name, _ in calls(program)] == names
    assert calls(program)[-1] == ("pointwise", ["main:pointwise1"])
    assert body_ops(program, "main:pointwise1") == ["@param", "@param", "@param", "exp", "add", "mul", "@return"]
    assert statistics == {"pointwise modules created": 3, "pointwise instructions fused": 2}


SHARED_BOTH = f"""module: "main"
x = @param:x -> {FLOAT_23}
y = @param:y -> {FLOAT_23}
@2 = pointwise(x,y), [pm] -> {FLOAT_23}
@3 = pointwise(@2), [pn] -> {FLOAT_23}
@4 = pointwise(y,x), [pm] -> {FLOAT_23}
@5 = pointwise(@4), [pn] -> {FLOAT_23}
@6 = @return(@3,@5)

module: "pm"
pm:x0 = @param:x0 -> float_type, {{1}}, {{0}}
pm:x1 = @param:x1 -> float_type, {{1}}, {{0}}
pm:@2 = sub(pm:x0,pm:x1) -> float_type, {{1}}, {{0}}
pm:@3 = @return(pm:@2)

module: "pn"
pn:@0 = @literal{{2}} -> float_type, {{1}}, {{0}}
pn:x0 = @param:x0 -> float_type, {{1}}, {{0}}
pn:@2 = mul(pn:x0,pn:@0) -> float_type, {{1}}, {{0}}
pn:@3 = @return(pn:@2)
"""


def test_merge_into_shared_producer_and_consumer_modules() -> None:
    """Both merges read modules two instructions call. The first grows a copy of `pm` that takes the
    name `pm` (the original, still called by @4, becomes `pm:pn-deleted`, as MIGraphX renames it) and
    copies `pn`'s body, literal included; the second finds each module called once and grows in
    place. `pn` is then dropped."""
    program, statistics = fuse_checked(SHARED_BOTH, bypass=("pm", "pn"))
    assert calls(program) == [
        ("@param", []),
        ("@param", []),
        ("pointwise", ["pm"]),
        ("pointwise", ["pm:pn-deleted"]),
        ("@return", []),
    ]
    assert set(program.modules) == {"main", "pm", "pm:pn-deleted"}
    for name in ("pm", "pm:pn-deleted"):
        assert body_ops(program, name) == ["@literal", "@param", "@param", "sub", "mul", "@return"]
        assert program.modules[name].bypass
    assert statistics == {"pointwise modules created": 0, "pointwise instructions fused": 2}


SHARED_THREE_TIMES = f"""module: "main"
x = @param:x -> {FLOAT_23}
y = @param:y -> {FLOAT_23}
@2 = pointwise(x,y), [pm] -> {FLOAT_23}
@3 = pointwise(@2,x), [pn] -> {FLOAT_23}
@4 = pointwise(@3), [pq] -> {FLOAT_23}
@5 = pointwise(y,x), [pm] -> {FLOAT_23}
@6 = pointwise(@5,y), [pn] -> {FLOAT_23}
@7 = pointwise(x,x), [pm] -> {FLOAT_23}
@8 = @return(@4,@6,@7)

module: "pm"
pm:x0 = @param:x0 -> float_type, {{1}}, {{0}}
pm:x1 = @param:x1 -> float_type, {{1}}, {{0}}
pm:@2 = sub(pm:x0,pm:x1) -> float_type, {{1}}, {{0}}
pm:@3 = @return(pm:@2)

module: "pn"
pn:x0 = @param:x0 -> float_type, {{1}}, {{0}}
pn:x1 = @param:x1 -> float_type, {{1}}, {{0}}
pn:@2 = mul(pn:x0,pn:x1) -> float_type, {{1}}, {{0}}
pn:@3 = @return(pn:@2)

module: "pq"
pq:x0 = @param:x0 -> float_type, {{1}}, {{0}}
pq:@1 = tanh(pq:x0) -> float_type, {{1}}, {{0}}
pq:@2 = @return(pq:@1)
"""


def test_merge_into_a_module_three_instructions_call() -> None:
    """`pm` is called three times: each merge into it grows a copy that takes the name, and the
    original is renamed again (`pm:pn-deleted:pn-deleted` for the last caller). The grown copy is
    called once, so `pq` then merges into it in place. A consumer's input that the producer reads
    too (x, then y) becomes the producer's parameter for it, not a new one."""
    program, statistics = fuse_checked(SHARED_THREE_TIMES, bypass=("pm", "pn", "pq"))
    assert calls(program) == [
        ("@param", []),
        ("@param", []),
        ("pointwise", ["pm"]),
        ("pointwise", ["pm:pn-deleted"]),
        ("pointwise", ["pm:pn-deleted:pn-deleted"]),
        ("@return", []),
    ]
    main = list(program.main)
    assert [[a.param_name for a in ins.args] for ins in main[2:5]] == [["x", "y"], ["y", "x"], ["x", "x"]]
    assert body_ops(program, "pm") == ["@param", "@param", "sub", "mul", "tanh", "@return"]
    assert body_ops(program, "pm:pn-deleted") == ["@param", "@param", "sub", "mul", "@return"]
    assert body_ops(program, "pm:pn-deleted:pn-deleted") == ["@param", "@param", "sub", "@return"]
    assert set(program.modules) == {"main", "pm", "pm:pn-deleted", "pm:pn-deleted:pn-deleted"}
    assert statistics == {"pointwise modules created": 0, "pointwise instructions fused": 3}


def test_rewrite_broadcasts_moves_the_broadcast_above_and_merges() -> None:
    """With enable_rewrite_broadcasts, neg(y) broadcast into add(x, .) gets the broadcast on y, so
    the two merge into one module over a broadcast input; the statistics count the move and the
    dead neg its DCE removed."""
    program = parse_program(f"""module: "main"
x = @param:x -> {FLOAT_23}
y = @param:y -> float_type, {{3}}, {{1}}
@2 = neg(y) -> float_type, {{3}}, {{1}}
@3 = multibroadcast[out_lens={{2, 3}},out_dyn_dims={{}}](@2) -> float_type, {{2, 3}}, {{0, 1}}
@4 = add(x,@3) -> {FLOAT_23}
@5 = @return(@4)
""")
    params = parameter_values(program, 0)
    before = run_program(copy_of(program), params)
    context = PassContext()
    parse_pipeline("fuse_pointwise{enable_rewrite_broadcasts=true}")[0].apply(program, context)
    verify(program)
    assert all(rms_ok(np.asarray(a), np.asarray(b)) for a, b in zip(run_program(program, params), before))
    assert calls(program) == [
        ("@param", []),
        ("@param", []),
        ("multibroadcast", []),
        ("pointwise", ["main:pointwise0"]),
        ("@return", []),
    ]
    assert body_ops(program, "main:pointwise0") == ["@param", "@param", "neg", "add", "@return"]
    assert dict(context.statistics) == {
        "pointwise modules created": 2,
        "broadcasts moved above pointwise": 1,
        "instructions removed": 1,
        "pointwise instructions fused": 1,
    }


def test_second_round_merges_the_second_producer() -> None:
    """add(neg(x), tanh(y)): one merge per consumer a round, so the first round merges neg (one
    merge in all) and the second tanh: one module, two merges counted."""
    program, statistics = fuse_checked(f"""module: "main"
x = @param:x -> {FLOAT_23}
y = @param:y -> {FLOAT_23}
@2 = neg(x) -> {FLOAT_23}
@3 = tanh(y) -> {FLOAT_23}
@4 = add(@2,@3) -> {FLOAT_23}
@5 = @return(@4)
""")
    assert calls(program) == [("@param", []), ("@param", []), ("pointwise", ["main:pointwise1"]), ("@return", [])]
    assert body_ops(program, "main:pointwise1") == ["@param", "@param", "tanh", "neg", "add", "@return"]
    assert statistics == {"pointwise modules created": 3, "pointwise instructions fused": 2}
