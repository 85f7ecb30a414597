"""MIGraphX's own files: random programs come back the same through .mxr, .json and --to-py; the
golden files MIGraphX wrote load, and what mgxir writes has their structure key by key."""

from __future__ import annotations

from pathlib import Path

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from test_text_roundtrip import programs

from mgxir import DiagnosticSink, MgxError, PrintOptions, Program, parse_program, print_program, read_program, verify
from mgxir.ir.registry import all_ops
from mgxir.translate.mxr import json_text, load_json, load_mxr, mxr_bytes
from mgxir.translate.mxr.encoding import from_json, from_msgpack, to_json, to_msgpack
from mgxir.translate.mxr.values import operation_from_value, operation_to_value
from mgxir.translate.py.reader import program_from_script
from mgxir.translate.py.writer import program_to_script

EXAMPLES = Path(__file__).resolve().parents[4] / "shared" / "reference" / "migraphx-examples"
needs_examples = pytest.mark.skipif(not EXAMPLES.is_dir(), reason="needs ../shared/reference/migraphx-examples")


def _lossless(program: Program) -> str:
    return print_program(program, PrintOptions(lossless=True))


def _literal_bits(program: Program) -> list[bytes]:
    return [
        np.ascontiguousarray(ins.literal.data).tobytes() for m in program.print_order() for ins in m if ins.is_literal
    ]


def _same_program(again: Program, program: Program) -> None:
    verify(again)
    assert _lossless(again) == _lossless(program)
    assert _literal_bits(again) == _literal_bits(program)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_round_trip_through_mxr(program: Program) -> None:
    verify(program)
    _same_program(load_mxr(mxr_bytes(program)), program)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_round_trip_through_json(program: Program) -> None:
    verify(program)
    _same_program(load_json(json_text(program)), program)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_round_trip_through_python(program: Program) -> None:
    verify(program)
    _same_program(program_from_script(program_to_script(program), "<to-py>"), program)


def structure_differences(ours: object, theirs: object, path: str = "") -> list[str]:
    """Where two value trees differ in keys, key order, kinds or values (literal bytes aside)."""
    if type(ours) is not type(theirs):
        return [f"{path}: {type(ours).__name__} vs {type(theirs).__name__}"]
    if isinstance(ours, dict):
        assert isinstance(theirs, dict)
        if list(ours) != list(theirs):
            return [f"{path}: keys {list(ours)} vs {list(theirs)}"]
        return [d for k in ours if k != "data" for d in structure_differences(ours[k], theirs[k], f"{path}/{k}")]
    if isinstance(ours, list):
        assert isinstance(theirs, list)
        if len(ours) != len(theirs):
            return [f"{path}: {len(ours)} items vs {len(theirs)}"]
        return [d for i, (a, b) in enumerate(zip(ours, theirs)) for d in structure_differences(a, b, f"{path}[{i}]")]
    return [] if ours == theirs else [f"{path}: {ours!r} vs {theirs!r}"]


def _golden(suffix: str) -> list[Path]:
    return sorted(EXAMPLES.glob(f"*{suffix}")) if EXAMPLES.is_dir() else []


@needs_examples
@pytest.mark.parametrize("golden", _golden(".mxr"), ids=lambda p: p.stem)
def test_text_saved_as_mxr_has_the_golden_structure(golden: Path) -> None:
    """The program read from MIGraphX's printed text, saved by mgxir, has every key of the file
    MIGraphX saved, in its order, with its values (literal bytes aside: the text elides them)."""
    program = read_program(golden.with_suffix(".read.txt"))
    verify(program)
    ours = msgpack.unpackb(mxr_bytes(program), raw=False, strict_map_key=False)
    theirs = msgpack.unpackb(golden.read_bytes(), raw=False, strict_map_key=False)
    differences = structure_differences(ours, theirs)
    if golden.stem == "dyn":  # the printed text leaves out optimal sizes of dynamic dimensions
        assert differences and all(d.endswith("optimals: 0 items vs 1") for d in differences)
    else:
        assert differences == []


@needs_examples
@pytest.mark.parametrize("golden", _golden(".mxr") + _golden(".json"), ids=lambda p: p.name)
def test_golden_files_load_and_save_byte_for_byte(golden: Path) -> None:
    sink = DiagnosticSink()
    if golden.suffix == ".mxr":
        program = load_mxr(golden.read_bytes(), str(golden), sink)
    else:
        program = load_json(golden.read_text(), str(golden), sink)
    verify(program, sink)
    assert sink.warnings == []
    assert print_program(program) == golden.with_suffix(".read.txt").read_text()
    if golden.suffix == ".mxr":
        assert mxr_bytes(program) == golden.read_bytes()
    else:
        assert json_text(program) == golden.read_text().rstrip("\n")


def test_versions_other_than_7_and_8_are_refused() -> None:
    program = read_program_text('module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = relu(x)\n')
    value = msgpack.unpackb(mxr_bytes(program), raw=False, strict_map_key=False)
    value["version"] = 6
    with pytest.raises(MgxError, match=r"unsupported program file version 6 .* reads versions 7, 8"):
        load_mxr(msgpack.packb(value), "old.mxr")
    value["version"] = 7  # ROCm 6.0 to 7.2: the same structure without debug symbols
    load_mxr(msgpack.packb(value), "v7.mxr")


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "not a MIGraphX .mxr file: not valid msgpack"),
        (b"\x85\xa7version", "not a MIGraphX .mxr file"),
        (msgpack.packb([1, 2]), "the file should be an object"),
        (msgpack.packb({"modules": {}}), "no 'version'"),
        (msgpack.packb({"version": 8, "modules": {"f": {"name": "f", "nodes": []}}}), "has no module 'main'"),
        (
            msgpack.packb({"version": 8, "modules": {"main": {"name": "main", "nodes": [{"output": "@0"}]}}}),
            "module 'main', node 0: no 'name'",
        ),
    ],
)
def test_damaged_files_give_one_clear_error(data: bytes, message: str) -> None:
    with pytest.raises(MgxError, match=message):
        load_mxr(data, "bad.mxr")


def test_strided_literals_are_saved_in_memory_order() -> None:
    """MIGraphX keeps a literal's memory (its shape's bytes), not its values in logical order."""
    text = 'module: "main"\n@0 = @literal{1, 2, 3, 4} -> float_type, {2, 2}, {1, 2}\n@1 = @return(@0)\n'
    program = read_program_text(text)
    node = msgpack.unpackb(mxr_bytes(program), raw=False)["modules"]["main"]["nodes"][0]
    assert np.frombuffer(b"".join(node["literal"]["data"]), np.float32).tolist() == [1, 3, 2, 4]
    assert print_program(load_mxr(mxr_bytes(program))) == print_program(program)


def read_program_text(text: str) -> Program:
    program = parse_program(text)
    verify(program)
    return program


def test_one_element_shapes_keep_their_strides_through_python() -> None:
    """--py writes `lens=[1]` for both {1},{1} and {1},{0}; --to-py writes the strides that
    differ from what the reader assumes (scalar for literals and submodule parameters)."""
    text = (
        'module: "main"\n'
        "@0 = @literal{2} -> float_type, {1}, {1}\n"
        "@1 = @literal{3} -> float_type, {1}, {0}\n"
        "a = @param:a -> float_type, {1}, {0}\n"
        "b = @param:b -> float_type, {1}, {1}\n"
        "@4 = pointwise(a,b), [main:pointwise0] -> float_type, {1}, {1}\n"
        "@5 = @return(@4,@0,@1)\n\n"
        'module: "main:pointwise0"\n'
        "main:pointwise0:x1 = @param:x1 -> float_type, {1}, {1}\n"
        "main:pointwise0:x0 = @param:x0 -> float_type, {1}, {0}\n"
        "main:pointwise0:@2 = add(main:pointwise0:x0,main:pointwise0:x1) -> float_type, {1}, {1}\n"
        "main:pointwise0:@3 = @return(main:pointwise0:@2)\n"
    )
    program = read_program_text(text)
    _same_program(program_from_script(program_to_script(program), "<to-py>"), program)


def test_every_operator_attribute_round_trips_through_its_value() -> None:
    """Each operator's attributes (every attribute kind) give a value that reads back the same,
    through both encodings."""
    for name, defn in sorted(all_ops().items()):
        if defn.is_builtin or defn.is_opaque or name == "unknown:" or "::" in name:  # targets' ops (gpu::...)
            continue
        op = defn.make()
        value = operation_to_value(op)
        for decoded in (from_msgpack(to_msgpack(value)), from_json(to_json(value))):
            assert operation_from_value(name, decoded) == op, name
