"""The drivers called in-process, checked exactly: their messages, exit codes and printed outputs
(written against the mutants scripts/mutation.py found surviving the lit bridge and the tool tests;
lit runs the tools in fresh processes that never see a mutant)."""

from __future__ import annotations

import gc
import io
import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from mgxir.diagnostics import Diagnostic, MgxError
from mgxir.drivers import common, diagnostics_check, run, translate
from mgxir.drivers.common import check_output_path, in_deep_stack, load_entry, read_text, run_guarded
from mgxir.drivers.diagnostics_check import Chunk, check, expectations
from mgxir.drivers.opt import OptOptions, opt_main
from mgxir.drivers.roundtrip import roundtrip_main
from mgxir.drivers.run import (
    RunOptions,
    compare,
    filled,
    flatten_outputs,
    format_value,
    gather_inputs,
    parse_inline,
    rms_error,
    run_main,
    to_parameter_type,
)
from mgxir.drivers.translate import TranslateOptions, conflicting_formats, spelled_formats, translate_main
from mgxir.ir.dtype import DType
from mgxir.ir.shape import Shape
from mgxir.targets.base import TARGETS, TargetEntry, find_target
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program

PROGRAM = 'module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = neg(x) -> float_type, {2}, {1}\n'
PRINTED = PROGRAM + "\n\n"  # the printer ends a module with blank lines
TWO_PARAMS = (
    'module: "main"\nx = @param:x -> float_type, {2}, {1}\ny = @param:y -> int64_type, {2}, {1}\n'
    "@2 = convert[target_type=2](y) -> float_type, {2}, {1}\n@3 = add(x,@2) -> float_type, {2}, {1}\n"
)


@pytest.fixture(autouse=True)
def collector_back_on():
    """run_guarded turns the cycle collector off for the life of a tool's process."""
    yield
    gc.enable()


def _write(tmp_path: Path, text: str, name: str = "p.mgx") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# -- common ------------------------------------------------------------------------------------


def test_read_text_errors_name_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(MgxError, match=r"^error: cannot read .*nosuch\.mgx: No such file or directory$"):
        read_text(str(tmp_path / "nosuch.mgx"))
    (tmp_path / "bin.mgx").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(MgxError, match=r"^error: .*bin\.mgx is not UTF-8 text$"):
        read_text(str(tmp_path / "bin.mgx"))
    monkeypatch.setattr(sys, "stdin", io.StringIO("from stdin"))
    assert read_text("-") == "from stdin"
    assert read_text(_write(tmp_path, "text")) == "text"


def test_check_output_path(tmp_path: Path) -> None:
    check_output_path(None)
    check_output_path("-")
    check_output_path(str(tmp_path / "new.mgx"))
    with pytest.raises(MgxError, match=r"^error: cannot write .*/no/x\.mgx: folder '.*/no' does not exist$"):
        check_output_path(str(tmp_path / "no" / "x.mgx"))
    with pytest.raises(MgxError, match=r"^error: cannot write .*: it is a folder$"):
        check_output_path(str(tmp_path))


def test_load_entry_imports_module_attribute() -> None:
    assert load_entry("os.path:join") is os.path.join


def test_in_deep_stack_gives_value_or_exception_and_restores_limits() -> None:
    limit, size = sys.getrecursionlimit(), threading.stack_size()
    seen: list[int] = []
    assert in_deep_stack(lambda: seen.append(sys.getrecursionlimit()) or 7) == 7
    assert seen == [max(limit, common.DEEP_RECURSION_LIMIT)]
    with pytest.raises(KeyError, match="inner"):
        in_deep_stack(lambda: {}["inner"])
    assert (sys.getrecursionlimit(), threading.stack_size()) == (limit, size)


def test_deep_recursion_runs_on_the_deep_stack() -> None:
    def depth(n: int) -> int:
        return 0 if n == 0 else 1 + depth(n - 1)

    assert in_deep_stack(lambda: depth(20_000)) == 20_000


def test_recursion_error_is_a_user_error(capsys: pytest.CaptureFixture[str]) -> None:
    def body(sink) -> int:
        sink.warn("first")
        raise RecursionError

    assert run_guarded(body) == 1
    assert capsys.readouterr().err.splitlines() == [
        "warning: first",
        "error: the program nests too deeply for mgxir (modules inside modules)",
    ]


def test_run_guarded_returns_the_body_code_and_flushes_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    def body(sink) -> int:
        sink.warn("kept")
        return 3

    assert run_guarded(body) == 3
    assert run_guarded(lambda sink: None) == 0
    assert capsys.readouterr().err == "warning: kept\n"
    assert gc.isenabled() is False


def test_missing_package_with_a_dotted_name(capsys: pytest.CaptureFixture[str]) -> None:
    def body(sink) -> int:
        sink.warn("first")
        raise ModuleNotFoundError("no", name="iree.compiler")

    assert run_guarded(body) == 1
    assert capsys.readouterr().err.splitlines() == [
        "warning: first",
        "error: this needs the 'iree.compiler' package: pip install 'mgxir[mlir]'",
    ]


# -- diagnostics_check ---------------------------------------------------------------------------


def test_expectations_read_every_offset_form() -> None:
    text = "\n".join(
        [
            "// expected-error {{here}}",
            "// expected-warning@above {{above}}",
            "// expected-note@below {{below}}",
            "// expected-error@+2 {{two down}}",
            "// expected-error@-3 {{three up}}",
            "// expected-error-re@+1 {{a {{[0-9]+}} b.}}",
            "// not-expected-error {{x}} trailing",
        ]
    )
    found = expectations(Chunk(text, 10))
    assert [(e.severity, e.line, e.where, e.text, e.seen) for e in found] == [
        ("error", 10, 10, "here", False),
        ("warning", 10, 11, "above", False),
        ("note", 13, 12, "below", False),
        ("error", 15, 13, "two down", False),
        ("error", 11, 14, "three up", False),
        ("error", 16, 15, "a {{[0-9]+}} b.", False),
    ]
    regex = found[-1].pattern
    assert regex.search("a 42 b.") and not regex.search("a x b.") and not regex.search("a 4 bX")
    assert found[0].pattern.search("is here") and not found[0].pattern.search("HERE")


def test_plain_expectation_is_literal_text() -> None:
    (e,) = expectations(Chunk("// expected-error {{a.b(}}", 1))
    assert e.pattern.search("x a.b( y") and not e.pattern.search("axb(")


def _diag(severity: str, line: int | None, message: str) -> Diagnostic:
    from mgxir.diagnostics import Location

    return Diagnostic(severity, message, Location("f.mgx", line, 3) if line else None)


def test_check_pairs_diagnostics_with_expectations_by_severity_line_and_text() -> None:
    text = "// expected-error@+1 {{bad}}\nx\n// expected-warning {{odd}}\n// expected-error {{never}}"
    expected = expectations(Chunk(text, 1))
    found = [
        _diag("error", 2, "a bad thing"),
        _diag("error", 2, "bad again"),
        _diag("warning", 3, "odd"),
        _diag("error", 3, "odd"),
        _diag("error", None, "nowhere"),
    ]
    assert check(found, expected, "f.mgx") == [
        "f.mgx:2:3: unexpected error: bad again",
        "f.mgx:3:3: unexpected error: odd",
        "f.mgx: unexpected error: nowhere",
        'f.mgx:4: expected error "never" was not produced',
    ]
    assert diagnostics_check.SPLIT_MARKER == "// -----"


def test_verify_diagnostics_exit_codes_and_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _write(
        tmp_path,
        PROGRAM + "// -----\n" + 'module: "main"\n// expected-error@+1 {{undefined value}}\n@1 = neg(nosuch)\n',
    )
    assert opt_main(OptOptions(input=good, split=True, verify_diagnostics=True)) == 0
    out, err = capsys.readouterr()
    assert out.startswith('module: "main"\nx = @param:x') and "// -----" not in out and err == ""
    bad = _write(tmp_path, PROGRAM + "// expected-error {{never}}\n", "bad.mgx")
    assert opt_main(OptOptions(input=bad, verify_diagnostics=True)) == 1
    assert capsys.readouterr().err == f'{bad}:4: expected error "never" was not produced\n'


# -- opt ---------------------------------------------------------------------------------------


def test_split_input_keeps_going_and_writes_nothing_on_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, PROGRAM + "// -----\nnot a program\n// -----\n" + PROGRAM)
    out = tmp_path / "out.mgx"
    assert opt_main(OptOptions(input=path, split=True, output=str(out))) == 1
    assert not out.exists()
    assert capsys.readouterr().err.startswith(f"{path}:5:")
    assert opt_main(OptOptions(input=path, split=True)) == 1
    printed = capsys.readouterr().out.split("// -----\n")
    assert len(printed) == 3 and printed[1] == "" and printed[0] == printed[2] != ""
    ok = _write(tmp_path, PROGRAM + "// -----\n" + PROGRAM, "ok.mgx")
    assert opt_main(OptOptions(input=ok, split=True, output=str(out))) == 0
    assert out.read_text().count("// -----\n") == 1


def test_show_passes_and_dump_pipeline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert opt_main(OptOptions(show_passes=True)) == 0
    listed = capsys.readouterr().out
    assert "dead_code_elimination" in listed and "gpu_lowering" in listed
    path = _write(tmp_path, PROGRAM)
    assert opt_main(OptOptions(input=path, passes=["dce"], dump_pipeline=True)) == 0
    assert capsys.readouterr().err == "-p 'dead_code_elimination'\n"
    assert opt_main(OptOptions(input=path, optimize=True, dump_pipeline=True)) == 0
    assert capsys.readouterr().err.endswith("' -O-scope=main\n")


def test_no_verify_reads_an_inconsistent_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = _write(tmp_path, PROGRAM.replace("@1 = neg(x) -> float_type, {2}", "@1 = neg(x) -> float_type, {3}"))
    assert opt_main(OptOptions(input=wrong)) == 1
    assert "error:" in capsys.readouterr().err
    assert opt_main(OptOptions(input=wrong, no_verify=True)) == 0
    assert "{3}" in capsys.readouterr().out


def test_run_reproducer_refuses_a_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM)
    assert opt_main(OptOptions(input=path, from_log=True, run_reproducer=True)) == 1
    assert capsys.readouterr().err == "error: --run-reproducer reads a reproducer file, not a log\n"


def test_from_log_reads_the_printed_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _write(tmp_path, "some log line\n" + PROGRAM + "\nmore log\n", "run.log")
    assert opt_main(OptOptions(input=log, from_log=True, passes=["dce"])) == 0
    assert capsys.readouterr().out == PRINTED


# -- roundtrip ---------------------------------------------------------------------------------


def test_roundtrip_prints_the_second_print(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM.replace("{2}, {1}\n@1", "{2}, {1}\n\n@1"))
    assert roundtrip_main(path) == 0
    assert capsys.readouterr().out == PRINTED
    literal = _write(tmp_path, 'module: "main"\n@0 = @literal{0.1} -> float_type, {1}, {0}\n', "lit.mgx")
    assert roundtrip_main(literal, lossless=True) == 0
    assert "0.1" in capsys.readouterr().out
    log = _write(tmp_path, "log\n" + PROGRAM + "log\n", "r.log")
    assert roundtrip_main(log, from_log=True) == 0
    assert capsys.readouterr().out == PRINTED
    assert roundtrip_main(str(tmp_path / "none.mgx")) == 1


# -- translate ---------------------------------------------------------------------------------


def test_translate_option_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM)
    cases = [
        (
            TranslateOptions(input=path, bytecode_version=1),
            "--bytecode-version goes with --to-mlirbc",
        ),
        (
            TranslateOptions(input=path, source="nosuch"),
            "unknown format 'nosuch' for --from (available: mlirbc, mxr, onnx, json, mlir, mgx, log, py)",
        ),
        (
            TranslateOptions(input=path, to="mxr", split_input_file=True),
            "--split-input-file goes with --to-mlir on program text or --from-mlir on MLIR text",
        ),
        (
            TranslateOptions(input=path, to="mlir", source="log", split_input_file=True),
            "--split-input-file goes with --to-mlir on program text or --from-mlir on MLIR text",
        ),
        (
            TranslateOptions(input=path, output=str(tmp_path / "no" / "o.mgx")),
            f"cannot write {tmp_path}/no/o.mgx: folder '{tmp_path}/no' does not exist",
        ),
    ]
    for options, message in cases:
        assert translate_main(options) == 1
        assert capsys.readouterr().err == f"error: {message}\n"


def test_translate_writes_and_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM)
    assert translate_main(TranslateOptions(input=path)) == 0
    assert capsys.readouterr().out == PRINTED
    literal = _write(tmp_path, 'module: "main"\n@0 = @literal{0.1} -> float_type, {1}, {0}\n', "lit.mgx")
    assert translate_main(TranslateOptions(input=literal, to="mgx-lossless")) == 0
    assert "@literal{0.1}" in capsys.readouterr().out
    out = tmp_path / "o.json"
    assert translate_main(TranslateOptions(input=path, to="json", output=str(out))) == 0
    assert translate_main(TranslateOptions(input=str(out), source="json")) == 0
    assert capsys.readouterr().out == PRINTED
    log = _write(tmp_path, "log\n" + PROGRAM, "t.log")
    assert translate_main(TranslateOptions(input=log, source="log")) == 0
    assert capsys.readouterr().out == PRINTED


def test_translate_reads_undefined_values_only_when_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    excerpt = 'module: "main"\n@1 = neg(y) -> float_type, {2}, {1}\n'
    path = _write(tmp_path, excerpt)
    log = _write(tmp_path, "log\n" + excerpt, "x.log")
    for source, name in (("mgx", path), ("log", log)):
        assert translate_main(TranslateOptions(input=name, source=source)) == 1
        assert "undefined value 'y'" in capsys.readouterr().err
        options = TranslateOptions(input=name, source=source, allow_undefined=True)
        assert translate_main(options) == 0
        assert "= neg(y) -> float_type" in capsys.readouterr().out


def test_spelled_and_conflicting_formats() -> None:
    argv = ["--to-mlir", "--from-log", "--to-nosuch", "--from=mgx", "a.mgx", "--to-"]
    assert spelled_formats(argv) == ["--to=mlir", "--from=log", "--to=nosuch", "--from=mgx", "a.mgx", "--to-"]
    assert conflicting_formats(["--from-log", "--from=mgx"]) == "choose one of --from-log, --from=mgx"
    assert conflicting_formats(["--to-mlir", "--to=mgx", "--from-mgx"]) == "choose one of --to-mlir, --to=mgx"
    assert conflicting_formats(["--to-mlir", "--from-nosuch", "--from-log"]) is None
    assert conflicting_formats(["--to", "--to-x"]) is None
    assert translate.FOLDER_WRITERS == {"spirv"}


# -- run: inputs -------------------------------------------------------------------------------


def test_parse_inline_forms_and_errors() -> None:
    np.testing.assert_array_equal(parse_inline("x", "2x2xf32=1,2 [3] 4"), np.array([[1, 2], [3, 4]], np.float32))
    assert parse_inline("x", "2x2xf32=1,2 [3] 4").dtype == np.float32
    np.testing.assert_array_equal(parse_inline("x", "3xi64=7"), np.array([7, 7, 7]))
    assert parse_inline("x", "i1=1").dtype == np.bool_ and parse_inline("x", "i1=1").shape == ()
    errors = [
        ("2xq9=1 2", "input 'x': unknown element type 'q9' (use f32, f16, bf16, i64, i1, ...)"),
        ("2yx3xf32=1", "input 'x': bad dimensions in '2yx3xf32' (expected DIMxDIMx...xTYPE, as 2x3xf32)"),
        ("2xf32=a b", "input 'x': values must be numbers, got 'a b'"),
        ("3xf32=1 2", "input 'x': 3xf32 needs 3 values, got 2"),
    ]
    for text, message in errors:
        with pytest.raises(MgxError) as e:
            parse_inline("x", text)
        assert str(e.value.diagnostic.message) == message


def test_to_parameter_type() -> None:
    shape = Shape(DType.float, (2,))
    array = to_parameter_type("x", np.array([1, 2], np.int64), shape)
    assert array.dtype == np.float32 and array.tolist() == [1.0, 2.0]
    scalar = to_parameter_type("s", np.array([5.0], np.float32), Shape(DType.float, (1, 1)))
    assert scalar.shape == (1, 1)
    with pytest.raises(MgxError, match=r"input 'x' has shape \{3\} but parameter 'x' is float_type, \{2\}$"):
        to_parameter_type("x", np.zeros(3, np.float32), shape)
    with pytest.raises(MgxError, match=r"input 'i' holds float32 values but parameter 'i' is int64_type$"):
        to_parameter_type("i", np.zeros(2, np.float32), Shape(DType.int64, (2,)))
    same = np.zeros(2, np.float32)
    assert to_parameter_type("x", same, shape) is same
    bits = np.array([0x3F80], np.uint16)
    bf16 = to_parameter_type("b", bits, Shape(DType.bf16, (1,)))
    assert bf16.dtype == DType.bf16.numpy and float(bf16.astype(np.float32)[0]) == 1.0


def test_gather_inputs_by_name_position_file_and_fill(tmp_path: Path) -> None:
    program = parse_program(TWO_PARAMS)
    np.save(tmp_path / "x.npy", np.array([3, 4], np.float32))
    np.savez(tmp_path / "both.npz", x=np.array([5, 6], np.float32), y=np.array([1, 2]))
    got = gather_inputs(program, ["2xf32=1 2", "2xi64=3 4"], "none", 0)
    assert got["x"].tolist() == [1.0, 2.0] and got["y"].tolist() == [3, 4] and got["y"].dtype == np.int64
    got = gather_inputs(program, [f"x=@{tmp_path / 'x.npy'}", "y=2xi64=9 8"], "none", 0)
    assert got["x"].tolist() == [3.0, 4.0] and got["y"].tolist() == [9, 8]
    got = gather_inputs(program, [f"@{tmp_path / 'both.npz'}"], "none", 0)
    assert got["x"].tolist() == [5.0, 6.0] and got["y"].tolist() == [1, 2]
    got = gather_inputs(program, [f"y=@{tmp_path / 'both.npz'}"], "zeros", 0)
    assert got["y"].tolist() == [1, 2] and got["x"].tolist() == [0.0, 0.0]
    got = gather_inputs(program, [], "ones", 0)
    assert got["x"].tolist() == [1.0, 1.0] and got["y"].tolist() == [1, 1]
    a, b = gather_inputs(program, [], "random", 5), gather_inputs(program, [], "random", 5)
    assert a["x"].tolist() == b["x"].tolist() != gather_inputs(program, [], "random", 6)["x"].tolist()


def test_gather_inputs_errors(tmp_path: Path) -> None:
    program = parse_program(TWO_PARAMS)
    np.save(tmp_path / "x.npy", np.array([3, 4], np.float32))
    np.savez(tmp_path / "both.npz", x=np.array([5, 6], np.float32))
    (tmp_path / "bad.npy").write_text("not numpy")
    errors = [
        ([f"@{tmp_path / 'x.npy'}"], f"'@{tmp_path / 'x.npy'}' is one array: name the parameter, as --input=x=@"),
        (["x"], "input 'x' is neither NAME=..., @file.npz nor DIMSxTYPE=VALUES"),
        (["f32=1", "f32=2", "f32=3"], "input 'f32=3' is one more than the 2 parameters of main"),
        ([f"y=@{tmp_path / 'both.npz'}"], f"'{tmp_path / 'both.npz'}' has no array named 'y'"),
        (["z=f32=1"], "input 'z' is not a parameter of main (parameters: x, y)"),
        (["x=2xf32=1 2"], "no input for parameter 'y' (int64_type, {2})"),
        (
            [f"x=@{tmp_path / 'bad.npy'}"],
            f"input file '{tmp_path / 'bad.npy'}' for 'x' is neither a .npy nor a .npz file",
        ),
    ]
    for specs, message in errors:
        with pytest.raises(MgxError) as e:
            gather_inputs(program, specs, "none", 0)
        assert e.value.diagnostic.message.startswith(message), e.value.diagnostic.message
    empty = parse_program('module: "main"\n@0 = @literal{1} -> float_type, {1}, {0}\n')
    with pytest.raises(MgxError, match=r"input 'z' is not a parameter of main \(parameters: none\)"):
        gather_inputs(empty, ["z=f32=1"], "none", 0)


def test_gather_inputs_for_dynamic_parameters() -> None:
    program = parse_program('module: "main"\nx = @param:x -> dynamic, float_type, {[1..4], [2..2]}\n')
    with pytest.raises(MgxError, match=r"parameter 'x' has a dynamic shape: give its value with --input$"):
        gather_inputs(program, [], "random", 0)
    got = gather_inputs(program, ["x=3x2xf32=1"], "none", 0)
    assert got["x"].shape == (3, 2)


def test_filled_ranges() -> None:
    rng = np.random.default_rng(0)
    ints = filled(Shape(DType.int32, (400,)), "random", rng)
    assert ints.dtype == np.int32 and set(ints.tolist()) == {0, 1, 2, 3}
    bools = filled(Shape(DType.bool, (100,)), "random", rng)
    assert bools.dtype == np.bool_ and set(bools.tolist()) == {False, True}
    floats = filled(Shape(DType.half, (400,)), "random", rng)
    assert floats.dtype == np.float16 and floats.min() < -0.9 and floats.max() > 0.9 and np.abs(floats).max() <= 1
    assert filled(Shape(DType.int8, (2,)), "zeros", rng).dtype == np.int8
    assert filled(Shape(DType.int8, (2,)), "ones", rng).tolist() == [1, 1]


# -- run: outputs and comparison -----------------------------------------------------------------


def test_flatten_outputs_names_tuple_elements() -> None:
    named = flatten_outputs([np.zeros(1), (np.ones(1), np.zeros(2)), 3.0])
    assert list(named) == ["out0", "out1_0", "out1_1", "out2"]
    assert isinstance(named["out2"], np.ndarray)


def test_format_value_as_iree_prints() -> None:
    assert format_value(np.arange(8, dtype=np.int32).reshape(2, 2, 2), 64) == "2x2x2xi32=[[0 1][2 3]][[4 5][6 7]]"
    assert format_value(np.array([0.5, 1 / 3], np.float32), 64) == "2xf32=[0.5 0.333333]"
    assert format_value(np.array([True, False]), 64) == "2xi1=[1 0]"
    assert format_value(np.arange(5, dtype=np.int64), 3) == "5xi64=[0 1 2 ...] (5 elements, 2 not shown)"
    assert format_value(np.arange(3, dtype=np.int64), 3) == "3xi64=[0 1 2]"
    assert format_value(np.array(2.5, np.float64), 64) == "f64=2.5"
    bf16 = np.array([1.5], np.float32).astype(DType.bf16.numpy)
    assert format_value(bf16, 64) == "1xbf16=[1.5]"
    assert format_value(np.array([1], np.uint8), 64) == "1xui8=[1]"
    assert format_value(np.array([1], np.int8), 64) == "1xi8=[1]"
    assert format_value(np.array([1 + 2j]), 64) == "1xf32=[(1+2j)]"


def test_rms_error_is_migraphx_rule() -> None:
    assert rms_error(np.array([1.0, 2.0]), np.array([1.0, 4.0])) == pytest.approx(2 / (np.sqrt(2) * 4))
    assert rms_error(np.array([-3.0, 0.0]), np.array([-1.0, 0.0])) == pytest.approx(2 / (np.sqrt(2) * 3))
    assert rms_error(np.array([0.0, 0.0]), np.array([0.0, 0.0])) == 0.0
    assert rms_error(np.zeros(0), np.zeros(0)) == 0.0


def test_compare_prints_each_output_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    actual = {"out0": np.array([1.0, 2.0], np.float32), "out1": np.zeros(2, np.float32)}
    assert compare(actual, {"out0": np.array([1.0, 2.0])}, 1e-3, None, None)
    assert capsys.readouterr().out == ("out0: ok: rms error 0 (tolerance 0.001), worst element [0]: 1 vs expected 1\n")
    assert not compare(actual, {"out0": np.array([1.0, 3.0]), "out2": np.zeros(1)}, 1e-3, None, None)
    assert capsys.readouterr().out.splitlines() == [
        "out0: MISMATCH: rms error 0.235702 (tolerance 0.001), worst element [1]: 2 vs expected 3",
        "out2: missing (the program has outputs out0, out1)",
    ]
    assert not compare(actual, {"out1": np.zeros(3)}, 1e-3, None, None)
    assert capsys.readouterr().out == "out1: shape {2} but expected {3}\n"
    # inside the rms tolerance but not the elementwise one
    near = {"out0": np.array([1.0, 2.1])}
    assert compare(actual, near, 0.1, None, None)
    assert not compare(actual, near, 0.1, 0.01, None)
    assert not compare(actual, near, 0.1, None, 0.01)
    assert compare(actual, near, 0.1, 0.2, None)
    assert compare(actual, near, 0.1, None, 0.2)
    capsys.readouterr()
    nan = {"out0": np.array([np.nan, 1.0], np.float32)}
    assert compare(nan, {"out0": np.array([np.nan, 1.0])}, 1e-3, None, None)
    assert not compare(nan, {"out0": np.array([np.nan, 2.0])}, 1e-3, None, None)
    assert compare({"out0": np.zeros(0)}, {"out0": np.zeros(0)}, 1e-3, None, None)
    assert capsys.readouterr().out.splitlines()[-1].endswith("no elements")


def test_compare_reads_raw_bits_of_bf16() -> None:
    got = np.array([1.5], np.float32).astype(DType.bf16.numpy)
    assert compare({"out0": got}, {"out0": got.view(np.uint16)}, 1e-3, None, None)


# -- run: the command ---------------------------------------------------------------------------


def test_run_prints_saves_and_compares(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM)
    assert run_main(RunOptions(input_file=path, inputs=["x=2xf32=1 -2"])) == 0
    assert capsys.readouterr().out == "out0: float_type, {2}\n2xf32=[-1 2]\n"
    saved = tmp_path / "out.npz"
    assert run_main(RunOptions(input_file=path, inputs=["x=2xf32=1 -2"], quiet=True, output=f"@{saved}")) == 0
    assert capsys.readouterr().out == ""
    assert np.load(saved)["out0"].tolist() == [-1.0, 2.0]
    assert run_main(RunOptions(input_file=path, inputs=["x=2xf32=1 -2"], quiet=True, expected=str(saved))) == 0
    assert capsys.readouterr().out.startswith("out0: ok: ")
    np.save(tmp_path / "one.npy", np.array([-1.0, 3.0]))
    one = str(tmp_path / "one.npy")
    assert run_main(RunOptions(input_file=path, inputs=["x=2xf32=1 -2"], quiet=True, expected=f"@{one}")) == 1
    assert capsys.readouterr().out.startswith("out0: MISMATCH: ")


def test_run_verify_against_ref(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM)
    assert run_main(RunOptions(fill="random", input_file=path, quiet=True, verify_against_ref=True)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "verify: ref against ref (compiled by the ref pipeline)" and out[1].startswith("out0: ok: ")


def test_run_option_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM)
    cases = [
        (RunOptions(input_file=path, fill="twos"), "error: --fill must be random, zeros, ones or none, not 'twos'"),
        (
            RunOptions(fill="random", input_file=path, fp32_math="fast"),
            "error: --fp32-math must be ieee or tf32, not 'fast'",
        ),
        (
            RunOptions(fill="random", input_file=path, target="no"),
            "error: unknown target 'no' (available: ref, iree, cpu, vulkan, gpu, auto)",
        ),
        (
            RunOptions(fill="random", input_file=path, output=str(tmp_path / "no" / "o.npz")),
            f"error: cannot write {tmp_path}/no/o.npz: folder '{tmp_path}/no' does not exist",
        ),
        (
            RunOptions(fill="random", input_file=path + ".mlir"),
            f"error: cannot read {path}.mlir: No such file or directory",
        ),
        (
            RunOptions(input_file=path, fill="none"),
            "error: no input for parameter 'x' (float_type, {2}): give it with --input, or --fill=random to fill "
            "it as migraphx-driver does by default",
        ),
    ]
    for options, message in cases:
        assert run_main(options) == 1
        assert capsys.readouterr().err == message + "\n"
    assert type(find_target("ref")).__name__ == "RefTarget"


def test_run_timing_on_ref_prints_the_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM)
    assert run_main(RunOptions(fill="random", input_file=path, quiet=True, timing=True)) == 0
    assert capsys.readouterr().err != ""
    assert run_main(RunOptions(fill="random", input_file=path, quiet=True)) == 0
    assert capsys.readouterr().err == ""


def test_run_from_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _write(tmp_path, "log\n" + PROGRAM + "log\n", "r.log")
    assert run_main(RunOptions(input_file=log, inputs=["x=2xf32=1 -2"], from_log=True)) == 0
    assert capsys.readouterr().out.splitlines()[1] == "2xf32=[-1 2]"


def test_save_outputs_error(tmp_path: Path) -> None:
    with pytest.raises(MgxError, match=r"^error: cannot write .*: "):
        run.save_outputs({"out0": np.zeros(1)}, str(tmp_path / "no" / "o.npz"))


# -- translate: every format's adapter (mgxir.drivers.formats) -----------------------------------


@pytest.mark.parametrize("fmt", ["mxr", "json", "py"])
def test_translate_through_a_file_format_and_back(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, TWO_PARAMS)
    saved = tmp_path / f"p.{fmt}"
    assert translate_main(TranslateOptions(input=path, to=fmt, output=str(saved))) == 0
    assert capsys.readouterr() == ("", "")
    assert translate_main(TranslateOptions(input=str(saved), source=fmt)) == 0
    assert capsys.readouterr().out == translate_of(TWO_PARAMS, tmp_path, capsys)


def translate_of(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert translate_main(TranslateOptions(input=_write(tmp_path, text, "again.mgx"))) == 0
    return capsys.readouterr().out


def test_translate_to_dot_and_svg(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    path = _write(tmp_path, PROGRAM)
    assert translate_main(TranslateOptions(input=path, to="dot")) == 0
    assert capsys.readouterr().out.startswith("digraph")
    dot = tmp_path / "p.dot"
    assert translate_main(TranslateOptions(input=path, to="dot", output=str(dot))) == 0
    assert capsys.readouterr().out == "" and dot.read_text().startswith("digraph")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert translate_main(TranslateOptions(input=path, to="svg", output=str(tmp_path / "p.svg"))) == 1
    assert capsys.readouterr().err == (
        "error: --to-svg needs Graphviz's 'dot' program, which is not installed (apt-get install graphviz)\n"
    )


def test_translate_mlir_text_bytecode_and_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM)
    assert translate_main(TranslateOptions(input=path, to="mlir")) == 0
    text = capsys.readouterr().out
    assert 'func.func @main(%arg0: tensor<2xf32> {mgx.param = "x"})' in text and "arith.negf" in text
    bytecode = tmp_path / "p.mlirbc"
    options = TranslateOptions(input=path, to="mlirbc", output=str(bytecode), bytecode_version=1)
    assert translate_main(options) == 0
    data = bytecode.read_bytes()
    assert data[:4] == b"ML\xefR" and data[4] >> 1 == 1
    assert translate_main(TranslateOptions(input=str(bytecode), source="mlir")) == 0
    assert "neg(x)" in capsys.readouterr().out


def test_translate_split_input_both_ways(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM + "// -----\n" + PROGRAM.replace("neg", "abs"))
    mlir = tmp_path / "parts.mlir"
    assert translate_main(TranslateOptions(input=path, to="mlir", split_input_file=True, output=str(mlir))) == 0
    assert mlir.read_text().count("// -----") == 1
    assert translate_main(TranslateOptions(input=str(mlir), source="mlir", split_input_file=True)) == 0
    back = capsys.readouterr().out.split("// -----")
    assert len(back) == 2 and "neg(x)" in back[0] and "abs(x)" in back[1]


def test_translate_lists_the_lowerings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "lowerings.md"
    assert translate_main(TranslateOptions(input="ignored.mgx", list_lowerings=True, output=str(table))) == 0
    assert capsys.readouterr() == ("", "")
    text = table.read_text()
    assert "\n| `neg` | " in text and "gpu::" not in text


def test_run_reproducer_replays_the_pipeline_it_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dead = PROGRAM + "@2 = abs(x) -> float_type, {2}, {1}\n@3 = @return(@1)\n"
    repro = _write(tmp_path, "// mgx-opt -p 'dce'\n" + dead, "p.repro")
    assert opt_main(OptOptions(input=repro, run_reproducer=True)) == 0
    out = capsys.readouterr().out
    assert "abs" not in out and "neg(x)" in out


def test_roundtrip_reports_a_changed_print_with_its_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No printer/parser pair known to disagree: the second print is made to differ (a printer bug
    injected), and the driver must say so and print nothing."""
    from mgxir.drivers import roundtrip

    prints: list[str] = []

    def printer_with_a_bug(program, options) -> str:
        text = print_program(program, options)
        prints.append(text)
        return text if len(prints) == 1 else text.replace("neg", "abs")

    monkeypatch.setattr(roundtrip, "print_program", printer_with_a_bug)
    assert roundtrip_main(_write(tmp_path, PROGRAM)) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "round trip changed the text:",
        "--- first",
        "+++ second",
        "@@ -1,5 +1,5 @@",
        ' module: "main"',
        " x = @param:x -> float_type, {2}, {1}",
        "-@1 = neg(x) -> float_type, {2}, {1}",
        "+@1 = abs(x) -> float_type, {2}, {1}",
        " ",
        " ",
        "",
    ]


@pytest.mark.parametrize("from_log", [False, True])
def test_a_failing_pass_writes_a_reproducer_of_the_input_read_again(
    from_log: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mgxir.passes.registry import PASSES

    monkeypatch.setitem(PASSES._places, "test_fail", "mgxir.passes.testing:TestFail")
    text = PROGRAM + "@2 = tanh(x) -> float_type, {2}, {1}\n@3 = @return(@1)\n"
    path = _write(tmp_path, "log line\n" + text if from_log else text, "in.log" if from_log else "in.mgx")
    out, repro = tmp_path / "out.mgx", tmp_path / "r.repro"
    options = OptOptions(
        input=path, from_log=from_log, pipeline="dce,test_fail,cse", output=str(out), reproducer=str(repro)
    )
    assert opt_main(options) == 1
    assert capsys.readouterr().err == (
        f"error: pass 'test_fail' failed: test_fail: failing on purpose in module 'main' "
        f"(reproducer: {repro}; replay with mgx-opt --run-reproducer)\n"
    )
    assert not out.exists()
    assert repro.read_text().startswith(
        "// mgx-opt -p 'test_fail,eliminate_common_subexpression'\n" + PROGRAM + "@2 = @return(@1)\n"
    )


WARNED = (
    'module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = foo_op(x) -> float_type, {2}, {1}\n'
    "@2 = @literal{1.2345678} -> float_type, {1}, {0}\n"
)


@pytest.mark.parametrize(("lossless", "literal"), [(False, "1.23457"), (True, "1.2345678")])
def test_roundtrip_warns_once_at_the_input_and_prints_as_asked(
    lossless: bool, literal: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, WARNED)
    assert (roundtrip_main(path, lossless=True) if lossless else roundtrip_main(path)) == 0
    out, err = capsys.readouterr()
    assert out == WARNED.replace("1.2345678", literal) + "\n\n"
    assert err == (
        f"{path}:3:6: warning: unknown operator 'foo_op': kept as written; its shape is not checked\n"
        "@1 = foo_op(x) -> float_type, {2}, {1}\n     ^\n"
    )


# -- written against the survivors of the drivers' mutation run ---------------------------------


def test_lossless_translation_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o.mgx"
    assert translate_main(TranslateOptions(input=_write(tmp_path, WARNED), to="mgx-lossless", output=str(out))) == 0
    assert capsys.readouterr().out == ""
    assert "@literal{1.2345678}" in out.read_text()


@pytest.mark.parametrize("fmt", ["mxr", "json"])
def test_reading_a_file_format_reports_its_warnings(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / f"w.{fmt}"
    assert translate_main(TranslateOptions(input=_write(tmp_path, WARNED), to=fmt, output=str(saved))) == 0
    capsys.readouterr()
    assert translate_main(TranslateOptions(input=str(saved), source=fmt)) == 0
    assert capsys.readouterr().err == (
        f"warning: {saved}: operator 'foo_op' is not one mgxir knows (or has attributes it does not know): "
        "kept as written; its shape is not checked\n"
    )


def test_dot_and_split_mlir_write_to_the_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM + "// -----\n" + PROGRAM.replace("neg", "abs"))
    dot = tmp_path / "p.dot"
    assert translate_main(TranslateOptions(input=path, to="dot", output=str(dot))) == 0
    assert dot.read_text().startswith("digraph")
    mlir, back = tmp_path / "parts.mlir", tmp_path / "back.mgx"
    assert translate_main(TranslateOptions(input=path, to="mlir", split_input_file=True, output=str(mlir))) == 0
    options = TranslateOptions(input=str(mlir), source="mlir", split_input_file=True, output=str(back))
    assert translate_main(options) == 0
    assert capsys.readouterr() == ("", "")
    assert "abs(x)" in back.read_text()


def test_split_mlir_errors_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = 'module {\n  func.func @main(%arg0: tensor<2xf32> {mgx.param = "x"}) -> tensor<2xf32> {\n'
    bad = good + '    %0 = "foo.bar"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>\n'
    path = _write(tmp_path, good + "    return %arg0 : tensor<2xf32>\n  }\n}\n// -----\n" + bad + "  }\n}\n", "p.mlir")
    assert translate_main(TranslateOptions(input=path, source="mlir", split_input_file=True)) == 1
    assert capsys.readouterr().err.startswith(f"{path}:3:19: error: operation being parsed with an unregistered")


def test_check_a_diagnostic_without_location_matches_only_line_zero() -> None:
    expected = expectations(Chunk("// expected-error@above {{above the file}}\n// expected-error {{nowhere}}", 1))
    found = [_diag("error", None, "nowhere"), _diag("error", None, "above the file")]
    assert check(found, expected, "f.mgx") == [
        "f.mgx: unexpected error: nowhere",
        'f.mgx:2: expected error "nowhere" was not produced',
    ]


def test_verify_diagnostics_reports_unexpected_errors_and_sees_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warned = WARNED.replace("@1 = foo_op", "// expected-warning@+1 {{unknown operator 'foo_op'}}\n@1 = foo_op")
    unexpected = 'module: "main"\n@1 = neg(nosuch)\n'
    path = _write(tmp_path, warned + "// -----\n" + unexpected)
    assert opt_main(OptOptions(input=path, split=True, verify_diagnostics=True, lossless=True)) == 1
    out, err = capsys.readouterr()
    assert "@literal{1.2345678}" in out
    assert err == f"{path}:8:10: unexpected error: use of undefined value 'nosuch'\n"


def test_compare_edges(capsys: pytest.CaptureFixture[str]) -> None:
    same = {"out0": np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)}
    assert compare(same, {"out0": same["out0"].astype(np.float64)}, 0.0, None, None) is True
    assert compare(same, {"nosuch": np.zeros(1), "out0": np.array([[1.0, 2.0], [5.0, 4.0]])}, 1e-3, None, None) is False
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "out0: ok: rms error 0 (tolerance 0), worst element [0, 0]: 1 vs expected 1"
    assert lines[1] == "nosuch: missing (the program has outputs out0)"
    assert lines[2].startswith("out0: MISMATCH: ") and lines[2].endswith("worst element [1, 0]: 3 vs expected 5")
    assert compare(same, {"out0": np.zeros(3), "out1": np.zeros(1)}, 1e-3, None, None) is False
    assert capsys.readouterr().out.splitlines()[1] == "out1: missing (the program has outputs out0)"
    nan = {"out0": np.array([np.nan, np.nan], np.float32)}
    assert compare(nan, {"out0": np.array([np.nan, np.nan])}, 1e-3, None, None) is True
    assert capsys.readouterr().out == (
        "out0: ok: rms error nan (tolerance 0.001), worst element [0]: nan vs expected nan\n"
    )


def test_fp8_outputs_are_saved_as_raw_bits(tmp_path: Path) -> None:
    value = np.array([1.0, -2.0], np.float32).astype(DType.fp8e4m3fn.numpy)
    run.save_outputs({"out0": value}, str(tmp_path / "o.npz"))
    saved = np.load(tmp_path / "o.npz")["out0"]
    assert saved.dtype == np.uint8 and saved.tolist() == value.view(np.uint8).tolist()


def test_save_outputs_error_is_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "no" / "o.npz"
    with pytest.raises(MgxError) as e:
        run.save_outputs({"out0": np.zeros(1)}, str(path))
    assert str(e.value) == f"error: cannot write {path}: No such file or directory"


def test_translate_from_a_log_after_a_named_pass(capsys: pytest.CaptureFixture[str]) -> None:
    log = str(Path(__file__).parents[2] / "text" / "Inputs" / "trace.log")
    assert translate_main(TranslateOptions(input=log, source="log", log_pass="eliminate_identity")) == 0
    assert "identity(x)" in capsys.readouterr().out
    assert translate_main(TranslateOptions(input=log, source="log")) == 0
    assert "identity" not in capsys.readouterr().out


def test_spirv_kernels_go_to_the_output_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fused = str(Path(__file__).parents[2] / "translate" / "spirv" / "pointwise.mgx")
    kernels = tmp_path / "kernels"
    assert translate_main(TranslateOptions(input=fused, to="spirv", output=str(kernels))) == 0
    names = sorted(p.name for p in kernels.iterdir())
    assert "manifest.json" in names and "main_pointwise0.spv" in names, names
    asm = tmp_path / "k.spvasm"
    assert translate_main(TranslateOptions(input=fused, to="spvasm", output=str(asm))) == 0
    assert capsys.readouterr().out == ""
    assert "OpEntryPoint" in asm.read_text()


def test_spirv_of_a_program_without_kernels_needs_no_spirv_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pointwise on uint64_type gets no kernel (a warning), so nothing is assembled: the folder has
    an empty manifest, the assembly file is empty, and the warning names the instruction."""
    path = _write(tmp_path, PROGRAM.replace("float_type", "uint64_type"))
    warning = (
        "warning: no SPIR-V kernel for '@1' (main:pointwise0): element type uint64_type (kernels handle "
        "float_type, half_type, bf16_type, double_type, int32_type, int64_type, uint32_type, int8_type, "
        "uint8_type, int16_type, uint16_type, bool_type, fp8e4m3fnuz_type, fp8e4m3fn_type, fp8e5m2_type, "
        "fp8e5m2fnuz_type); it runs on the reference interpreter\n"
    )
    kernels = tmp_path / "kernels"
    assert translate_main(TranslateOptions(input=path, to="spirv", output=str(kernels))) == 0
    assert capsys.readouterr() == ("", warning)
    assert [p.name for p in kernels.iterdir()] == ["manifest.json"]
    assert (kernels / "manifest.json").read_text() == '{\n  "target_env": "vulkan1.1",\n  "kernels": []\n}\n'
    asm = tmp_path / "k.spvasm"
    assert translate_main(TranslateOptions(input=path, to="spvasm", output=str(asm))) == 0
    assert capsys.readouterr() == ("", warning)
    assert asm.read_text() == ""
    assert translate_main(TranslateOptions(input=path, to="spirv")) == 1
    assert capsys.readouterr().err == "error: --to-spirv writes a directory of kernels: name it with -o DIR\n"


def test_spirv_warnings_reach_the_user(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM.replace("float_type", "uint64_type"))  # no uint64 kernels here
    fused = tmp_path / "fused.mgx"
    assert opt_main(OptOptions(input=path, passes=["fuse_pointwise"], output=str(fused))) == 0
    for fmt, out in (("spirv", tmp_path / "k"), ("spvasm", tmp_path / "k.spvasm")):
        assert translate_main(TranslateOptions(input=str(fused), to=fmt, output=str(out))) == 0
        assert capsys.readouterr().err.startswith("warning: no SPIR-V kernel for '@1' (main:pointwise0)")


def test_compiled_for_ref_keeps_literal_bits_and_reports_to_the_sink() -> None:
    import warnings

    from mgxir.diagnostics import DiagnosticSink
    from mgxir.drivers.compiled_for_ref import run_compiled_for_ref
    from mgxir.interp.interpreter import run_program

    program = parse_program(
        'module: "main"\nx = @param:x -> float_type, {1}, {1}\n@1 = @literal{1.2345678} -> float_type, {1}, {1}\n'
        "@2 = add(x,@1) -> float_type, {1}, {1}\n@3 = @literal{ ... } -> float_type, {1}, {1}\n"
        "@4 = @literal{0} -> float_type, {1}, {1}\n@5 = log(@4) -> float_type, {1}, {1}\n@6 = @return(@2,@5,@3)\n"
    )
    params = {"x": np.array([1.0], np.float32)}
    sink = DiagnosticSink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # log(0): silenced as on ref
        got = run_compiled_for_ref(program, params, sink)
    with np.errstate(all="ignore"):
        expected = run_program(program, params)
    assert got[0].tolist() == expected[0].tolist()
    assert [w.message for w in sink.warnings] == [
        "literal '@literal' (line 5) in module 'main' was printed elided ({ ... }); "
        "using deterministic generated values"
    ]


# -- opt: instrumentation, chunks, logs and the input read again (the opt driver's survivors) ------

DEAD = PROGRAM + "@2 = tanh(x) -> float_type, {2}, {1}\n@3 = @return(@1)\n"
QMARK = 'module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = add(x,?) -> float_type, {2}, {1}\n'
QMARK_WARNING = "warning: an argument printed as '?' has no definition; its shape is unknown"


def _with_sidecar(tmp_path: Path) -> str:
    """DEAD with a literal read from w.npz, named relative to the input file's folder."""
    np.savez(tmp_path / "w.npz", w=np.array([1.5, 2.5], np.float32))
    return DEAD.replace(
        "@3 = @return(@1)",
        "@3 = @literal{npz:w.npz:w} -> float_type, {2}, {1}\n@4 = add(@1,@3) -> float_type, {2}, {1}\n@5 = @return(@4)",
    )


def _dumps(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("// -----// IR Dump")]


def test_print_before_and_after_name_passes_by_alias_in_comma_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, DEAD)
    options = OptOptions(
        input=path, pipeline="dce,cse", print_before=["dce, cse", ""], print_after=["eliminate_common_subexpression"]
    )
    assert opt_main(options) == 0
    assert _dumps(capsys.readouterr().err) == [
        "// -----// IR Dump Before dead_code_elimination //----- //",
        "// -----// IR Dump Before eliminate_common_subexpression //----- //",
        "// -----// IR Dump After eliminate_common_subexpression //----- //",
    ]


@pytest.mark.parametrize(
    ("flag", "dumps"),
    [
        ("print_before_all", ["Before dead_code_elimination", "Before eliminate_common_subexpression"]),
        ("print_after_all", ["After dead_code_elimination", "After eliminate_common_subexpression"]),
        ("print_after_change", ["After dead_code_elimination"]),
    ],
)
def test_print_all_and_after_change(
    flag: str, dumps: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, DEAD)
    assert opt_main(OptOptions(input=path, pipeline="dce,cse", **{flag: True})) == 0
    assert _dumps(capsys.readouterr().err) == [f"// -----// IR Dump {d} //----- //" for d in dumps]


def test_tree_dir_timing_and_statistics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, DEAD)
    tree = tmp_path / "tree"
    assert opt_main(OptOptions(input=path, pipeline="dce", tree_dir=str(tree))) == 0
    assert sorted(p.name for p in tree.iterdir()) == ["000_dead_code_elimination.mgx"]
    assert capsys.readouterr().err == ""
    assert opt_main(OptOptions(input=path, pipeline="dce", timing=True)) == 0
    assert "... Execution time report ..." in capsys.readouterr().err
    assert opt_main(OptOptions(input=path, pipeline="dce", statistics=True)) == 0
    assert "  (S) 4 instructions before, 3 after\n" in capsys.readouterr().err


def test_verify_each_catches_invalid_ir_only_when_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mgxir.passes.registry import PASSES

    monkeypatch.setitem(PASSES._places, "test_fail", "mgxir.passes.testing:TestFail")
    monkeypatch.chdir(tmp_path)  # where the default reproducer goes
    path = _write(tmp_path, DEAD)
    assert opt_main(OptOptions(input=path, pipeline="test_fail{invalid=true}", no_verify=True)) == 1
    assert "pass 'test_fail' left invalid IR" in capsys.readouterr().err
    options = OptOptions(input=path, pipeline="test_fail{invalid=true}", no_verify=True, verify_each=False)
    assert opt_main(options) == 0
    assert capsys.readouterr().err == ""


def test_load_target_passes_imports_the_targets_a_pipeline_names(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from mgxir.drivers import opt

    imported: list[str] = []
    monkeypatch.setattr(opt, "TARGET_PASSES", {"gpu_lowering": "lower", "Upper2": "upper"})
    monkeypatch.setattr(importlib, "import_module", imported.append)
    opt.load_target_passes("dce,cse")
    assert imported == []
    opt.load_target_passes("dce,gpu_lowering{x=1},Upper2")
    assert imported == ["upper", "lower"]
    imported.clear()
    opt.load_target_passes(None)
    assert imported == ["upper", "lower"]


def test_opt_refuses_an_output_in_a_missing_folder_before_any_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "nosuch" / "o.mgx"
    options = OptOptions(input=_write(tmp_path, DEAD), pipeline="dce", print_before_all=True, output=str(out))
    assert opt_main(options) == 1
    assert capsys.readouterr() == ("", f"error: cannot write {out}: folder '{out.parent}' does not exist\n")


def test_opt_names_standard_input_stdin_in_its_diagnostics(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(QMARK))
    assert opt_main(OptOptions()) == 0
    assert capsys.readouterr().err.startswith(f"<stdin>:3:1: {QMARK_WARNING}\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO(PROGRAM + "@2 = neg(x) -> float_type, {3\n"))
    assert opt_main(OptOptions(input="-")) == 1
    assert capsys.readouterr().err.startswith("<stdin>:4:30: error: expected ")


def test_reading_and_printing_imports_no_pass_machinery(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """mgx-opt without passes stays cheap to start: the pass manager and registry are never imported
    (an import of a module set to None in sys.modules fails)."""
    for name in ("mgxir.passes.manager", "mgxir.passes.registry"):
        monkeypatch.setitem(sys.modules, name, None)
    assert opt_main(OptOptions(input=_write(tmp_path, PROGRAM))) == 0
    assert capsys.readouterr() == (PRINTED, "")


def test_a_pipeline_of_several_parts_imports_no_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mgxir.targets.gpu.lowering", None)
    options = OptOptions(input=_write(tmp_path, DEAD), pipeline="dce", passes=["cse"], dump_pipeline=True)
    assert opt_main(options) == 0
    out, err = capsys.readouterr()
    assert err == "-p 'dead_code_elimination,eliminate_common_subexpression'\n"
    assert "tanh" not in out


def test_without_input_verification_the_verifier_after_a_pass_still_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--no-verify skips the input's verification, not verify-each's after a pass that changed the
    program: its warning reaches the user (once, as with the input verified)."""
    path = _write(tmp_path, PROGRAM + QMARK.splitlines()[2].replace("@1", "@2") + "\n@3 = @return(@2)\n")
    warning = f"{path}:4:1: {QMARK_WARNING}\n@2 = add(x,?) -> float_type, {{2}}, {{1}}\n^\n"
    for no_verify in (True, False):
        assert opt_main(OptOptions(input=path, passes=["dce"], no_verify=no_verify)) == 0
        out, err = capsys.readouterr()
        assert err == warning and "neg" not in out


def _test_fail_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    from mgxir.passes.registry import PASSES

    monkeypatch.setitem(PASSES._places, "test_fail", "mgxir.passes.testing:TestFail")


FAILED = "error: pass 'test_fail' failed: test_fail: failing on purpose in module 'main'"


def test_split_chunks_keep_their_warnings_lossless_literals_and_print_failures_to_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, WARNED + "// -----\n" + QMARK + "// -----\nnot a program\n")
    assert opt_main(OptOptions(input=path, split=True, lossless=True, output="-")) == 1
    out, err = capsys.readouterr()
    assert "@literal{1.2345678}" in out and "add(x,?)" in out
    assert f"{path}:3:6: warning: unknown operator 'foo_op'" in err
    assert f"{path}:8:1: {QMARK_WARNING}" in err


@pytest.mark.parametrize("verify_diagnostics", [False, True])
def test_split_chunk_reads_its_sidecar_and_again_for_a_reproducer(
    verify_diagnostics: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_fail_pass(monkeypatch)
    expected = "// expected-error@above {{pass 'test_fail' failed: test_fail: failing on purpose}}\n"
    chunk = (expected if verify_diagnostics else "") + _with_sidecar(tmp_path)
    path = _write(tmp_path, chunk)
    repro = tmp_path / "r.repro"
    options = OptOptions(
        input=path, split=True, verify_diagnostics=verify_diagnostics, pipeline="dce,test_fail", reproducer=str(repro)
    )
    assert opt_main(options) == (0 if verify_diagnostics else 1)
    err = capsys.readouterr().err
    assert err == (
        "" if verify_diagnostics else f"{FAILED} (reproducer: {repro}; replay with mgx-opt --run-reproducer)\n"
    )
    text = repro.read_text()
    assert text.startswith("// mgx-opt -p 'test_fail'\n") and "@literal{1.5, 2.5}" in text and "tanh" not in text


def test_verify_diagnostics_sees_the_verifier_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    warned = QMARK.replace(
        "@1 = add", "// expected-warning@+1 {{an argument printed as '?' has no definition}}\n@1 = add"
    )
    assert opt_main(OptOptions(input=_write(tmp_path, warned), verify_diagnostics=True)) == 0
    assert capsys.readouterr().err == ""


def test_a_reproducer_reads_the_sidecar_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_fail_pass(monkeypatch)
    repro = tmp_path / "r.repro"
    path = _write(tmp_path, _with_sidecar(tmp_path))
    assert opt_main(OptOptions(input=path, pipeline="dce,test_fail", reproducer=str(repro))) == 1
    assert capsys.readouterr().err.startswith(FAILED)
    assert "@literal{1.5, 2.5}" in repro.read_text()


def test_from_log_writes_lossless_to_the_output_and_sidecar_with_the_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _write(
        tmp_path,
        "log line\n"
        + WARNED
        + QMARK.replace('module: "main"\n', "")
        .replace("x = ", "y = ")
        .replace("add(x,", "add(y,")
        .replace("@1 = add", "@9 = add")
        + "log end\n",
        "run.log",
    )
    out = tmp_path / "o.mgx"
    assert opt_main(OptOptions(input=log, from_log=True, output=str(out), lossless=True)) == 0
    assert "@literal{1.2345678}" in out.read_text()
    out_, err = capsys.readouterr()
    assert out_ == "" and "warning: unknown operator 'foo_op'" in err and QMARK_WARNING in err
    sidecar = tmp_path / "s.npz"
    assert opt_main(OptOptions(input=log, from_log=True, output=str(out), sidecar=str(sidecar))) == 0
    assert "@literal{1.2345678}" in out.read_text() and not sidecar.exists()  # one value stays inline


def test_from_log_reproducer_reads_the_named_pass_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _test_fail_pass(monkeypatch)
    log = str(Path(__file__).parents[2] / "text" / "Inputs" / "trace.log")
    repro = tmp_path / "r.repro"
    options = OptOptions(input=log, log_pass="eliminate_identity", pipeline="test_fail", reproducer=str(repro))
    assert opt_main(options) == 1
    assert capsys.readouterr().err.startswith(FAILED)
    assert "identity(x)" in repro.read_text()


# -- translate and the format adapters: the reader's and writer's warnings reach the user ---------

ELIDED = (
    'module: "main"\nx = @param:x -> float_type, {2}, {1}\n@1 = @literal{ ... } -> float_type, {2}, {1}\n'
    "@2 = add(x,@1) -> float_type, {2}, {1}\n"
)
ELIDED_WARNING = "warning: literal @1 in module 'main' was printed elided ({ ... }); lowering the reference"


def test_translate_reports_the_warnings_of_a_text_or_log_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, WARNED)
    out = tmp_path / "o.mgx"
    assert translate_main(TranslateOptions(input=path, output=str(out))) == 0
    assert out.read_text() == WARNED + "\n\n"  # every literal value kept
    elided = TranslateOptions(input=path, output=str(out), elide_literals=True)
    assert translate_main(elided) == 0
    assert out.read_text() == WARNED.replace("1.2345678", "1.23457") + "\n\n"
    out_, err = capsys.readouterr()
    assert out_ == "" and err.startswith(f"{path}:3:6: warning: unknown operator 'foo_op'")
    log = _write(tmp_path, "log line\n" + WARNED + "log end\n", "run.log")
    assert translate_main(TranslateOptions(input=log, source="log")) == 0
    assert capsys.readouterr().err.startswith(f"{log}:4:6: warning: unknown operator 'foo_op'")


def test_translate_from_a_python_excerpt_reads_undefined_values_when_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = 'x_1 = m.add_instruction(migraphx.op("neg"), [x_0]) # migraphx.shape(type="float_type", lens=[2])\n'
    script = _write(tmp_path, line, "e.py")
    assert translate_main(TranslateOptions(input=script, source="py")) == 1
    capsys.readouterr()
    options = TranslateOptions(input=script, source="py", allow_undefined=True)
    assert translate_main(options) == 0
    out, err = capsys.readouterr()
    assert "neg(" in out and "'x_0' is not defined in the script: read as a parameter of unknown shape" in err


@pytest.mark.parametrize("fmt", ["mlir", "mlirbc"])
def test_mlir_writers_report_an_elided_literal(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"o.{fmt}"
    assert translate_main(TranslateOptions(input=_write(tmp_path, ELIDED), to=fmt, output=str(out))) == 0
    assert out.read_bytes()
    out_, err = capsys.readouterr()
    assert out_ == "" and err.startswith(ELIDED_WARNING)


def test_split_input_to_mlir_reports_warnings_and_errors_with_the_file_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, ELIDED + "// -----\nnot a program\n")
    assert translate_main(TranslateOptions(input=path, to="mlir", split_input_file=True)) == 1
    err = capsys.readouterr().err
    assert err.startswith(ELIDED_WARNING) and f"\n{path}:6:" in err


# -- run: the command's warnings, seeds, tolerances and messages ----------------------------------

RUN_ELIDED = (
    PROGRAM
    + "@2 = @literal{ ... } -> float_type, {2}, {1}\n@3 = add(@1,@2) -> float_type, {2}, {1}\n@4 = @return(@3)\n"
)


def test_run_reports_the_interpreter_warnings_and_the_timing_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, RUN_ELIDED)
    assert run_main(RunOptions(input_file=path, inputs=["x=2xf32=1 -2"], quiet=True, timing=True)) == 0
    assert capsys.readouterr().err == (
        "timing: nothing was timed\n"
        "warning: literal '@literal' (line 4) in module 'main' was printed elided ({ ... }); "
        "using deterministic generated values\n"
    )


def test_run_random_inputs_follow_the_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM)
    printed = []
    for seed in (7, 7, 8):
        assert run_main(RunOptions(fill="random", input_file=path, seed=seed)) == 0
        printed.append(capsys.readouterr().out)
    assert printed[0] == printed[1] != printed[2]


def test_expected_output_with_absolute_and_relative_tolerances(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, PROGRAM)
    near = tmp_path / "near.npy"
    np.save(near, np.array([-1.0, 2.0005], np.float32))
    given = RunOptions(input_file=path, inputs=["x=2xf32=1 -2"], quiet=True, expected=str(near))
    assert run_main(given) == 0
    capsys.readouterr()
    for atol, rtol in ((1e-6, 0.0), (0.0, 1e-6)):
        given = RunOptions(
            input_file=path, inputs=["x=2xf32=1 -2"], quiet=True, expected=str(near), atol=atol, rtol=rtol
        )
        assert run_main(given) == 1
        assert capsys.readouterr().out.startswith("out0: MISMATCH: ")


def test_expected_output_that_cannot_be_read_names_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nosuch.npy"
    assert (
        run_main(RunOptions(fill="random", input_file=_write(tmp_path, PROGRAM), quiet=True, expected=str(missing)))
        == 1
    )
    assert capsys.readouterr().err.startswith(f"error: input file '{missing}' for '--expected-output' cannot be read: ")


def test_translate_reports_the_verifier_warnings_and_takes_a_bytecode_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, QMARK)
    assert translate_main(TranslateOptions(input=path)) == 0
    assert capsys.readouterr().err.startswith(f"{path}:3:1: {QMARK_WARNING}")
    out = tmp_path / "o.mlirbc"
    options = TranslateOptions(input=_write(tmp_path, PROGRAM), to="mlirbc", output=str(out))
    options.bytecode_version = 1
    assert translate_main(options) == 0
    assert out.read_bytes().startswith(b"ML\xefR") and capsys.readouterr() == ("", "")


# -- compiled_for_ref and roundtrip ----------------------------------------------------------------


def test_compile_for_ref_copies_without_reading_again() -> None:
    """The copy is Program.clone(), not the program's text read again: the warnings of reading it
    (an unknown operator) are not given a second time."""
    from mgxir.diagnostics import DiagnosticSink
    from mgxir.drivers.compiled_for_ref import compile_for_ref, run_compiled_for_ref

    sink = DiagnosticSink()
    compile_for_ref(parse_program(WARNED), sink)
    assert sink.warnings == []
    with pytest.raises(MgxError, match="no reference implementation for 'foo_op'"):
        run_compiled_for_ref(parse_program(WARNED + "@3 = @return(@1)\n"), {"x": np.zeros(2, np.float32)}, sink)
    assert sink.warnings == []


def test_roundtrip_reads_a_log_only_when_asked_and_warns_at_the_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _write(tmp_path, "log line\n" + PROGRAM + "log end\n", "run.log")
    assert roundtrip_main(log) == 1
    assert capsys.readouterr().err.startswith(f"{log}:1:")
    assert roundtrip_main(log, from_log=True) == 0
    assert capsys.readouterr().out == PRINTED
    path = _write(tmp_path, QMARK)
    assert roundtrip_main(path) == 0
    assert capsys.readouterr().err.startswith(f"{path}:3:1: {QMARK_WARNING}")


# -- run: inputs and outputs, edge cases ------------------------------------------------------------


def test_parameter_type_reshapes_only_a_single_value_and_converts_by_value() -> None:
    one = Shape(DType.float, (1,))
    assert to_parameter_type("x", np.array([2.0], np.float32).reshape(()), one).shape == (1,)
    with pytest.raises(MgxError, match=r"input 'x' has shape \{1, 1\} but parameter 'x' is float_type, \{1\}"):
        to_parameter_type("x", np.zeros((1, 1), np.float32), one)
    with pytest.raises(MgxError, match=r"input 'x' has shape \{2\} but parameter 'x' is float_type, \{1, 2\}"):
        to_parameter_type("x", np.zeros(2, np.float32), Shape(DType.float, (1, 2)))
    half = to_parameter_type("x", np.array([1], np.uint16), Shape(DType.half, (1,)))
    assert half.dtype == np.float16 and half.tolist() == [1.0]
    wide = to_parameter_type("x", np.array([3], np.int32), Shape(DType.int64, (1,)))
    assert wide.dtype == np.int64 and wide.tolist() == [3]


def test_parse_inline_splits_at_the_first_equals_and_repeats_one_value() -> None:
    with pytest.raises(MgxError, match=r"^error: input 'x': values must be numbers, got '1=2'$"):
        parse_inline("x", "2xf32=1=2")
    with pytest.raises(MgxError, match=r"bad dimensions in '2xaxf32'"):
        parse_inline("x", "2xaxf32=1")
    assert parse_inline("x", "2xf32=5").tolist() == [5.0, 5.0]


def test_filled_random_values_by_seed() -> None:
    flags = filled(Shape(DType.bool, (64,)), "random", np.random.default_rng(0))
    assert flags.tolist() == (np.random.default_rng(0).integers(0, 2, size=64) == 1).tolist()
    doubles = filled(Shape(DType.double, (16,)), "random", np.random.default_rng(0))
    assert doubles.dtype == np.float64 and (doubles.astype(np.float32) == doubles).all()


def test_flatten_outputs_keeps_tuple_element_values() -> None:
    named = flatten_outputs([(np.ones(1), np.full(2, 7.0))])
    assert named["out0_0"].tolist() == [1.0] and named["out0_1"].tolist() == [7.0, 7.0]


def test_gather_inputs_goes_on_after_a_file_and_names_what_failed(tmp_path: Path) -> None:
    program = parse_program(TWO_PARAMS)
    np.savez(tmp_path / "x.npz", x=np.array([5, 6], np.float32))
    got = gather_inputs(program, [f"@{tmp_path / 'x.npz'}", "y=2xi64=9 8"], "none", 0)
    assert got["x"].tolist() == [5.0, 6.0] and got["y"].tolist() == [9, 8]
    missing = tmp_path / "nosuch.npz"
    with pytest.raises(MgxError, match=f"^error: input file '{missing}' for '@{missing}' cannot be read: "):
        gather_inputs(program, [f"@{missing}"], "none", 0)
    with pytest.raises(MgxError, match=r"^error: input 'x': values must be numbers, got 'a'$"):
        gather_inputs(program, ["2xf32=a"], "none", 0)
    dynamic = parse_program(
        'module: "main"\nx = @param:x -> dynamic, float_type, {[1..4], [2..2]}\n'
        "y = @param:y -> dynamic, float_type, {[1..4], [2..2]}\n"
    )
    got = gather_inputs(dynamic, ["x=3x2xf32=1", "y=1x2xf32=2"], "none", 0)
    assert got["x"].shape == (3, 2) and got["y"].tolist() == [[2.0, 2.0]]


def test_run_on_ref_silences_floating_point_warnings() -> None:
    import warnings

    from mgxir.diagnostics import DiagnosticSink

    program = parse_program(PROGRAM.replace("neg", "log") + "@2 = @return(@1)\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (value,) = run.run_on_ref(program, {"x": np.array([0.0, -1.0], np.float32)}, DiagnosticSink())
    assert np.isneginf(value[0]) and np.isnan(value[1])


# -- run: defaults, logs, and the gpu and iree targets' options (no GPU, no IREE compile needed) ----

TWO_PASS_LOG = (
    "Compiling ...\nModule: main, Pass: eliminate_identity\n"
    + PROGRAM
    + "@2 = @return(@1)\n\nModule: main, Pass: dead_code_elimination\n"
    + PROGRAM.replace("x", "y").replace("neg", "abs")
    + "@2 = @return(@1)\n\nPass: fuse_pointwise\n"
)


def test_run_defaults_read_standard_input_as_a_program_with_seed_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    big = PROGRAM.replace("{2}", "{65}") + "@2 = @return(@1)\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(big))
    assert run_main(RunOptions(fill="random")) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].endswith(" ...] (65 elements, 1 not shown)")  # --print-max 64
    assert run_main(RunOptions(fill="random", input_file=_write(tmp_path, big), seed=0)) == 0
    assert capsys.readouterr().out == out
    noted = _write(tmp_path, "a note\n" + PROGRAM, "c.mgx")  # a program file is not searched as a log
    assert run_main(RunOptions(fill="random", input_file=noted)) == 1
    assert capsys.readouterr().err.startswith(f"{noted}:1:1: error: expected an instruction")
    commented = _write(tmp_path, "# a note\n" + PROGRAM, "d.mgx")  # `#` lines are comments
    assert run_main(RunOptions(fill="random", input_file=commented, seed=0)) == 0
    assert capsys.readouterr().out.startswith("out0: float_type, {2}\n")


def test_run_reads_the_program_after_the_named_log_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _write(tmp_path, TWO_PASS_LOG, "r.log")
    assert run_main(RunOptions(input_file=log, inputs=["2xf32=1 -2"], log_pass="eliminate_identity")) == 0
    assert capsys.readouterr().out.splitlines()[1] == "2xf32=[-1 2]"
    assert run_main(RunOptions(input_file=log, inputs=["2xf32=1 -2"], from_log=True)) == 0
    assert capsys.readouterr().out.splitlines()[1] == "2xf32=[1 2]"


def test_run_reports_the_read_warnings_with_the_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, PROGRAM.replace("neg", "foo_op") + "@2 = @return(@1)\n")
    assert run_main(RunOptions(fill="random", input_file=path)) == 1
    assert capsys.readouterr().err == (
        f"{path}:3:6: warning: unknown operator 'foo_op': kept as written; its shape is not checked\n"
        "@1 = foo_op(x) -> float_type, {2}, {1}\n     ^\n"
        "error: 'foo_op' (line 3): no reference implementation for 'foo_op' (unknown operator)\n"
    )


def test_run_gives_its_options_to_the_gpu_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--device, --perf, --exhaustive-tune and --fp32-math reach the GPU target's options (each run
    its own: nothing is kept between runs)."""
    from mgxir.targets.gpu.target import GpuOptions, GpuTarget

    given: list[GpuOptions] = []

    def compile(self: GpuTarget, program: object, options: GpuOptions, sink: object) -> None:
        given.append(options)
        raise MgxError("stopped")

    path = _write(tmp_path, PROGRAM)
    with monkeypatch.context() as patched:
        patched.setattr(GpuTarget, "compile", compile)
        options = RunOptions(
            fill="random",
            input_file=path,
            target="gpu",
            device="hip:1",
            perf=True,
            exhaustive_tune=True,
            fp32_math="tf32",
            quiet=True,
        )
        assert run_main(options) == 1
        assert capsys.readouterr().err == "error: stopped\n"
        run_main(RunOptions(fill="random", input_file=path, target="gpu", device="hip:0", quiet=True))
    assert given == [
        GpuOptions(device="hip:1", perf=True, exhaustive_tune=True, fp32_math="tf32"),
        GpuOptions(device="hip:0"),
    ]
    capsys.readouterr()
    assert run_main(RunOptions(fill="random", input_file=path, target="gpu", device="bogus")) == 1
    assert capsys.readouterr().err == "error: --device for --target=gpu is N, cuda:N or hip:N, not 'bogus'\n"


def test_run_gives_the_device_to_the_iree_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The device is looked up before any compilation, for a program and for MLIR alike."""
    path = _write(tmp_path, PROGRAM)
    mlir = _write(tmp_path, "module {}\n", "p.mlir")
    for input_file in (path, mlir):
        assert run_main(RunOptions(fill="random", input_file=input_file, target="iree", device="bogus")) == 1
        assert capsys.readouterr().err.startswith("error: unknown IREE device 'bogus' (available: local-task, ")


def _iree_compiler_installed() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("iree.compiler") is not None
    except ImportError:
        return False


@pytest.mark.skipif(_iree_compiler_installed(), reason="IREE's compiler is installed: the run would compile")
def test_run_on_iree_without_its_compiler_names_the_device_and_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    missing = "and compiling one needs IREE's compiler (iree-base-compiler), which is not installed: pip install"
    log = _write(tmp_path, TWO_PASS_LOG.replace("neg", "foo_op"), "r.log")
    options = RunOptions(
        input_file=log, log_pass="eliminate_identity", inputs=["x=2xf32=1 2"], target="iree", cache_dir=str(cache)
    )
    assert run_main(options) == 1
    assert capsys.readouterr().err == (
        f"{log}:5:6: warning: unknown operator 'foo_op': kept as written; its shape is not checked\n"
        "@1 = foo_op(x) -> float_type, {2}, {1}\n     ^\n"
        f"error: IREE device 'local-task': {cache} holds no module compiled for this program, {missing} "
        "'mgxir[mlir]'\n"
    )
    options = RunOptions(input_file=log, from_log=True, inputs=["y=2xf32=1 2"], target="iree", device="local-sync")
    assert run_main(options) == 1
    assert capsys.readouterr().err.startswith("error: IREE device 'local-sync': ")


@pytest.mark.skipif(_iree_compiler_installed(), reason="IREE's compiler is installed: MLIR is written")
def test_translate_to_and_from_mlir_without_iree_names_the_package(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    path = _write(tmp_path, PROGRAM)
    monkeypatch.setattr(sys, "stdin", io.StringIO(PROGRAM))  # --list-lowerings reads nothing
    for options in (
        TranslateOptions(list_lowerings=True),
        TranslateOptions(input=path, to="mlir", split_input_file=True),
        TranslateOptions(input=path, source="mlir", split_input_file=True),
        TranslateOptions(input=path, to="mlirbc", bytecode_version=1),
    ):
        assert translate_main(options) == 1
        out, err = capsys.readouterr()
        assert out == "" and re.fullmatch(
            r"error: this needs the 'iree(\.compiler)?' package: pip install 'mgxir\[mlir\]'\n", err
        )


def test_translate_reads_standard_input_and_reports_the_verifier_warnings(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(QMARK))
    assert translate_main(TranslateOptions()) == 0
    out, err = capsys.readouterr()
    assert out == QMARK + "\n\n"
    assert err == f"<stdin>:3:1: {QMARK_WARNING}\n@1 = add(x,?) -> float_type, {{2}}, {{1}}\n^\n"


# -- ONNX: mgx-translate's and mgx-run's reader with MIGraphX's driver options -------------------
# The models are built here (onnx.helper) so that the tests need no ../shared/onnx-models.


def _onnx_model(tmp_path: Path, name: str) -> str:
    """One of the small models of MIGraphX's ONNX tests, written to `tmp_path/NAME.onnx`."""
    from onnx import TensorProto, helper

    def tensor(name: str, dims: list, elem: int = TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, elem, dims)

    node = helper.make_node
    graphs = {
        "variable_batch": ([node("Identity", ["0"], ["1"])], [tensor("0", [None, 3])], [tensor("1", [None, 3])]),
        "dim_param": ([], [tensor("0", ["dim0", "dim1"])], [tensor("0", ["dim0", "dim1"])]),
        "conv_dynamic_img": (
            [node("Conv", ["0", "1"], ["2"])],
            [tensor("0", [1, 3, None, None]), tensor("1", [1, 3, 3, 3])],
            [tensor("2", [1, 1, None, None])],
        ),
        "unknown": ([node("Unknown", ["0"], ["1"])], [tensor("0", [2, 3])], [tensor("1", [2, 3])]),
        "add_scalar": (
            [node("Add", ["0", "1"], ["2"])],
            [tensor("0", [2, 3], TensorProto.UINT8), tensor("1", [], TensorProto.UINT8)],
            [tensor("2", [2, 3], TensorProto.UINT8)],
        ),
        "simplified_layer_normalization": (
            [node("SimplifiedLayerNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=1e-5, stash_type=1)],
            [tensor("x", [2, 4], TensorProto.FLOAT16), tensor("scale", [4], TensorProto.FLOAT16)],
            [tensor("y", [2, 4], TensorProto.FLOAT16)],
        ),
    }
    nodes, inputs, outputs = graphs[name]
    model = helper.make_model(
        helper.make_graph(nodes, name, inputs, outputs), opset_imports=[helper.make_opsetid("", 19)]
    )
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(model.SerializeToString())
    return str(path)


@pytest.mark.parametrize(
    ("model", "format_options", "expected"),
    [
        ("variable_batch", {}, "0 = @param:0 -> float_type, {1, 3}, {3, 1}"),
        ("variable_batch", {"batch": 4}, "0 = @param:0 -> float_type, {4, 3}, {3, 1}"),
        ("variable_batch", {"default_dim_value": 4}, "0 = @param:0 -> float_type, {4, 3}, {3, 1}"),
        ("variable_batch", {"input_dim": ["@0 2 3"]}, "0 = @param:0 -> float_type, {2, 3}, {3, 1}"),
        ("dim_param", {"dim_param": ["dim0={min:1, max:8}", "dim1=3"]}, "dynamic, float_type, {[1..8], 3}"),
        (
            "conv_dynamic_img",
            {"dyn_input_dim": ["@0 [1, 3, {min:5,max:10}, {min:5,max:10}]"]},
            "0 = @param:0 -> dynamic, float_type, {1, 3, [5..10], [5..10]}",
        ),
        ("unknown", {"skip_unknown_operators": True}, "unknown:Unknown"),
    ],
)
def test_translate_from_onnx_with_driver_options(
    model: str, format_options: dict, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = TranslateOptions(input=_onnx_model(tmp_path, model), source="onnx", **format_options)
    assert translate_main(options) == 0
    assert expected in capsys.readouterr().out


def test_run_reads_an_onnx_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(RunOptions(input_file=_onnx_model(tmp_path, "add_scalar"), fill="ones")) == 0
    assert capsys.readouterr().out.startswith("out0: ")


def test_from_log_on_stdin_keeps_the_ir_for_a_reproducer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Standard input cannot be read twice: the reproducer comes from the IR kept before each pass."""
    _test_fail_pass(monkeypatch)
    monkeypatch.setattr(sys, "stdin", io.StringIO("log line\n" + DEAD + "log end\n"))
    repro = tmp_path / "r.repro"
    assert opt_main(OptOptions(input="-", from_log=True, pipeline="dce,test_fail", reproducer=str(repro))) == 1
    assert capsys.readouterr().err.startswith(FAILED)
    assert repro.read_text() == "// mgx-opt -p 'test_fail'\n" + PROGRAM + "@2 = @return(@1)\n\n\n"


def test_a_plugged_in_target_is_verified_against_ref(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(TARGETS, "interp", TargetEntry("mgxir.targets.ref:RefTarget"))
    path = _write(tmp_path, RUN_ELIDED)
    options = RunOptions(input_file=path, inputs=["x=2xf32=1 -2"], target="interp", verify_against_ref=True, quiet=True)
    assert run_main(options) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "verify: interp against ref"
    assert out.splitlines()[1].startswith("out0: ok: rms error 0 (tolerance 0.001), worst element [0]: ")
    elided = "warning: literal '@literal' (line 4) in module 'main' was printed elided"
    assert err.count(elided) == 2  # the target's run and ref's
    options = RunOptions(input_file=path, inputs=["x=2xf32=1 -2"], verify_against_ref=True, quiet=True)
    assert run_main(options) == 0
    assert capsys.readouterr().err.count(elided) == 2
    assert run_main(RunOptions(fill="random", input_file=path + ".mlirbc")) == 1  # read by its content: there is none
    assert capsys.readouterr().err == f"error: cannot read {path}.mlirbc: No such file or directory\n"


def test_onnx_import_warnings_reach_the_user(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _onnx_model(tmp_path, "simplified_layer_normalization")
    assert translate_main(TranslateOptions(input=model, source="onnx")) == 0
    warning = "warning: SIMPLIFIED_LAYER_NORMALIZATION attribute stash_type is only used for training.\n"
    assert capsys.readouterr().err == warning
    assert run_main(RunOptions(fill="random", input_file=model, quiet=True)) == 0
    assert capsys.readouterr().err == warning


def test_compare_of_a_wrong_shape_is_false(capsys: pytest.CaptureFixture[str]) -> None:
    assert compare({"out0": np.zeros(2)}, {"out0": np.zeros(3)}, 1e-3, None, None) is False
    assert capsys.readouterr().out == "out0: shape {2} but expected {3}\n"


def test_an_mlir_input_on_iree_goes_to_its_reader(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nosuch.mlir"
    assert run_main(RunOptions(fill="random", input_file=str(missing), target="iree")) == 1
    assert capsys.readouterr().err == f"error: cannot read {missing}: No such file or directory\n"


def test_identical_nans_match_with_an_absolute_or_relative_tolerance_too(capsys: pytest.CaptureFixture[str]) -> None:
    """A NaN where the expected output has a NaN is a match under --atol/--rtol as under the rms rule;
    a NaN against a number is not."""
    nan = np.array([np.nan, 1.0])
    for atol, rtol in ((1e-6, None), (None, 1e-6)):
        assert compare({"out0": nan}, {"out0": nan.copy()}, 1e-3, atol, rtol)
        assert not compare({"out0": nan}, {"out0": np.array([0.0, 1.0])}, 1e-3, atol, rtol)
    assert capsys.readouterr().out.count("MISMATCH") == 2
