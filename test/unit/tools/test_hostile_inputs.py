"""Hostile and clumsy inputs to mgx-run (issue 24): sizes are checked before anything is allocated,
against what the file holds and what the machine can give; damaged files are one line.

The cases that allocated too much before their fix run in a child process under an address-space
limit (RLIMIT_AS), so that without the fix they end in a MemoryError traceback there, not in a
swapping test machine."""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mgxir.arrayfiles import ArrayFileError, load_arrays
from mgxir.diagnostics import MgxError, available_memory, check_allocation, memory_limits
from mgxir.drivers.run import gather_inputs, parse_inline
from mgxir.ir.dtype import DType
from mgxir.text.parser import parse_program
from mgxir.translate.mxr.values import ValueError_, literal_from_value

ROOT = Path(__file__).resolve().parents[3]
LIMIT = 3 << 30  # more than the child's own address space (about 1.5 GiB with numpy and mgxir)


def _in_limited_child(code: str) -> subprocess.CompletedProcess[str]:
    """Runs `code` in a fresh Python under RLIMIT_AS; prints of the code come back."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=limit, timeout=120, check=False
    )


def _refused_in_child(code: str) -> str:
    result = _in_limited_child(
        "from mgxir.diagnostics import MgxError\ntry:\n"
        + "".join(f"    {line}\n" for line in code.strip().split("\n"))
        + "except MgxError as e:\n    print(e.message)\n"
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    return result.stdout.strip()


TWO_PARAMS = 'module: "main"\nx = @param:x -> float_type, {2}, {1}\nb = @param:b -> bf16_type, {2}, {1}\n'


# -- the machine's limits ----------------------------------------------------------------------------


def test_the_address_space_limit_is_one_of_the_limits() -> None:
    out = _refused_in_child(
        "from mgxir.diagnostics import memory_limits, check_allocation\n"
        "print(sorted(memory_limits()))\n"
        "check_allocation(4 << 30, 'four GiB')"
    )
    assert "the address-space limit (ulimit -v)" in out
    assert "four GiB needs 4.0 GiB, more than the " in out and "(under the address-space limit (ulimit -v))" in out


def test_available_memory_is_the_smallest_limit() -> None:
    limits = memory_limits()
    assert "physical memory" in limits
    available, name = available_memory()
    assert available == min(limits.values()) and limits[name] == available
    check_allocation(1 << 20, "a MiB")
    with pytest.raises(MgxError, match=r"^error: a petabyte needs 1024.0 TiB, more than the "):
        check_allocation(1 << 50, "a petabyte")


# -- --input inline specs -----------------------------------------------------------------------------


def test_inline_dimensions_are_multiplied_without_wrapping_around() -> None:
    # np.prod of these wraps around to 2**32 in int64: 32 GiB of float64 was asked for
    out = _refused_in_child(
        "from mgxir.drivers.run import parse_inline\nparse_inline('x', '4294967296x4294967297xf32=1')"
    )
    assert out.startswith("input 'x' (4294967296x4294967297xf32) needs "), out


def test_inline_dimensions_are_checked_against_the_parameter_before_allocating() -> None:
    # 745 GiB were attempted before the shape was compared with the parameter's
    out = _refused_in_child(
        "from mgxir.drivers.run import gather_inputs\nfrom mgxir.text.parser import parse_program\n"
        f"gather_inputs(parse_program({TWO_PARAMS!r}), ['x=100000x1000000xf64=1'], 'zeros', 0)"
    )
    assert out == "input 'x' has shape {100000, 1000000} but parameter 'x' is float_type, {2}"


def test_a_random_fill_counts_its_float64_temporary() -> None:
    # 300M float32 values: 1.2 GiB, which the old check let through, then a 2.4 GiB float64 draw
    program = 'module: "main"\\nx = @param:x -> float_type, {300000000}, {1}\\n'
    out = _refused_in_child(
        "from mgxir.drivers.run import gather_inputs\nfrom mgxir.text.parser import parse_program\n"
        f"gather_inputs(parse_program('{program}'), [], 'random', 0)"
    )
    assert out.startswith("a random fill of float_type, {300000000} needs 4.5 GiB, more than"), out


def test_inline_values_still_read() -> None:
    assert parse_inline("x", "2xf32=1 2").tolist() == [1.0, 2.0]
    assert parse_inline("x", "2x2xi8=3").tolist() == [[3, 3], [3, 3]]


# -- .npy and .npz files ------------------------------------------------------------------------------


def _npy_claiming(shape: tuple[int, ...], data: bytes = b"") -> bytes:
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}".encode()
    header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data


@pytest.mark.parametrize("shape", [(1 << 40,), (1 << 31, 1 << 31, 1 << 31), (3,)])
def test_an_array_header_cannot_claim_more_than_the_file_holds(tmp_path: Path, shape: tuple[int, ...]) -> None:
    path = tmp_path / "claim.npy"
    path.write_bytes(_npy_claiming(shape, b"\0" * 8))
    with pytest.raises(ArrayFileError, match=r"^holds 8 bytes of data, but its header says float32 "):
        load_arrays(str(path))


def test_a_member_cannot_claim_more_than_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "claim.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x.npy", _npy_claiming((1 << 40,), b"\0" * 16))
    with pytest.raises(ArrayFileError, match=r"^member 'x' holds 16 bytes of data, but its header says"):
        load_arrays(str(path))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"\x93NUMPY\x01\x00\x05\x00{abc}", "has a damaged .npy header"),
        (b"\x93NUMPY\x09\x00", "is a .npy file of version 9.0, which is not read here"),
        (b"\x93NUMPY\x03\x00\x00\x00\x00\x00", "is a .npy file of version 3.0, which is not read here"),
        (b"PK\x05\x06" + b"\0" * 18, None),  # an empty archive: no arrays
    ],
)
def test_damaged_files_are_one_line(tmp_path: Path, content: bytes, message: str | None) -> None:
    path = tmp_path / "f.npz"
    path.write_bytes(content)
    if message is None:
        assert load_arrays(str(path)) == {}
        return
    with pytest.raises(ArrayFileError, match="^" + message):
        load_arrays(str(path))


def test_input_files_that_are_not_arrays_of_numbers(tmp_path: Path) -> None:
    program = parse_program(TWO_PARAMS)
    np.savez(tmp_path / "objects.npz", x=np.array([1, "a"], dtype=object))
    np.savez(tmp_path / "strings.npz", x=np.array(["a", "b"]))
    np.savez(tmp_path / "crc.npz", x=np.array([1.0, 2.0], np.float32))
    crc = bytearray((tmp_path / "crc.npz").read_bytes())
    crc[crc.index(b"\x00\x00\x80?") + 3] ^= 1
    (tmp_path / "crc.npz").write_bytes(bytes(crc))
    (tmp_path / "empty.npz").write_bytes(b"")
    for spec, why in [
        (f"@{tmp_path / 'objects.npz'}", "member 'x' holds Python objects, not numbers"),
        (f"@{tmp_path / 'strings.npz'}", "member 'x' holds <U1 values, not numbers"),
        (f"@{tmp_path / 'crc.npz'}", "is a damaged .npz file: Bad CRC-32 for file 'x.npy'"),
        (f"@{tmp_path / 'empty.npz'}", "is empty"),
        ("x=@/dev/null", "is empty"),
        (f"x=@{tmp_path}", "is a directory"),
    ]:
        with pytest.raises(MgxError) as refused:
            gather_inputs(program, [spec], "zeros", 0)
        assert refused.value.message.endswith(why), refused.value.message


def test_void_arrays_are_read_as_the_parameters_type_when_the_item_size_matches(tmp_path: Path) -> None:
    """ml_dtypes' bf16 and int4 arrays are saved as numpy's void types `|V2` and `|V1`."""
    program = parse_program(TWO_PARAMS + "i = @param:i -> int8_type, {2}, {1}\n")
    bits = np.array([0x3F80, 0xC000], np.uint16)  # bf16 1.0 and -2.0
    np.savez(tmp_path / "v.npz", b=bits.view("V2"), i=np.array([3, -4], np.int8).view("V1"), x=bits.view("V2"))
    with pytest.raises(MgxError, match=r"^error: input 'x' holds 2-byte \|V2 values but parameter 'x' is float_type"):
        gather_inputs(program, [f"@{tmp_path / 'v.npz'}"], "zeros", 0)
    np.savez(tmp_path / "v.npz", b=bits.view("V2"), i=np.array([3, -4], np.int8).view("V1"))
    got = gather_inputs(program, [f"@{tmp_path / 'v.npz'}"], "zeros", 0)
    assert got["b"].dtype == DType.bf16.numpy and got["b"].astype(np.float32).tolist() == [1.0, -2.0]
    assert got["i"].tolist() == [3, -4]


# -- .mxr and .json literals --------------------------------------------------------------------------


@pytest.mark.parametrize("lens", [[1 << 63], [(1 << 64) - 1, 2], [1 << 40, 1 << 40]])
def test_literal_lengths_past_what_memory_can_address(lens: list[int]) -> None:
    # numpy's OverflowError and "array is too big" ValueError were internal errors
    value = {"shape": {"lens": lens, "strides": [0] * len(lens)}, "data": b"\0" * 4}
    with pytest.raises(
        ValueError_, match=r"^x: its shape float_type, \{.*\} holds more values than memory can address"
    ):
        literal_from_value(value, "x")


def test_a_stride_0_literal_is_unfolded_only_where_memory_allows() -> None:
    # 4 bytes of data, 2**31 values: 8 GiB allocated
    out = _in_limited_child(
        "from mgxir.translate.mxr.values import ValueError_, literal_from_value\ntry:\n"
        "    literal_from_value({'shape': {'lens': [1 << 31], 'strides': [0]}, 'data': b'\\0' * 4}, 'x')\n"
        "except ValueError_ as e:\n    print(e)\n"
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("x of shape float_type, {2147483648}, {0} needs 8.0 GiB, more than the ")


# -- MLIR ---------------------------------------------------------------------------------------------


def test_mlir_that_makes_the_reader_loop_forever_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mutation of --to-mlirbc's output on which MLIR's bytecode reader never returns: the
    child that reads it is stopped after CHILD_SECONDS."""
    api = pytest.importorskip("mgxir.translate.mlir.api")
    monkeypatch.setattr(api, "CHILD_SECONDS", 2)
    data = (ROOT / "test/translate/mlir/Inputs/endless.mlirbc").read_bytes()
    with pytest.raises(MgxError, match=r"^error: endless.mlirbc: MLIR's reader did not finish within 2 s$"):
        api.program_from_mlir(data, "endless.mlirbc")


def _mlir_program() -> tuple[str, bytes]:
    """A program with a large literal (it comes back through the .npz) and a small one (in the text),
    its lossless text, and its --to-mlirbc bytecode."""
    from mgxir.text.printer import PrintOptions, print_program
    from mgxir.translate.mlir.api import mlir_bytecode
    from mgxir.verifier import verify

    weights = np.arange(64, dtype=np.float32).reshape(8, 8) / 7
    text = (
        'module: "main"\nx = @param:x -> float_type, {8, 8}, {8, 1}\n'
        "@1 = @literal{hex:" + weights.tobytes().hex() + "} -> float_type, {8, 8}, {8, 1}\n"
        "@2 = @literal{0.1, -0, nan} -> half_type, {3}, {1}\n@3 = add(x,@1)\n@4 = @return(@3,@2)\n"
    )
    program = parse_program(text)
    verify(program)
    return print_program(program, PrintOptions(lossless=True)), mlir_bytecode(program)


def test_mlir_is_read_in_a_child_and_handed_back_losslessly(monkeypatch: pytest.MonkeyPatch) -> None:
    """MLIR's reader runs only in the child (heap corruption there once went unnoticed and the same
    file was parsed again in this process, which then crashed): this process never calls it, and
    the program it gets back is the one that was written, bit for bit."""
    api = pytest.importorskip("mgxir.translate.mlir.api")
    from mgxir.text.printer import PrintOptions, print_program

    lossless, data = _mlir_program()
    parsed_in: list[int] = []
    parse = api.parse_mlir

    def recording(*args: object) -> object:
        parsed_in.append(os.getpid())  # the child's list is its own copy
        return parse(*args)

    monkeypatch.setattr(api, "parse_mlir", recording)
    back = api.program_from_mlir(data, "x.mlirbc")
    assert parsed_in == []
    assert print_program(back, PrintOptions(lossless=True)) == lossless


def test_an_unexpected_exception_in_the_mlir_child_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the reader (not the user's mistake) comes back as such, with the child's traceback."""
    api = pytest.importorskip("mgxir.translate.mlir.api")

    def broken(*args: object) -> None:
        raise IndexError("a bug in readback")

    monkeypatch.setattr(api, "from_mlir", broken)
    with pytest.raises(api.ChildReaderFailed, match=r"(?s)^reading x.mlirbc in a child process:.*IndexError: a bug"):
        api.program_from_mlir(_mlir_program()[1], "x.mlirbc")


def test_a_user_error_in_the_mlir_child_keeps_its_line_and_column() -> None:
    api = pytest.importorskip("mgxir.translate.mlir.api")
    with pytest.raises(MgxError) as caught:
        api.program_from_mlir(b"func.func @main() {\n  %0 = bogus\n}\n", "bad.mlir")
    where = caught.value.location
    assert (where.file, where.line, where.column) == ("bad.mlir", 2, 8), caught.value.render()
    assert caught.value.diagnostic.source_line == "  %0 = bogus"


def test_a_large_mlir_file_gets_more_time_to_be_read() -> None:
    """The child reads the program back too (about 1 s a megabyte): 60 s stopped valid files."""
    api = pytest.importorskip("mgxir.translate.mlir.api")
    assert api.child_seconds(b"x" * 1000) == api.CHILD_SECONDS
    assert api.child_seconds(b"x" * (100 << 20)) == api.CHILD_SECONDS + 100 * api.CHILD_SECONDS_PER_MIB


def test_a_blocked_mlir_child_is_stopped_by_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child that blocks before its own alarm is set (forked while another thread held a lock)
    is killed by this process after child_seconds + 1, not waited for forever."""
    api = pytest.importorskip("mgxir.translate.mlir.api")
    import signal
    import time

    monkeypatch.setattr(api, "CHILD_SECONDS", 1)
    monkeypatch.setattr(signal, "alarm", lambda seconds: 0)  # the child's own alarm never comes
    monkeypatch.setattr(api, "_read_here", lambda data, filename: time.sleep(3600))
    started = time.monotonic()
    with pytest.raises(MgxError, match=r"^error: x.mlirbc: MLIR's reader did not finish within 1 s$"):
        api.program_from_mlir(_mlir_program()[1], "x.mlirbc")
    assert time.monotonic() - started < 30


# -- files written -----------------------------------------------------------------------------------


def test_written_files_keep_the_targets_mode_and_new_ones_follow_the_umask(tmp_path: Path) -> None:
    from mgxir.text.writer import write_atomically

    new = tmp_path / "new.mgx"
    old_umask = os.umask(0o022)
    try:
        write_atomically(new, "x")  # mkstemp's temporary is 0600: new files were private
        assert stat.S_IMODE(new.stat().st_mode) == 0o644
        os.umask(0o077)
        shared = tmp_path / "shared.mgx"
        shared.write_text("old")
        shared.chmod(0o664)
        write_atomically(shared, "new")
        assert stat.S_IMODE(shared.stat().st_mode) == 0o664 and shared.read_text() == "new"
    finally:
        os.umask(old_umask)


def test_mgx_run_output_is_written_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mgxir.drivers import run as run_driver

    path = tmp_path / "out.npz"
    run_driver.save_outputs({"out0": np.ones(3, np.float32)}, str(path))
    assert load_arrays(str(path))["out0"].tolist() == [1.0, 1.0, 1.0]

    def fail_midway(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail_midway)  # the write fails after the data went out
    with pytest.raises(MgxError, match=r"cannot write .*out\.npz: No space left on device"):
        run_driver.save_outputs({"out0": np.zeros(3, np.float32)}, str(path))
    assert load_arrays(str(path))["out0"].tolist() == [1.0, 1.0, 1.0]  # the earlier file, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npz"]


def test_spirv_into_a_folder_leaves_no_kernels_of_an_earlier_program(tmp_path: Path) -> None:
    pytest.importorskip("mgxir.translate.spirv")
    from mgxir.drivers.translate import TranslateOptions, translate_main

    two = tmp_path / "two.mgx"
    two.write_text(
        'module: "main"\nx = @param:x -> float_type, {4}, {1}\n@1 = relu(x)\n@2 = exp(x)\n@3 = @return(@1,@2)\n'
    )
    one = tmp_path / "one.mgx"
    one.write_text('module: "main"\nx = @param:x -> float_type, {4}, {1}\n@1 = neg(x)\n@2 = @return(@1)\n')
    out = tmp_path / "kernels"
    (tmp_path / "kernels").mkdir()
    (out / "mine.txt").write_text("a file of the user's")
    assert translate_main(TranslateOptions(input=str(two), to="spirv", output=str(out))) == 0
    first = {p.name for p in out.glob("*.spv")}
    assert translate_main(TranslateOptions(input=str(one), to="spirv", output=str(out))) == 0
    second = {p.name for p in out.glob("*.spv")}
    listed = {k["file"] for k in json.loads((out / "manifest.json").read_text())["kernels"]}
    assert len(first) == 2 and second == listed and len(second) == 1
    assert (out / "mine.txt").exists()


def test_the_cgroup_limit_is_one_of_the_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mgxir.diagnostics as diagnostics

    (tmp_path / "memory.max").write_text("3000000000\n")
    (tmp_path / "memory.current").write_text("1000000000\n")
    monkeypatch.setattr(
        diagnostics, "_CGROUP_LIMITS", ((str(tmp_path / "memory.max"), str(tmp_path / "memory.current")),)
    )
    assert memory_limits()["the cgroup's memory limit"] == 2_000_000_000
    (tmp_path / "memory.max").write_text("max\n")  # no limit
    assert "the cgroup's memory limit" not in memory_limits()


def test_onnx_multinomial_sizes_its_draws_before_making_them(tmp_path: Path) -> None:
    # sample_size 2**31-1 made 16 GiB of float64 zeros before the constant's size was checked
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    node = helper.make_node("Multinomial", ["x"], ["y"], sample_size=2**31 - 1)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
    )
    path = tmp_path / "multinomial.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    out = _refused_in_child(
        "from mgxir.ops import register_all_ops\nregister_all_ops()\n"
        f"from mgxir.translate.onnx import ImportOptions, import_model\nimport_model({str(path)!r}, ImportOptions())"
    )
    assert "a constant of [1, 2147483647] float_type elements (8589934588 bytes) is larger than" in out, out


# -- what the long fuzz runs found ---------------------------------------------------------------------


def test_a_member_name_that_is_not_utf8_is_a_damaged_archive() -> None:
    # zipfile's UnicodeDecodeError was an internal error (fuzz/run.py, sidecar reader)
    with pytest.raises(ArrayFileError, match=r"^is a damaged \.npz file: 'utf-8' codec can't decode"):
        load_arrays(str(ROOT / "test/unit/data/fuzz/member_name_not_utf8.npz"))


def test_an_onnx_external_data_location_that_is_not_utf8_is_one_line() -> None:
    # protobuf gives bytes for it; os.path.join's TypeError was an internal error (fuzz/run.py, onnx)
    pytest.importorskip("onnx")
    from mgxir.ops import register_all_ops
    from mgxir.translate.onnx import ImportOptions, import_model

    register_all_ops()
    with pytest.raises(MgxError, match=r"external data location b'conv\.wei\\xb9ht' is not UTF-8 text"):
        import_model(str(ROOT / "test/unit/data/fuzz/location_not_utf8.onnx"), ImportOptions())


def test_a_member_with_an_empty_name_is_read_as_named() -> None:
    # zipfile's ZipInfo.is_dir raised IndexError on it: an internal error (fuzz/run.py, input-file)
    try:
        arrays = load_arrays(str(ROOT / "test/unit/data/fuzz/empty_member_name.npz"))
    except ArrayFileError as e:  # the member itself may be damaged too: one line either way
        assert str(e)
    else:
        assert isinstance(arrays, dict)


def test_a_resize_scale_past_floats_range_is_the_users_error() -> None:
    # 2 x 3e38 in float is infinite: int() of it was an OverflowError (fuzz/run.py, json and py)
    from mgxir.verifier import verify

    text = 'module: "main"\nx = @param:x -> float_type, {1, 2}, {2, 1}\n@1 = resize[scales={1, 3e38}](x)\n'
    with pytest.raises(MgxError, match=r"resize: scales \[1\.0, [\d.]+e\+38\] take a dimension past float's range"):
        verify(parse_program(text, "x.mgx"))


@pytest.mark.parametrize("scale", ["nan", "inf", "-2"])
def test_a_resize_scale_that_is_not_a_finite_non_negative_number_is_the_users_error(scale: str) -> None:
    # int() of NaN in the shape rule was a ValueError: an internal error (fuzz/run.py, text)
    from mgxir.verifier import verify

    text = f'module: "main"\nx = @param:x -> float_type, {{1, 2}}, {{2, 1}}\n@1 = resize[scales={{1, {scale}}}](x)\n'
    with pytest.raises(MgxError, match=rf"resize: scale {scale}\S* is not a finite"):
        verify(parse_program(text, "x.mgx"))


def test_the_stride_of_a_dimension_of_1_is_never_stepped() -> None:
    # a stride past what numpy takes on it was an OverflowError: an internal error (fuzz/run.py, json)
    value = {"shape": {"lens": [1, 2], "strides": [(1 << 63) - 1, 1]}, "data": np.float32([1.5, 2.5]).tobytes()}
    assert literal_from_value(value, "x").data.tolist() == [[1.5, 2.5]]


@pytest.mark.parametrize("op", ["allocate[buf_type=float_type](d)", "broadcast_with_dims(x,d)"])
def test_a_rank_read_from_an_input_length_is_bounded(op: str) -> None:
    # a list of 2^40 dimensions was a MemoryError (2^64: OverflowError); fuzz/run.py, --from-py
    from mgxir.verifier import verify

    text = (
        'module: "main"\nx = @param:x -> float_type, {2}, {1}\nd = @param:d -> int64_type, {1099511627776}, {1}\n'
        f"@2 = {op}\n"
    )
    with pytest.raises(MgxError, match=r"1099511627776 output dimensions are more than mgxir holds \(4096\)"):
        verify(parse_program(text, "x.mgx"))


def test_a_float_attribute_past_float_range_is_an_infinity_without_a_warning() -> None:
    # numpy's RuntimeWarning was a second line on standard error (fuzz/run.py, --from-py)
    import warnings

    text = 'module: "main"\nx = @param:x -> float_type, {1, 2}, {2, 1}\n@1 = resize[scales={1, 1e308}](x)\n'
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        program = parse_program(text, "x.mgx")
    resize = next(ins for ins in program.main if ins.op.name == "resize")
    assert resize.op["scales"] == (1.0, float("inf"))


@pytest.mark.parametrize("literal", ["@literal", "@literal -> float_type, {1}, {0}"])
def test_a_literal_without_its_values_is_the_users_error(literal: str) -> None:
    # the shape rule's IndexError was an internal error (fuzz/run.py, text)
    from mgxir.verifier import verify

    program = parse_program(f'module: "main"\n@0 = {literal}\n@1 = @return(@0)\n', "x.mgx")
    with pytest.raises(MgxError, match=r"^x\.mgx:2:1: error: @literal: a literal needs its values"):
        verify(program)


def test_a_sidecar_is_streamed_into_its_file(tmp_path: Path) -> None:
    """A program whose literals fit in memory is written: the sidecar was built in memory first,
    twice the literals' memory (MemoryError, an internal error; fuzz/run.py, json). Under an
    address-space limit 160 MiB above what the child holds, 100 MiB of literal are written."""
    code = (
        "import resource\nimport numpy as np\nfrom mgxir.diagnostics import process_memory\n"
        "from mgxir.text.parser import parse_program\nfrom mgxir.text.writer import write_program\n"
        "from mgxir.ir.literal import Literal\n"
        "from mgxir.ir.shape import Shape\nfrom mgxir.ir.dtype import DType\n"
        "program = parse_program('module: \"main\"\\nx = @param:x -> float_type, {1}, {1}\\n@1 = @return(x)\\n')\n"
        "limit = process_memory()[1] + (160 << 20)\n"
        "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
        "shape = Shape.make(DType.float, [25 << 20])\n"
        "program.main.add_literal(Literal(shape, np.ones(shape.lens, np.float32)))\n"
        f"write_program(program, {str(tmp_path / 'big.mgx')!r}, lossless=True)\n"
        "print('written')\n"
    )
    out = _in_limited_child(code)
    assert out.returncode == 0 and out.stdout == "written\n", out.stderr[-2000:]
    assert (tmp_path / "big.npz").stat().st_size > 100 << 20


def test_a_target_that_is_no_regular_file_is_written_in_place(tmp_path: Path) -> None:
    """`-o /dev/null` (run as root) put a regular file where the device was: the rename of the
    temporary replaced it. A FIFO stands in for the device here."""
    from mgxir.text.writer import write_atomically

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_atomically(fifo, "written\n")
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
        assert os.read(reader, 100) == b"written\n"
    finally:
        os.close(reader)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


def test_mlir_running_out_of_memory_in_the_child_is_the_users_error() -> None:
    # MLIR's std::bad_alloc on a damaged size comes up as MemoryError in the child that reads the
    # file: it was an internal error (fuzz/run.py, mlirbc, under the harness's 3 GiB limit)
    pytest.importorskip("iree.compiler")
    path = ROOT / "test/translate/mlir/Inputs/bad_alloc.mlirbc"
    out = _in_limited_child(
        "from mgxir.diagnostics import MgxError\nfrom mgxir.translate.mlir.api import program_from_mlir\n"
        f"try:\n    program_from_mlir(open({str(path)!r}, 'rb').read(), 'bad_alloc.mlirbc')\n"
        "except MgxError as e:\n    print(e.message)\n"
    )
    assert out.stdout == "bad_alloc.mlirbc: MLIR's reader ran out of memory on this file\n", out.stderr[-2000:]
