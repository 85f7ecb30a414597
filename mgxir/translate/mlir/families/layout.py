"""Views and data movement: the values of MIGraphX's views (broadcast, transpose, slice, reshape)
are tensors, so a view lowers to the op that produces its value; a layout-only op lowers to nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iree.compiler import ir
from iree.compiler.dialects import arith, cf, linalg, tensor, tosa

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.shape import DynamicDimension
from mgxir.translate.mlir.emitter import PARALLEL, TOSA_FLOATS, TOSA_INTS
from mgxir.translate.mlir.families.indexed import IndexMath, Size, indexed
from mgxir.translate.mlir.registry import lowers, sizes
from mgxir.translate.mlir.scalar import CannotLower

if TYPE_CHECKING:
    from mgxir.translate.mlir.lower import Lowering

Values = list[ir.Value]


@lowers("contiguous", "identity", "layout", to="nothing: a tensor has no layout (the argument's value)", dynamic=True)
def _same_value(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    return args[0]


@lowers(
    "reshape",
    "reshape_lazy",
    "squeeze",
    "unsqueeze",
    "flatten",
    to="tensor.collapse_shape + tensor.expand_shape; dynamic: squeeze/unsqueeze move unit dimensions "
    "(collapse/expand_shape), reshape's two-input form is tensor.reshape to the second input's sizes",
    dynamic=True,
)
def _reshape(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    e = lowering.emitter
    source = ins.args[0].shape
    dynamic = source.is_dynamic or ins.shape.is_dynamic
    if len(args) == 2 and ins.op.name == "reshape":  # shaped like the second input
        if not dynamic:
            return e.reshape(args[0], source.lens, ins.shape.lens)
        dims = [n if isinstance(n, ir.Value) else e.index(n) for n in e.dims(args[1])]
        shape = tensor.from_elements(ir.RankedTensorType.get([len(dims)], lowering.types.index), dims)
        return tensor.reshape(lowering.types.of_shape(ins.shape), args[0], shape)
    if len(args) != 1:
        raise CannotLower("the variable-input form has no lowering")
    if not dynamic:
        if source.scalar and not ins.shape.scalar and source.lens == ins.shape.lens:
            # the same tensor type, but no longer MIGraphX's scalar {1}, {0} (a gather index keeps its
            # axis after it): a cast of its own keeps the instruction, which the read-back rebuilds
            return tensor.cast(lowering.types.of_shape(ins.shape), args[0])
        return e.reshape(args[0], source.lens, ins.shape.lens)
    if ins.op.name not in ("squeeze", "unsqueeze"):
        raise CannotLower("a dynamic input has no lowering in the one-input form (MIGraphX takes the two-input form)")
    in_sizes, out_sizes = sizes(source), sizes(ins.shape)
    if ins.op.name == "squeeze":
        axes = _normalized(ins.op["axes"], len(in_sizes)) or [i for i, n in enumerate(in_sizes) if n == 1]
        return e.collapse(args[0], in_sizes, [i for i in range(len(in_sizes)) if i not in axes])
    axes = _normalized(ins.op["axes"], len(out_sizes))
    return e.expand_units(args[0], out_sizes, [i for i in range(len(out_sizes)) if i not in axes])


def _normalized(axes: list[int], rank: int) -> list[int]:
    return [a + rank if a < 0 else a for a in axes]


@lowers("transpose", to="tosa.transpose (linalg.transpose for types tosa lacks and dynamic dimensions)", dynamic=True)
def _transpose(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    perm = ins.op["permutation"]
    if list(perm) == list(range(len(perm))):
        return args[0]
    if ins.shape.is_dynamic:
        e = lowering.emitter
        dims = e.dims(args[0])
        init = e.empty(ins.shape.dtype, [dims[p] for p in perm])
        return linalg.transpose(args[0], outs=[init], permutation=list(perm)).results[0]
    return lowering.emitter.transpose(args[0], ins.shape.dtype, ins.args[0].shape.lens, perm)


@lowers(
    "multibroadcast",
    to="tensor.collapse_shape + linalg.broadcast (dynamic: sizes broadcast at run time, MIGraphX's "
    "compute_broadcasted_lens, with cf.assert where they do not; a dimension that may be 1 at run time "
    "is read at select(size == 1, 0, i) by a linalg.generic)",
    dynamic=True,
)
def _multibroadcast(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    offset = ins.shape.ndim - source.ndim
    placement = [offset + i for i in range(source.ndim)]
    if not ins.shape.is_dynamic:
        return lowering.emitter.broadcast(args[0], source.dtype, source.lens, ins.shape.lens, placement)
    if len(args) == 1:
        raise CannotLower("a dynamic output needs the two-input form")
    e = lowering.emitter
    checks = RunTimeChecks(lowering, ins.op.name)
    inputs = [e.dims(v) for v in args]
    out_dims = checks.broadcast_sizes(inputs, ins.shape.ndim)
    return broadcast_at_run_time(lowering, ins, args[0], inputs[0], out_dims, placement, None)


@lowers(
    "broadcast",
    to="tensor.collapse_shape + linalg.broadcast (dynamic: the second input's sizes, tensor.dim; an input "
    "dimension that may be 1 at run time is read at select(size == 1, 0, i) by a linalg.generic)",
    dynamic=True,
)
def _broadcast(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    source = ins.args[0].shape
    axis = ins.op["axis"]
    placement = [axis + i for i in range(source.ndim)]
    if not ins.shape.is_dynamic and not source.is_dynamic:
        return lowering.emitter.broadcast(args[0], source.dtype, source.lens, ins.shape.lens, placement)
    if len(args) != 2:
        raise CannotLower("a dynamic output needs the two-input form")
    e = lowering.emitter
    checks = RunTimeChecks(lowering, ins.op.name)
    return broadcast_at_run_time(lowering, ins, args[0], e.dims(args[0]), e.dims(args[1]), placement, checks)


@lowers(
    "broadcast_with_dims",
    to="sizes broadcast at run time (the input's tensor.dim with the dims input's values, tensor.extract; "
    "cf.assert where they do not), then as multibroadcast; tensor.cast to the result's `?` type",
    dynamic=True,
)
def _broadcast_with_dims(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    e = lowering.emitter
    source, dims_shape = ins.args[0].shape, ins.args[1].shape
    if not dims_shape.dtype.is_integral:
        raise CannotLower("the dims input must hold integers")
    count = dims_shape.elements
    flat = e.reshape(args[1], dims_shape.lens, [count])
    wanted: list[Size] = [
        arith.index_cast(lowering.types.index, tensor.extract(flat, [e.index(i)])) for i in range(count)
    ]
    rank = ins.shape.ndim
    checks = RunTimeChecks(lowering, ins.op.name)
    in_dims = e.dims(args[0])
    out_dims = checks.broadcast_sizes([in_dims, wanted], rank)
    placement = [rank - source.ndim + i for i in range(source.ndim)]
    return broadcast_at_run_time(lowering, ins, args[0], in_dims, out_dims, placement, None)


class RunTimeChecks:
    """Sizes that only the run decides, and the `cf.assert`s that fail the run where they do not fit
    (MIGraphX's run-time shape computation throws there; the reference interpreter's numpy raises)."""

    def __init__(self, lowering: Lowering, name: str) -> None:
        self.lowering = lowering
        self.name = name
        self.x = IndexMath(lowering)

    def require(self, flag: ir.Value, why: str) -> None:
        cf.AssertOp(flag, f"{self.name}: {why}")

    def broadcast_sizes(self, inputs: list[list[Size]], rank: int) -> list[Size]:
        """The output sizes of inputs broadcast together (right-aligned, numpy's and MIGraphX's
        compute_broadcasted_lens): per dimension the size that is not 1; sizes known only at run time
        are chosen there (`select(a == 1, b, a)`) and checked to be 1 or equal."""
        out: list[Size] = []
        for d in range(rank):
            current: Size = 1
            for dims in inputs:
                shift = rank - len(dims)
                if d >= shift:
                    current = self._combine(current, dims[d - shift], d)
            out.append(current)
        return out

    def _combine(self, a: Size, b: Size, d: int) -> Size:
        x = self.x
        if isinstance(a, int) and isinstance(b, int):
            return b if a == 1 else a
        if isinstance(a, int) or isinstance(b, int):
            known, other = (a, b) if isinstance(a, int) else (b, a)
            assert isinstance(known, int) and not isinstance(other, int)
            if known == 1:
                return other
            self.fits(other, known, d)
            return known
        if a == b:
            return a
        one = x.eq(a, 1)
        self.require(arith.ori(arith.ori(one, x.eq(b, 1)), x.eq(a, b)), f"dimension {d} does not broadcast at run time")
        return x.select(one, b, a)

    def fits(self, size: ir.Value, out: Size, d: int) -> None:
        """`size` is 1 or `out` at run time."""
        x = self.x
        self.require(arith.ori(x.eq(size, 1), x.eq(size, out)), f"dimension {d} does not broadcast at run time")


def broadcast_at_run_time(
    lowering: Lowering,
    ins: Instruction,
    value: ir.Value,
    in_dims: list[Size],
    out_dims: list[Size],
    placement: list[int],
    checks: RunTimeChecks | None,
) -> ir.Value:
    """The first input of `ins` (of sizes `in_dims`) broadcast to `out_dims` (input dimension i lands
    on output dimension placement[i]). A size-1 dimension broadcasts: one known at translation time
    through `linalg.broadcast`, one that may be 1 only at run time through a `linalg.generic` reading
    index `select(size == 1, 0, i)` (the dialects need to know which dimensions broadcast when the op
    is built). `checks` asserts that each run-time size is 1 or its output's (None where
    `broadcast_sizes` made `out_dims` from these sizes, which checked it). The result is cast to the
    instruction's type."""
    e, x = lowering.emitter, IndexMath(lowering)
    source = ins.args[0].shape
    t = source.dtype
    ranges = source.dyn_dims if source.is_dynamic else [DynamicDimension(n, n) for n in source.lens]
    reads: list[str] = []  # per input dimension: keep, broadcast or choose (at run time)
    for i, (n, r) in enumerate(zip(in_dims, ranges)):
        out = out_dims[placement[i]]
        if isinstance(n, int):
            reads.append("broadcast" if n == 1 and not (isinstance(out, int) and out == 1) else "keep")
        elif not isinstance(out, int) and out == n:
            reads.append("keep")
        else:
            if checks is not None:
                checks.fits(n, out, placement[i])
            reads.append("choose" if r.min <= 1 and not (isinstance(out, int) and out == 1) else "keep")
    if "choose" not in reads:
        kept = [i for i, how in enumerate(reads) if how == "keep"]
        result = value
        if len(kept) != len(in_dims) or len(in_dims) != len(out_dims):
            collapsed = e.collapse(value, sizes(source), kept)
            landed = {placement[i] for i in kept}
            added = [d for d in range(len(out_dims)) if d not in landed]
            result = linalg.broadcast(collapsed, outs=[e.empty(t, out_dims)], dimensions=added).results[0]
    else:
        ones = [x.eq(n, 1) if how == "choose" else None for n, how in zip(in_dims, reads)]

        def body(coords: Values, scalars: Values) -> Values:
            at: Values = []
            for i, how in enumerate(reads):
                c = coords[placement[i]]
                if how == "broadcast":
                    at.append(x.const(0))
                elif how == "keep":
                    at.append(c)
                else:
                    at.append(x.select(ones[i], 0, c))
            return [tensor.extract(value, at)]

        result = indexed(lowering, t, out_dims, body)
    wanted = lowering.types.of_shape(ins.shape)
    return result if result.type == wanted else tensor.cast(wanted, result)


@lowers("slice", to="tensor.extract_slice (dynamic dimensions: of their tensor.dim size)", dynamic=True)
def _slice(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    if len(args) != 1:
        raise CannotLower("the variable-input form has no lowering")
    source_sizes = sizes(ins.args[0].shape)
    out_sizes = sizes(ins.shape)
    rank = len(source_sizes)
    offsets = [0] * rank
    for axis, start in zip(ins.op["axes"], ins.op["starts"]):
        axis = axis + rank if axis < 0 else axis
        n = source_sizes[axis]
        assert n is not None  # MIGraphX slices only fixed dimensions of a dynamic shape
        offsets[axis] = max(0, min(n, start + n if start < 0 else start))
    if out_sizes == source_sizes:
        return args[0]
    offsets = [o if n else 0 for o, n in zip(offsets, out_sizes)]  # an empty slice may start at the end
    e = lowering.emitter
    dims = e.dims(args[0])
    lens = [dims[d] if n is None else n for d, n in enumerate(out_sizes)]
    return e.extract_slice(args[0], lowering.types.of_shape(ins.shape), offsets, lens, [1] * rank)


@lowers("concat", to="tensor.concat", dynamic=True)
def _concat(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    if len(args) == 1:
        return args[0]
    axis = ins.op["axis"]
    axis = axis + ins.shape.ndim if axis < 0 else axis
    return tensor.concat(lowering.types.of_shape(ins.shape), axis, args)


@lowers("reverse", to="tosa.reverse, one per axis (types tosa lacks: linalg.generic reading n - 1 - i)")
def _reverse(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    t = ins.shape.dtype
    rank = ins.shape.ndim
    axes = {axis + rank if axis < 0 else axis for axis in ins.op["axes"]}
    if t not in TOSA_FLOATS | TOSA_INTS | {DType.bool}:
        x = IndexMath(lowering)
        lens = ins.shape.lens

        def body(coords: Values, scalars: Values) -> Values:
            at = [x.sub(x.const(n - 1), c) if d in axes else c for d, (c, n) in enumerate(zip(coords, lens))]
            return [tensor.extract(args[0], at)]

        return indexed(lowering, t, lens, body)
    result = lowering.types.of_shape(ins.shape)
    value = args[0]
    rank = ins.shape.ndim
    for axis in ins.op["axes"]:
        value = tosa.reverse(result, value, axis + rank if axis < 0 else axis)
    return value


@lowers(
    "pad",
    to="tensor.pad with a constant (constant mode, padding >= 0); reflect, edge and negative padding: "
    "linalg.generic reading each output element's source position (tensor.extract)",
    dynamic=True,
)
def _pad(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    pads = ins.op["pads"]
    rank = ins.shape.ndim
    t = ins.shape.dtype
    mode = ins.op["mode"]
    low, high = list(pads[:rank]), list(pads[rank:])
    if mode == 0 and all(p >= 0 for p in pads):
        return pad_constant(lowering, args[0], t, low, high, ins.op["value"])
    e, x = lowering.emitter, IndexMath(lowering)
    dims = e.dims(args[0])
    out_dims = [n + a + b if isinstance(n, int) else x.add(n, a + b) for n, a, b in zip(dims, low, high)]

    def body(coords: Values, scalars: Values) -> Values:
        at: Values = []
        inside = []
        for c, a, b, n in zip(coords, low, high, dims):
            i = x.sub(c, a) if a else c
            static = isinstance(n, int)
            size = x.const(n) if static else n
            last = x.const(n - 1) if static else x.sub(n, 1)
            if mode == 1:  # reflect (numpy's, without the edge): period 2 (n - 1); a size-1 axis repeats
                period = x.const(max(2 * (n - 1), 1)) if static else x.max(x.mul(last, 2), 1)
                j = arith.remsi(arith.addi(arith.remsi(i, period), period), period)
                at.append(x.select(x.lt(j, size), j, x.sub(period, j)))
                continue
            if mode == 0:  # constant: the value outside the input
                if a > 0:
                    inside.append(x.le(x.const(0), i))
                if b > 0:
                    inside.append(x.lt(i, size))
            at.append(x.max(x.min(i, last), 0))  # edge: the nearest element
        value = tensor.extract(args[0], at)
        flag = x.all(inside)
        return [value if flag is None else arith.select(flag, value, e.scalar_constant(ins.op["value"], t))]

    return indexed(lowering, t, out_dims, body)


def pad_constant(
    lowering: Lowering, value: ir.Value, t: DType, low: list[int], high: list[int | ir.Value], fill: float
) -> ir.Value:
    """`tensor.pad` of `value` with `fill`; a high padding may be an index value (known at run time)."""
    if not any(low) and all(isinstance(b, int) and b == 0 for b in high):
        return value
    source = ir.RankedTensorType(value.type)
    dynamic = ir.ShapedType.get_dynamic_size()
    lens = [
        dynamic if n == dynamic or not isinstance(b, int) else n + a + b for n, a, b in zip(source.shape, low, high)
    ]
    high_values = [b for b in high if not isinstance(b, int)]
    static_high = [b if isinstance(b, int) else dynamic for b in high]
    op = tensor.PadOp(lowering.types.tensor(t, lens), value, [], high_values, list(low), static_high)
    block = op.regions[0].blocks.append(*[lowering.types.index] * len(lens))
    with ir.InsertionPoint(block):
        tensor.YieldOp(lowering.emitter.scalar_constant(fill, t))
    return op.result


@lowers("gather", to="linalg.generic reading the data with tensor.extract", dynamic=True)
def _gather(lowering: Lowering, ins: Instruction, args: Values) -> ir.Value:
    data_shape, index_shape = ins.args[0].shape, ins.args[1].shape
    data, indices = args
    axis = ins.op["axis"]
    axis = axis + data_shape.ndim if axis < 0 else axis
    scalar_index = not index_shape.is_dynamic and index_shape.scalar and index_shape.lens == (1,)
    index_rank = 0 if scalar_index else index_shape.ndim
    rank = ins.shape.ndim
    logical = data_shape.ndim - 1 + index_rank  # rank of the result before MIGraphX's {1} for a scalar
    e = lowering.emitter
    data_dims, index_dims = e.dims(data), e.dims(indices)
    if scalar_index:
        index_input = (e.collapse(indices, index_shape.lens, []), ir.AffineMapAttr.get(ir.AffineMap.get(rank, 0, [])))
        out_dims = [*data_dims[:axis], *data_dims[axis + 1 :]] or [1]
    else:
        index_input = (indices, e.projection(rank, range(axis, axis + index_rank)))
        out_dims = [*data_dims[:axis], *index_dims, *data_dims[axis + 1 :]]
    init = e.empty(ins.shape.dtype, out_dims)
    n = data_dims[axis]
    index_t = lowering.types.index
    index_dtype = index_shape.dtype

    def body(scalars: Values) -> Values:
        position = scalars[0]
        if not index_dtype.is_integral:
            raise CannotLower("gather indices must be integers")
        position = arith.index_cast(index_t, position)
        bound = e.index(n) if isinstance(n, int) else n
        negative = arith.cmpi(arith.CmpIPredicate.slt, position, e.index(0))
        position = arith.select(negative, arith.addi(position, bound), position)
        coords: Values = []
        for d in range(data_shape.ndim):
            if d < axis:
                coords.append(linalg.IndexOp(d).result if logical else e.index(0))
            elif d == axis:
                coords.append(position)
            else:
                coords.append(linalg.IndexOp(d - 1 + index_rank).result if logical else e.index(0))
        return [tensor.extract(data, coords)]

    return e.generic([index_input], [(init, e.identity_map(rank))], [PARALLEL] * rank, body)[0]
