"""Portable compiled programs (docs/compiled-programs.md): `mgx-opt -p gpu --portable` keeps each
kernel's `spirv` and `mlirbc` payloads (and `bin` payloads for `--offload-arch`) beside its binary,
and `--target=vulkan|cpu|auto` finish them where the program runs, with no pass, equal to the
reference by MIGraphX's rms rule. NVRTC compiles without a GPU; Vulkan is lavapipe here."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.program import Program
from mgxir.text.parser import parse_program
from mgxir.translate.mxr import json_text, load_json, load_mxr, mxr_bytes, program_to_value
from mgxir.verifier import verify

pytest.importorskip("cuda.bindings")
pytest.importorskip("iree.compiler")

from mgxir.drivers.run import flatten_outputs, rms_error
from mgxir.interp import Interpreter
from mgxir.targets import portable
from mgxir.targets.gpu.compiled import ELF_MAGIC, finish, keep_payloads
from mgxir.targets.gpu.driver import compile_for_gpu
from mgxir.targets.gpu.ops import CodeObject
from mgxir.translate.mlir.bytecode import mlir_version

EXAMPLE = Path(__file__).parents[4] / "examples" / "conv_relu_pool.mgx"
# a gemm with its bias and relu in the epilogue, a broadcast pointwise chain, a transposed input, a
# layernorm-shaped reduction: what a transformer layer lowers to
LAYER = """
x = @param:x -> float_type, {4, 16}, {16, 1}
w = @param:w -> float_type, {16, 8}, {8, 1}
b = @param:b -> float_type, {8}, {1}
t = @param:t -> float_type, {8, 4}, {1, 8}
@4 = dot(x,w)
@5 = broadcast[axis=1,out_lens={4, 8}](b)
@6 = add(@4,@5)
@7 = relu(@6)
@8 = transpose[permutation={1, 0}](t)
@9 = mul(@7,@8)
@10 = tanh(@9)
@11 = reduce_mean[axes={1}](@10)
@12 = multibroadcast[out_lens={4, 8}](@11)
@13 = sub(@10,@12)
@14 = mul(@13,@13)
@15 = reduce_sum[axes={1}](@14)
@16 = @return(@13,@15)
"""


def _program(text: str, filename: str) -> Program:
    program = parse_program(text, filename)
    verify(program, DiagnosticSink())
    return program


def _portable(program: Program, archs: tuple[str, ...] = ()) -> Program:
    lowered = compile_for_gpu(program, "sm_90", DiagnosticSink())
    keep_payloads(lowered, archs, DiagnosticSink())
    return lowered


@pytest.fixture(scope="module")
def example() -> Program:
    return _program(EXAMPLE.read_text(), str(EXAMPLE))


@pytest.fixture(scope="module")
def layer() -> Program:
    return _program(LAYER, "layer.mgx")


@pytest.fixture(scope="module")
def portable_example(example: Program) -> Program:
    return _portable(example, ("sm_80",))


def _codes(program: Program) -> list[CodeObject]:
    return [ins.op["code_object"] for ins in program.main if ins.op.defn.name == "gpu::code_object"]


def _formats(code: CodeObject) -> list[tuple[str, str]]:
    return [(p.format, p.target) for p in code.payloads]


# -- the payloads ----------------------------------------------------------------------------------


def test_each_kernel_keeps_spirv_mlirbc_and_the_offload_binaries(portable_example: Program) -> None:
    codes = {ins.op["symbol_name"]: ins.op["code_object"] for ins in portable_example.main if "code" in ins.op.name}
    softmax = next(code for name, code in codes.items() if name.startswith("reduce_max"))
    assert _formats(softmax) == [("bin", "sm_80"), ("spirv", "vulkan1.1"), ("mlirbc", mlir_version())]
    # the SPIR-V generator makes pointwise and fused_reduce kernels only: pooling keeps MLIR
    assert _formats(codes["pooling_kernel"]) == [("bin", "sm_80"), ("mlirbc", mlir_version())]
    for code in codes.values():
        assert code.keeps_source and code.arch == "sm_90"
        assert code.payloads[0].data.startswith(ELF_MAGIC) and code.payloads[0].meta.startswith("nvrtc-")
        mlirbc = next(p for p in code.payloads if p.format == "mlirbc")
        assert mlirbc.data.startswith(b"ML\xefR") and f"MLIR {mlir_version()}".encode() in mlirbc.data[:80]


def test_payloads_round_trip_byte_for_byte(portable_example: Program, tmp_path: Path) -> None:
    from mgxir.targets.gpu.compiled import attach_payloads, write_payloads
    from mgxir.text.printer import print_program

    data = mxr_bytes(portable_example)
    read = load_mxr(data, "p.mxr")
    assert [c.payloads for c in _codes(read)] == [c.payloads for c in _codes(portable_example)]
    again = load_json(json_text(read))
    text = tmp_path / "p.mgx"
    text.write_text(print_program(again))
    write_payloads(again, str(text))
    from_text = parse_program(text.read_text(), str(text))
    attach_payloads(from_text, str(text))
    assert mxr_bytes(from_text) == data


def test_a_fat_program_finishes_from_its_binaries_without_compiling(portable_example: Program) -> None:
    program = load_mxr(mxr_bytes(portable_example), "fat.mxr")
    assert finish(program, "sm_80") == 0  # every kernel's sm_80 binary is in the file
    ready = [c.payloads[0].data for c in _codes(portable_example)]
    assert [(c.arch, c.binary) for c in _codes(program)] == [("sm_80", b) for b in ready]


def test_offload_arch_refuses_a_name_that_is_no_architecture(example: Program) -> None:
    lowered = compile_for_gpu(example, "sm_90", DiagnosticSink())
    with pytest.raises(MgxError, match=r"^error: --offload-arch: 'sm90' is not a GPU architecture"):
        keep_payloads(lowered, ("sm90",))


# -- bad payloads: one line --------------------------------------------------------------------------


def _with_payload_change(program: Program, change: Callable[[dict], object]) -> bytes:
    """The program's file with `change(payload value)` applied to its first spirv payload."""
    from mgxir.translate.mxr.encoding import to_msgpack

    value = program_to_value(program)
    for payloads in value["targets"][0]["payloads"].values():
        for item in payloads:
            if item["format"] == "spirv":
                change(item)
                return to_msgpack(value)
    raise AssertionError("no spirv payload")


def test_an_unknown_payload_format_is_refused_in_one_line(portable_example: Program) -> None:
    data = _with_payload_change(portable_example, lambda item: item.update(format="ptx"))
    with pytest.raises(MgxError) as e:
        load_mxr(data, "bad.mxr")
    assert "unknown payload format 'ptx' (one of offload, isa, bin, fatbin, source, spirv, mlirbc)" in str(e.value)
    assert len(str(e.value).splitlines()) == 1


def test_a_spirv_payload_whose_layout_disagrees_is_refused(portable_example: Program) -> None:
    data = _with_payload_change(portable_example, lambda item: item.update(meta=item["meta"].replace("float", "int32")))
    program = load_mxr(data, "bad.mxr")
    program.filename = "bad.mxr"  # type: ignore[attr-defined]
    portable.FINISHED.clear()
    with pytest.raises(
        MgxError, match=r"^error: bad\.mxr: the spirv payload of '.*' is not one mgxir wrote \(binding 0"
    ):
        portable.finish(program, "vulkan", DiagnosticSink())


def test_a_spirv_payload_that_does_not_validate_is_refused(portable_example: Program) -> None:
    pytest.importorskip("vulkan")
    data = _with_payload_change(portable_example, lambda item: item.update(data=bytes(item["data"])[:-8]))
    program = load_mxr(data, "bad.mxr")
    program.filename = "bad.mxr"  # type: ignore[attr-defined]
    portable.FINISHED.clear()
    with pytest.raises(MgxError, match=r"^error: bad\.mxr: the spirv payload of '.*' does not validate \(spirv-val"):
        portable.finish(program, "vulkan", DiagnosticSink())


def test_damaged_portable_files_are_read_or_refused_in_one_line(portable_example: Program) -> None:
    data = mxr_bytes(portable_example)
    rng = np.random.default_rng(0)
    for cut in rng.integers(0, len(data), 40):
        for damaged in (data[:cut], data[:cut] + bytes([data[cut] ^ 0x55]) + data[cut + 1 :]):
            try:
                verify(load_mxr(damaged, "bad.mxr"), DiagnosticSink())
            except MgxError as e:
                assert re.match(r"(error: )?bad\.mxr", str(e)), str(e)


def test_mlir_bytecode_of_another_mlir_is_passed_over_in_one_line(portable_example: Program) -> None:
    program = load_mxr(mxr_bytes(portable_example), "old.mxr")
    ours = f"MLIR {mlir_version()}".encode()
    for ins in program.main:
        if ins.op.name == "gpu::code_object":
            code = ins.op["code_object"]
            payloads = tuple(
                p.__class__(p.format, "0.0.0", p.data.replace(ours, b"MLIR 0.0.0" + b" " * (len(ours) - 10)), p.meta)
                if p.format == "mlirbc"
                else p
                for p in code.payloads
            )
            ins.op = ins.op.replace(code_object=code.replace(payloads=payloads))
    program.filename = "old.mxr"  # type: ignore[attr-defined]
    sink = DiagnosticSink()
    with pytest.raises(MgxError) as e:  # the CPU runs only mlirbc: nothing is left for pooling
        portable.finish(program, "cpu", sink)
    message = e.value.message
    assert (
        message.startswith("old.mxr: kernel 'pooling_kernel' has no payload that runs on cpu")
        and "MLIR 0.0.0" in message
    )
    assert len(message.splitlines()) == 1


# -- finishing on Vulkan and the CPU ------------------------------------------------------------------


def _vulkan_missing() -> str | None:
    try:
        from mgxir.targets.vulkan.runner import shared_device

        shared_device()
    except (MgxError, ImportError) as e:
        return str(e)
    return None


def _inputs(program: Program) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {p.param_name: rng.uniform(-1, 1, p.shape.lens).astype(np.float32) for p in program.main.parameters()}


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
@pytest.mark.parametrize("which", ["example", "layer"])
def test_a_portable_program_finishes_on_the_device_as_the_reference_runs(
    device: str, which: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if device == "vulkan" and _vulkan_missing():
        pytest.skip(_vulkan_missing())
    from mgxir.passes.manager import PassManager
    from mgxir.targets.base import COMPILATIONS, find_target

    program = request.getfixturevalue(which)
    path = tmp_path / "p.mxr"
    path.write_bytes(mxr_bytes(_portable(program)))
    params = _inputs(program)
    expected = flatten_outputs(Interpreter(program).run(params))
    monkeypatch.setattr(PassManager, "run", lambda *a, **k: pytest.fail("a pass ran on a compiled program"))
    target = find_target(device)
    loaded = load_mxr(path.read_bytes(), str(path))
    before = dict(COMPILATIONS)
    sink = DiagnosticSink()
    outputs = flatten_outputs(target.run(loaded, params, target.options({}), sink))
    assert dict(COMPILATIONS) == before  # finished, not compiled
    assert outputs.keys() == expected.keys()
    for key, want in expected.items():
        assert outputs[key].shape == want.shape
        assert rms_error(outputs[key], want) < 1e-3, key


def test_finished_kernels_are_kept_by_payload_digest(
    portable_example: Program, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mgxir.targets.iree import compile as iree_compile

    program = load_mxr(mxr_bytes(portable_example), "p.mxr")
    portable.finish(program, "cpu", DiagnosticSink())  # compiled (or found in IREE's disk cache)
    portable.finish(program, "cpu", DiagnosticSink())  # kept
    keys = [k for k in portable.FINISHED if k[1] == "llvm-cpu"]
    mlirbc = {p.digest for c in _codes(program) for p in c.payloads if p.format == "mlirbc"}
    assert mlirbc <= {k[0] for k in keys}
    monkeypatch.setattr(iree_compile, "compile_module", lambda *a: pytest.fail("a kernel was compiled again"))
    portable.finish(load_mxr(mxr_bytes(portable_example), "p.mxr"), "cpu", DiagnosticSink())


def test_library_calls_run_as_cpu_functions_written_from_their_definition(portable_example: Program) -> None:
    program = load_mxr(mxr_bytes(portable_example), "p.mxr")
    program.filename = "p.mxr"  # type: ignore[attr-defined]
    sink = DiagnosticSink()
    finished = portable.finish(program, "cpu", sink)
    convolutions = [ins for ins in program.main if ins.op.name == "gpu::convolution"]
    assert convolutions and all(ins in finished.cpu for ins in convolutions)
    assert not [w.message for w in sink.warnings]
    sink = DiagnosticSink()
    portable.finish(program, "vulkan", sink)  # on the CPU there too, said once
    assert [w.message for w in sink.warnings if "gpu::" in w.message] == [
        "p.mxr: 'gpu::convolution' runs on the CPU (IREE, from its definition): no Vulkan kernel for it"
    ]


def test_a_library_call_mlir_cannot_say_runs_on_the_host_warned_once(layer: Program) -> None:
    program = load_mxr(mxr_bytes(_portable(layer)), "g.mxr")
    program.filename = "g.mxr"  # type: ignore[attr-defined]
    for ins in program.main:
        if ins.op.name == "gpu::gemm":
            ins.op = ins.op.replace(epilogue="gelu")
    sink = DiagnosticSink()
    finished = portable.finish(program, "cpu", sink)
    assert not any(ins.op.name == "gpu::gemm" for ins in finished.cpu)
    assert [w.message for w in sink.warnings] == [
        "g.mxr: 'gpu::gemm' runs on the host (its reference compute) on cpu: beta and gelu epilogues are not "
        "written as MLIR here"
    ]
    params = _inputs(layer)
    got = flatten_outputs(portable.PortableCpuRun(program, finished, DiagnosticSink()).run(params))
    x, w, b, t = (params[k] for k in "xwbt")
    product = x @ w  # the bias and relu stayed in the fused kernel after it
    gelu = 0.5 * product * (1 + np.tanh(0.7978845608028654 * (product + 0.044715 * product**3)))
    values = np.tanh(np.maximum(gelu + b, 0) * t.T)
    want = values - values.mean(axis=1, keepdims=True)
    assert rms_error(got["out0"], want) < 1e-3


def test_a_kernel_without_portable_payloads_is_refused_in_one_line(example: Program) -> None:
    program = load_mxr(mxr_bytes(compile_for_gpu(example, "sm_90", DiagnosticSink())), "plain.mxr")
    program.filename = "plain.mxr"  # type: ignore[attr-defined]
    with pytest.raises(MgxError) as e:
        portable.finish(program, "vulkan", DiagnosticSink())
    assert e.value.message == (
        "plain.mxr: kernel 'pooling_kernel' has no payload that runs on vulkan (it keeps only its binary; vulkan "
        "runs spirv, mlirbc): compile the program again with -p gpu --portable"
    )


@pytest.mark.parametrize(
    ("present", "chosen"),
    [({"cuda", "hip", "vulkan", "cpu"}, "cuda"), ({"vulkan", "cpu"}, "vulkan"), ({"cpu"}, "cpu"), ({"hip"}, "hip")],
)
def test_auto_takes_the_first_device_present(present: set[str], chosen: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(portable, "PRESENT", {name: (lambda n=name: n in present) for name in portable.AUTO_ORDER})
    assert portable.auto_device() == chosen


def test_auto_with_nothing_present_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(portable, "PRESENT", {name: (lambda: False) for name in portable.AUTO_ORDER})
    with pytest.raises(MgxError, match=r"^error: --target=auto: none of cuda, hip, vulkan, cpu is present here$"):
        portable.auto_device()


def test_a_launch_that_does_not_serve_64_wide_waves_is_warned_about(example: Program) -> None:
    lowered = compile_for_gpu(example, "sm_90", DiagnosticSink())
    for ins in lowered.main:
        if ins.op.name == "gpu::code_object" and ins.op["symbol_name"] == "pooling_kernel":
            ins.op = ins.op.replace(local=32)
    sink = DiagnosticSink()
    keep_payloads(lowered, (), sink, makers={})
    assert [w.message for w in sink.warnings] == [
        "--portable: no launch that serves every wave size for 1 kernel(s) (pooling_kernel): its blocks of 32 "
        "threads are not whole 64-wide waves"
    ]


def test_auto_is_the_default_for_program_files_and_text_with_payloads(tmp_path: Path, example: Program) -> None:
    from mgxir.drivers.run import default_target
    from mgxir.targets.gpu.compiled import write_payloads
    from mgxir.text.printer import print_program

    lowered = compile_for_gpu(example, "sm_90", DiagnosticSink())
    (tmp_path / "p.mxr").write_bytes(mxr_bytes(lowered))
    (tmp_path / "p.json").write_text(json_text(lowered))
    (tmp_path / "p.mgx").write_text(print_program(lowered))
    (tmp_path / "plain.mgx").write_text(print_program(example))
    assert default_target(str(tmp_path / "p.mgx"), False) == "ref"  # no sidecar yet
    write_payloads(lowered, str(tmp_path / "p.mgx"))
    assert [default_target(str(tmp_path / name), False) for name in ("p.mxr", "p.json", "p.mgx", "plain.mgx")] == [
        "auto",
        "auto",
        "auto",
        "ref",
    ]
    assert default_target(str(tmp_path / "p.mxr"), True) == "ref"  # --from-log reads text


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_migraphx_own_compiled_files_are_refused_on_vulkan_and_the_cpu(example: Program, device: str) -> None:
    from mgxir.translate.mxr.encoding import to_msgpack

    value = program_to_value(compile_for_gpu(example, "sm_90", DiagnosticSink()))
    value["targets"], value["contexts"] = [{"name": "gpu"}], [{"events": 0, "streams": 1}]
    program = load_mxr(to_msgpack(value), "migraphx.mxr", DiagnosticSink())
    program.filename = "migraphx.mxr"  # type: ignore[attr-defined]
    with pytest.raises(MgxError) as e:
        portable.finish(program, device, DiagnosticSink())
    assert e.value.message == (
        "migraphx.mxr: compiled by MIGraphX (its code objects keep only a binary, for a GPU it does not name): "
        f"it runs on that GPU, not on {device}"
    )
