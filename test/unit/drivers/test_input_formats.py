"""`mgxir.drivers.formats.input_format` tells the input formats apart by their first bytes, whatever
the file is called; a Python reproducer is never recognised (it is code, read only with --from-py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mgxir.diagnostics import MgxError
from mgxir.drivers.formats import INPUT_FORMATS, input_format
from mgxir.drivers.translate import READERS

HEADS = [
    (b"ML\xefR\x00\x06", "mlirbc"),
    (b"\x85\xa7version\x08", "mxr"),  # msgpack fixmap
    (b"\xde\x00\x10", "mxr"),  # msgpack map 16
    (b"\x08\x07\x12\x09gemm_test", "onnx"),  # ir_version first
    (b"\x3a\xa3\x01\x0a\x42\x0a\x01A\xff", "onnx"),  # graph first, no ir_version
    (b' \n{"contexts":[],"modules":{}}', "json"),
    (b"module {\n  func.func @main() {\n", "mlir"),
    (b"// RUN: x\n\n  module attributes {torch.debug} {\n", "mlir"),
    (b"#map = affine_map<(d0) -> (d0)>\nmodule {\n", "mlir"),
    (b'"builtin.module"() ({\n', "mlir"),
    (b"func.func @f() {\n", "mlir"),
    (b'module: "main"\nx = @param:x -> float_type, {2}, {1}\n', "mgx"),
    (b"# a comment\nx = @param:x -> float_type, {2}, {1}\n", "mgx"),
    (b"module_x = relu(y)\n", "mgx"),
    (b"Pass: dce\n\x1b[31mRun instruction: @0 = relu(x)\x1b[0m\n", "mgx"),  # a log (with colours) is text
    (b"", "mgx"),
    (b"x = @param:\xc3\xa9 -> float_type, {2}, {1}\n", "mgx"),
    (b"#" * 4095 + b"\xc3\xa9\n", "mgx"),  # a character cut off where the part looked at ends
    (b"import migraphx\np = migraphx.program()\n", "mgx"),  # code is not sniffed as code
]


@pytest.mark.parametrize(("head", "expected"), HEADS)
def test_formats_are_told_apart_by_their_first_bytes(tmp_path: Path, head: bytes, expected: str) -> None:
    path = tmp_path / "input.data"
    path.write_bytes(head)
    assert input_format(str(path)) == expected


@pytest.mark.parametrize(
    "head", [b"\x01\x02\x03binary", b"\x00\x00\x00\x00", b"x = relu(y)\x00\n", b"\xff\xfe\xfd", b"x\xc3"]
)
def test_binary_data_in_no_format_gets_one_line(tmp_path: Path, head: bytes) -> None:
    path = tmp_path / "junk"
    path.write_bytes(head)
    with pytest.raises(MgxError) as raised:
        input_format(str(path))
    assert str(raised.value) == (
        f"error: {path} is in none of the formats mgxir reads (MLIR bytecode, .mxr, ONNX, JSON, MLIR, program text;"
        " --from-py for a Python reproducer)"
    )


def test_a_missing_file_is_named() -> None:
    with pytest.raises(MgxError, match=r"^error: cannot read /nonexistent/x: No such file or directory$"):
        input_format("/nonexistent/x")


def test_the_readers_are_the_table_of_formats() -> None:
    assert READERS == {name: form.reader for name, form in INPUT_FORMATS.items()}
    assert [name for name, form in INPUT_FORMATS.items() if form.recognise is None] == ["log", "py"]
