"""The host fallback every target shares: what a target has no kernel for runs on the reference
interpreter, through this one mechanism.

`HostFallback(program, sink, device_kernel, host_kernel)` runs `main` on the reference interpreter
and asks `device_kernel(ins)` for each instruction: an instruction the target runs gets the
target's kernel; any other runs its reference kernel, wrapped by `host_kernel` (which brings device
values home, times the step, ...). A target
that runs steps of its own (the GPU target's replayed graphs) takes one instruction's reference
kernel from `kernel(ins)`. The interpreter is used through its public `substitute` hook, not
subclassed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from mgxir.diagnostics import DiagnosticSink
from mgxir.interp import Interpreter
from mgxir.interp.interpreter import Kernel
from mgxir.ir.operation import RuntimeValue

if TYPE_CHECKING:
    from mgxir.ir.instruction import Instruction
    from mgxir.ir.program import Program

# an instruction of main -> the target's kernel for it, or None (it runs on the host)
DeviceKernels = Callable[["Instruction"], Kernel | None]
# (instruction, its reference kernel) -> what runs it on the host (the reference kernel on host
# copies of device values, timed, ...)
HostKernels = Callable[["Instruction", Kernel], Kernel]


class HostFallback:
    """`main` run by the reference interpreter, with the target's kernels in place where it has them."""

    def __init__(
        self,
        program: Program,
        sink: DiagnosticSink,
        device_kernel: DeviceKernels | None = None,
        host_kernel: HostKernels | None = None,
    ) -> None:
        self.device_kernel = device_kernel
        self.host_kernel = host_kernel
        hooked = device_kernel is not None or host_kernel is not None
        self.interpreter = Interpreter(program, sink, substitute=self._substitute if hooked else None)

    @property
    def env(self) -> dict[Instruction, RuntimeValue]:
        """The values of the run so far (the target's own values where its kernels made them)."""
        return self.interpreter.env

    def _substitute(self, ins: Instruction, reference: Kernel) -> Kernel:
        kernel = self.device_kernel(ins) if self.device_kernel is not None else None
        if kernel is not None:
            return kernel
        return self.host_kernel(ins, reference) if self.host_kernel is not None else reference

    def kernel(self, ins: Instruction) -> Kernel:
        """`ins`'s reference kernel (its bodies run by this interpreter)."""
        op = ins.op
        return op.defn.kernel(op, [a.shape for a in ins.args], ins.module_args, self.interpreter.run_module)

    def run(self, params: Mapping[str, np.ndarray]) -> list[RuntimeValue]:
        """`main`'s outputs (floating-point warnings silenced, as MIGraphX's ref runs)."""
        with np.errstate(all="ignore"):
            return self.interpreter.run(params)
