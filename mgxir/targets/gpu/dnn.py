"""`gpu::convolution` through cuDNN's graph API (nvidia-cudnn-frontend): one graph per convolution,
with the pointwise epilogue the lowering fused into it (bias, residual add, relu, ...) as cuDNN
pointwise nodes after the conv_fprop node, so the library runs them in the convolution's kernel
where one of its engines can.

Grouped convolutions need nothing more: cuDNN reads the group count off the weights, whose
channels (dimension 1) are the input's divided by it.

The epilogue is the `pointwise` module the convolution fed, bound as MIGraphX binds pointwise
parameters (by name order): parameter `conv_arg` is the convolution's result, the others are the
`gpu::convolution`'s inputs after x and w, in order.

float32 convolutions multiply in float32, as MIGraphX's MIOpen calls do: the engines cuDNN notes as
running on tensor cores or converting their inputs down (TF32) are left out, as PyTorch leaves them
out when `torch.backends.cudnn.allow_tf32` is off. With `tf32` (`--fp32-math=tf32`) cuDNN may use
them, as PyTorch lets it by default.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from mgxir.diagnostics import MgxError
from mgxir.ir.dtype import DType
from mgxir.ir.fingerprint import module_fingerprint
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.shape import Shape

# the pointwise operators an epilogue may hold: mgxir name -> (cuDNN graph method, its operand names)
EPILOGUE_OPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "add": ("add", ("a", "b")),
    "sub": ("sub", ("a", "b")),
    "mul": ("mul", ("a", "b")),
    "relu": ("relu", ("input",)),
    "sigmoid": ("sigmoid", ("input",)),
    "tanh": ("tanh", ("input",)),
}
IO_TYPES = {DType.float: "FLOAT", DType.half: "HALF", DType.bf16: "BFLOAT16"}


def _cudnn():
    try:
        import cudnn
    except ImportError:
        raise MgxError("gpu::convolution needs cuDNN's frontend: pip install 'mgxir[cuda]'") from None
    return cudnn


def epilogue_input_supported(shape: Shape, out: Shape) -> bool:
    """Whether an epilogue operand is a tensor cuDNN can read: a whole tensor of the output's
    lens (the lowering lays it out as the output), or one value per channel broadcast over the
    others (a bias)."""
    if shape.dtype != out.dtype or shape.lens != out.lens:
        return False
    if not shape.broadcasted:
        return True
    return all(s == 0 for i, s in enumerate(shape.strides) if i != 1) and shape.strides[1] == 1


def epilogue_names(module: Module) -> list[str] | None:
    """The epilogue's operator names in order, or None where cuDNN has no node for one of them."""
    names = []
    for ins in module:
        if ins.is_param or ins.is_return:
            continue
        if ins.is_literal or ins.op.defn.name not in EPILOGUE_OPS or ins.module_args:
            return None
        names.append(ins.op.defn.name)
    return names


def _padding(op: Operation, spatial: int) -> tuple[list[int], list[int]]:
    padding = list(op["padding"])
    if len(padding) == spatial:
        return padding, padding
    return padding[:spatial], padding[spatial:]


def _build_plans(
    cudnn, graph, failure: str, plan_index: int = -1, all_plans: bool = False, exact_float: bool = False
) -> None:
    """Validates the graph and builds its execution plans (the chosen one, or every one for tuning);
    with `exact_float`, only engines that multiply float32 as float32. An unsupported graph is
    `failure` with cuDNN's first line."""
    try:
        graph.validate()
        graph.build_operation_graph()
        graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        if exact_float:
            graph.deselect_numeric_notes([cudnn.numerical_note.TENSOR_CORE, cudnn.numerical_note.DOWN_CONVERT_INPUTS])
        graph.check_support()
        if plan_index >= 0:
            graph.select_plan(plan_index)
        policy = cudnn.build_plan_policy.ALL if all_plans else cudnn.build_plan_policy.HEURISTICS_CHOICE
        graph.build_plans(policy)
    except Exception as e:  # cuDNN reports an unsupported graph through several exception types
        raise MgxError(f"{failure} ({str(e).splitlines()[0]})") from None


class ConvPlan:
    """One convolution's cuDNN graph, built and planned; call it with pointers and a stream."""

    def __init__(
        self,
        handle: object,
        op: Operation,
        x: Shape,
        w: Shape,
        out: Shape,
        extras: Sequence[Shape] = (),
        epilogue: Module | None = None,
        conv_arg: int = 0,
        plan_index: int = -1,
        all_plans: bool = False,
        tf32: bool = False,
    ):
        cudnn = _cudnn()
        self.cudnn, self.handle = cudnn, handle
        if out.dtype not in IO_TYPES or x.dtype != out.dtype or w.dtype != out.dtype:
            raise MgxError(f"gpu::convolution: no cuDNN type for {out.dtype.type_name}")
        io = getattr(cudnn.data_type, IO_TYPES[out.dtype])
        f32 = cudnn.data_type.FLOAT
        graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=f32, compute_data_type=f32, handle=handle)
        spatial = x.ndim - 2
        pre, post = _padding(op, spatial)
        self.x = graph.tensor(name="x", dim=list(x.lens), stride=list(x.strides), data_type=io)
        self.w = graph.tensor(name="w", dim=list(w.lens), stride=list(w.strides), data_type=io)
        y = graph.conv_fprop(
            image=self.x,
            weight=self.w,
            pre_padding=pre,
            post_padding=post,
            stride=list(op["stride"]),
            dilation=list(op["dilation"]),
            compute_data_type=f32,
            name="conv",
        )
        self.extras = []
        for k, shape in enumerate(extras):
            if shape.strides[1] == 1 and all(s == 0 for i, s in enumerate(shape.strides) if i != 1):
                dim = [1 if i != 1 else n for i, n in enumerate(shape.lens)]
                stride = [shape.lens[1] if i == 0 else 1 for i in range(len(dim))]
            else:
                dim, stride = list(shape.lens), list(shape.strides)
            self.extras.append(graph.tensor(name=f"e{k}", dim=dim, stride=stride, data_type=io))
        result = y
        if epilogue is not None:
            result = self._epilogue(graph, epilogue, y, conv_arg)
        result.set_output(True).set_data_type(io)
        if hasattr(result, "set_dim"):
            result.set_dim(list(out.lens)).set_stride(list(out.strides))
        self.y = result
        self.graph = graph
        exact_float = out.dtype is DType.float and not tf32
        failure = f"gpu::convolution: cuDNN cannot run {op.text} on {x.lens}" + (" in float32" if exact_float else "")
        _build_plans(cudnn, graph, failure, plan_index, all_plans, exact_float)
        self.plan_count = graph.get_execution_plan_count()
        self.workspace_bytes = int(graph.get_workspace_size())

    def _epilogue(self, graph, module: Module, y, conv_arg: int):
        params = sorted((i for i in module if i.is_param), key=lambda p: p.param_name)
        others = iter(self.extras)
        values = {p: (y if k == conv_arg else next(others)) for k, p in enumerate(params)}
        f32 = self.cudnn.data_type.FLOAT
        for ins in module:
            if ins.is_param:
                continue
            if ins.is_return:
                return values[ins.args[0]]
            method, operands = EPILOGUE_OPS[ins.op.defn.name]
            kwargs = dict(zip(operands, (values[a] for a in ins.args)))
            values[ins] = getattr(graph, method)(**kwargs, compute_data_type=f32, name=f"{method}{len(values)}")
        raise MgxError("gpu::convolution: the epilogue returns nothing")

    def __call__(self, stream: int, workspace: int, x: int, w: int, extras: Sequence[int], out: int) -> None:
        self.cudnn.set_stream(self.handle, stream)
        pack = {self.x: x, self.w: w, self.y: out}
        pack.update(zip(self.extras, extras))
        self.graph.execute(pack, workspace, handle=self.handle)

    def run_plan(self, index: int, stream: int, workspace: int, x: int, w: int, extras: Sequence[int], out: int):
        self.cudnn.set_stream(self.handle, stream)
        pack = {self.x: x, self.w: w, self.y: out}
        pack.update(zip(self.extras, extras))
        self.graph.execute_plan_at_index(pack, workspace, index=index, handle=self.handle)

    def plan_workspace(self, index: int) -> int:
        return int(self.graph.get_workspace_size_plan_at_index(index))


@functools.cache
def create_handle() -> object:
    return _cudnn().create_handle()


@functools.cache
def available() -> bool:
    try:
        import cudnn  # noqa: F401
    except ImportError:
        return False
    return True


_PLANS: dict[tuple, ConvPlan] = {}


def epilogue_key(module: Module | None) -> str:
    """The plan cache's key for an epilogue module: its fingerprint (every instruction counts)."""
    return "" if module is None else module_fingerprint(module)


def plan_for(
    op: Operation,
    x: Shape,
    w: Shape,
    out: Shape,
    extras: tuple[Shape, ...] = (),
    epilogue: Module | None = None,
    conv_arg: int = 0,
    plan_index: int = -1,
    all_plans: bool = False,
    tf32: bool = False,
) -> ConvPlan:
    """The plan for one problem, built once per process (the lowering's support check builds the
    plan the runtime then uses)."""
    key = (op.text, x, w, out, extras, epilogue_key(epilogue), conv_arg, plan_index, all_plans, tf32)
    if key not in _PLANS:
        _PLANS[key] = ConvPlan(create_handle(), op, x, w, out, extras, epilogue, conv_arg, plan_index, all_plans, tf32)
    return _PLANS[key]


class AttentionPlan:
    """softmax(scale * Q @ K^T) @ V as one cuDNN SDPA graph (inference: no statistics); tensors
    keep their strides, so Q, K and V are read where the qkv product left them."""

    def __init__(self, handle: object, q: Shape, k_t: Shape, v: Shape, out: Shape, scale: float):
        cudnn = _cudnn()
        self.cudnn, self.handle = cudnn, handle
        if q.dtype not in (DType.half, DType.bf16) or any(t.dtype != q.dtype for t in (k_t, v, out)):
            raise MgxError("gpu::attention: cuDNN's fused attention takes half or bf16")
        if q.ndim != 4:
            raise MgxError("gpu::attention: cuDNN's fused attention takes (batch, heads, sequence, head) tensors")
        io = getattr(cudnn.data_type, IO_TYPES[q.dtype])
        f32 = cudnn.data_type.FLOAT
        graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=f32, compute_data_type=f32, handle=handle)
        k_lens = [*k_t.lens[:-2], k_t.lens[-1], k_t.lens[-2]]
        k_strides = [*k_t.strides[:-2], k_t.strides[-1], k_t.strides[-2]]
        self.q = graph.tensor(name="q", dim=list(q.lens), stride=list(q.strides), data_type=io)
        self.k = graph.tensor(name="k", dim=k_lens, stride=k_strides, data_type=io)
        self.v = graph.tensor(name="v", dim=list(v.lens), stride=list(v.strides), data_type=io)
        result = graph.sdpa(name="sdpa", q=self.q, k=self.k, v=self.v, is_inference=True, attn_scale=scale)
        o = result[0] if isinstance(result, (tuple, list)) else result
        o.set_output(True).set_dim(list(out.lens)).set_stride(list(out.strides)).set_data_type(io)
        self.o = o
        self.graph = graph
        _build_plans(cudnn, graph, f"gpu::attention: cuDNN cannot run {q.lens} x {k_lens}")
        self.workspace_bytes = int(graph.get_workspace_size())

    def __call__(self, stream: int, workspace: int, q: int, k_t: int, v: int, out: int) -> None:
        self.cudnn.set_stream(self.handle, stream)
        self.graph.execute({self.q: q, self.k: k_t, self.v: v, self.o: out}, workspace, handle=self.handle)


_ATTENTION_PLANS: dict[tuple, AttentionPlan] = {}


def attention_plan_for(q: Shape, k_t: Shape, v: Shape, out: Shape, scale: float) -> AttentionPlan:
    key = (q, k_t, v, out, scale)
    if key not in _ATTENTION_PLANS:
        _ATTENTION_PLANS[key] = AttentionPlan(create_handle(), q, k_t, v, out, scale)
    return _ATTENTION_PLANS[key]
