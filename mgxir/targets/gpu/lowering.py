"""gpu_lowering: the main module's operators become the GPU target's, as MIGraphX's GPU lowering and
compile_ops do: `pointwise` and `fused_reduce` modules and data movement (copies, concat, gather,
pad, pooling) become `gpu::code_object`s of generated, NVRTC-compiled kernels; `dot` becomes
`gpu::gemm` (cuBLASLt), taking a following bias add and relu into its epilogue; `convolution`
becomes `gpu::convolution` (cuDNN's graph API) with the pointwise module it feeds fused as its
epilogue where cuDNN has nodes for its operators (and, where a GPU is present, where cuDNN builds a
plan for the fused graph, as MIGraphX's compile_miopen finds its solutions); every lowered op
writes into an `allocate` that memory_coloring then plans into one scratch buffer. Views stay as
they are (the runtime aliases them). What the lowering has no kernel for (submodule control flow,
tuples, fp8, ...) stays as it is and runs on the host.

float32 gemms and convolutions multiply in float32, as MIGraphX's rocBLAS and MIOpen calls do;
`fp32_math=tf32` marks them `tf32=1`, which lets cuBLASLt and cuDNN multiply in TF32 on tensor
cores (PyTorch's default for its cuDNN convolutions, not for its matmuls)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from mgxir.diagnostics import MgxError
from mgxir.interp import Interpreter
from mgxir.ir import traits
from mgxir.ir.dtype import DType
from mgxir.ir.fingerprint import module_fingerprint
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module, compute_shape
from mgxir.ir.operation import Operation, ShapeError
from mgxir.ir.program import Program
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape, find_permutation
from mgxir.ops.indexing import REDUCTIONS as SCATTER_REDUCTIONS
from mgxir.passes.base import Pass, PassContext, PassRefusal
from mgxir.passes.memory_coloring import body_modules, outer_values
from mgxir.passes.registry import register_pass, register_pipeline
from mgxir.targets.gpu import conv_kernels, data_kernels, dnn, fused_reduce_kernels, kernels, rnn_kernels, tune
from mgxir.targets.gpu.compiler import DEFAULT_ARCH, compile_kernel, device_arch
from mgxir.targets.gpu.kernels import Kernel, Tensor, Unsupported
from mgxir.targets.gpu.views import view_offset

VECTOR_ALIGNMENT = 16  # bytes: what memory_coloring must give (the gpu pipeline asks for it)
FP32_MATH = ("ieee", "tf32")  # how float32 gemms and convolutions multiply (GpuLowering.fp32_math)
DEPTHWISE = ("kernel", "library")  # what runs depthwise convolutions (GpuLowering.depthwise)

# MIGraphX's GPU target, shortened to the passes mgxir has: fusion, lowering to kernels and library
# calls, one scratch buffer (16-byte aligned for vector loads). Registered as `gpu` by name.
GPU_PIPELINE = (
    "normalize_ops,eliminate_identity,rewrite_rnn{exact_gates=true},rewrite_pooling,rewrite_reduce,dead_code_elimination,O,"
    "fuse_pointwise,fuse_reduce,dead_code_elimination,gpu_lowering,memory_coloring{alignment=16},"
    "dead_code_elimination"
)

# where each value lives: (the instruction owning its buffer, element offset in it)
Placement = dict[Instruction, tuple[Instruction, int]]
Generator = Callable[[Instruction, list[Tensor], Tensor], Kernel]


# operators the lowering turns into target ops that read any input layout (besides GENERATORS)
LOWERED_OPS = ("pointwise", "fused_reduce", "convolution", "dot")


def _concat(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return kernels.concat_kernel(inputs, ins.op["axis"] % len(output.lens), output)


def _gather(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return kernels.gather_kernel(inputs[0], inputs[1], ins.op["axis"] % len(inputs[0].lens), output)


def _pad(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    if ins.op["mode"] != 0:
        return data_kernels.pad_kernel(inputs[0], tuple(ins.op["pads"]), ins.op["mode"], output)
    return kernels.pad_kernel(inputs[0], tuple(ins.op["pads"]), float(ins.op["value"]), output)


def _reverse(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    rank = len(output.lens)
    return data_kernels.reverse_kernel(inputs[0], [a % rank for a in ins.op["axes"]], output)


def _onehot(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    if ins.op["depth"] is None:
        raise Unsupported("onehot with its depth as an input (a dynamic shape)")
    axis = ins.op["axis"] % len(output.lens)
    return data_kernels.onehot_kernel(inputs[0], inputs[1], axis, ins.op["depth"], output)


def _resize(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    if len(inputs) != 1:
        raise Unsupported("resize with its sizes or scales as an input")
    return data_kernels.resize_kernel(ins.op, inputs[0], output)


def _gathernd(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return data_kernels.gathernd_kernel(inputs[0], inputs[1], ins.op["batch_dims"], output)


def _fill(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return data_kernels.fill_kernel(inputs[0], inputs[1], output)


def _lrn(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    if len(output.lens) < 2:
        raise Unsupported("lrn needs a channel axis")
    return data_kernels.lrn_kernel(ins.op, inputs[0], output)


def _undefined(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return data_kernels.zeros_kernel(output)


def _unpack_int4(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return data_kernels.unpack_int4_kernel(inputs[0], ins.op["axis"] % len(output.lens), output)


def _concat_past_present(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    new, seqlens, cache = inputs
    if len(new.lens) != 4 or len(cache.lens) != 4 or seqlens.elements < new.lens[0]:
        raise Unsupported("concat_past_present takes (batch, heads, rows, head size) tensors")
    return data_kernels.concat_past_present_kernel(new, seqlens, cache, ins.op["kv_num_heads"], output)


def _pooling(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return kernels.pooling_kernel(ins.op, inputs[0], output)


def _convolution(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    if len(inputs) != 2:
        raise Unsupported("convolution with more than its input and weights")
    return kernels.convolution_kernel(ins.op, inputs[0], inputs[1], output)


def _convolution_backwards(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return conv_kernels.convolution_backwards_kernel(ins.op, inputs[0], inputs[1], output)


def _quant_dot(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return conv_kernels.quant_dot_kernel(inputs[0], inputs[1], output)


def _copy(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return kernels.copy_kernel(inputs[0], output, f"{ins.op.defn.name}_kernel")


def _scatter(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    reduction = ins.op.defn.name.removeprefix("scatter_")
    axis = ins.op["axis"] % len(output.lens)
    return data_kernels.scatter_elements_kernel(*inputs, axis, reduction, output)


def _scatternd(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return data_kernels.scatternd_kernel(*inputs, ins.op.defn.name.removeprefix("scatternd_"), output)


def _prefix_scan_sum(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    axis = ins.op["axis"] % len(output.lens)
    return data_kernels.prefix_scan_sum_kernel(inputs[0], axis, ins.op["exclusive"], ins.op["reverse"], output)


def _rnn_shift_sequence(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return rnn_kernels.shift_sequence_kernel(inputs[0], inputs[1], output)


def _rnn_shift_output(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return rnn_kernels.shift_output_kernel(inputs[0], inputs[1], ins.op["direction"], output)


def _rnn_last_output(ins: Instruction, inputs: list[Tensor], output: Tensor) -> Kernel:
    return rnn_kernels.last_output_kernel(inputs[0], inputs[1], ins.op["direction"], output)


# generated operators whose result takes the layout of their first input that is densely laid out
# channels-last (a permutation other than standard): pooling after a convolution, concat (what
# MIGraphX's find_add_convs makes of a residual add of two convolutions) before one, and pointwise
# modules between convolutions (hardswish, squeeze-and-excitation's scaling) stay NHWC, with no
# layout copy on either side
KEEP_INPUT_LAYOUT = ("pooling", "concat", "pointwise")

# operators with a kernel generator of their own; views that are not views (a reshape of a
# transposed input) and contiguous are copies
GENERATORS: dict[str, Generator] = {
    "concat": _concat,
    "gather": _gather,
    "pad": _pad,
    "reverse": _reverse,
    "onehot": _onehot,
    "resize": _resize,
    "gathernd": _gathernd,
    "fill": _fill,
    "unpack_int4": _unpack_int4,
    "undefined": _undefined,
    "lrn": _lrn,
    "concat_past_present": _concat_past_present,
    "prefix_scan_sum": _prefix_scan_sum,
    "rnn_var_sl_shift_sequence": _rnn_shift_sequence,
    "rnn_var_sl_shift_output": _rnn_shift_output,
    "rnn_var_sl_last_output": _rnn_last_output,
    **{f"scatter_{reduction}": _scatter for reduction in SCATTER_REDUCTIONS},
    **{f"scatternd_{reduction}": _scatternd for reduction in SCATTER_REDUCTIONS},
    "pooling": _pooling,
    "convolution": _convolution,  # where the platform has no DNN library (library_convolution off)
    "convolution_backwards": _convolution_backwards,
    "quant_convolution": _convolution,  # int8 -> int32, a direct kernel (no int8 tensor cores yet)
    "quant_dot": _quant_dot,
    "contiguous": _copy,
    "reshape": _copy,
    "reshape_lazy": _copy,
    "flatten": _copy,
    "squeeze": _copy,
    "unsqueeze": _copy,
    "transpose": _copy,
    "layout": _copy,
}


@dataclasses.dataclass
class GpuLowering(Pass):
    name = "gpu_lowering"
    lowers_to_target = True
    description = "Lower main to GPU kernels (gpu::code_object), cuBLASLt gemms and allocations; compiles kernels."
    arch: str = ""  # sm_XY; empty: the GPU's, or sm_90 without one
    fuse_epilogues: bool = True
    channels_last: bool = True  # 2-d tensor-core convolutions in NHWC (cuDNN's fast layout for them)
    library_convolution: bool = True  # cuDNN calls; off: generated kernels (a platform without cuDNN)
    fuse_attention: bool = True  # dot -> scaled softmax -> dot as cuDNN's fused attention (half, bf16)
    exhaustive_tune: bool = False  # time launch configurations of elementwise kernels on the GPU
    fp32_math: str = "ieee"  # float32 gemms and convolutions: ieee (float32, as MIGraphX) or tf32
    depthwise: str = "kernel"  # depthwise convolutions: a generated kernel, or the DNN library's
    allow_host: bool = True  # instructions with no kernel run on the host (each one warned); off: an error
    _timer: object = dataclasses.field(default=None, repr=False)

    def apply(self, program: Program, context: PassContext) -> None:
        if self.fp32_math not in FP32_MATH:
            raise MgxError(f"gpu_lowering: fp32_math is one of {', '.join(FP32_MATH)}, not '{self.fp32_math}'")
        if self.depthwise not in DEPTHWISE:
            raise MgxError(f"gpu_lowering: depthwise is one of {', '.join(DEPTHWISE)}, not '{self.depthwise}'")
        arch = self.arch or device_arch() or DEFAULT_ARCH
        module = program.main
        placement: Placement = {}
        self._relaid: dict[Instruction, Shape] = {}  # results laid out anew: what users were shaped for
        self.host_steps: list[tuple[Instruction, str]] = []
        names = {ins: ins.param_name if ins.is_param else f"@{n}" for n, ins in enumerate(module)}
        for body in program.reachable_modules():
            if body is not module:
                names.update(
                    {ins: f"{body.name}:{ins.param_name if ins.is_param else f'@{n}'}" for n, ins in enumerate(body)}
                )
        self._lower_module(module, placement, arch, context)
        _drop_unused_modules(program)
        self._report_host_steps(program, names, context)

    def _lower_module(self, module: Module, placement: Placement, arch: str, context: PassContext) -> None:
        for ins in list(module):
            if ins.is_param or ins.is_literal:
                placement[ins] = (ins, 0)
            elif ins.is_return or ins.op.defn.name.startswith("gpu::") or ins.op.defn.name in ("allocate", "load"):
                placement.setdefault(ins, (ins, 0))
            elif ins.parent is module:
                self._lower(module, ins, placement, arch, context)

    def _report_host_steps(self, program: Program, names: dict[Instruction, str], context: PassContext) -> None:
        """One warning per instruction left for the host (its operator, its name in the pass's
        input, why), at its source line where it has one; with allow_host off, the first is an error."""
        source = getattr(program, "source", None)
        for ins, why in self.host_steps:
            message = f"gpu_lowering: '{ins.op.defn.name}' ({names.get(ins, '?')}) runs on the host: {why}"
            location, line = None, None
            if source is not None and ins.line:
                location, line = source.location(ins.line, 1), source.line(ins.line)
            if not self.allow_host:
                more = len(self.host_steps) - 1
                raise PassRefusal(message + (f" (and {more} more host steps)" if more else ""), location, line)
            context.warn(message, location, line)

    def _lower(self, module: Module, ins: Instruction, placement: Placement, arch: str, context: PassContext) -> None:
        source = placement.get(ins.args[0]) if ins.args else None
        if source is not None:
            offset = view_offset(ins, source[1])
            if offset is not None and self._as_view_op(module, ins):
                placement[ins] = (source[0], offset)
                return
        name = ins.op.defn.name
        if runs_bodies(ins):
            return self._host(module, ins, placement, arch, context, "control flow (its bodies are lowered)")
        if ins.shape.is_tuple or ins.shape.is_dynamic or any(a.shape.is_tuple for a in ins.args):
            return self._host(module, ins, placement, arch, context, "tuple or dynamic shapes")
        try:
            if name in ("dot",):
                if not (self.fuse_attention and self._attention(module, ins, placement, context)):
                    self._gemm(module, ins, placement, arch, context)
                return
            if name == "convolution" and self.library_convolution:
                self._convolution(module, ins, placement, arch, context)
                return
            inputs = [self._tensor(a, placement) for a in ins.args]
            out_shape = kept_layout(ins) if self.channels_last and keeps_input_layout(ins) else ins.shape
            output = Tensor.of(out_shape)
            if name == "pointwise" and not out_shape.standard:
                inputs, output = in_output_memory_order(inputs, output)
            code = None
            if name == "pointwise" and self.exhaustive_tune and device_arch() is not None:
                kernel, code = self._tuned_pointwise(ins, inputs, output, arch)
                context.count("kernels tuned")
            elif name == "pointwise":
                kernel = kernels.pointwise_kernel(ins.module_args[0], inputs, output)
            elif name == "fused_reduce":
                kernel = fused_reduce_kernels.fused_reduce_kernel(ins.module_args[0], ins.op["axes"], inputs, output)
            elif name in GENERATORS:
                kernel = GENERATORS[name](ins, inputs, output)
            else:
                raise Unsupported(f"no GPU kernel for '{name}'")
        except Unsupported as e:
            return self._host(module, ins, placement, arch, context, str(e))
        shaped_for = ins.shape  # what its users were shaped for: replacing `ins` gives it out_shape
        code = code if code is not None else compile_kernel(kernel, arch)
        self._emit(module, ins, kernel, code, placement, context, out_shape)
        if out_shape != shaped_for:
            context.count("results kept channels-last")
            self._users_read_their_layout(module, ins, shaped_for, placement, arch, context)

    def _emit(
        self,
        module: Module,
        ins: Instruction,
        kernel: Kernel,
        code,
        placement: Placement,
        context: PassContext,
        out_shape: Shape | None = None,
    ) -> None:
        op = make_op(
            "gpu::code_object",
            code_object=code,
            symbol_name=kernel.symbol,
            **{"global": kernel.global_size, "local": kernel.local_size},
        )
        self._write_into_allocation(module, ins, op, list(ins.args), placement, out_shape)
        context.count("kernels generated")

    def _tuned_pointwise(self, ins: Instruction, inputs: list[Tensor], output: Tensor, arch: str):
        if self._timer is None:
            self._timer = tune.Timer()
        body = ins.module_args[0]

        def make(local: int, per_thread: int) -> Kernel:
            return kernels.pointwise_kernel(body, inputs, output, local=local, per_thread=per_thread)

        return tune.tune_kernel(make, [*inputs, output], arch, tune.problem_cache(), self._timer)

    def _as_view_op(self, module: Module, ins: Instruction) -> bool:
        """Whether `ins`, whose result the runtime can alias, is (or now is) an operator that says
        it is a view: memory_coloring extends its input's lifetime only through views. A reshape
        becomes `reshape_lazy` (MIGraphX's lowering does the same) where that gives its shape."""
        if ins.op.defn.is_view:
            return True
        if ins.op.defn.name not in ("reshape", "flatten"):
            return False
        shape = ins.shape
        lazy = make_op("reshape_lazy", dims=list(shape.lens))
        try:
            if compute_shape(lazy, ins.args, []) != shape:
                return False
        except (MgxError, ShapeError):
            return False
        module.replace(ins, lazy)
        return True

    def _host(
        self, module: Module, ins: Instruction, placement: Placement, arch: str, context: PassContext, why: str
    ) -> None:
        """`ins` stays for the host, which reads its arguments in the layouts its shape rule was
        given: a result the lowering laid out anew (channels-last, expecting this user to be
        rebuilt from its input's layout) reaches it as a copy in the layout it was shaped for, and
        so do the values its submodules (an `if`'s branches, a `loop`'s body) read from main."""
        for arg in dict.fromkeys(ins.args):
            if arg in self._relaid:
                copy = self._copy_into(module, arg, self._relaid[arg], ins, placement, arch, context)
                ins.replace_arg(arg, copy)
        bodies = {id(body) for body in body_modules(ins)}
        for value in outer_values(ins) if bodies else []:
            if value in self._relaid:
                copy = self._copy_into(module, value, self._relaid[value], ins, placement, arch, context)
                for reader in [u for u in value.users if id(u.parent) in bodies]:
                    reader.replace_arg(value, copy)
        placement[ins] = (ins, 0)
        self.host_steps.append((ins, why))
        context.count("left for the host")
        if runs_bodies(ins):  # an `if`'s branches, a `loop`'s body: lowered as main is, run by the host's control flow
            for body in ins.module_args:
                self._lower_module(body, placement, arch, context)
                context.count("bodies lowered")

    def _tensor(self, ins: Instruction, placement: Placement) -> Tensor:
        root, offset = placement[ins]
        if ins.shape.is_tuple or ins.shape.is_dynamic:
            raise Unsupported("tuple or dynamic argument")
        return Tensor.of(ins.shape, aligned=(offset * ins.shape.dtype.itemsize) % VECTOR_ALIGNMENT == 0)

    def _write_into_allocation(
        self,
        module: Module,
        ins: Instruction,
        op,
        args: list[Instruction],
        placement: Placement,
        shape: Shape | None = None,
    ) -> None:
        allocation = module.insert(ins, make_op("allocate", shape=shape or ins.shape))
        placement[allocation] = (allocation, 0)
        if op.defn.name == "gpu::code_object":  # the shapes it was compiled for, as MIGraphX keeps them
            op = op.replace(expected_inputs=[*(a.shape for a in args), allocation.shape], output=allocation.shape)
            if list(args) == list(ins.args):  # the kernel computes `ins`: what --portable makes other payloads of
                op = op.replace(code_object=op["code_object"].replace(body=(ins.op, tuple(ins.module_args))))
        module.replace(ins, op, [*args, allocation], [])
        placement[ins] = (allocation, 0)

    # -- gemm ---------------------------------------------------------------------------------

    def _gemm(self, module: Module, ins: Instruction, placement: Placement, arch: str, context: PassContext) -> None:
        a, b = (self._gemm_operand(module, x, placement, arch, context) for x in ins.args)
        target, epilogue, bias = ins, "none", None
        if self.fuse_epilogues:
            target, epilogue, bias = find_epilogue(ins, placement)
        args = [a, b] if bias is None else [a, b, bias]
        op = make_op("gpu::gemm", epilogue=epilogue, tf32=self._tf32(ins))
        if target is not ins:
            self._write_into_allocation(module, target, op, args, placement)
            module.remove(ins)
            context.count(f"gemm epilogues fused ({epilogue})")
        else:
            self._write_into_allocation(module, ins, op, args, placement)
        context.count("gemms")

    # -- attention ----------------------------------------------------------------------------

    def _attention(self, module: Module, dot: Instruction, placement: Placement, context: PassContext) -> bool:
        """dot -> softmax(scale * .) -> dot becomes one gpu::attention where cuDNN runs it; False
        (nothing changed) otherwise."""
        found = find_attention(dot)
        if found is None:
            return False
        softmax, second = found
        q, k_t = dot.args
        v = second.args[1]
        for x in (q, k_t, v):
            where = placed(x, placement)
            if where is None or (where[1] * x.shape.dtype.itemsize) % VECTOR_ALIGNMENT:
                return False
        scale = softmax_scale(softmax)
        if scale is None:
            return False
        out, transpose = heads_interleaved_output(second)
        if not attention_plan_available(q.shape, k_t.shape, v.shape, out, scale):
            context.count("attentions cuDNN refused")
            return False
        allocation = module.insert(second, make_op("allocate", shape=out))
        placement[allocation] = (allocation, 0)
        module.replace(second, make_op("gpu::attention", scale=scale), [q, k_t, v, allocation], [])
        placement[second] = (allocation, 0)
        if transpose is not None:  # its shape follows the new layout: standard, so what reshapes it is a view
            module.replace(transpose, transpose.op, list(transpose.args))
        module.remove(softmax)
        module.remove(dot)
        context.count("attentions fused")
        return True

    # -- convolution --------------------------------------------------------------------------

    def _convolution(
        self, module: Module, ins: Instruction, placement: Placement, arch: str, context: PassContext
    ) -> None:
        """A cuDNN graph call; 2-d convolutions on tensor cores (half, bf16, float32 in TF32) run
        channels-last (NHWC strides, as MIGraphX's layout_convolution arranges for its libraries):
        inputs in another layout get one copy (weights are re-laid out once, as literals), results
        keep NHWC strides and views of them read a standard copy. float32 multiplied as float32
        stays channels-first: cuDNN's float32 engines for NHWC graphs are slow (ResNet-50 batch 32
        on an H100: 71 ms fused and 15.7 ms unfused in NHWC, 9.8 ms fused in NCHW). Grouped
        convolutions are cuDNN's too (its graph reads the group count off the weights' channels);
        depthwise ones are generated kernels (`depthwise=kernel`, see _depthwise). Any
        padding_mode: for static shapes MIGraphX's parser has written the padding SAME asks for
        into `padding`, which is all the shape rule and the reference read."""
        if ins.shape.dtype not in dnn.IO_TYPES:
            raise Unsupported(f"convolution: cuDNN has no {ins.shape.dtype.type_name} convolution")
        if self.depthwise == "kernel" and conv_kernels.is_depthwise(ins.op, *(a.shape for a in ins.args)):
            self._depthwise(module, ins, placement, arch, context)
            return
        tensor_cores = ins.shape.dtype is not DType.float or self._tf32(ins)
        channels_last = self.channels_last and ins.shape.ndim == 4 and tensor_cores
        layout = channels_last_shape if channels_last else (lambda shape: shape)
        fused = find_conv_epilogue(ins, placement) if self.fuse_epilogues else None
        x_in, w_in = ins.args
        tf32 = self._tf32(ins)
        if fused is not None:
            extras_shapes = tuple(_epilogue_operand_shape(e.shape, layout) for e in fused[1])
            if not conv_plan_available(
                ins.op, layout(x_in.shape), layout(w_in.shape), layout(fused[0].shape), extras_shapes, fused, tf32
            ):
                context.count("convolution epilogues cuDNN refused")
                fused = None
        x = self._in_layout(module, x_in, layout, placement, arch, context)
        w = self._in_layout(module, w_in, layout, placement, arch, context)
        if fused is None:
            target, extras, module_args, op = ins, [], [], make_op("gpu::convolution", op=ins.op, tf32=tf32)
        else:
            target, extra_ins, conv_arg, names = fused
            extras = [
                e if e.shape.broadcasted else self._in_layout(module, e, layout, placement, arch, context)
                for e in extra_ins
            ]
            module_args = [target.module_args[0]]
            op = make_op("gpu::convolution", op=ins.op, epilogue="_".join(names), conv_arg=conv_arg, tf32=tf32)
        shaped_for = target.shape
        allocation = module.insert(target, make_op("allocate", shape=layout(target.shape)))
        placement[allocation] = (allocation, 0)
        module.replace(target, op, [x, w, *extras, allocation], module_args)
        placement[target] = (allocation, 0)
        if target is not ins:
            module.remove(ins)
            context.count("convolution epilogues fused")
        context.count("convolutions")
        if target.shape != shaped_for:
            self._users_read_their_layout(module, target, shaped_for, placement, arch, context)

    def _depthwise(
        self, module: Module, ins: Instruction, placement: Placement, arch: str, context: PassContext
    ) -> None:
        """A generated depthwise kernel (conv_kernels.py) that also computes the pointwise module the
        convolution feeds, reading its input in the layout it has and writing that layout
        (channels-last between channels-last convolutions: no copy either side)."""
        x, w = ins.args
        layout = kept_layout(ins) if self.channels_last else ins.shape
        multiplier = w.shape.lens[0] // x.shape.lens[1]
        if conv_kernels.channel_vector_width(self._tensor(x, placement), Tensor.of(layout), multiplier) > 1:
            # weights read as vectors of channels too (literals laid out once, parameters copied)
            w = self._in_layout(module, w, conv_kernels.channels_fastest, placement, arch, context)
        fused = find_generated_epilogue(ins, placement) if self.fuse_epilogues else None
        for target, extras, conv_arg in [fused, (ins, [], 0)] if fused is not None else [(ins, [], 0)]:
            epilogue = target.module_args[0] if target is not ins else None
            out_shape = target.shape
            if layout is not ins.shape:
                out_shape = Shape.from_permutation(target.shape.dtype, target.shape.lens, find_permutation(layout))
            tensors = [self._tensor(a, placement) for a in (x, w, *extras)]
            try:
                kernel = conv_kernels.depthwise_kernel(
                    ins.op, tensors[0], tensors[1], Tensor.of(out_shape), epilogue, tensors[2:], conv_arg
                )
                break
            except Unsupported:
                if target is ins:
                    raise
        op = make_op(
            "gpu::code_object",
            code_object=compile_kernel(kernel, arch),
            symbol_name=kernel.symbol,
            **{"global": kernel.global_size, "local": kernel.local_size},
        )
        shaped_for = target.shape
        self._write_into_allocation(module, target, op, [x, w, *extras], placement, out_shape)
        if target is not ins:
            module.remove(ins)
            context.count("depthwise epilogues fused")
        context.count("depthwise convolutions generated")
        context.count("kernels generated")
        if out_shape != shaped_for:
            context.count("results kept channels-last")
            self._users_read_their_layout(module, target, shaped_for, placement, arch, context)

    def _tf32(self, ins: Instruction) -> bool:
        return self.fp32_math == "tf32" and ins.shape.dtype is DType.float

    def _in_layout(
        self,
        module: Module,
        x: Instruction,
        layout: Callable[[Shape], Shape],
        placement: Placement,
        arch: str,
        context: PassContext,
    ) -> Instruction:
        """`x` laid out as `layout` wants (and 16-byte aligned): itself, a re-laid-out literal, or a
        copy."""
        want = layout(x.shape)
        where = placed(x, placement)
        aligned = where is not None and (where[1] * x.shape.dtype.itemsize) % VECTOR_ALIGNMENT == 0
        if aligned and same_layout(x.shape, want) and not x.shape.broadcasted:
            return x
        if x.is_literal and x.literal.data is not None:
            literal = module.add_literal(Literal(want, x.literal.data))
            placement[literal] = (literal, 0)
            context.count("weights laid out")
            return literal
        return self._copy_into(module, x, want, _next(x), placement, arch, context)

    def _copy_into(
        self,
        module: Module,
        x: Instruction,
        shape: Shape,
        before: Instruction | None,
        placement: Placement,
        arch: str,
        context: PassContext,
    ) -> Instruction:
        """A copy of `x` in `shape`'s layout (a generated kernel), inserted before `before`."""
        op = make_op("layout", permutation=find_permutation(shape)) if not shape.standard else make_op("contiguous")
        copy = module.insert(before, op, [x])
        kernel = kernels.copy_kernel(self._tensor(x, placement), Tensor.of(copy.shape), f"{op.defn.name}_kernel")
        self._emit(module, copy, kernel, compile_kernel(kernel, arch), placement, context)
        return copy

    def _users_read_their_layout(
        self,
        module: Module,
        result: Instruction,
        shaped_for: Shape,
        placement: Placement,
        arch: str,
        context: PassContext,
    ) -> None:
        """Users were shaped for a `shaped_for` result (standard, mostly): those the lowering
        rebuilds from their inputs' layouts stay, views whose shape follows their input's strides
        (step, slice, transpose, ...) are reshaped as views of the new layout (and their users
        looked at in turn), and the others (the return, host ops, views that need a standard
        input) read a copy in that layout."""
        self._relaid[result] = shaped_for
        for user in list(result.users):
            name = "@return" if user.is_return else user.op.defn.name
            rebuilt = (name in GENERATORS or name in LOWERED_OPS) and not user.op.defn.is_view
            if rebuilt:
                continue
            before = user.shape
            if not user.is_return and user.op.defn.is_view and follow_layout(user, result):
                placement.pop(user, None)
                context.count("views of channels-last results kept")
                self._users_read_their_layout(module, user, before, placement, arch, context)
                continue
            copy = self._copy_into(module, result, shaped_for, user, placement, arch, context)
            user.replace_arg(result, copy)

    def _gemm_operand(
        self, module: Module, x: Instruction, placement: Placement, arch: str, context: PassContext
    ) -> Instruction:
        return self._dense_operand(module, x, placement, arch, context, lambda s: gemm_layout(s) is not None)

    def _dense_operand(
        self,
        module: Module,
        x: Instruction,
        placement: Placement,
        arch: str,
        context: PassContext,
        readable: Callable[[Shape], bool],
    ) -> Instruction:
        """`x` where the library reads its layout as it is, else a contiguous copy of it."""
        where = placed(x, placement)
        if readable(x.shape) and where is not None and (where[1] * x.shape.dtype.itemsize) % VECTOR_ALIGNMENT == 0:
            return x
        transposed = transposed_matrix_shape(x.shape)
        if transposed is not None and readable(transposed):
            # a matrix read down its columns is copied as a transposed one: reads and writes
            # along the same axis, and the library reads it transposed (attention's k^T)
            return self._copy_into(module, x, transposed, _next(x), placement, arch, context)
        copy = module.insert(_next(x), make_op("contiguous"), [x])
        placement[copy] = placement[x]
        kernel = kernels.copy_kernel(self._tensor(x, placement), Tensor.of(copy.shape))
        op = make_op(
            "gpu::code_object",
            code_object=compile_kernel(kernel, arch),
            symbol_name=kernel.symbol,
            **{"global": kernel.global_size, "local": kernel.local_size},
        )
        self._write_into_allocation(module, copy, op, [x], placement)
        context.count("kernels generated")
        return copy


def runs_bodies(ins: Instruction) -> bool:
    """Whether `ins`'s modules are bodies that its control flow runs (an `if`'s branches, a `loop`'s
    body: each lowered to device code as main is, the choice and the iterations on the host), not
    fused bodies that one kernel computes, and of static shapes."""
    if not ins.module_args or ins.op.defn.has(traits.FusedBody):
        return False
    return all(not i.shape.is_dynamic for body in ins.module_args for i in body if not i.is_return)


def in_output_memory_order(inputs: list[Tensor], output: Tensor) -> tuple[list[Tensor], Tensor]:
    """Elementwise tensors (all of the output's lens) with their axes permuted alike into the
    output's memory order (outermost first): the kernel, which walks its output's lens in order,
    then writes a channels-last output in order and reads vectors of channels; the same elements
    pair up, so the result is the same."""
    if any(t.lens != output.lens for t in inputs):
        return inputs, output
    order = sorted(range(len(output.lens)), key=lambda d: -output.strides[d])

    def permuted(t: Tensor) -> Tensor:
        return Tensor(t.dtype, tuple(t.lens[d] for d in order), tuple(t.strides[d] for d in order), t.aligned)

    return [permuted(t) for t in inputs], permuted(output)


def keeps_input_layout(ins: Instruction) -> bool:
    """Whether `ins`'s kernel writes the layout of its input (KEEP_INPUT_LAYOUT); a pointwise
    module only where a user reads any layout (none but the return: it writes the standard one
    the return wants)."""
    name = ins.op.defn.name
    if name not in KEEP_INPUT_LAYOUT:
        return False
    return name != "pointwise" or any(
        not u.is_return and not u.op.defn.is_view and u.op.defn.name in (*GENERATORS, *LOWERED_OPS) for u in ins.users
    )


def kept_layout(ins: Instruction) -> Shape:
    """`ins`'s result laid out as its first (pooling: only) input that is densely laid out in a
    permutation other than standard (channels-last), else its shape as it is."""
    sources = ins.args if ins.op.defn.name in ("concat", "pointwise") else ins.args[:1]
    for source in sources:
        shape = source.shape
        if shape.is_tuple or shape.is_dynamic or shape.ndim != ins.shape.ndim or shape.standard or shape.broadcasted:
            continue
        permutation = find_permutation(shape)
        if Shape.from_permutation(shape.dtype, shape.lens, permutation).strides != shape.strides:
            continue  # not dense (a slice or step of something)
        return Shape.from_permutation(ins.shape.dtype, ins.shape.lens, permutation)
    return ins.shape


def follow_layout(view: Instruction, source: Instruction) -> bool:
    """Reshapes `view` (shaped for a standard `source`) as the same view of `source`'s layout where
    its operator computes that shape from its input's strides and the runtime aliases the result
    (view_offset finds it in its input); False (nothing changed) otherwise."""
    if view.args[0] is not source or view.module_args:
        return False
    before = view.shape
    try:
        after = compute_shape(view.op, view.args, [])
    except (MgxError, ShapeError):
        return False
    if after.lens != before.lens or after.dtype != before.dtype:
        return False
    view.shape = after
    if view_offset(view) is None:
        view.shape = before
        return False
    return True


def transposed_matrix_shape(shape: Shape) -> Shape | None:
    """Where `shape`'s matrix (its last two axes) is contiguous down its columns: its lens with the
    last two axes' strides swapped, each batch packed; else None."""
    if shape.ndim < 2 or shape.strides[-2] != 1 or shape.strides[-1] == 1 or shape.lens[-1] == 1:
        return None
    order = list(range(shape.ndim))
    order[-1], order[-2] = order[-2], order[-1]
    return Shape.from_permutation(shape.dtype, shape.lens, order)


def _next(ins: Instruction) -> Instruction | None:
    return ins.next


def gemm_layout(shape: Shape) -> tuple[bool, int, int, int] | None:
    """How cuBLASLt reads a matrix operand: (transposed, leading dimension, batch count, batch
    stride), or None where the batch axes do not collapse into one stride or neither matrix axis
    is contiguous."""
    lens, strides = shape.lens, shape.strides
    rows, cols = lens[-2], lens[-1]
    # the leading dimension is the stride between rows (columns when transposed); only a single row
    # (column) may have any stride, and then the smallest valid one stands in
    if strides[-1] == 1 or cols == 1:
        transposed, ld = False, strides[-2] if rows > 1 else max(strides[-2], cols, 1)
    elif strides[-2] == 1 or rows == 1:
        transposed, ld = True, strides[-1] if cols > 1 else max(strides[-1], rows, 1)
    else:
        return None
    if ld < (rows if transposed else cols):
        return None
    batch_axes = [(n, s) for n, s in zip(lens[:-2], strides[:-2]) if n != 1]
    count = 1
    for n, _ in batch_axes:
        count *= n
    if not batch_axes:
        return transposed, ld, 1, 0
    stride = batch_axes[-1][1]
    expected = stride
    for n, s in reversed(batch_axes):
        if s != expected:
            return None
        expected = s * n
    return transposed, ld, count, stride


def find_epilogue(dot: Instruction, placement: Placement) -> tuple[Instruction, str, Instruction | None]:
    """A pointwise user of `dot` that only adds a bias along the last axis and/or applies relu:
    (that user, the epilogue's name, the bias) or (dot, 'none', None)."""
    if len(dot.users) != 1:
        return dot, "none", None
    user = next(iter(dot.users))
    if user.op.defn.name != "pointwise" or user.shape.dtype != dot.shape.dtype or user.shape.lens != dot.shape.lens:
        return dot, "none", None
    body = [i for i in user.module_args[0] if not (i.is_param or i.is_return)]
    params = sorted((i for i in user.module_args[0] if i.is_param), key=lambda p: p.param_name)
    bound = dict(zip(params, user.args))
    names = [i.op.defn.name for i in body]
    if names not in (["add"], ["add", "relu"], ["relu"]):
        return dot, "none", None
    if names == ["relu"]:
        return (user, "relu", None) if bound.get(body[0].args[0]) is dot else (dot, "none", None)
    add = body[0]
    if names == ["add", "relu"] and body[1].args[0] is not add:
        return dot, "none", None
    operands = [bound.get(x) for x in add.args]
    if dot not in operands or len(operands) != 2:
        return dot, "none", None
    bias = operands[1] if operands[0] is dot else operands[0]
    if bias is None or bias is dot:
        return dot, "none", None
    strides, lens = bias.shape.strides, bias.shape.lens
    along_last = strides[-1] == 1 and all(s == 0 for s in strides[:-1])
    if not along_last or lens[-1] != dot.shape.lens[-1] or bias.shape.dtype != dot.shape.dtype:
        return dot, "none", None
    where = placed(bias, placement)
    if where is None or (where[1] * bias.shape.dtype.itemsize) % VECTOR_ALIGNMENT:
        return dot, "none", None
    return user, "relu_bias" if names == ["add", "relu"] else "bias", bias


def find_conv_epilogue(
    conv: Instruction, placement: Placement
) -> tuple[Instruction, list[Instruction], int, list[str]] | None:
    """The pointwise user of `conv` that cuDNN can run after it in one graph: (that user, its other
    operands, the position of the convolution among its operands, its operator names) or None."""
    if len(conv.users) != 1:
        return None
    user = next(iter(conv.users))
    if user.op.defn.name != "pointwise" or user.shape != conv.shape or list(user.args).count(conv) != 1:
        return None
    names = dnn.epilogue_names(user.module_args[0])
    if not names:
        return None
    extras = [a for a in user.args if a is not conv]
    for extra in extras:
        if placed(extra, placement) is None or not dnn.epilogue_input_supported(extra.shape, conv.shape):
            return None
    return user, extras, list(user.args).index(conv), names


def find_generated_epilogue(
    conv: Instruction, placement: Placement
) -> tuple[Instruction, list[Instruction], int] | None:
    """The pointwise user of `conv` a generated kernel can compute after it: (that user, its other
    operands, the position of the convolution among its operands) or None."""
    if len(conv.users) != 1:
        return None
    user = next(iter(conv.users))
    if user.op.defn.name != "pointwise" or user.shape.lens != conv.shape.lens or list(user.args).count(conv) != 1:
        return None
    extras = [a for a in user.args if a is not conv]
    if any(placed(e, placement) is None or e.shape.is_tuple or e.shape.is_dynamic for e in extras):
        return None
    return user, extras, list(user.args).index(conv)


ATTENTION_TYPES = (DType.half, DType.bf16)  # what cuDNN's fused attention reads and writes


def find_attention(dot: Instruction) -> tuple[Instruction, Instruction] | None:
    """(the fused_reduce, the second dot) where `dot`'s only user is a fused_reduce over its last
    axis whose only user is a dot taking it as the left operand, in a type cuDNN attends in."""
    if dot.shape.dtype not in ATTENTION_TYPES or dot.shape.ndim != 4 or len(dot.users) != 1:
        return None
    softmax = next(iter(dot.users))
    if softmax.op.defn.name != "fused_reduce" or list(softmax.args) != [dot] or softmax.shape != dot.shape:
        return None
    if [a % dot.shape.ndim for a in softmax.op["axes"]] != [dot.shape.ndim - 1] or len(softmax.users) != 1:
        return None
    second = next(iter(softmax.users))
    if second.op.defn.name != "dot" or second.args[0] is not softmax or second.args[1] is softmax:
        return None
    return softmax, second


def heads_interleaved_output(second: Instruction) -> tuple[Shape, Instruction | None]:
    """The layout attention writes its result in: where its only user is a transpose, the layout
    that makes the transposed result standard (BERT's (batch, heads, seq, d) -> (batch, seq, heads,
    d) then needs no copy), and that transpose; else standard."""
    shape = second.shape
    if len(second.users) == 1:
        user = next(iter(second.users))
        if user.op.defn.name == "transpose" and not user.module_args:
            return Shape.from_permutation(shape.dtype, shape.lens, tuple(user.op["permutation"])), user
    return shape, None


_SOFTMAX_SCALES: dict[tuple[str, Shape], float | None] = {}


def softmax_scale(reduce: Instruction) -> float | None:
    """`s` where the fused_reduce computes softmax(s * x) along its last axis, or None. Asked of
    the module itself: it is run by the reference interpreter on random rows and compared with
    softmax(s * x) for each scalar literal of the module (and 1)."""
    module = reduce.module_args[0]
    key = (module_fingerprint(module), reduce.args[0].shape)
    if key in _SOFTMAX_SCALES:
        return _SOFTMAX_SCALES[key]
    shape = reduce.args[0].shape
    rows = np.random.default_rng(0).standard_normal(shape.lens).astype(shape.dtype.numpy)
    run_module = Interpreter(Program()).run_module
    with np.errstate(all="ignore"):
        got = np.asarray(reduce.op.defn.compute(reduce.op, [rows], reduce.module_args, run_module), np.float32)
    modules, candidates = [module], []
    while modules:  # the scale is a literal of the module or of a pointwise module inside it
        body = modules.pop()
        modules.extend(body.submodules())
        candidates += [
            float(i.literal.data.reshape(-1)[0])
            for i in body
            if i.is_literal and i.literal.data is not None and i.literal.data.size == 1
        ]
    found = None
    for scale in [*candidates, 1.0]:
        z = scale * rows.astype(np.float32)
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        if np.allclose(got, e / e.sum(axis=-1, keepdims=True), rtol=1e-2, atol=2e-3):
            found = scale
            break
    _SOFTMAX_SCALES[key] = found
    return found


def attention_plan_available(q: Shape, k_t: Shape, v: Shape, out: Shape, scale: float) -> bool:
    """Whether cuDNN builds its fused attention for these tensors; where that cannot be asked (no
    GPU or no cuDNN here), whether they are of the kind it attends (4-d, half or bf16)."""
    if device_arch() is None or not dnn.available():
        return q.ndim == 4 and all(t.dtype in ATTENTION_TYPES for t in (q, k_t, v))
    try:  # pragma: no cover - needs a GPU with cuDNN
        dnn.attention_plan_for(q, k_t, v, out, scale)
    except MgxError:  # pragma: no cover
        return False
    return True  # pragma: no cover


def conv_plan_available(
    conv: Operation,
    x: Shape,
    w: Shape,
    out: Shape,
    extras: tuple[Shape, ...],
    fused: tuple[Instruction, list[Instruction], int, list[str]],
    tf32: bool = False,
) -> bool:
    """Whether cuDNN builds a plan for the fused graph; True where that cannot be asked (no GPU or
    no cuDNN here: the program is then only printed or compiled for later)."""
    if device_arch() is None or not dnn.available():
        return True
    user, _, conv_arg, _ = fused
    try:
        dnn.plan_for(conv, x, w, out, extras, user.module_args[0], conv_arg, tf32=tf32)
    except MgxError:
        return False
    return True


NHWC = (0, 2, 3, 1)


def same_layout(a: Shape, b: Shape) -> bool:
    """Lens and strides agree on every axis longer than 1 (the others are never stepped)."""
    return a.lens == b.lens and all(n == 1 or s == t for n, s, t in zip(a.lens, a.strides, b.strides))


def channels_last_shape(shape: Shape) -> Shape:
    return Shape.from_permutation(shape.dtype, shape.lens, NHWC)


def _epilogue_operand_shape(shape: Shape, layout: Callable[[Shape], Shape]) -> Shape:
    return shape if shape.broadcasted else layout(shape)


def placed(ins: Instruction, placement: Placement) -> tuple[Instruction, int] | None:
    """Where `ins` lives if it is placed already or is a chain of views of something placed."""
    if ins in placement:
        return placement[ins]
    if not ins.args or ins.shape.is_tuple:
        return None
    source = placed(ins.args[0], placement)
    offset = view_offset(ins, source[1]) if source is not None else None
    if source is None or offset is None:
        return None
    placement[ins] = (source[0], offset)
    return placement[ins]


def _drop_unused_modules(program: Program) -> None:
    reachable = {id(m) for m in program.reachable_modules()}
    for module in list(program):
        if id(module) not in reachable and module is not program.main:
            program.remove_module(module.name)


register_pass(GpuLowering)
register_pipeline("gpu", GPU_PIPELINE)
