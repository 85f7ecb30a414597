"""The layout the README describes holds: layers import only downward, no package has an import
cycle (deferred imports included), and the code is ruff clean."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mgxir.ir import traits
from mgxir.ir.registry import all_ops

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if found is None:
        pytest.fail(f"'{name}' is not installed: it comes with the dev extra")
    return found


def test_import_contracts_hold() -> None:
    result = subprocess.run(
        [_tool("lint-imports"), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_import_linter_sees_a_layer_break(tmp_path: Path) -> None:
    """The contract is live: a module of `ir` importing `passes` breaks it."""
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "mgxir", copy / "mgxir", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    shape = copy / "mgxir" / "ir" / "dtype.py"
    shape.write_text(shape.read_text() + "\nimport mgxir.passes.manager  # noqa\n")
    result = subprocess.run(
        [_tool("lint-imports"), "--no-cache"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(copy), "PATH": str(BIN)},
    )
    assert result.returncode != 0
    assert "mgxir.ir is not allowed to import mgxir.passes" in result.stdout


def test_ruff_clean() -> None:
    paths = [p for p in ("mgxir", "tools", "test", "bench") if (REPO / p).exists()]
    for command in (["check"], ["format", "--check"]):
        result = subprocess.run(
            [_tool("ruff"), *command, *paths], cwd=REPO, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout[-4000:]


# -- op categories are traits on the definitions, not lists of names in the passes ----------------

ANALYSED = ("mgxir/passes", "mgxir/analysis")


def _op_name_collections(source: str, op_names: set[str]) -> list[tuple[int, list[str]]]:
    """Literal sets, tuples and lists holding two or more registered op names: (line, names)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Set | ast.Tuple | ast.List):
            names = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in op_names]
            if len(names) >= 2:
                found.append((node.lineno, names))
    return found


def test_no_op_name_collections_in_passes() -> None:
    op_names = set(all_ops())
    offenders = [
        f"{path.relative_to(REPO)}:{line}: {names}"
        for folder in ANALYSED
        for path in sorted((REPO / folder).rglob("*.py"))
        for line, names in _op_name_collections(path.read_text(), op_names)
    ]
    assert not offenders, "op categories belong on the definitions as traits:\n" + "\n".join(offenders)


def test_op_name_collections_are_found() -> None:
    """The check above is live: it finds a category written as names, and leaves other strings."""
    op_names = set(all_ops())
    source = 'A = frozenset({"broadcast", "multibroadcast"})\nB = ("true", "1")\nC = ("dot", x)\n'
    assert _op_name_collections(source, op_names) == [(1, ["broadcast", "multibroadcast"])]


def _migraphx_ops(kinds: set[str]) -> set[str]:
    """Ops of migraphx-ops.md of these kinds (`unary`, `binary`: MIGraphX's op/unary.hpp and
    op/binary.hpp, which give the "pointwise" attribute)."""
    if not OPS_REFERENCE.exists():
        pytest.skip(f"{OPS_REFERENCE} is missing")
    out = set()
    for row in OPS_REFERENCE.read_text().splitlines():
        cells = [c.strip() for c in row.split("|")]
        if len(cells) > 3 and cells[1].startswith("`") and cells[2] in kinds:
            out.add(cells[1].strip("`"))
    return out


OPS_REFERENCE = REPO.parent / "shared" / "reference" / "migraphx-ops.md"

# Where MIGraphX keeps the same category: the members it names (src/... of AMDMIGraphX)
MIGRAPHX_MEMBERS: dict[type[traits.Trait], set[str]] = {
    # op/reduce_op.hpp, op/argmax.hpp, op/argmin.hpp: attributes() {"reduce", true}
    traits.Reduction: {
        "reduce_sum",
        "reduce_mean",
        "reduce_max",
        "reduce_min",
        "reduce_prod",
        "reduce_any",
        "reduce_all",
        "argmin",
        "argmax",
    },
    # simplify_reshapes.cpp: find_nested_shape_transforms::shape_transform_ops()
    traits.ShapeTransform: {"flatten", "reshape", "squeeze", "unsqueeze", "transpose", "broadcast", "multibroadcast"},
    # simplify_reshapes.cpp: find_concat_multibroadcasts, find_op_shape_transform_op ({"multibroadcast", "broadcast"})
    traits.Broadcasting: {"broadcast", "multibroadcast"},
    # simplify_reshapes.cpp: find_nop_reshapes' shape_names and lens_names
    traits.NopWhenShapeKept: {
        "flatten",
        "reshape",
        "contiguous",
        "squeeze",
        "unsqueeze",
        "as_shape",
        "broadcast",
        "concat",
        "convert",
        "multibroadcast",
        "pad",
        "slice",
        "step",
        "transpose",
    },
    traits.NopWhenLensKept: {"reduce_mean", "reduce_max", "reduce_min", "reduce_sum", "reduce_prod"},
    # simplify_algebra.cpp: find_dot_slice's name("dot", "quant_dot")
    traits.Contraction: {"dot", "quant_dot"},
    # simplify_algebra.cpp: find_conv_dot_horiz_fusion's {"quant_dot", "dot", "convolution"}
    traits.HorizontallyFusable: {"dot", "quant_dot", "convolution"},
    # rewrite_rnn.cpp: the ops it unrolls
    traits.Recurrent: {"rnn", "gru", "lstm"},
    # eliminate_pad.cpp and insert_pad.cpp: name("convolution", "im2col", "pooling")
    traits.PaddedWindow: {"convolution", "im2col", "pooling"},
    # matcher.hpp: has_value's skip(name("broadcast", "multibroadcast", "contiguous", "convert"))
    traits.ValueTransparent: {"broadcast", "multibroadcast", "contiguous", "convert"},
    # propagate_constant.cpp: skip_propagate
    traits.FoldsWithItsInput: {"contiguous", "dequantizelinear", "reshape"},
    traits.NeverFolded: {"unpack_int4", "unpack_fp4", "undefined"},
    # simplify_algebra.cpp: find_concat_op's {"broadcast", "multibroadcast", "unpack_int4"}
    traits.ConcatOperand: {"broadcast", "multibroadcast", "unpack_int4"},
    # simplify_algebra.cpp: eliminate_zero_point's qdq_names
    traits.ZeroPointed: {"quantizelinear", "dequantizelinear"},
    # simplify_reshapes.cpp: find_concat_reshape's names, and flatten (the descriptor's reshapes)
    traits.Reshaper: {"reshape", "unsqueeze", "squeeze", "reshape_lazy", "flatten"},
    traits.ArgReduction: {"argmin", "argmax"},
    # fuse_pointwise.cpp, fuse_reduce.cpp, split_reduce.cpp: the ops over the modules they set_bypass()
    traits.FusedBody: {"pointwise", "fused_reduce", "split_fused_reduce"},
}


def _members(trait: type[traits.Trait]) -> set[str]:
    return {name for name, defn in all_ops().items() if defn.has(trait)}


@pytest.mark.parametrize("trait", MIGRAPHX_MEMBERS, ids=lambda t: t.__name__)
def test_trait_members_are_migraphx(trait: type[traits.Trait]) -> None:
    assert _members(trait) == MIGRAPHX_MEMBERS[trait]


def test_every_trait_is_checked() -> None:
    declared = {t for t in vars(traits).values() if isinstance(t, type) and issubclass(t, traits.Trait)}
    assert declared - {traits.Trait, traits.Pointwise} == set(MIGRAPHX_MEMBERS)


def test_reduction_is_migraphx_reduce_ops() -> None:
    reductions = {name for name in _migraphx_ops({""}) if name.startswith("reduce_")}
    assert reductions <= _members(traits.Reduction)


def test_pointwise_covers_migraphx_unary_and_binary() -> None:
    expected = _migraphx_ops({"unary", "binary"}) & set(all_ops())
    assert expected - _members(traits.Pointwise) == set()
