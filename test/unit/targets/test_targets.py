"""The Target interface (mgxir.targets.base): one table, options declared with their help, compile
and load as separate steps, compiled programs kept by fingerprint and options (compile once, load
many), and the shared host fallback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mgxir.diagnostics import DiagnosticSink
from mgxir.drivers.run import RunOptions, run_main
from mgxir.ir.program import Program
from mgxir.targets import base
from mgxir.targets.base import COMPILATIONS, TARGETS, compiled, find_target, forget_compiled, option_fields
from mgxir.targets.host import HostFallback
from mgxir.targets.timing import TimingLog, collect_timing, record
from mgxir.text.parser import parse_program
from mgxir.verifier import verify

PROGRAM = """module: "main"
x = @param:x -> float_type, {2, 3}, {3, 1}
y = @param:y -> float_type, {2, 3}, {3, 1}
@2 = add(x,y) -> float_type, {2, 3}, {3, 1}
@3 = relu(@2) -> float_type, {2, 3}, {3, 1}
@4 = neg(@3) -> float_type, {2, 3}, {3, 1}
@5 = @return(@4)
"""


def _program(text: str = PROGRAM) -> Program:
    program = parse_program(text)
    verify(program)
    return program


@pytest.fixture(autouse=True)
def _nothing_kept() -> None:
    forget_compiled()


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_every_target_in_the_table_has_its_name_and_declared_options(name: str) -> None:
    target = find_target(name)
    assert target.name == name
    helps = option_fields(target.options_type)
    assert all(helps.values()), f"{name}: options without help: {[k for k, v in helps.items() if not v]}"
    assert target.options() == target.options_type()
    assert hash(target.options()) == hash(target.options_type())  # a key of the compiled programs


def test_options_come_from_the_run_options_by_name() -> None:
    from mgxir.targets.gpu.target import GpuOptions

    target = find_target("gpu")
    given = {"device": "cuda:1", "fp32_math": "tf32", "perf": None, "seed": 3, "exhaustive_tune": False}
    assert target.options(given) == GpuOptions(device="cuda:1", fp32_math="tf32")
    assert find_target("iree").options({"device": None, "cache_dir": "/c"}).cache_dir == Path("/c")
    run_options = RunOptions(input_file="p.mgx", target="gpu", device="hip:0", perf=True)
    assert target.options(run_options) == GpuOptions(device="hip:0", perf=True)


def test_the_table_gives_the_drivers_the_targets_passes_and_operators() -> None:
    from mgxir.drivers import common, opt

    assert opt.TARGET_PASSES == {"gpu": "mgxir.targets.gpu.lowering", "gpu_lowering": "mgxir.targets.gpu.lowering"}
    assert common.TARGET_OPS == ("mgxir.targets.gpu.ops",)


def test_compile_once_per_program_and_options() -> None:
    """The same program (any copy: the key is its fingerprint) with the same options compiles once;
    another program or other options compile again."""
    target = find_target("vulkan")
    sink = DiagnosticSink()
    options = target.options()
    program = _program()
    before = COMPILATIONS["vulkan"]
    first = compiled(target, program, options, sink)
    assert compiled(target, program.clone(), options, sink) is first
    assert compiled(target, _program(), options, sink) is first
    assert COMPILATIONS["vulkan"] == before + 1
    other = compiled(target, _program(PROGRAM.replace("neg", "abs")), options, sink)
    assert other is not first
    assert COMPILATIONS["vulkan"] == before + 2


def test_the_kept_compiled_programs_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "KEPT", 2)
    target = find_target("vulkan")
    sink = DiagnosticSink()
    programs = [_program(PROGRAM.replace("neg", op)) for op in ("neg", "abs", "exp")]
    first = compiled(target, programs[0], target.options(), sink)
    compiled(target, programs[1], target.options(), sink)
    assert compiled(target, programs[0], target.options(), sink) is first  # used again: kept
    compiled(target, programs[2], target.options(), sink)  # drops programs[1], the least recently used
    assert compiled(target, programs[0], target.options(), sink) is first
    before = COMPILATIONS["vulkan"]
    compiled(target, programs[1], target.options(), sink)
    assert COMPILATIONS["vulkan"] == before + 1


def _run_twice(tmp_path: Path, target: str) -> int:
    path = tmp_path / "p.mgx"
    path.write_text(PROGRAM)
    before = COMPILATIONS[target]
    for _ in range(2):
        assert run_main(RunOptions(input_file=str(path), target=target, fill="ones", quiet=True)) == 0
    return COMPILATIONS[target] - before


def test_mgx_run_on_vulkan_compiles_a_program_once_per_process(tmp_path: Path) -> None:
    assert _run_twice(tmp_path, "vulkan") == 1


def _has_gpu() -> bool:
    try:
        from mgxir.targets.gpu.compiler import device_arch
    except ImportError:
        return False
    return device_arch() is not None


@pytest.mark.gpu
@pytest.mark.skipif(not _has_gpu(), reason="no GPU")
def test_mgx_run_on_the_gpu_compiles_a_program_once_per_process(tmp_path: Path) -> None:  # no cover: needs a GPU
    assert _run_twice(tmp_path, "gpu") == 1


def test_the_gpu_target_compiles_for_an_architecture_without_a_gpu() -> None:
    pytest.importorskip("cuda.core")
    from mgxir.targets.gpu.target import GpuOptions

    target = find_target("gpu")
    sink = DiagnosticSink()
    before = COMPILATIONS["gpu"]
    options = GpuOptions(arch="sm_90")
    first = compiled(target, _program(), options, sink)
    assert any(ins.name == "gpu::code_object" for ins in first.program.main)
    assert compiled(target, _program(), options, sink) is first
    # --perf is read when running: the same compiled program, under the run's options
    timed = compiled(target, _program(), GpuOptions(arch="sm_90", perf=True), sink)
    assert timed.program is first.program and timed.options.perf
    assert compiled(target, _program(), GpuOptions(arch="sm_90", fp32_math="tf32"), sink) is not first
    assert COMPILATIONS["gpu"] == before + 2


def test_the_reference_target_keeps_nothing() -> None:
    target = find_target("ref")
    program = _program()
    assert compiled(target, program, target.options(), DiagnosticSink()).program is program
    params = {"x": np.ones((2, 3), np.float32), "y": -np.ones((2, 3), np.float32) * 3}
    (out,) = target.run(program, params, target.options(), DiagnosticSink())
    assert out.tolist() == [[-0.0] * 3] * 2


def test_the_host_fallback_runs_the_targets_kernels_and_the_reference_for_the_rest() -> None:
    program = _program()
    relu = next(ins for ins in program.main if ins.name == "relu")
    on_host: list[str] = []

    def device_kernel(ins: object) -> object:
        return (lambda a: np.full_like(a, 7.0)) if ins is relu else None

    def host_kernel(ins: object, reference: object) -> object:
        def run(*args: np.ndarray) -> np.ndarray:
            on_host.append(ins.name)  # type: ignore[attr-defined]
            return reference(*args)  # type: ignore[operator]

        return run

    fallback = HostFallback(program, DiagnosticSink(), device_kernel, host_kernel)
    (out,) = fallback.run({"x": np.ones((2, 3), np.float32), "y": np.ones((2, 3), np.float32)})
    assert out.tolist() == [[-7.0] * 3] * 2
    assert on_host == ["add", "neg"]
    assert fallback.kernel(relu)(np.array([-1.0, 2.0])).tolist() == [0.0, 2.0]


def test_no_target_keeps_options_in_module_globals() -> None:
    """Options travel as arguments: no module of mgxir/targets makes an options object or a
    ContextVar at import time (the GPU target's `gpu_options = GpuOptions()` and IREE's
    `ContextVar` were such state). The one ContextVar left is timing.py's: where steps report
    their times during a run (a log being collected, not options)."""
    import ast

    root = Path(__file__).resolve().parents[3] / "mgxir" / "targets"
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if isinstance(value, ast.Call):
                called = ast.unparse(value.func)
                if called.endswith(("Options", "ContextVar")):
                    found.append(f"{path.relative_to(root)}: {called}")
    assert found == ["timing.py: ContextVar"]


# mgxir/targets/timing.py's table (`mgx-run --timing`), which the targets' own tests never print:
# the cases its mutation run found unchecked (docs/mutation.md).


def test_nothing_timed() -> None:
    assert TimingLog().render() == "timing: nothing was timed"


def test_rows_in_milliseconds_with_notes_and_totals_per_target() -> None:
    with collect_timing() as log:
        record("@3", "dot", "vulkan", 0.0025)
        record("@12", "softmax", "ref", 0.5, note="not lowered")
        record("@4", "add", "vulkan", 0.001)
    record("@5", "relu", "ref", 9.0)  # outside the block: not recorded
    assert log.render().splitlines() == [
        "timing: @3   dot      vulkan      2.5000 ms",
        "timing: @12  softmax  ref       500.0000 ms  (not lowered)",
        "timing: @4   add      vulkan      1.0000 ms",
        "timing: total: vulkan 3.5000 ms, ref 500.0000 ms",
    ]
