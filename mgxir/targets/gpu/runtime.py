"""Runs a lowered program on a GPU of one platform (platforms.py: CUDA or HIP): parameters and
literals in device buffers, the scratch buffer allocated once, views as pointers into their inputs,
kernels launched from their code objects, gemms through the platform's BLASLt library; the device
steps between host steps are captured once as graphs and replayed, so a run is a few graph launches
whatever the number of kernels.

Instructions the lowering left alone run on the host (their inputs copied down, their result up).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ir.instruction import Instruction
from mgxir.ir.operation import ComputeError, RuntimeValue, ShapeError
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.passes.memory_coloring import outer_values
from mgxir.targets.gpu import dnn
from mgxir.targets.gpu.dnn import ConvPlan
from mgxir.targets.gpu.lowering import runs_bodies
from mgxir.targets.gpu.platforms import Platform, open_cuda_device, open_platform
from mgxir.targets.gpu.views import view_offset
from mgxir.targets.host import HostFallback
from mgxir.text.printer import instruction_lines


@dataclasses.dataclass
class Step:
    ins: Instruction
    run: Callable[[], None]
    on_host: bool = False


class GpuExecutable:
    """A lowered program loaded on one GPU: `run(params)` returns the outputs as numpy arrays."""

    def __init__(
        self, program: Program, device: int = 0, sink: DiagnosticSink | None = None, platform: Platform | None = None
    ):
        self.program = program
        self.sink = sink or DiagnosticSink()
        self.platform = platform or open_platform("cuda", device)
        self.stream_handle = self.platform.stream_handle
        self.pointer: dict[Instruction, int] = {}
        self.host_values: dict[Instruction, RuntimeValue] = {}
        self.params: dict[str, Instruction] = {}
        self.outputs: list[Instruction] = []
        self.steps: list[Step] = []
        self.gemm_plans: dict[Instruction, object] = {}
        self._gemm_calls: dict[Instruction, Callable[[int, int, int, int], None]] = {}
        self._conv_workspace, self._conv_workspace_bytes = 0, 0
        self._bodies: dict[object, tuple[list[Step], list[Instruction]]] = {}  # by module: its steps, outputs
        self._host = HostFallback(program, self.sink)  # what has no GPU kernel runs there
        self._load()
        self.graphs: list[tuple[object, list[Step]] | Step] = []
        self._capture()

    # -- loading ------------------------------------------------------------------------------

    def _allocate(self, nbytes: int) -> int:
        return self.platform.allocate(nbytes)

    def _upload(self, pointer: int, array: np.ndarray, shape: Shape) -> None:
        staged = np.zeros(max(shape.element_space, 1), shape.dtype.numpy)
        view = as_strided(staged, shape.lens, [s * staged.itemsize for s in shape.strides])
        view[...] = np.broadcast_to(array.reshape(view.shape) if array.size == view.size else array, view.shape)
        self.platform.copy_to_device(pointer, staged)

    def _download(self, pointer: int, shape: Shape) -> np.ndarray:
        staged = np.empty(max(shape.element_space, 1), shape.dtype.numpy)
        self.platform.copy_to_host(staged, pointer)
        return np.array(as_strided(staged, shape.lens, [s * staged.itemsize for s in shape.strides]))

    def _load(self) -> None:
        self.steps, self.outputs = self._load_module(self.program.main)
        self.params = {p.param_name: p for p in self.program.main.parameters()}

    def _load_module(self, module) -> tuple[list[Step], list[Instruction]]:
        """`module`'s steps and outputs: main's, or a body an `if` or `loop` runs (its parameters
        get buffers of their own that each run of the body fills)."""
        steps: list[Step] = []
        outputs: list[Instruction] = []
        for index, ins in enumerate(module):
            name = ins.op.defn.name
            if ins.is_param:
                self.pointer[ins] = self._allocate(ins.shape.bytes)
            elif ins.is_literal:
                self.pointer[ins] = self._allocate(ins.shape.bytes)
                # an elided literal's stand-in values depend on its position, as the reference's
                data = self._host.interpreter._literal_value(module, ins, index)
                self._upload(self.pointer[ins], np.asarray(data), ins.shape)
            elif ins.is_return:
                outputs = list(ins.args)
                break
            elif name == "allocate" and not ins.args:
                self.pointer[ins] = self._allocate(ins.shape.bytes)
            elif name == "load":
                offset = ins.op["offset"]
                self.pointer[ins] = self.pointer[ins.args[0]] + offset
            elif name == "gpu::code_object":
                steps.append(Step(ins, self._kernel_step(ins)))
                self.pointer[ins] = self.pointer[ins.args[-1]]
            elif name in ("gpu::gemm",):
                steps.append(Step(ins, self._gemm_step(ins)))
                self.pointer[ins] = self.pointer[ins.args[-1]]
            elif name == "gpu::attention":
                steps.append(Step(ins, self._attention_step(ins)))
                self.pointer[ins] = self.pointer[ins.args[-1]]
            elif name == "gpu::convolution":
                steps.append(Step(ins, self._conv_step(ins)))
                self.pointer[ins] = self.pointer[ins.args[-1]]
            elif ins.args and ins.args[0] in self.pointer and (offset := view_offset(ins, 0)) is not None:
                self.pointer[ins] = self.pointer[ins.args[0]] + offset * ins.shape.dtype.itemsize
            else:
                steps.append(Step(ins, self._host_step(ins), on_host=True))
        return steps, outputs

    def _kernel_step(self, ins: Instruction) -> Callable[[], None]:
        code, symbol, global_size, local_size = ins.op.values[:4]
        if not code.binary:
            raise MgxError(
                f"gpu::code_object '{symbol}' holds no binary (a program read from text keeps only its size): "
                "run the uncompiled program with --target=gpu"
            )
        args = [self.pointer[a] for a in ins.args]
        return self.platform.launcher(code.binary, symbol, max(1, global_size // local_size), local_size, args)

    def _gemm_step(self, ins: Instruction) -> Callable[[], None]:
        op = ins.op
        a, b, out = ins.args[0], ins.args[1], ins.args[-1]
        call = self.platform.gemm_plan(
            a.shape, b.shape, out.shape, op["epilogue"], op["alpha"], op["beta"], op["solution_idx"], op["tf32"]
        )
        self.gemm_plans[ins] = call.plan  # type: ignore[attr-defined]
        self._gemm_calls[ins] = call
        return self.gemm_call(ins)

    def gemm_call(self, ins: Instruction) -> Callable[[], None]:
        call = self._gemm_calls[ins]
        a, b, out = ins.args[0], ins.args[1], ins.args[-1]
        pointers = (self.pointer[a], self.pointer[b], self.pointer[out])
        bias = self.pointer[ins.args[2]] if len(ins.args) == 4 else 0
        return lambda: call(*pointers, bias)

    def run_conv_plan(self, ins: Instruction, plan: ConvPlan, index: int, workspace: int) -> None:
        x, w, extras = self.pointer[ins.args[0]], self.pointer[ins.args[1]], [self.pointer[a] for a in ins.args[2:-1]]
        plan.run_plan(index, self.stream_handle, workspace, x, w, extras, self.pointer[ins.args[-1]])

    def time_call(self, body: Callable[[], None], iterations: int = 20) -> float:
        return self._time(body, iterations)

    def conv_plan(self, ins: Instruction, plan_index: int | None = None, all_plans: bool = False) -> ConvPlan:
        op = ins.op
        x, w, out = ins.args[0], ins.args[1], ins.args[-1]
        extras = tuple(a.shape for a in ins.args[2:-1])
        epilogue = ins.module_args[0] if ins.module_args else None
        index = op["solution_id"] if plan_index is None else plan_index
        return dnn.plan_for(
            op["op"], x.shape, w.shape, out.shape, extras, epilogue, op["conv_arg"], index, all_plans, op["tf32"]
        )

    def conv_workspace(self, nbytes: int) -> int:
        """A workspace of at least `nbytes` shared by the convolutions (steps run one at a time)."""
        if nbytes > self._conv_workspace_bytes:
            self._conv_workspace = self._allocate(nbytes)
            self._conv_workspace_bytes = nbytes
        return self._conv_workspace

    def _conv_step(self, ins: Instruction) -> Callable[[], None]:
        if not self.platform.library_convolution:
            raise MgxError(f"gpu::convolution has no library on the {self.platform.name} platform: compile for it")
        plan = self.conv_plan(ins)
        self.conv_workspace(plan.workspace_bytes)
        x, w, extras = self.pointer[ins.args[0]], self.pointer[ins.args[1]], [self.pointer[a] for a in ins.args[2:-1]]
        out = self.pointer[ins.args[-1]]
        stream = self.stream_handle
        # the workspace is looked up at call time: a later, larger convolution may replace it
        return lambda: plan(stream, self._conv_workspace, x, w, extras, out)

    def _attention_step(self, ins: Instruction) -> Callable[[], None]:
        if not self.platform.library_convolution:
            raise MgxError(f"gpu::attention has no library on the {self.platform.name} platform: compile for it")
        q, k_t, v, out = ins.args
        plan = dnn.attention_plan_for(q.shape, k_t.shape, v.shape, out.shape, ins.op["scale"])
        self.conv_workspace(plan.workspace_bytes)
        pointers = [self.pointer[a] for a in ins.args]
        stream = self.stream_handle
        return lambda: plan(stream, self._conv_workspace, *pointers)

    def _host_step(self, ins: Instruction) -> Callable[[], None]:
        shape = ins.shape
        if not shape.is_tuple and not shape.is_dynamic:
            self.pointer[ins] = self._allocate(shape.bytes)
        defn = ins.op.defn
        if not defn.has_compute:
            raise MgxError(f"the GPU target has no kernel and no reference compute for '{defn.name}'")
        if runs_bodies(ins):
            # the control flow on the host, as the reference runs it, each body's steps on the device
            for body in ins.module_args:
                self._bodies[body] = self._load_module(body)
            op = ins.op
            reference = defn.kernel(op, [a.shape for a in ins.args], ins.module_args, self._run_body)
        else:
            reference = self._host.kernel(ins)
        # a body the interpreter runs reads main's values by name: it finds them among its values
        outer = outer_values(ins) if ins.module_args and not runs_bodies(ins) else []
        interpreter_values = self._host.env

        def run() -> None:
            for value in outer:
                interpreter_values[value] = self._host_value(value)
            inputs = [self._host_value(a) for a in ins.args]
            try:
                with np.errstate(all="ignore"):
                    result = reference(*inputs)
            except (ComputeError, ShapeError) as e:  # what the inputs' values make of the op, as on ref
                raise MgxError(f"'{ins.op.name}' (on the host): {e}") from None
            except (ValueError, TypeError, IndexError, ZeroDivisionError) as e:  # the interpreter's rule
                raise MgxError(f"'{ins.op.name}' (on the host): {ins.op.name} failed: {e}") from None
            self.host_values[ins] = result
            if ins in self.pointer and isinstance(result, np.ndarray):
                self._upload(self.pointer[ins], result, shape)

        return run

    def _run_body(self, body, args: list[RuntimeValue]) -> list[RuntimeValue]:
        """A lowered body run as `run_module` runs one: its parameters, sorted by name, take `args`
        (copied into their buffers); its device steps run in order, its host steps in between;
        its outputs come back to the host."""
        steps, outputs = self._bodies[body]
        params = sorted(body.parameters(), key=lambda p: p.param_name)
        for param, value in zip(params, args, strict=True):
            self._upload(self.pointer[param], np.asarray(value), param.shape)
        for step in steps:
            if step.on_host:
                self.platform.synchronize()
            step.run()
        self.platform.synchronize()
        return [self._host_value(o) for o in outputs]

    def _host_value(self, ins: Instruction) -> RuntimeValue:
        if ins in self.host_values and ins not in self.pointer:
            return self.host_values[ins]
        return self._download(self.pointer[ins], ins.shape)

    # -- graphs -------------------------------------------------------------------------------

    def _capture(self) -> None:
        """Device steps between host steps become one graph each."""
        pending: list[Step] = []

        def close() -> None:
            if pending:
                self.graphs.append((self.platform.capture([step.run for step in pending]), list(pending)))
                pending.clear()

        for step in self.steps:
            if step.on_host:
                close()
                self.graphs.append(step)
            else:
                pending.append(step)
        close()

    def execute(self) -> None:
        for item in self.graphs:
            if isinstance(item, Step):
                self.platform.synchronize()
                item.run()
            else:
                self.platform.replay(item[0])

    def run(self, params: dict[str, np.ndarray]) -> list[RuntimeValue]:
        for name, ins in self.params.items():
            if name not in params:
                raise MgxError(f"no value for parameter '{name}'")
            self._upload(self.pointer[ins], np.asarray(params[name]), ins.shape)
        self.host_values.clear()
        self.execute()
        self.platform.synchronize()
        return [self._host_value(o) for o in self.outputs]

    # -- timing -------------------------------------------------------------------------------

    def _time(self, body: Callable[[], None], iterations: int) -> float:
        """Milliseconds per call of `body`, by events on the stream."""
        return self.platform.time(body, iterations)

    def perf(self, iterations: int = 100) -> str:
        """`migraphx-driver perf`'s report: each instruction's time and share, a summary by operator,
        the rate and the whole program's time (replayed graphs)."""
        per_step: dict[Instruction, float] = {}
        for step in self.steps:
            if step.on_host:
                self.platform.synchronize()
            per_step[step.ins] = self._time(step.run, max(1, iterations // 10 if step.on_host else iterations))
        runs = []
        for _ in range(max(3, iterations // 10)):
            runs.append(self._time(self.execute, 10))
        total_steps = sum(per_step.values()) or 1e-12
        lines = [f'module: "{self.program.main.name}"']
        printed = instruction_lines(self.program)
        for ins in self.program.main:
            text = printed[ins]
            t = per_step.get(ins, 0.0)
            lines.append(f"{text}: {t:.5g}ms, {100 * t / total_steps:.0f}%")
        lines.append("")
        lines.append("Summary:")
        by_name: dict[str, list[float]] = {}
        for ins, t in per_step.items():
            key = ins.op.defn.name
            if key == "gpu::code_object":
                key += "::" + ins.op["symbol_name"]
            by_name.setdefault(key, []).append(t)
        for key, times in sorted(by_name.items(), key=lambda kv: -sum(kv[1])):
            share = 100 * sum(times) / total_steps
            lines.append(f"{key}: {sum(times):.5g}ms / {len(times)} = {sum(times) / len(times):.5g}ms, {share:.0f}%")
        lines.append("")
        mean = statistics.fmean(runs)
        batch = batch_size(self.program)
        lines.append(f"Batch size: {batch}")
        lines.append(f"Rate: {1000 * batch / mean:.6g} inferences/sec")
        lines.append(
            f"Total time: {mean:.5g}ms (Min: {min(runs):.5g}ms, Max: {max(runs):.5g}ms, "
            f"Mean: {mean:.5g}ms, Median: {statistics.median(runs):.5g}ms)"
        )
        lines.append(f"Total instructions time: {total_steps:.5g}ms")
        lines.append(f"Overhead time: {mean - total_steps:.5g}ms")
        graphs = sum(1 for g in self.graphs if not isinstance(g, Step))
        host = sum(1 for s in self.steps if s.on_host)
        lines.append(f"Replayed as {graphs} {self.platform.graph_name}(s); {host} host step(s)")
        return "\n".join(lines) + "\n"


def batch_size(program: Program) -> int:
    """What `migraphx-driver perf` prints as the batch (the `--batch` its loader gave the inputs):
    the leading dimension of the main module's first parameter that is not a scalar, else 1."""
    for param in program.main.parameters():
        shape = param.shape
        if not (shape.is_tuple or shape.is_dynamic or shape.scalar):
            return shape.lens[0]
    return 1


def open_device(index: int):
    """CUDA's GPU `index`, current; one clear MgxError where there is no GPU or no driver."""
    return open_cuda_device(index)
