"""--to-dot labels: literals show their values as MIGraphX prints them, long operator texts are cut,
and a module used by two instructions is drawn once with an edge to each user."""

from __future__ import annotations

from mgxir.text.parser import parse_program
from mgxir.translate.dot import program_to_dot

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
    assert '"@0" [label="@literal{1}\\nbool_type, {1}, {0}"];' in dot
    (reshape,) = [line for line in dot.splitlines() if line.strip().startswith('"@2" [label=')]
    label = reshape.split('label="', 1)[1].split("\\n", 1)[0]
    assert len(label) == 120 and label.endswith("...")
    assert dot.count('subgraph "cluster_body"') == 1
    edges = [line.strip() for line in dot.splitlines() if line.strip().startswith('"body:(module)" ->')]
    assert [e.split(" -> ")[1].split(" ")[0] for e in edges] == ['"@3"', '"@3"', '"@4"', '"@4"']
