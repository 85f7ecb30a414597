"""`fused_reduce` bodies the reduce kernels (kernels.reduce_kernel) do not take as they come:

- an input of the reduced shape (a row value: layernorm's mean fed into the variance's module, as
  mgxir's fuse_reduce passes it) is read as a broadcast of the full rows (stride 0 along the reduced
  axes), so every input shares the reduction's axes, as MIGraphX's fused_reduce requires of its
  inputs; a broadcast in the body of what is computed from such inputs alone (attention's mask
  from the past sequence lengths) is then the identity and is bypassed;
- a body that is one argmax or argmin of its input (ONNX ArgMax/ArgMin, Hardmax) is an index
  reduction: one thread per output element walks its row in order, keeping the first extreme
  (the last with select_last_index), a NaN winning as in numpy's argmax, which the reference uses.
"""

from __future__ import annotations

from collections.abc import Sequence

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.targets.gpu.data_kernels import coordinates, offset_at
from mgxir.targets.gpu.kernels import Kernel, Tensor, Unsupported, compute_type, indexed_kernel, reduce_kernel

ARG_REDUCTIONS = {"argmax": ">", "argmin": "<"}  # operator -> how a new value beats the best so far
_ROW_BROADCASTS = ("multibroadcast", "broadcast")  # views a body broadcasts a row value with


def fused_reduce_kernel(module: Module, axes: Sequence[int], inputs: Sequence[Tensor], output: Tensor) -> Kernel:
    arg = _arg_reduction(module)
    if arg is not None:
        name, axis, last = arg
        return arg_reduce_kernel(inputs[0], axis % len(output.lens), ARG_REDUCTIONS[name], last, output)
    widened = broadcast_to_rows(inputs, axes)
    params = sorted((i for i in module if i.is_param), key=lambda p: p.param_name)
    rows = {p.param_name for p, before, after in zip(params, inputs, widened) if before is not after}
    if rows:
        module = row_broadcasts_bypassed(module, rows)
    return reduce_kernel(module, axes, widened, output)


def broadcast_to_rows(inputs: Sequence[Tensor], axes: Sequence[int]) -> list[Tensor]:
    """Each input of the reduced shape read as the full rows (stride 0 along the reduced axes)."""
    rank = len(inputs[0].lens)
    full = tuple(max(t.lens[d] for t in inputs) for d in range(rank))
    reduced = {a % rank for a in axes}
    widened = []
    for t in inputs:
        if t.lens == full:
            widened.append(t)
            continue
        if any(n != m and (n != 1 or d not in reduced) for d, (n, m) in enumerate(zip(t.lens, full))):
            raise Unsupported("fused_reduce inputs and output must share their axes")
        strides = tuple(0 if n != m else s for n, m, s in zip(t.lens, full, t.strides))
        widened.append(Tensor(t.dtype, full, strides, t.aligned))
    return widened


def row_broadcasts_bypassed(module: Module, rows: set[str]) -> Module:
    """A copy of `module` for the kernel generator in which a broadcast of a value computed from
    the row inputs `rows` (with literals and reductions: anything of the reduced shape) reads that
    value: once those inputs are read as whole rows (broadcast_to_rows), the value is the same at
    every element of the row, so the broadcast is the identity element by element (and the kernels
    take no broadcast of a value that varies along the row). Shapes are kept as they were: the
    generator emits scalar code."""
    copy = Module(module.name)
    mapped: dict[Instruction, Instruction] = {}
    from_rows: set[Instruction] = set()
    for ins in module:
        if ins.is_param:
            mapped[ins] = copy.add_parameter(ins.param_name, ins.shape)
            if ins.param_name in rows:
                from_rows.add(mapped[ins])
        elif ins.is_literal:
            mapped[ins] = copy.add_literal(ins.literal)
        elif ins.is_return:
            copy.add_return([mapped[a] for a in ins.args])
        else:
            args = [mapped[a] for a in ins.args]
            if ins.op.defn.name in _ROW_BROADCASTS and args[0] in from_rows:
                mapped[ins] = args[0]
                continue
            new = copy.insert(None, ins.op, args, ins.module_args, shape=ins.shape)
            mapped[ins] = new
            if ins.op.defn.name == "pointwise" and any(a in from_rows for a in args):
                from_rows.add(new)  # of the reduced shape, as its other operands: one value per row
    return copy


def _arg_reduction(module: Module) -> tuple[str, int, bool] | None:
    """(operator, axis, select_last_index) where the module returns one argmax/argmin of its one
    parameter; else None."""
    body = [i for i in module if not (i.is_param or i.is_return)]
    params = [i for i in module if i.is_param]
    ret = module.return_instruction
    if len(body) != 1 or len(params) != 1 or ret is None or list(ret.args) != body:
        return None
    ins = body[0]
    if ins.op.defn.name not in ARG_REDUCTIONS or list(ins.args) != params:
        return None
    return ins.op.defn.name, ins.op["axis"], bool(ins.op["select_last_index"])


def arg_reduce_kernel(source: Tensor, axis: int, beats: str, last: bool, output: Tensor) -> Kernel:
    """The index along `axis` of the row's extreme: the first (from the end with `last`) that
    beats every other, a NaN beating any number (numpy's argmax and argmin stop at the first)."""
    n = source.lens[axis]
    ct = compute_type(source.dtype)
    coords = coordinates(len(output.lens))
    row = [*coords[:axis], "j", *coords[axis + 1 :]]
    start, step = (f"{n - 1}LL", "--j") if last else ("0LL", "++j")
    stop = "j >= 0" if last else f"j < {n}LL"
    body = [
        f"  long long j = {start};",
        "  long long found = j;",
        f"  {ct} best = mgx_load(x0 + {offset_at(source, row)});",
        f"  for ({step}; {stop}; {step}) {{",
        "    if (best != best) break;",
        f"    const {ct} v = mgx_load(x0 + {offset_at(source, row)});",
        f"    if (v != v || v {beats} best) {{ best = v; found = j; }}",
        "  }",
    ]
    return indexed_kernel("arg_reduce_kernel", [source], output, body, "found")
