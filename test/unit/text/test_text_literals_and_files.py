"""Literal bodies that cannot be read get one message at the literal (bad numbers, values out of
range, hex of the wrong length, sidecar arrays that are missing or do not fit), and files are
written whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from mgxir.diagnostics import MgxError
from mgxir.ir.values import Braces, Brackets, OpNode, Seq, atoms_of
from mgxir.text.parser import parse_program
from mgxir.text.writer import render, write_atomically, write_output, write_program

LITERAL_ERRORS = [
    ("{1.5} -> int32_type, {1}, {1}", "bad int32_type literal value: invalid literal for int() with base 10: '1.5'"),
    ("{300} -> int8_type, {1}, {1}", "literal value 300 does not fit int8_type"),
    ("{-1} -> uint8_type, {1}, {1}", "literal value -1 does not fit uint8_type"),
    ("{2} -> bool_type, {1}, {1}", "bad bool_type literal value: '2' is not 0 or 1"),
    ("{hex:0g} -> int8_type, {1}, {1}", "bad hex digits in literal"),
    ("{hex:0102} -> int8_type, {1}, {1}", "hex literal has 2 bytes, the shape needs 1"),
    ("{npz:a} -> float_type, {3}, {1}", "expected npz:FILE:KEY"),
    ("{npz:missing.npz:a} -> float_type, {3}, {1}", "sidecar missing.npz cannot be read: No such file or directory"),
    ("{npz:side.npz:c} -> float_type, {3}, {1}", "sidecar side.npz has no array 'c'"),
    ("{npz:side.npz:b} -> float_type, {3}, {1}", "sidecar array 'b' has dtype int64, the shape needs float_type"),
    ("{npz:side.npz:a} -> float_type, {4}, {1}", "sidecar array 'a' has 3 values, the shape has 4 elements"),
]


def _program(literal: str) -> str:
    return f'module: "main"\n@0 = @literal{literal}\n@1 = @return(@0)\n'


@pytest.mark.parametrize(("literal", "message"), LITERAL_ERRORS)
def test_literal_errors_point_at_the_literal(tmp_path: Path, literal: str, message: str) -> None:
    np.savez(tmp_path / "side.npz", a=np.arange(3, dtype=np.float32), b=np.arange(3, dtype=np.int64))
    with pytest.raises(MgxError) as raised:
        parse_program(_program(literal), "p.mgx", base_dir=tmp_path)
    assert str(raised.value).splitlines()[0] == f"p.mgx:2:14: error: {message}"


def test_sidecar_and_bool_literals_read(tmp_path: Path) -> None:
    half = np.array([1.5, -2.0], np.float16)
    np.savez(tmp_path / "side.npz", h=half.view(np.uint16))  # half precision kept as its bits
    program = parse_program(_program("{npz:side.npz:h} -> half_type, {2}, {1}"), base_dir=tmp_path)
    np.testing.assert_array_equal(next(iter(program.modules["main"])).literal.data, half)
    program = parse_program(_program("{true, false, 1} -> bool_type, {3}, {1}"))
    assert next(iter(program.modules["main"])).literal.data.tolist() == [True, False, True]


def test_write_atomically_keeps_the_old_file_on_failure(tmp_path: Path) -> None:
    with pytest.raises(MgxError, match=r"^error: cannot write .*/absent/out.mgx: No such file or directory$"):
        write_atomically(tmp_path / "absent" / "out.mgx", "x")
    (tmp_path / "taken").mkdir()
    with pytest.raises(MgxError, match=r"^error: cannot write .*/taken: Is a directory$"):
        write_atomically(tmp_path / "taken", "x")
    target = tmp_path / "kept.txt"
    target.write_text("old")
    with pytest.raises(TypeError):
        write_atomically(target, 42)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["kept.txt", "taken"]  # no temporary file left behind


def test_write_output_writes_bytes_and_text_to_stdout(capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    write_output(b"\x00\x01", None)
    write_output("text", "-")
    assert capfdbinary.readouterr().out == b"\x00\x01text"


def test_write_program_to_stdout_with_a_sidecar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = [1.5, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    program = parse_program(_program("{" + ", ".join(map(str, values)) + "} -> float_type, {11}, {1}"))
    sidecar = tmp_path / "data.npz"
    write_program(program, None, sidecar=str(sidecar))
    text = capsys.readouterr().out
    assert f"@literal{{npz:{sidecar}:" in text
    again = parse_program(text)
    np.testing.assert_array_equal(next(iter(again.modules["main"])).literal.data, values)


def test_parsed_values_compare_by_kind_and_items() -> None:
    assert Seq(("a", "b")) == Seq(("a", "b")) and hash(Seq(("a",))) == hash(Seq(("a",)))
    assert Seq(("a",)) != Braces(("a",)) and hash(Braces(("a",))) != hash(Brackets(("a",)))
    assert repr(Brackets(("1",))) == "Brackets(items=('1',))"
    node = OpNode("relu", (("k", "1"),))
    assert node == OpNode("relu", (("k", "1"),)) and node != OpNode("relu", ()) and node != "relu"
    assert hash(node) == hash(OpNode("relu", (("k", "1"),)))
    assert repr(node) == "OpNode(name='relu', attributes=(('k', '1'),))"
    assert atoms_of(Braces(("1", "2"))) == ("1", "2") and atoms_of("x") == ("x",)


def test_render_prints_as_migraphx_unless_asked_for_lossless_text() -> None:
    values = ", ".join("%g" % (i / 10) for i in range(20))
    program = parse_program(
        f'module: "main"\n@0 = @literal{{{values}}} -> float_type, {{20}}, {{1}}\n@1 = @return(@0)\n'
    )
    text, arrays = render(program)
    assert text == 'module: "main"\n@0 = @literal{ ... } -> float_type, {20}, {1}\n@1 = @return(@0)\n\n\n'
    assert arrays == {}
    assert render(program, lossless=True)[0].startswith(f'module: "main"\n@0 = @literal{{{values}}}')


def test_a_sidecar_is_opened_once_for_all_its_literals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading is linear in the literals: the archive is opened once (mgxir.arrayfiles.NpzArchive), not
    once per literal."""
    arrays = {f"k{i}": np.full(11, i, np.float32) for i in range(50)}
    np.savez(tmp_path / "side.npz", **arrays)
    lines = [f"@{i} = @literal{{npz:side.npz:k{i}}} -> float_type, {{11}}, {{1}}" for i in range(50)]
    text = 'module: "main"\n' + "\n".join(lines) + "\n@50 = @return(" + ",".join(f"@{i}" for i in range(50)) + ")\n"
    import mgxir.arrayfiles

    loads: list[object] = []
    real_open = mgxir.arrayfiles.NpzArchive
    monkeypatch.setattr(mgxir.arrayfiles, "NpzArchive", lambda path: loads.append(path) or real_open(path))
    program = parse_program(text, "p.mgx", base_dir=tmp_path)
    assert len(loads) == 1
    data = [ins.literal.data for ins in program.main if ins.is_literal]
    assert [int(d[0]) for d in data] == list(range(50)) and all(d.shape == (11,) for d in data)


def test_large_literals_written_with_o_go_to_one_sidecar_and_read_back(tmp_path: Path) -> None:
    big = np.arange(300_000, dtype=np.float32)  # past the size for a sidecar
    values = ", ".join(str(i) for i in range(11))
    program = parse_program(
        f'module: "main"\n@0 = @literal{{hex:{big.tobytes().hex()}}} -> float_type, {{300000}}, {{1}}\n'
        f"@1 = @literal{{{values}}} -> int32_type, {{11}}, {{1}}\n"
        "@2 = @literal{0.1, 2} -> float_type, {2}, {1}\n@3 = @return(@0,@1,@2)\n"
    )
    write_program(program, str(tmp_path / "p.mgx"), lossless=True)
    text = (tmp_path / "p.mgx").read_text()
    assert "@0 = @literal{npz:p.npz:@0}" in text and "@1 = @literal{npz:p.npz:@1}" in text
    assert "@2 = @literal{0.1, 2} -> float_type, {2}, {1}" in text  # as MIGraphX prints it: exact
    again = parse_program(text, "p.mgx", base_dir=tmp_path)
    np.testing.assert_array_equal(again.main.first.literal.data, big)
