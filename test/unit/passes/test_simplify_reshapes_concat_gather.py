"""simplify_reshapes' concat and gather rewrites keep what programs compute: every case of the lit
tests for them runs on the reference interpreter before and after the pass (rms rule), and each
rewrite changes at least one of those programs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from lit_cases import check_lit_in_process, lit_cases, lit_runs
from test_pass_differential import copy_of, fill_elided_literals, parameter_values, rms_ok

from mgxir.interp.interpreter import run_program
from mgxir.ir.dtype import DType
from mgxir.ir.literal import Literal
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes import simplify_reshapes
from mgxir.passes.base import PassContext
from mgxir.passes.registry import parse_pipeline
from mgxir.passes.simplify_reshapes import concat, gather
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.verifier import verify

LIT_TESTS = Path(__file__).resolve().parents[2] / "opt"
LIT_FILES = ("simplify_reshapes_concat.mgx", "simplify_reshapes_gather.mgx")


def _pipeline(name: str) -> str:
    """The pipeline the file's RUN line passes to mgx-opt."""
    run_line = (LIT_TESTS / name).read_text().splitlines()[0]
    return re.search(r"-p (\S+)", run_line).group(1).strip("'")


PIPELINES = {name: _pipeline(name) for name in LIT_FILES}
GATHER_PIPELINE = "simplify_reshapes{enable_gather_rewrite=true}"


CASES = [(name, index, case) for name in LIT_FILES for index, case in enumerate(lit_cases(name))]


def _run(program: Program, pipeline: str) -> tuple[Program, PassContext]:
    transformed = copy_of(program)
    context = PassContext()
    for p in parse_pipeline(pipeline):
        p.apply(transformed, context)
    return transformed, context


SIZE_LIMIT = 1 << 20  # cases with larger values (MIGraphX's LLM-sized ones) are only checked by lit


def check_values(program: Program, pipeline: str, seed: int) -> None:
    """Outputs agree before and after by the rms rule, and after the pass have their declared lens.
    Values are compared flattened: the interpreter gives a gather by a literal scalar index (shape
    {1}, strides {0}) an extra axis, which the rewritten program no longer has."""
    fill_elided_literals(program)
    params = parameter_values(program, seed)
    before = run_program(copy_of(program), params)
    transformed, _ = _run(program, pipeline)
    verify(transformed)
    after = run_program(transformed, params)
    declared = transformed.main.output_shapes()
    assert len(before) == len(after) == len(declared)
    for b, a, shape in zip(before, after, declared):
        assert np.asarray(a).shape == tuple(shape.lens) or (np.asarray(a).ndim == 0 and shape.elements == 1)
        assert rms_ok(np.ravel(a), np.ravel(b)), print_program(transformed)


@pytest.mark.parametrize(("name", "index", "text"), CASES, ids=[f"{n}-{i}" for n, i, _ in CASES])
def test_lit_cases_keep_values(name: str, index: int, text: str) -> None:
    program = parse_program(text)
    if any(ins.shape.elements > SIZE_LIMIT for ins in program.main if not ins.is_return):
        pytest.skip("values too large for the interpreter in a unit test")
    check_values(program, PIPELINES[name], seed=index)


def test_each_rewrite_changes_some_program() -> None:
    changed_by: set[str] = set()
    for name, _, text in CASES:
        program = parse_program(text)
        fill_elided_literals(program)
        transformed, context = _run(program, PIPELINES[name])
        if print_program(transformed) == print_program(program):
            continue
        changed_by.update(key.removesuffix(" applied") for key in context.statistics)
    wanted = {rewrite.__name__ for rewrite in (*concat.REWRITES, *gather.REWRITES)}
    assert wanted <= changed_by


def _gather_program(data_lens: tuple[int, ...], axis: int, indices: np.ndarray) -> Program:
    program = Program()
    main = program.create_module("main")
    data = main.add_parameter("data", Shape.make(DType.float, data_lens))
    literal = main.add_literal(Literal(Shape.make(DType.int32, indices.shape or (1,)), indices.reshape(-1)))
    gathered = main.add_instruction("gather", [data, literal], axis=axis)
    main.add_return([main.add_instruction("neg", [gathered])])
    return program


def _random_constant_gather(seed: int) -> Program:
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 4))
    lens = tuple(int(n) for n in rng.integers(1, 7, size=rank))
    axis = int(rng.integers(0, rank))
    n = lens[axis]
    start = int(rng.integers(0, n))
    stride = int(rng.integers(0, 3))
    count = max(1, min(int(rng.integers(1, 5)), (n - 1 - start) // stride + 1 if stride else 4))
    run = start + stride * np.arange(count)
    pattern = [run, np.tile(run, 2), np.repeat(run, 2), rng.integers(-n, n, size=count)][seed % 4]
    shape = [(pattern.size,), (1, pattern.size), (pattern.size, 1)][seed % 3]
    return _gather_program(lens, axis, pattern.reshape(shape).astype(np.int32))


@pytest.mark.parametrize("seed", range(40))
def test_random_constant_gathers(seed: int) -> None:
    """Gathers by constant indices of regular patterns (strided runs, repeats, tiles) and random ones."""
    check_values(_random_constant_gather(seed), GATHER_PIPELINE, seed)


RECORDED_GATHERS = Path(__file__).parents[1] / "data" / "simplify_reshapes_gathers.json"


def test_random_constant_gathers_give_recorded_views() -> None:
    """The views find_gather makes of 160 random constant gathers are those recorded (each checked
    against the gather's values when recorded, and the first 40 by test_random_constant_gathers):
    which gathers become views, and which views, is the rewrite's whole job."""
    recorded = json.loads(RECORDED_GATHERS.read_text())
    for seed, expected in enumerate(recorded):
        transformed, _ = _run(_random_constant_gather(seed), GATHER_PIPELINE)
        assert print_program(transformed) == expected, f"seed {seed}"


def test_concats_no_rewrite_changes_count_nothing() -> None:
    """A concat with a slice on its axis that takes back no input, and a dynamic concat: the concat
    rewrites look at both and change nothing, so no `... applied` statistic is counted (a rewrite
    that said it changed something here would also make the pass loop again)."""
    program = parse_program("""module: "main"
x = @param:x -> float_type, {4, 3}, {3, 1}
y = @param:y -> float_type, {4, 3}, {3, 1}
d = @param:d -> dynamic, float_type, {[1..4], 3}
@3 = concat[axis=1](x,y) -> float_type, {4, 6}, {6, 1}
@4 = slice[axes={1},starts={1},ends={4}](@3) -> float_type, {4, 3}, {6, 1}
@5 = concat[axis=1](d,d) -> dynamic, float_type, {[1..4], 6}
@6 = @return(@4,@5)
""")
    transformed, context = _run(program, "simplify_reshapes")
    assert print_program(transformed) == print_program(program)
    assert not context.statistics


EXPECTED_OUTPUT_FILES = (
    "simplify_reshapes.mgx",
    "simplify_reshapes_concat.mgx",
    "simplify_reshapes_gather.mgx",
    "simplify_reshapes_options.mgx",
    "simplify_reshapes_views.mgx",
)
RUNS = [(name, *run) for name in EXPECTED_OUTPUT_FILES for run in lit_runs(name)]


@pytest.mark.parametrize(("name", "pipeline", "prefix"), RUNS, ids=[f"{n}-{p}" for n, _, p in RUNS])
def test_lit_expected_outputs_in_process(name: str, pipeline: str, prefix: str, tmp_path: Path) -> None:
    """The pass prints, for every case of the lit files, the program MIGraphX's simplify_reshapes
    produces (their CHECK lines): mgx-opt's driver runs here, in this process, and FileCheck reads
    its output (lit runs the same command in a subprocess)."""
    check_lit_in_process(name, pipeline, prefix, tmp_path)


def test_gather_by_scalar_index_of_vector_keeps_its_scalar_shape() -> None:
    """MIGraphX's find_gather_scalar: a gather by a scalar index becomes a gather by a one-element
    index; a scalar result (1-d, stride 0) is squeezed back to that scalar shape."""
    program = parse_program("""module: "main"
x = @param:x -> float_type, {5}, {1}
i = @param:i -> int32_type, {1}, {0}
@2 = gather[axis=0](x,i) -> float_type, {1}, {0}
@3 = neg(@2) -> float_type, {1}, {0}
@4 = @return(@3)
""")
    transformed, context = _run(program, "simplify_reshapes")
    assert print_program(transformed).splitlines()[3:7] == [
        "@2 = unsqueeze[axes={0},steps={}](i) -> int32_type, {1}, {1}",
        "@3 = gather[axis=0](x,@2) -> float_type, {1}, {1}",
        "@4 = squeeze[axes={0}](@3) -> float_type, {1}, {0}",
        "@5 = neg(@4) -> float_type, {1}, {0}",
    ]
    # the replaced gather is removed (and counted) right after find_gather_scalar
    assert context.statistics == {"find_gather_scalar applied": 1, "instructions removed": 1}


def test_gather_by_scalar_index_of_pointwise_result_is_rewritten() -> None:
    """A pointwise over a literal is not something the pass evaluates (its module argument), so a
    gather of it by a scalar index is not constant and find_gather_scalar applies."""
    program = parse_program("""module: "main"
@0 = @literal{1, 2, 3} -> float_type, {3}, {1}
@1 = pointwise(@0), [main:pointwise0] -> float_type, {3}, {1}
@2 = @literal{2} -> int32_type, {1}, {0}
@3 = gather[axis=0](@1,@2) -> float_type, {1}, {0}
@4 = @return(@3)

module: "main:pointwise0"
x0 = @param:x0 -> float_type, {1}, {0}
@1 = neg(x0) -> float_type, {1}, {0}
@2 = @return(@1)
""")
    _, context = _run(program, "simplify_reshapes")
    assert context.statistics["find_gather_scalar applied"] == 1


def test_gather_on_axis_of_one_becomes_broadcast() -> None:
    program = parse_program("""module: "main"
x = @param:x -> float_type, {1, 4}, {4, 1}
@1 = @literal{0, 0, 0} -> int32_type, {3}, {1}
@2 = gather[axis=0](x,@1) -> float_type, {3, 4}, {4, 1}
@3 = @return(@2)
""")
    transformed, _ = _run(program, GATHER_PIPELINE)
    assert print_program(transformed).splitlines()[2] == (
        "@1 = multibroadcast[out_lens={3, 4},out_dyn_dims={}](x) -> float_type, {3, 4}, {0, 1}"
    )


LEFT_ALONE = {
    "dynamic data, scalar index": """module: "main"
d = @param:d -> dynamic, float_type, {[1..4], 3}
i = @param:i -> int32_type, {1}, {0}
@2 = gather[axis=1](d,i) -> dynamic, float_type, {[1..4], 1}
@3 = @return(@2)
""",
    "dynamic data, constant indices": """module: "main"
d = @param:d -> dynamic, float_type, {[1..4], 3}
@1 = @literal{0, 2} -> int32_type, {2}, {1}
@2 = gather[axis=1](d,@1) -> dynamic, float_type, {[1..4], 2}
@3 = @return(@2)
""",
    "indices out of range, elided or not constant": """module: "main"
x = @param:x -> float_type, {5, 2}, {2, 1}
@1 = @literal{1, 5} -> int32_type, {2}, {1}
@2 = gather[axis=0](x,@1) -> float_type, {2, 2}, {2, 1}
@3 = @literal{-6, 0} -> int32_type, {2}, {1}
@4 = gather[axis=0](x,@3) -> float_type, {2, 2}, {2, 1}
@5 = @literal{ ... } -> int32_type, {12}, {1}
@6 = gather[axis=0](x,@5) -> float_type, {12, 2}, {2, 1}
i = @param:i -> int32_type, {3}, {1}
@8 = gather[axis=0](x,i) -> float_type, {3, 2}, {2, 1}
@9 = @return(@2,@4,@6,@8)
""",
    "constant gather, index of other scalar shapes": """module: "main"
@0 = @literal{1, 2, 3} -> float_type, {3}, {1}
@1 = @literal{2} -> int32_type, {1}, {0}
@2 = gather[axis=0](@0,@1) -> float_type, {1}, {0}
x = @param:x -> float_type, {3}, {1}
i = @param:i -> int32_type, {1, 1}, {0, 0}
@5 = gather[axis=0](x,i) -> float_type, {1, 1}, {0, 0}
j = @param:j -> int32_type, {2}, {0}
@7 = gather[axis=0](x,j) -> float_type, {2}, {0}
@8 = @return(@2,@5,@7)
""",
    "not a gather: an add of scalars": """module: "main"
x = @param:x -> float_type, {1}, {0}
y = @param:y -> float_type, {1}, {0}
@2 = add(x,y) -> float_type, {1}, {0}
@3 = @return(@2)
""",
}


@pytest.mark.parametrize("by_root", [True, False])
@pytest.mark.parametrize("text", LEFT_ALONE.values(), ids=LEFT_ALONE.keys())
def test_gather_rewrites_leave_alone(text: str, by_root: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gathers of dynamic data, by indices out of range, elided or computed at run time, and ops
    that are not gathers stay as they are, and no rewrite says it applied (tried on every op too)."""
    monkeypatch.setattr(simplify_reshapes, "DISPATCH_BY_ROOT", by_root)
    program = parse_program(text)
    transformed, context = _run(program, GATHER_PIPELINE)
    assert print_program(transformed) == print_program(program)
    assert not context.statistics


FIXED_POINT_CASES = [
    (name, index, pipeline, case)
    for name in EXPECTED_OUTPUT_FILES
    for pipeline in sorted({run[0] for run in lit_runs(name)})
    for index, case in enumerate(lit_cases(name))
]


@pytest.mark.parametrize(
    ("name", "index", "pipeline", "text"),
    FIXED_POINT_CASES,
    ids=[f"{n}-{i}-{p}" for n, i, p, _ in FIXED_POINT_CASES],
)
def test_rewrites_say_applied_only_when_they_change(name: str, index: int, pipeline: str, text: str) -> None:
    """Run on its own output, the pass changes nothing and no rewrite counts itself applied (a
    rewrite that said it changed an unchanged program would make the pass loop for nothing).
    find_slice_shape_transforms is the exception, as in MIGraphX: where a sliced axis splits, it
    puts back the same views again."""
    once, _ = _run(parse_program(text), pipeline)
    twice, context = _run(once, pipeline)
    assert print_program(twice) == print_program(once)
    applied = {key.removesuffix(" applied") for key in context.statistics if key.endswith(" applied")}
    assert applied <= {"find_slice_shape_transforms"}


# (data length, indices) -> the views find_gather makes of a vector's gather (None: it stays a gather)
VECTOR_GATHERS: dict[tuple[int, tuple[int, ...]], list[str] | None] = {
    (14, (0, 1, 2, 10, 11, 13)): None,  # the second run of three does not step evenly
    (15, (0, 1, 2, 10, 12, 14)): None,  # two even runs of different steps
    (6, (3, 4, 5, 0, 1, 2)): None,  # runs that step down
    (5, (4, 1)): None,
    (5, (2,)): ["@1 = slice[axes={0},starts={2},ends={3}](data) -> float_type, {1}, {1}"],
    (5, (2, 3, 4)): ["@1 = slice[axes={0},starts={2},ends={5}](data) -> float_type, {3}, {1}"],
    (8, (1, 2, 3, 5, 6, 7)): [
        "@1 = reshape[dims={2, 4}](data) -> float_type, {2, 4}, {4, 1}",
        "@2 = slice[axes={1},starts={1},ends={4}](@1) -> float_type, {2, 3}, {4, 1}",
        "@3 = reshape[dims={6}](@2) -> float_type, {6}, {1}",
    ],
    (12, (0, 1, 4, 5, 8, 9)): [
        "@1 = reshape[dims={3, 4}](data) -> float_type, {3, 4}, {4, 1}",
        "@2 = slice[axes={1},starts={0},ends={2}](@1) -> float_type, {3, 2}, {4, 1}",
        "@3 = reshape[dims={6}](@2) -> float_type, {6}, {1}",
    ],
}


@pytest.mark.parametrize(("key", "views"), VECTOR_GATHERS.items(), ids=[str(k) for k in VECTOR_GATHERS])
def test_vector_gathers_become_views_only_when_strided(
    key: tuple[int, tuple[int, ...]], views: list[str] | None
) -> None:
    """Indices that walk the data in even strided runs become slices and reshapes of it; indices that
    almost do (a run with an uneven step, runs that step down) keep the gather. Values agree."""
    length, indices = key
    program = _gather_program((length,), 0, np.array(indices, dtype=np.int32))
    check_values(copy_of(program), GATHER_PIPELINE, seed=length)
    lines = print_program(_run(program, GATHER_PIPELINE)[0]).splitlines()
    if views is None:
        assert any(" = gather[axis=0](data," in line for line in lines)
    else:
        assert lines[2 : 2 + len(views)] == views
        assert not any("gather" in line for line in lines)


def lit_statistics() -> dict[str, dict[str, int]]:
    """What the pass counts (`--pass-statistics`: each rewrite applied, instructions removed) on each
    case of the lit files, under each of their pipelines."""
    found = {}
    for name, index, pipeline, text in FIXED_POINT_CASES:
        _, context = _run(parse_program(text), pipeline)
        found[f"{name} {pipeline} {index}"] = dict(sorted(context.statistics.items()))
    return found


RECORDED_STATISTICS = Path(__file__).parents[1] / "data" / "simplify_reshapes_lit_statistics.json"


def test_lit_statistics_recorded() -> None:
    """Which rewrites applied how often on each lit case is what was recorded when the CHECK lines
    held: a rewrite that changed the program but said it did not (so the pass stops looping early),
    or the other way round, shows here."""
    assert lit_statistics() == json.loads(RECORDED_STATISTICS.read_text())
