"""--to-dot: each node names its instruction, shows its operator text (long texts cut) and its
shape once (edges carry no labels), and is filled with its operator family's colour, read off the
registry's traits and flags; a legend names the families drawn, and a module used by two
instructions is drawn once with an edge to each user."""

from __future__ import annotations

import pytest

from mgxir.ir.registry import lookup
from mgxir.ops import register_all_ops
from mgxir.text.parser import parse_program
from mgxir.translate.dot import FAMILIES, op_family, program_to_dot

_ONES = ", ".join(["1"] * 40)
TEXT = f"""module: "main"
c = @literal{{1}} -> bool_type, {{1}}, {{0}}
x = @param:x -> float_type, {{2}}, {{1}}
r = reshape[dims={{1, 2, {_ONES}}}](x) -> float_type, {{1, 2, {_ONES}}}
a = if(c), [body, body] -> [float_type, {{2}}, {{1}}]
b = if(c), [body, body] -> [float_type, {{2}}, {{1}}]
@5 = @return(a,b)

module: "body"
body:@0 = @return(x)
"""


def test_labels_and_a_shared_module() -> None:
    dot = program_to_dot(parse_program(TEXT, "d.mgx"))
    assert '"@0" [label="@0 = @literal{1}\\nbool_type, {1}, {0}", fillcolor="#e5e5e5"];' in dot
    assert '"x" [label="x = @param\\nfloat_type, {2}, {1}", fillcolor="#b3cde3"];' in dot
    (reshape,) = [line for line in dot.splitlines() if line.strip().startswith('"@2" [label=')]
    label = reshape.split('label="', 1)[1].split("\\n", 1)[0]
    assert label.startswith("@2 = reshape[dims={1, 2, 1, ") and label.endswith("...")
    assert len(label) == len("@2 = ") + 48  # the operator text cut at 48 characters
    assert dot.count('subgraph "cluster_body"') == 1
    edges = [line.strip() for line in dot.splitlines() if line.strip().startswith('"body:(module)" ->')]
    assert [e.split(" -> ")[1].split(" ")[0] for e in edges] == ['"@3"', '"@3"', '"@4"', '"@4"']
    assert '"x" -> "@2" [weight=8];' in dot  # the shape is on the node, not on the edge
    assert '"c" -> "@3" [weight=8];' not in dot and '"@0" -> "@3" [weight=8];' in dot
    legend = dot[dot.index('subgraph "cluster_(legend)"') :]
    assert [line.split('label="')[1].split('"')[0] for line in legend.splitlines()[2:-2]] == [
        "parameter",
        "literal",
        "return",
        "layout",
        "submodules",
    ]


@pytest.mark.parametrize(
    ("op", "family"),
    [
        ("convolution", "contraction"),
        ("dot", "contraction"),
        ("quant_dot", "contraction"),
        ("pooling", "window"),
        ("reduce_sum", "reduction"),
        ("argmax", "reduction"),
        ("add", "pointwise"),
        ("relu", "pointwise"),
        ("reshape", "layout"),
        ("transpose", "layout"),
        ("multibroadcast", "layout"),
        ("slice", "layout"),  # a view
        ("get_tuple_elem", "layout"),
        ("lstm", "recurrent"),
        ("if", "submodules"),
        ("pointwise", "submodules"),
        ("@param", "parameter"),
        ("@return", "return"),
    ],
)
def test_families_come_from_the_registry(op: str, family: str) -> None:
    register_all_ops()
    defn = lookup(op)
    assert defn is not None
    assert op_family(defn) == family


def test_every_family_has_its_own_colour() -> None:
    colours = [colour for _, colour, _ in FAMILIES]
    assert len(set(colours)) == len(colours) and FAMILIES[-1][0] == "other"
