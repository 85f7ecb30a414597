"""Control flow under the GPU target: `if` and `loop` stay on the host, as MIGraphX runs them, and
their bodies are lowered as main is and run on the device; they read main's values, which may be
results of device kernels, and memory_coloring keeps those buffers until the `if` or `loop` has
run (before: the bodies ran on the host interpreter, which ended in a KeyError on the first). Run on the CPU through
the emulated platform (gpu_emulated_platform.py) and, with the `gpu` mark, on a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_host import COMPILER
from test_gpu_target import _program

from mgxir.drivers.run import flatten_outputs
from mgxir.interp import Interpreter
from mgxir.passes.memory_coloring import outer_values
from mgxir.targets.gpu.compiler import device_arch
from mgxir.targets.gpu.driver import compile_for_gpu

pytest.importorskip("cuda.core")

# x*x is only read inside the branches, and the kernels between it and the `if` need scratch memory
IF_READS_DEVICE_VALUES = """
cond = @param:cond -> bool_type, {1}, {1}
x = @param:x -> float_type, {2, 3}, {3, 1}
y = @param:y -> float_type, {2, 3}, {3, 1}
@3 = mul(x,x) -> float_type, {2, 3}, {3, 1}
@4 = add(y,y) -> float_type, {2, 3}, {3, 1}
@5 = mul(@4,@4) -> float_type, {2, 3}, {3, 1}
@6 = sin(@5) -> float_type, {2, 3}, {3, 1}
@7 = if(cond), [then, else] -> [float_type, {2, 3}, {3, 1}]
@8 = get_tuple_elem[index=0](@7) -> float_type, {2, 3}, {3, 1}
@9 = add(@8,@6) -> float_type, {2, 3}, {3, 1}
@10 = @return(@9)

module: "then"
then:@0 = add(@3,@5) -> float_type, {2, 3}, {3, 1}
then:@1 = @return(then:@0)

module: "else"
else:@0 = sub(@3,y) -> float_type, {2, 3}, {3, 1}
else:@1 = @return(else:@0)
"""

# a loop whose body reads a device result of main (a's exp) on every iteration (its parameters printed
# in the reverse of the order they take iteration, condition and carried value, as MIGraphX prints them)
LOOP_READS_DEVICE_VALUES = """
n = @literal{4} -> int64_type, {1}, {0}
go = @literal{1} -> bool_type, {1}, {0}
a = @param:a -> float_type, {3}, {1}
b = @param:b -> float_type, {3}, {1}
@4 = exp(a) -> float_type, {3}, {1}
@5 = loop[max_iterations=4](n,go,b), [body] -> [float_type, {3}, {1}, float_type, {4, 3}, {3, 1}]
@6 = get_tuple_elem[index=0](@5) -> float_type, {3}, {1}
@7 = get_tuple_elem[index=1](@5) -> float_type, {4, 3}, {3, 1}
@8 = @return(@6,@7)

module: "body"
body:b_in = @param:b_in -> float_type, {3}, {1}
body:keep = @param:keep -> bool_type, {1}, {0}
body:i = @param:i -> int64_type, {1}, {0}
body:@3 = mul(@4,body:b_in) -> float_type, {3}, {1}
body:@4 = @return(body:keep,body:@3,body:@3)
"""

PROGRAMS = {"if": IF_READS_DEVICE_VALUES, "loop": LOOP_READS_DEVICE_VALUES}


def _inputs(program, cond: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(int(cond))
    values: dict[str, np.ndarray] = {}
    for p in program.main.parameters():
        if p.shape.dtype.name == "bool":
            values[p.param_name] = np.array([cond])
        else:
            values[p.param_name] = rng.uniform(-1, 1, p.shape.lens).astype(p.shape.dtype.numpy)
    return values


def _check(program, lowered, platform) -> None:
    from mgxir.targets.gpu.runtime import GpuExecutable

    executable = GpuExecutable(lowered, platform=platform)
    for cond in (True, False):
        params = _inputs(program, cond)
        got = flatten_outputs(executable.run(params))
        want = flatten_outputs(Interpreter(program).run(params))
        assert got.keys() == want.keys()
        for key in want:
            np.testing.assert_allclose(np.asarray(got[key]), np.asarray(want[key]), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_outer_values_live_until_the_control_flow(name: str) -> None:
    """Each device value a body reads keeps its own memory until the `if` or `loop` runs."""
    lowered = compile_for_gpu(_program(PROGRAMS[name]), arch="sm_90")
    steps = list(lowered.main)
    control = next(i for i in steps if i.op.defn.name in ("if", "loop"))
    loads = [i for i in steps if i.op.defn.name == "load"]
    for value in outer_values(control):
        buffer = value.args[-1] if value.op.defn.name == "gpu::code_object" else None
        if buffer is None or buffer.op.defn.name != "load":
            continue
        start, end = buffer.op["offset"], buffer.op["offset"] + buffer.shape.bytes
        between = steps[steps.index(value) + 1 : steps.index(control)]
        for other in loads:
            if other is buffer or other not in between:
                continue
            other_start = other.op["offset"]
            assert other_start + other.shape.bytes <= start or other_start >= end, (value, other)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_bodies_are_lowered_as_main_is(name: str) -> None:
    """The branches and the loop body are kernels too (each with its own scratch buffer); only
    the control flow and the tuple's elements stay for the host."""
    lowered = compile_for_gpu(_program(PROGRAMS[name]), arch="sm_90")
    control = next(i for i in lowered.main if i.op.defn.name in ("if", "loop"))
    for body in control.module_args:
        steps = {i.op.defn.name for i in body if not (i.is_param or i.is_literal or i.is_return)}
        assert steps <= {"gpu::code_object", "allocate", "load"}, steps
        assert "gpu::code_object" in steps


@pytest.mark.skipif(COMPILER is None, reason="no C++ compiler to emulate kernels with")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_bodies_read_device_values_emulated(name: str) -> None:
    from gpu_emulated_platform import EmulatedPlatform

    program = _program(PROGRAMS[name])
    lowered = compile_for_gpu(program, arch="sm_90")
    _check(program, lowered, EmulatedPlatform(lowered))


@pytest.mark.gpu
@pytest.mark.skipif(device_arch() is None, reason="no GPU")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_bodies_read_device_values_on_the_gpu(name: str) -> None:
    program = _program(PROGRAMS[name])
    _check(program, compile_for_gpu(program), None)


@pytest.mark.skipif(COMPILER is None, reason="no C++ compiler to emulate kernels with")
def test_a_host_step_whose_inputs_make_the_op_invalid_is_one_line() -> None:
    """Axes given as an input, out of range: the host step says so in one line, as the reference
    interpreter does, rather than an internal error (mgx-verify on the H200 counted 9 such)."""
    from gpu_emulated_platform import EmulatedPlatform

    from mgxir.diagnostics import MgxError
    from mgxir.targets.gpu.runtime import GpuExecutable

    program = _program(
        "axes = @param:axes -> int64_type, {1}, {1}\n"
        "x = @param:x -> float_type, {2, 2, 2}, {4, 2, 1}\n"
        "@2 = reduce_sum[axes={}](x,axes) -> dynamic, float_type, {[1..2], [1..2], [1..2]}\n"
        "@3 = @return(@2)\n"
    )
    lowered = compile_for_gpu(program, arch="sm_90")
    executable = GpuExecutable(lowered, platform=EmulatedPlatform(lowered))
    x = np.ones((2, 2, 2), np.float32)
    assert np.asarray(executable.run({"axes": np.array([1]), "x": x})[0]).shape == (2, 1, 2)
    with pytest.raises(MgxError) as caught:
        executable.run({"axes": np.array([3]), "x": x})
    assert str(caught.value) == "error: 'reduce_sum' (on the host): reduce_sum: axis 3 is out of range for rank 3"
