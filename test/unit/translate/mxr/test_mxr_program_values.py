"""Program files (MIGraphX's .mxr / JSON value tree) that are damaged give one line naming the file
and the place; programs with values JSON cannot hold (NaN, binary data) are written as nlohmann
writes them and read back."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.text.parser import parse_program
from mgxir.translate.mxr import json_text, load_json, load_mxr, mxr_bytes

FLOAT2 = {"type": "float_type", "lens": [2], "strides": [1]}
PARAM = {"output": "x", "name": "@param", "operator": {"parameter": "x"}, "shape": FLOAT2}


def _doc(nodes: list, **extra) -> str:
    return json.dumps({"version": 8, "modules": {"main": {"nodes": nodes}}, **extra})


def _error(text: str) -> str:
    with pytest.raises(MgxError) as caught:
        load_json(text, "p.json")
    message = caught.value.render()
    assert "\n" not in message.strip() and "Traceback" not in message
    return message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (json.dumps({"version": 8}), "p.json: not a MIGraphX program file: no 'modules'"),
        (json.dumps({"modules": {}}), "p.json: not a MIGraphX program file: no 'version'"),
        (json.dumps({"version": 8, "modules": {"f": {"nodes": []}}}), "p.json: the program has no module 'main'"),
        (json.dumps({"version": 8, "modules": {"main": 3}}), "p.json: module 'main' should be an object"),
        (_doc([{"output": "x", "name": "@param"}]), "p.json: module 'main', node 0: no 'shape'"),
        (
            _doc([{"output": 1, "name": "@param", "shape": FLOAT2}]),
            "p.json: module 'main', node 0: 'output' and 'name' should be strings",
        ),
        (
            _doc([{"output": "l", "name": "@literal", "shape": FLOAT2}]),
            "p.json: module 'main', node 0: a literal without 'literal'",
        ),
        (
            _doc([PARAM, {"output": "r", "name": "if", "shape": FLOAT2, "inputs": ["x"], "module_inputs": ["then"]}]),
            "p.json: an instruction refers to module 'then', which the file does not have",
        ),
    ],
)
def test_damaged_program_values(text: str, message: str) -> None:
    assert message in _error(text)


def test_targets_are_ignored_with_a_warning() -> None:
    sink = DiagnosticSink()
    program = load_json(_doc([PARAM], targets=[{"name": "gpu"}]), "t.json", sink)
    assert [w.message for w in sink.warnings] == ["t.json: compiled for 1 target(s); the target contexts are ignored"]
    assert program.main.parameter_names() == ["x"]


def test_an_empty_program_has_an_empty_main() -> None:
    assert [m.name for m in load_json(json.dumps({"version": 8, "modules": {}})).modules.values()] == ["main"]


def test_nan_and_infinity_are_written_as_null_as_nlohmann_does() -> None:
    text = (
        'module: "main"\nx = @param:x -> float_type, {2}, {1}\n'
        "y = leaky_relu[alpha=inf](x) -> float_type, {2}, {1}\n@2 = @return(y)\n"
    )
    program = parse_program(text, "n.mgx")
    written = json_text(program)
    assert '"alpha":null' in written
    assert "Infinity" not in written and "NaN" not in written


def test_literals_round_trip_through_mxr_and_json() -> None:
    text = 'module: "main"\nl = @literal{1.5, -2} -> float_type, {2}, {1}\n@1 = @return(l)\n'
    program = parse_program(text, "l.mgx")
    data = np.array([1.5, -2.0], np.float32)
    for back in (load_mxr(mxr_bytes(program)), load_json(json_text(program))):
        (literal,) = [i for i in back.main if i.op.name == "@literal"]
        assert np.array_equal(literal.op.values[0].data, data)


def test_an_instruction_without_a_shape_cannot_be_saved() -> None:
    text = 'module: "main"\nx = @param:x -> float_type, {2}, {1}\ny = relu(x)\n@2 = @return(y)\n'
    with pytest.raises(MgxError, match=r"cannot save '@1' \(relu\) in module 'main': its shape is unknown"):
        mxr_bytes(parse_program(text, "u.mgx"))


@pytest.mark.parametrize("bad", ["f\nloat_type", "float\r_type", "fl\x00oat"])
def test_a_name_from_the_file_with_control_characters_stays_one_line(bad: str) -> None:
    """A damaged file's strings are quoted with their control characters escaped: the error is one
    line (a hypothesis case of test_compiled_programs found a newline in a type name)."""
    program = parse_program('module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = @return(x)\n')
    text = json_text(program).replace('"float_type"', json.dumps(bad), 1)
    with pytest.raises(MgxError) as caught:
        load_json(text, "bad.json")
    assert len(str(caught.value).splitlines()) == 1
    assert "unknown type" in str(caught.value)
