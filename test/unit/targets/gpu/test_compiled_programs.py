"""Compiled programs as files (docs/compiled-programs.md): `mgx-opt -p gpu PROG -o OUT.mxr` keeps every
code object whole, MIGraphX's fields and the metadata mgxir adds in the `targets` entry. NVRTC
compiles for sm_90 without a GPU, so everything up to the device is tested here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.program import Program
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.translate.mxr import json_text, load_json, load_mxr, mxr_bytes, program_to_value
from mgxir.verifier import verify

pytest.importorskip("cuda.bindings")

from mgxir.targets.gpu.compiler import compiler_version
from mgxir.targets.gpu.driver import compile_for_gpu
from mgxir.targets.gpu.ops import COMPILED_FORMAT, CodeObject

EXAMPLE = Path(__file__).parents[4] / "examples" / "conv_relu_pool.mgx"


@pytest.fixture(scope="module")
def compiled() -> Program:
    program = parse_program(EXAMPLE.read_text(), str(EXAMPLE))
    verify(program, DiagnosticSink())  # fills in the result shapes the example leaves out
    return compile_for_gpu(program, "sm_90", DiagnosticSink())


def code_objects(program: Program) -> list:
    return [ins for ins in program.main if ins.op.defn.name == "gpu::code_object"]


def test_code_objects_are_saved_whole_with_migraphx_fields(compiled: Program) -> None:
    value = program_to_value(compiled)
    nodes = [n for n in value["modules"]["main"]["nodes"] if n["name"] == "gpu::code_object"]
    assert nodes and len(nodes) == len(code_objects(compiled))
    for node, ins in zip(nodes, code_objects(compiled), strict=True):
        fields = node["operator"]
        # MIGraphX's code_object_op::reflect, in its order
        assert list(fields) == [
            "code_object",
            "symbol_name",
            "global",
            "local",
            "expected_inputs",
            "output",
            "output_arg",
        ]
        assert bytes(fields["code_object"]) == ins.op["code_object"].binary
        assert len(fields["code_object"]) == ins.op["code_object"].size > 0
        assert len(fields["expected_inputs"]) == len(ins.args)
        assert fields["output"]["lens"] == list(ins.args[-1].shape.lens)


def test_the_target_entry_says_where_the_code_objects_run(compiled: Program) -> None:
    value = program_to_value(compiled)
    assert value["targets"] == [
        {
            "name": "gpu",
            "architecture": "sm_90",
            "platform": "cuda",
            "wave_size": 32,
            "payload": "bin",
            "toolchain": compiler_version(),
            "producer": value["targets"][0]["producer"],
            "format": COMPILED_FORMAT,
            "binaries": {code.digest: code.size for code in map(_code, code_objects(compiled))},
        }
    ]
    assert value["targets"][0]["producer"].startswith("mgxir")
    assert value["contexts"] == [{"events": 0, "streams": 1}]  # MIGraphX's GPU context::to_value


def test_a_program_without_target_ops_names_no_target() -> None:
    text = "x = @param:x -> float_type, {2}, {1}\n@1 = relu(x) -> float_type, {2}, {1}\n@2 = @return(@1)\n"
    program = parse_program(text)
    value = program_to_value(program)
    assert value["targets"] == [] and value["contexts"] == []


@pytest.mark.parametrize("encode, decode", [(mxr_bytes, load_mxr), (json_text, load_json)])
def test_code_objects_read_back_whole(compiled: Program, encode, decode) -> None:
    loaded = decode(encode(compiled))
    assert print_program(loaded) == print_program(compiled)
    for before, after in zip(code_objects(compiled), code_objects(loaded), strict=True):
        code: CodeObject = after.op["code_object"]
        assert code.binary == before.op["code_object"].binary
        assert (code.arch, code.payload, code.toolchain) == ("sm_90", "bin", compiler_version())
        assert after.op["expected_inputs"] == before.op["expected_inputs"]
        assert after.op["output"] == before.op["output"]
    assert encode(loaded) == encode(compiled)


def test_library_calls_keep_their_solutions(compiled: Program) -> None:
    tuned = next(ins for ins in compiled.main if ins.op.defn.name == "gpu::convolution")
    tuned.op = tuned.op.replace(solution_id=7, algo=3)
    loaded = load_mxr(mxr_bytes(compiled))
    convolution = next(ins for ins in loaded.main if ins.op.defn.name == "gpu::convolution")
    assert (convolution.op["solution_id"], convolution.op["algo"]) == (7, 3)
    assert convolution.op["op"] == tuned.op["op"]


def test_a_compiled_program_read_from_text_cannot_be_saved(compiled: Program) -> None:
    from_text = parse_program(print_program(compiled))
    with pytest.raises(MgxError, match="holds no binary"):
        mxr_bytes(from_text)


def test_code_objects_for_two_architectures_cannot_share_a_file(compiled: Program) -> None:
    program = compiled.clone()
    first = code_objects(program)[0]
    code = first.op["code_object"]
    other = CodeObject(code.binary, code.size, code.source, "sm_80", code.payload, code.toolchain, code.producer)
    first.op = first.op.replace(code_object=other)
    with pytest.raises(MgxError, match=r"architecture \(sm_80 vs sm_90\)|architecture \(sm_90 vs sm_80\)"):
        mxr_bytes(program)


# -- loading: no pass, no compilation --------------------------------------------------------------


@pytest.fixture
def saved(compiled: Program, tmp_path: Path) -> Path:
    path = tmp_path / "crp.mxr"
    path.write_bytes(mxr_bytes(compiled))
    return path


def test_a_compiled_file_loads_with_no_pass_and_no_compilation(
    saved: Path, compiled: Program, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mgxir.passes.manager import PassManager
    from mgxir.targets import base
    from mgxir.targets.gpu import compiler
    from mgxir.targets.gpu.target import GpuTarget

    def no_pass(*args: object, **kwargs: object) -> None:
        raise AssertionError("a pass ran on a compiled program")

    monkeypatch.setattr(PassManager, "run", no_pass)
    loaded: list[base.CompiledProgram] = []
    monkeypatch.setattr(GpuTarget, "load", lambda self, c, device, sink: loaded.append(c) or _NoRun())
    compilations, nvrtc = dict(base.COMPILATIONS), dict(compiler.statistics)
    target = GpuTarget()
    options = target.options({"arch": "sm_90"})
    program = target.read(str(saved), DiagnosticSink(), options, False, None)
    target.run(program, {}, options, DiagnosticSink())
    assert dict(base.COMPILATIONS) == compilations and dict(compiler.statistics) == nvrtc
    assert [c.program for c in loaded] == [program]
    assert print_program(program) == print_program(compiled)


class _NoRun:
    def run(self, params: object) -> list:
        return []


def test_migraphx_own_compiled_files_are_refused_in_one_line(compiled: Program) -> None:
    from mgxir.targets.gpu.compiled import check_runs_on

    value = program_to_value(compiled)
    value["targets"], value["contexts"] = [{"name": "gpu"}], [{"events": 0, "streams": 1}]
    from mgxir.translate.mxr.encoding import to_msgpack

    sink = DiagnosticSink()
    program = load_mxr(to_msgpack(value), "migraphx.mxr", sink)
    assert [w.message for w in sink.warnings] == [
        "migraphx.mxr: compiled for 1 target(s); the target contexts are ignored"
    ]
    with pytest.raises(MgxError, match=r"migraphx.mxr: compiled by MIGraphX \(its code objects record no"):
        check_runs_on(program, "cuda", "sm_90", "migraphx.mxr")
    assert program_to_value(program)["targets"] == [{"name": "gpu"}]  # written back as MIGraphX wrote it


def test_another_compiled_format_is_refused(compiled: Program) -> None:
    value = program_to_value(compiled)
    value["targets"][0]["format"] = COMPILED_FORMAT + 1
    from mgxir.translate.mxr.encoding import to_msgpack

    with pytest.raises(MgxError, match=f"compiled program format {COMPILED_FORMAT + 1} .*compile the program again"):
        load_mxr(to_msgpack(value), "new.mxr")


def _has_gpu() -> bool:
    from mgxir.targets.gpu.compiler import device_arch

    return device_arch() is not None


@pytest.mark.gpu
@pytest.mark.skipif(not _has_gpu(), reason="no GPU")
@pytest.mark.parametrize("portable", [False, True])
def test_a_compiled_file_runs_as_the_reference_does(tmp_path: Path, portable: bool) -> None:  # no cover: needs a GPU
    import numpy as np

    from mgxir.drivers.run import flatten_outputs
    from mgxir.interp import Interpreter
    from mgxir.targets.gpu.compiler import device_arch
    from mgxir.targets.gpu.target import GpuTarget

    program = parse_program(EXAMPLE.read_text(), str(EXAMPLE))
    verify(program, DiagnosticSink())
    path = tmp_path / "crp.mxr"
    lowered = compile_for_gpu(program, device_arch() or "", DiagnosticSink())
    if portable:  # kernels as sources, finished for this GPU when loaded
        from mgxir.targets.gpu.compiled import keep_sources

        keep_sources(lowered)
    path.write_bytes(mxr_bytes(lowered))
    rng = np.random.default_rng(0)
    params = {p.param_name: rng.standard_normal(p.shape.lens).astype(np.float32) for p in program.main.parameters()}
    expected = flatten_outputs(Interpreter(program).run(params))
    target = GpuTarget()
    options = target.options({})
    loaded = target.read(str(path), DiagnosticSink(), options, False, None)
    outputs = flatten_outputs(target.run(loaded, params, options, DiagnosticSink()))
    assert outputs.keys() == expected.keys()
    for key, want in expected.items():
        np.testing.assert_allclose(outputs[key], want, rtol=1e-4, atol=1e-5)


# -- bad files: one line, nothing allocated beyond what the file holds ---------------------------


def _refused_or_read(data: bytes) -> None:
    """A damaged file is read (and verified) or refused with MgxError: no other exception."""
    try:
        program = load_mxr(data, "bad.mxr")
        verify(program, DiagnosticSink())
    except MgxError as e:
        # one line naming the file; a verifier error quotes the printed instruction after it
        assert re.match(r"(error: )?bad\.mxr", str(e)) and len(str(e).splitlines()) in (1, 3)


@pytest.mark.parametrize("kept", [0, 1, 7, 100, 0.25, 0.5, 0.9, -1])
def test_a_truncated_file_is_refused_in_one_line(compiled: Program, kept: float) -> None:
    data = mxr_bytes(compiled)
    cut = int(len(data) * kept) if isinstance(kept, float) else kept % len(data)
    with pytest.raises(MgxError, match=r"bad.mxr: not a MIGraphX \.mxr file: .*") as info:
        load_mxr(data[:cut], "bad.mxr")
    assert "\n" not in str(info.value)


def test_a_huge_binary_length_allocates_nothing(compiled: Program) -> None:
    """msgpack's bin32 header claiming 4 GiB, in a file of a few bytes."""
    import tracemalloc

    data = bytes([0x81, 0xA7]) + b"version" + bytes([0xC6, 0xFF, 0xFF, 0xFF, 0xFF]) + b"\0" * 16
    tracemalloc.start()
    try:
        with pytest.raises(MgxError, match=r"not a MIGraphX \.mxr file"):
            load_mxr(data, "huge.mxr")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def _with_code_object(compiled: Program, change, digests: bool = True) -> bytes:
    from mgxir.translate.mxr.encoding import from_msgpack, to_msgpack

    value = from_msgpack(mxr_bytes(compiled))  # a tree of its own (program_to_value's is kept per operator)
    node = next(n for n in value["modules"]["main"]["nodes"] if n["name"] == "gpu::code_object")
    change(node["operator"])
    if not digests:
        del value["targets"][0]["binaries"]
    return to_msgpack(value)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda op: op.update(local=0), r"cannot launch 256 threads in blocks of 0 \(1 to 1024\)"),
        (lambda op: op.update(local=4096), r"cannot launch 256 threads in blocks of 4096"),
        (lambda op: op.update(output_arg=5), r"output_arg 5 is out of range for 2 arguments"),
        (
            lambda op: op["expected_inputs"][0].update(lens=[1, 4, 32, 16]),
            r"input shapes have changed: \[float_type, \{1, 4, 32, 16\}",
        ),
        (lambda op: op["output"].update(lens=[1, 4, 4, 4]), r"the kernel writes float_type, \{1, 4, 4, 4\}"),
    ],
)
def test_a_hostile_code_object_is_refused_by_the_verifier(compiled: Program, change, message: str) -> None:
    program = load_mxr(_with_code_object(compiled, change), "hostile.mxr")
    with pytest.raises(MgxError, match=message) as info:
        verify(program, DiagnosticSink())
    line, quoted, _ = str(info.value).splitlines()
    assert line.startswith("hostile.mxr (as printed):") and quoted.startswith("@8 = gpu::code_object")


def test_a_corrupted_binary_is_refused_before_the_device(compiled: Program) -> None:
    from mgxir.targets.gpu.compiled import check_runs_on

    def corrupt(op: dict) -> None:
        op["code_object"] = [b"\0ELF" + op["code_object"][0][4:]]

    with pytest.raises(MgxError, match=r"corrupt.mxr: .* the binary is not one the file was written with"):
        load_mxr(_with_code_object(compiled, corrupt), "corrupt.mxr")
    program = load_mxr(_with_code_object(compiled, corrupt, digests=False), "corrupt.mxr")  # no digests to say
    with pytest.raises(MgxError, match=r"corrupt.mxr: a code object is not a sm_90 binary .*: the file is corrupted"):
        check_runs_on(program, "cuda", "sm_90", "corrupt.mxr")


def test_bytes_changed_anywhere_give_a_program_or_one_line(compiled: Program) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    data = mxr_bytes(compiled)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)), min_size=1, max_size=4))
    def damaged(changes: list[tuple[int, int]]) -> None:
        damaged = bytearray(data)
        for where, byte in changes:
            damaged[where] = byte
        _refused_or_read(bytes(damaged))

    damaged()


# -- portable programs: sources finished on the GPU they run on -------------------------------------


def test_a_portable_program_is_finished_for_the_device_without_a_pass(
    compiled: Program, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mgxir.passes.manager import PassManager
    from mgxir.targets.gpu import compiler
    from mgxir.targets.gpu.compiled import ELF_MAGIC, keep_sources
    from mgxir.targets.gpu.target import GpuTarget

    portable = compiled.clone()
    keep_sources(portable)
    path = tmp_path / "portable.mxr"
    path.write_bytes(mxr_bytes(portable))
    entry = program_to_value(load_mxr(path.read_bytes()))["targets"][0]
    sources = {ins.op["code_object"].digest: ins.op["code_object"].source for ins in code_objects(compiled)}
    assert entry["payload"] == "bin" and entry["sources"] == sources  # beside the sm_90 binaries
    assert mxr_bytes(load_json(json_text(portable))) == mxr_bytes(portable)

    monkeypatch.setattr(PassManager, "run", lambda *a, **k: pytest.fail("a pass ran on a compiled program"))
    target = GpuTarget()

    def load(arch: str) -> tuple[list[CodeObject], int, int]:
        """The code objects loaded for `arch`; kernels compiled; kernels found in the cache."""
        before = dict(compiler.statistics)
        options = target.options({"arch": arch})
        loaded = target.loadable(target.read(str(path), DiagnosticSink(), options, False, None), options).program
        hits = sum(compiler.statistics.values()) - sum(before.values())
        return [ins.op["code_object"] for ins in code_objects(loaded)], hits, compiler.statistics["compiled"]

    codes, finished, _ = load("sm_90")  # the binaries are for it: nothing compiles
    assert finished == 0 and [c.binary for c in codes] == [c.binary for c in map(_code, code_objects(compiled))]
    codes, finished, compiled_count = load("sm_80")
    assert all(c.arch == "sm_80" and c.binary.startswith(ELF_MAGIC) and c.keeps_source for c in codes)
    assert all(c.toolchain == compiler_version() for c in codes) and finished == len(codes)
    # a second load of the same file: every kernel from the cache (source, architecture, compiler)
    codes, finished, compiled_again = load("sm_80")
    assert finished == len(codes) and compiled_again == compiled_count


def _code(ins) -> CodeObject:
    return ins.op["code_object"]


def test_portable_needs_the_sources(compiled: Program) -> None:
    from mgxir.targets.gpu.compiled import keep_sources

    with pytest.raises(MgxError, match=r"--portable: code object '.*' keeps no source"):
        keep_sources(load_mxr(mxr_bytes(compiled)))
