"""ONNX operators that make or rearrange tensors: constants, shapes, reshapes, slices, splits."""

from __future__ import annotations

import math

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.shape import Shape
from mgxir.translate.onnx.importer import (
    NodeInfo,
    OnnxParser,
    ParseError,
    broadcast_lens,
    check_literal_size,
    onnx_type,
)
from mgxir.translate.onnx.parsers.elementwise import loaded_op
from mgxir.translate.onnx.registry import onnx_op

Args = list[Instruction]
INT_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def constant_values(info: NodeInfo, ins: Instruction, message: str) -> list[int]:
    """The constant value of an input as integers, or MIGraphX's check_arg_empty error."""
    value = info.eval(ins)
    if value is None:
        raise ParseError(message)
    return [int(v) for v in np.asarray(value).reshape(-1)]


def tune_axis(rank: int, axis: int, op_name: str) -> int:
    if axis < -rank or axis >= rank:
        raise ParseError(f"{op_name.upper()}: axis is out of range.")
    return axis + rank if axis < 0 else axis


@onnx_op("Constant")
def parse_constant(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    present = [a for a in ("value", "value_float", "value_floats", "value_int", "value_ints") if info.has(a)]
    if not present:
        raise ParseError("Constant node does not contain any supported attribute")
    if len(present) > 1:
        raise ParseError("Constant contains multiple attributes: " + ", ".join(present))
    attr = info.attributes[present[0]]
    if attr.type == 4:  # TENSOR
        lit = parser.parse_tensor(attr.t)
        if lit.shape.elements == 0:
            return info.module.add_literal(Literal(Shape.make(lit.shape.dtype, ()), np.zeros(0, lit.shape.dtype.numpy)))
        if len(attr.t.dims) == 0:
            return info.module.add_literal(Literal(Shape.scalar_of(lit.shape.dtype), lit.data))
        return info.module.add_literal(lit)
    value = parser.parse_value(attr)
    if value is None:
        raise ParseError(f"Constant attribute '{present[0]}' has the wrong type")
    dtype = DType.from_numpy(value.dtype)
    if value.size == 0:
        return info.module.add_literal(Literal(Shape.make(dtype, ()), np.zeros(0, dtype.numpy)))
    if attr.type in (1, 2):
        return info.add_literal(value, dtype, [1])
    return info.add_literal(value, dtype, [value.size])


@onnx_op("ConstantOfShape")
def parse_constant_of_shape(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if info.has("value"):
        value = info.value("value")
        if value is None or value.size != 1:
            raise ParseError("ConstantOfShape: attribute value can contain only 1 elements!")
        dtype = DType.from_numpy(value.dtype)
    else:
        value, dtype = np.zeros(1, np.float32), DType.float
    if not args:
        raise ParseError("ConstantOfShape : must have 1 input!")
    dims = info.eval(args[0])
    if dims is None:
        fill_value = info.module.add_literal(Literal(Shape.scalar_of(dtype), value.reshape(1)))
        alloc = info.add("allocate", args[0], buf_type=dtype)
        return info.add("fill", fill_value, alloc)
    if args[0].shape.elements == 0:
        shape = Shape.scalar_of(dtype)
    else:
        lens = [int(d) for d in np.asarray(dims).reshape(-1)]
        if any(d < 0 for d in lens):
            raise ParseError(f"ConstantOfShape: negative dimensions {lens}")
        shape = Shape.make(dtype, lens)
    if shape.elements == 0:
        return info.add("undefined")
    check_literal_size(shape)
    return info.module.add_literal(Literal(shape, np.full(shape.lens, value.reshape(-1)[0], dtype.numpy)))


@onnx_op("Shape")
def parse_shape(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if len(args) != 1:
        raise ParseError("Shape: operator should have 1 operand")
    shape = args[0].shape
    ndim = shape.ndim

    def normalize(i: int) -> int:
        i = min(max(i, -ndim), ndim)
        return i if i >= 0 else ndim + i

    end = normalize(info.attributes["end"].i) if info.has("end") else ndim
    start = normalize(info.attributes["start"].i) if info.has("start") else 0
    if end <= start:
        raise ParseError(f"PARSE_SHAPE: ending axis <= starting axis, end: {end} start: {start}")
    if shape.is_dynamic:
        return info.add("dimensions_of", args[0], start=start, end=end)
    return info.add_literal(list(shape.lens[start:end]), DType.int64, [end - start])


@onnx_op("Size")
def parse_size(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    return info.add_literal(args[0].shape.elements, DType.int64)


@onnx_op("Reshape")
def parse_reshape(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if len(args) == 1:
        if not info.has("shape"):
            raise ParseError("Reshape: missing the shape attribute")
        return info.add("reshape", args[0], dims=info.attr_ints("shape"))
    dims = info.eval(args[1])
    if dims is None:
        alloc = info.add("allocate", args[1], buf_type=args[0].shape.dtype)
        return info.add("reshape", args[0], alloc)
    return info.add("reshape", args[0], dims=[int(d) for d in np.asarray(dims).reshape(-1)])


@onnx_op("Transpose")
def parse_transpose(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    perm = info.attr_ints("perm", [])
    ndim = args[0].shape.ndim
    if not perm:
        perm = list(range(ndim - 1, -1, -1))
    if len(perm) != ndim:
        raise ParseError("PARSE_TRANSPOSE: perm and input have diffferent number of dims!")
    return info.add("transpose", args[0], permutation=perm)


@onnx_op("Squeeze", "Unsqueeze")
def parse_squeeze(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    name = info.op_type.lower()
    op = loaded_op(name, info)
    if len(args) == 2:
        axes = constant_values(info, args[1], f"PARSE_{name}: cannot handle variable axes!")
        op = op.replace(axes=axes)  # type: ignore[attr-defined]
    return info.add(op, info.make_contiguous(args[0]))  # type: ignore[arg-type]


@onnx_op("Slice")
def parse_slice(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    op_args: list[Instruction] = []
    steps: list[int] = []
    values: dict[str, list[int]] = {"axes": [], "ends": [], "starts": []}

    def take(name: str, ins: Instruction) -> None:
        value = info.eval(ins)
        if value is None:
            op_args.insert(0, ins)
        else:
            values[name] = [int(v) for v in np.asarray(value).reshape(-1)]

    if len(args) == 5:
        steps = constant_values(info, args[4], "PARSE_SLICE: cannot handle variable steps for slice")
    for position, name in ((3, "axes"), (2, "ends"), (1, "starts")):
        if len(args) > position:
            take(name, args[position])
        elif info.has(name):
            values[name] = info.attr_ints(name) or []
    op_args.insert(0, args[0])
    axes, starts, ends = values["axes"], values["starts"], values["ends"]
    if not axes and len(op_args) <= 3:
        axes = list(range(args[0].shape.ndim))
    if any(s != 1 for s in steps):
        if not starts or not ends:
            raise ParseError("PARSE_SLICE: steps and variable starts and/or ends is not supported")
        if not axes:
            raise ParseError("PARSE_SLICE: steps and variable axes is not supported")
    reversed_axes: list[int] = []
    for i, step in enumerate(steps):
        if step >= 0:
            continue
        starts[i] += 1
        if starts[i] == 0:
            starts[i] = INT_MAX
        ends[i] += 1
        reversed_axes.append(axes[i])
        starts[i], ends[i] = ends[i], starts[i]
    ins = info.add("slice", *op_args, axes=axes, starts=starts, ends=ends)
    if reversed_axes:
        ins = info.add("reverse", ins, axes=reversed_axes)
    if any(abs(s) != 1 for s in steps):
        ins = info.add("step", ins, axes=axes, steps=[abs(s) for s in steps])
    return ins


@onnx_op("Expand")
def parse_expand(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    dims = info.eval(args[1])
    if dims is None:
        return info.add("broadcast_with_dims", args[0], args[1])
    if args[0].shape.is_dynamic:
        raise ParseError("PARSE_EXPAND: dynamic input tensor with fixed dims input not supported")
    out_lens = broadcast_lens(args[0].shape.lens, [int(d) for d in np.asarray(dims).reshape(-1)])
    return info.add("multibroadcast", args[0], out_lens=out_lens)


@onnx_op("Tile")
def parse_tile(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    repeats = constant_values(info, args[1], "PARSE_TILE: dynamic shape is not supported")
    lens = args[0].shape.lens
    if len(repeats) != len(lens):
        raise ParseError("tile op-builder: repeats size mismatch with input shape")
    axes = [2 * i for i in range(len(lens))]
    unsqueezed = info.add("unsqueeze", args[0], axes=axes)
    bcast = list(unsqueezed.shape.lens)
    for a in axes:
        bcast[a] = repeats[a // 2]
    mb = info.add("multibroadcast", unsqueezed, out_lens=bcast)
    return info.add("reshape", mb, dims=[bcast[2 * i] * bcast[2 * i + 1] for i in range(len(lens))])


@onnx_op("Split")
def parse_split(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    axis = info.attr_int("axis", 0)
    shape = args[0].shape
    axis = tune_axis(shape.ndim, axis, "Split")
    if shape.is_dynamic and shape.dyn_dims[axis].min != shape.dyn_dims[axis].max:  # type: ignore[index]
        if info.has("split") or len(args) == 2:
            raise ParseError("PARSE_SPLIT: dynamic input and non-fixed split axis and `split` attribute not supported")
        n = info.num_outputs
        dim = info.add("dimensions_of", args[0], start=axis, end=axis + 1)
        n_lit = info.add_literal(n, DType.int64)
        n1_lit = info.add_literal(n - 1, DType.int64)
        chunk = info.add("div", info.add("add", dim, n1_lit), n_lit)
        out = []
        for i in range(n - 1):
            lo = info.add("mul", chunk, info.add_literal(i, DType.int64))
            hi = info.add("mul", chunk, info.add_literal(i + 1, DType.int64))
            out.append(info.add("slice", args[0], lo, hi, axes=[axis]))
        last = info.add("mul", chunk, info.add_literal(n - 1, DType.int64))
        out.append(info.add("slice", args[0], last, axes=[axis], ends=[INT64_MAX]))
        return out
    length = shape.dyn_dims[axis].max if shape.is_dynamic else shape.lens[axis]  # type: ignore[index]
    if info.has("split"):
        splits = info.attr_ints("split") or []
    elif len(args) == 2:
        splits = constant_values(info, args[1], "PARSE_SPLIT: non-constant `split` input is not supported")
    else:
        n = info.num_outputs
        if info.has("num_outputs"):
            n = info.attr_int("num_outputs") or 0
            if n != info.num_outputs:
                raise ParseError(
                    f"PARSE_SPLIT: num_outputs attribute {n} doesn't match actual number of outputs {info.num_outputs}!"
                )
        if n <= 0:
            raise ParseError("PARSE_SPLIT: no outputs")
        if length % n == 0:
            splits = [length // n] * n
        else:
            chunk = length // n + 1
            splits = [chunk] * (n - 1) + [length - chunk * (n - 1)]
    if sum(splits) != length:
        raise ParseError(
            f"PARSE_SPLIT: sum of split attribute unequal to dim size of axis! tuned axis:{length} "
            f"Output {{{', '.join(map(str, splits))}}} Rank {shape.ndim}"
        )
    out, start = [], 0
    for size in splits:
        out.append(info.add("slice", args[0], axes=[axis], starts=[start], ends=[start + size]))
        start += size
    return out


@onnx_op("Range")
def parse_range(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    values = [info.eval(a) for a in args[:3]]
    if any(v is None for v in values):
        return info.add("dynamic_range", *args)
    dtype = args[0].shape.dtype
    start, limit, delta = (np.asarray(v).reshape(-1)[0] for v in values)  # type: ignore[union-attr]
    if not (delta > 0 or delta < 0):
        raise ParseError("PARSE_RANGE: delta must be non-zero")
    count = max(0, math.ceil((float(limit) - float(start)) / float(delta)))
    check_literal_size(Shape.make(dtype, [count]))
    out = np.empty(count, dtype.numpy)
    current = np.asarray(start, dtype.numpy)
    step = np.asarray(delta, dtype.numpy)
    for i in range(count):
        out[i] = current
        current = (current + step).astype(dtype.numpy)
    return info.add_literal(out, dtype, [count])


@onnx_op("EyeLike")
def parse_eyelike(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    lens = args[0].shape.lens
    if len(lens) != 2:
        raise ParseError("EYELIKE: tensor input not of rank 2")
    rows, cols = lens
    dtype = onnx_type(info.attributes["dtype"].i) if info.has("dtype") else args[0].shape.dtype
    k = info.attributes["k"].i if info.has("k") else 0
    if k >= 0 and k >= cols:
        raise ParseError(f"EYELIKE: positive k out of bounds, k = {k} num_cols = {cols}")
    if k < 0 and abs(k) >= rows:
        raise ParseError(f"EYELIKE: negative k out of bounds, k = {k} num_rows = {cols}")
    check_literal_size(Shape.make(dtype, lens))
    return info.add_literal(np.eye(rows, cols, k), dtype, lens)


@onnx_op("Trilu")
def parse_trilu(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    lens = args[0].shape.lens
    rows, cols = lens[-2], lens[-1]
    k = 0
    if len(args) > 1:
        k = constant_values(info, args[1], "PARSE_TRILU: dynamic k not supported")[0]
    upper = bool(info.attributes["upper"].i) if info.has("upper") else True
    mask = np.triu(np.ones((rows, cols), bool), k) if upper else np.tril(np.ones((rows, cols), bool), k)
    lit = info.add_literal(mask, args[0].shape.dtype, [rows, cols])
    return info.add_common_op("mul", lit, args[0])


@onnx_op("ArgMax", "ArgMin")
def parse_arg_op(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    name = info.op_type.lower()
    axis = info.attr_int("axis", 0)
    keep = info.attr_int("keepdims", 1)
    last = bool(info.attr_int("select_last_index", 0))
    ins = info.add(name, *args, axis=axis, select_last_index=last)
    return ins if keep else info.add("squeeze", ins, axes=[axis])


@onnx_op("TopK")
def parse_topk(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    k = 0
    if len(args) == 2:
        k = constant_values(info, args[1], "PARSE_TopK: k input must be constant")[0]
    elif info.has("k"):
        k = info.attributes["k"].i
    largest = bool(info.attributes["largest"].i) if info.has("largest") else True
    axis = info.attr_int("axis", -1)
    topk = info.add("topk", args[0], k=k, axis=axis, largest=largest)
    return [info.add("get_tuple_elem", topk, index=0), info.add("get_tuple_elem", topk, index=1)]


@onnx_op("GatherElements")
def parse_gather_elements(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    axis = info.attr_int("axis", 0)
    data = info.make_contiguous(args[0])
    index = info.make_contiguous(args[1])
    ds, ind = data.shape, index.shape
    if len(ds.lens) != len(ind.lens):
        raise ParseError("PARSE_GATHER_ELEMENTS: input data and index must have the same rank!")
    axis = tune_axis(len(ds.lens), axis, "GatherElements")
    stride = ds.strides[axis]
    data = info.add("reshape", data, dims=[ds.elements])
    multi = np.indices(ind.lens).reshape(len(ind.lens), -1)
    shape_index = (multi * np.asarray(ds.strides).reshape(-1, 1)).sum(axis=0)
    l_shape_idx = info.add_literal(shape_index.astype(np.int32), ind.dtype, ind.lens)
    l_dim_idx = info.add_literal(multi[axis].astype(np.int32), ind.dtype, ind.lens)
    l_stride = info.add_literal([stride], ind.dtype, [1])
    l_stride = info.add("multibroadcast", l_stride, out_lens=ind.lens)
    delta = info.add("mul", info.add("sub", index, l_dim_idx), l_stride)
    return info.add("gather", data, info.add("add", l_shape_idx, delta), axis=0)


@onnx_op("DepthToSpace")
def parse_depthtospace(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    shape = args[0].shape
    mode = info.attr_str("mode", "DCR")
    blocksize = info.attributes["blocksize"].i if info.has("blocksize") else 0
    if blocksize < 1:
        raise ParseError("DepthToSpace: blocksize is less than 1")
    if shape.is_dynamic:
        raise ParseError("DepthToSpace: dynamic input shapes are not translated by mgxir yet")
    lens1, lens2 = list(shape.lens), list(shape.lens)
    divisor = blocksize**2
    if lens2[1] % divisor:
        raise ParseError("DepthToSpace: div by blocksize quotient not int")
    lens2[1] //= divisor
    lens1 += [lens1[2], lens1[3]]
    lens2[2] *= blocksize
    lens2[3] *= blocksize
    lens1[2] = blocksize
    if mode == "DCR":
        lens1[3], lens1[1] = lens1[1] // divisor, blocksize
        perm = [0, 3, 4, 1, 5, 2]
    elif mode == "CRD":
        lens1[1], lens1[3] = lens1[1] // divisor, blocksize
        perm = [0, 1, 4, 2, 5, 3]
    else:
        raise ParseError("DepthToSpace: mode attribute cannot be read.")
    t1 = info.add("reshape", args[0], dims=lens1)
    t2 = info.add("transpose", t1, permutation=perm)
    return info.add("reshape", t2, dims=lens2)


PAD_MODES = {"constant": 0, "reflect": 1, "edge": 2}


@onnx_op("Pad")
def parse_pad(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    if len(args) >= 2:
        pads = constant_values(info, args[1], "PARSE_PAD: `pads` input must be constant")
    elif info.has("pads"):
        pads = info.attr_ints("pads") or []
    else:
        raise ParseError("PARSE_PAD: `pads` must be available")
    if all(p == 0 for p in pads):
        return info.add("identity", args[0])
    mode = info.attr_str("mode", "constant") or "constant"
    if mode in ("reflect", "edge"):
        if args[0].shape.is_dynamic:
            raise ParseError(f"PARSE_PAD: {mode} padding with dynamic shape not supported")
    elif mode != "constant":
        raise ParseError("PARSE_PAD: MIGraphX currently only supports constant, reflect, and edge padding")
    value = 0.0
    if mode == "constant":
        if len(args) >= 3 and args[2].shape.elements >= 1:
            found = info.eval(args[2])
            if found is None:
                raise ParseError("PARSE_PAD: input `value` must be constant")
            if np.asarray(found).size != 1:
                raise ParseError("PARSE_PAD: `value` should contain only one element")
            value = float(np.asarray(found).reshape(-1)[0])
        elif info.has("value"):
            value = info.attr_float("value", 0.0) or 0.0
    position = 4 if mode == "constant" else 3
    rank = args[0].shape.ndim
    if len(args) >= position:
        axes = constant_values(info, args[position - 1], "PARSE_PAD: variable `axes` input not supported")
        if len(axes) * 2 != len(pads):
            raise ParseError("PARSE_PAD: number of elements of pads should be equal to 2 * number of elements of axes")
        full = [0] * (2 * rank)
        for i, axis in enumerate(axes):
            axis = axis + rank if axis < 0 else axis
            full[axis], full[axis + rank] = pads[i], pads[i + len(axes)]
        pads = full
    if len(pads) != 2 * rank:
        raise ParseError("PARSE_PAD: number of elements of pads should be equal to 2 * input rank")
    return info.add("pad", args[0], pads=pads, value=value, mode=PAD_MODES[mode])


@onnx_op("SpaceToDepth")
def parse_spacetodepth(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    lens = args[0].shape.lens
    blocksize = info.attributes["blocksize"].i if info.has("blocksize") else 1
    if blocksize < 1:
        raise ParseError("SpaceToDepth: blocksize is less than 1")
    if len(lens) != 4:
        raise ParseError("SpaceToDepth: the input must have rank 4")
    if lens[2] % blocksize or lens[3] % blocksize:
        raise ParseError("SpaceToDepth: div by blocksize quotient not int ")
    n, c, h, w = lens
    trans = [n, c, h // blocksize, blocksize, w // blocksize, blocksize]
    out = [n, c * blocksize * blocksize, h // blocksize, w // blocksize]
    t1 = info.add("reshape", args[0], dims=trans)
    t2 = info.add("transpose", t1, permutation=[0, 3, 5, 1, 2, 4])
    return info.add("reshape", t2, dims=out)


REDUCTIONS = ("none", "add", "mul", "min", "max")


@onnx_op("ScatterElements", "Scatter")
def parse_scatter(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    axis = info.attributes["axis"].i if info.has("axis") else 0
    reduction = info.attr_str("reduction", "none")
    if reduction not in REDUCTIONS:
        raise ParseError(f"PARSE_SCATTER: unsupported reduction mode {reduction}")
    return info.add(f"scatter_{reduction}", *args, axis=axis)


@onnx_op("ScatterND")
def parse_scatternd(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    reduction = info.attr_str("reduction", "none")
    if reduction not in REDUCTIONS:
        raise ParseError(f"PARSE_SCATTERND: unsupported reduction mode {reduction}")
    return info.add(f"scatternd_{reduction}", *args)


@onnx_op("NonZero")
def parse_nonzero(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    data = info.eval(args[-1])
    if data is None:
        return info.add("nonzero", *args)
    lens = args[0].shape.lens
    found = np.nonzero(np.asarray(data).reshape(lens))
    out = np.stack(found) if found else np.zeros((len(lens), 0), np.int64)
    return info.add_literal(out, DType.int64, [len(lens), out.shape[1] if out.ndim == 2 else 0])


@onnx_op("OneHot")
def parse_onehot(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    axis = info.attributes["axis"].i if info.has("axis") else -1
    depth = info.eval(args[1])
    if depth is None:
        return info.add("onehot", *args, axis=axis)
    return info.add("onehot", args[0], args[2], axis=axis, depth=int(np.asarray(depth).reshape(-1)[0]))


# w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N the size (periodic) or the size - 1
_COSINE_WINDOWS = {
    "HannWindow": (0.5, 0.5, 0.0),
    "HammingWindow": (25 / 46, 21 / 46, 0.0),
    "BlackmanWindow": (0.42, 0.5, 0.08),
}


@onnx_op(*_COSINE_WINDOWS)
def parse_cosine_window(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """mgxir's additions (MIGraphX has no parsers for them): the window as a literal of its size."""
    (size,) = constant_values(info, args[0], f"{info.op_type}: `size` input must be constant")
    if size < 0:
        raise ParseError(f"{info.op_type}: size {size} is negative")
    check_literal_size(Shape.make(DType.double, [size]))
    a0, a1, a2 = _COSINE_WINDOWS[info.op_type]
    period = size if info.attr_int("periodic", 1) else size - 1
    with np.errstate(all="ignore"):  # a symmetric window of one: 0 / 0, NaN as in ONNX's reference
        phase = 2 * np.pi * np.arange(size) / period
    window = a0 - a1 * np.cos(phase) + a2 * np.cos(2 * phase)
    dtype = onnx_type(info.attr_int("output_datatype", 1))
    return info.add_literal(window.astype(dtype.numpy), dtype, [size])


@onnx_op("CenterCropPad")
def parse_center_crop_pad(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """mgxir's addition (MIGraphX has no parser for it): each axis is cropped about its centre
    (a slice) or padded with zeros about it (a pad); the odd element goes to the end."""
    x = args[0]
    if x.shape.is_dynamic:
        raise ParseError("CenterCropPad: dynamic input shapes are not supported")
    target = constant_values(info, args[1], "CenterCropPad: `shape` input must be constant")
    rank = x.shape.ndim
    axes = [tune_axis(rank, a, "CenterCropPad") for a in info.attr_ints("axes", list(range(rank)))]
    if len(target) != len(axes) or any(n < 0 for n in target):
        raise ParseError(f"CenterCropPad: sizes {target} for {len(axes)} axes")
    crop_axes, starts, ends = [], [], []
    pads = [0] * (2 * rank)
    for axis, size in zip(axes, target):
        dim = x.shape.lens[axis]
        if size < dim:
            crop_axes.append(axis)
            starts.append((dim - size) // 2)
            ends.append((dim - size) // 2 + size)
        elif size > dim:
            pads[axis] = (size - dim) // 2
            pads[rank + axis] = size - dim - pads[axis]
    if crop_axes:
        x = info.add("slice", x, axes=crop_axes, starts=starts, ends=ends)
    if any(pads):
        x = info.add("pad", x, pads=pads)
    return x if crop_axes or any(pads) else info.add("identity", x)


@onnx_op("AffineGrid")
def parse_affine_grid(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """mgxir's addition (MIGraphX has no parser for it): theta (N, k, k+1) times the homogeneous
    coordinates (x, y[, z], 1) of every output position, a literal of the size given."""
    theta = args[0]
    size = constant_values(info, args[1], "AffineGrid: `size` input must be constant")
    spatial = size[2:]
    k = len(spatial)
    if any(n < 0 for n in size):
        raise ParseError(f"AffineGrid: size {size} has a negative dimension")
    if k not in (2, 3) or theta.shape.is_dynamic or tuple(theta.shape.lens) != (size[0], k, k + 1):
        raise ParseError(f"AffineGrid: theta {list(theta.shape.lens)} does not fit the size {size}")
    check_literal_size(Shape.make(DType.double, [k + 1, math.prod(spatial)]))
    align = info.attr_int("align_corners", 0)
    with np.errstate(all="ignore"):  # an axis of 1 with align_corners: ONNX's 2 / 0 step
        coordinates = [np.linspace(-1, 1, n) if align else (2 * np.arange(n) + 1) / n - 1 for n in spatial]
    mesh = np.meshgrid(*coordinates, indexing="ij")
    positions = math.prod(spatial)
    homogeneous = np.stack([*reversed(mesh), np.ones(spatial)]).reshape(k + 1, positions)
    dtype = theta.shape.dtype
    base = info.add_literal(homogeneous.astype(dtype.numpy), dtype, [k + 1, positions])
    base = info.add("multibroadcast", base, out_lens=[size[0], k + 1, positions])
    grid = info.add("transpose", info.add("dot", theta, base), permutation=[0, 2, 1])
    return info.add("reshape", info.add("contiguous", grid), dims=[size[0], *spatial, k])


@onnx_op("Col2Im")
def parse_col2im(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """mgxir's addition (MIGraphX has no parser for it): the columns (N, C x block, L) times a 0/1
    literal that sends each (block offset, sliding position) to its image position, or nowhere in
    the padding; overlapping blocks add up, as ONNX's Col2Im does."""
    x = args[0]
    image = constant_values(info, args[1], "Col2Im: `image_shape` input must be constant")
    block = constant_values(info, args[2], "Col2Im: `block_shape` input must be constant")
    k = len(image)
    dilations = info.attr_ints("dilations", [1] * k) or [1] * k
    strides = info.attr_ints("strides", [1] * k) or [1] * k
    pads = info.attr_ints("pads", [0] * 2 * k) or [0] * 2 * k
    if (len(dilations), len(strides), len(pads)) != (k, k, 2 * k):
        raise ParseError(f"Col2Im: dilations, strides and pads must have {k}, {k} and {2 * k} values")
    if any(n < 1 for n in (*image, *block, *dilations, *strides)) or any(p < 0 for p in pads):
        raise ParseError("Col2Im: image and block shapes, dilations and strides must be positive, pads not negative")
    blocks, pixels = math.prod(block), math.prod(image)
    if x.shape.is_dynamic or x.shape.ndim != 3 or len(block) != k or x.shape.lens[1] % max(blocks, 1):
        raise ParseError(f"Col2Im: input {list(x.shape.lens)} does not fit the block shape {block}")
    slides = [
        (image[d] + pads[d] + pads[k + d] - dilations[d] * (block[d] - 1) - 1) // strides[d] + 1 for d in range(k)
    ]
    positions = math.prod(slides)
    if positions != x.shape.lens[2]:
        raise ParseError(f"Col2Im: {x.shape.lens[2]} columns, the shapes given make {positions}")
    check_literal_size(Shape.make(x.shape.dtype, [blocks * positions, pixels]))
    offsets = np.indices(block).reshape(k, -1, 1)  # (k, blocks, 1)
    starts = np.indices(slides).reshape(k, 1, -1)  # (k, 1, positions)
    stride, dilation, before = (np.array(v).reshape(k, 1, 1) for v in (strides, dilations, pads[:k]))
    where = starts * stride - before + offsets * dilation  # (k, blocks, positions)
    inside = np.all((where >= 0) & (where < np.array(image).reshape(k, 1, 1)), axis=0)
    scatter = np.zeros((blocks * positions, pixels), x.shape.dtype.numpy)
    rows = np.flatnonzero(inside)
    scatter[rows, np.ravel_multi_index(tuple(w.reshape(-1)[rows] for w in where), image)] = 1
    batch, channels = x.shape.lens[0], x.shape.lens[1] // blocks
    columns = info.add("reshape", x, dims=[batch * channels, blocks * positions])
    literal = info.add_literal(scatter, x.shape.dtype, [blocks * positions, pixels])
    return info.add("reshape", info.add("dot", columns, literal), dims=[batch, channels, *image])


@onnx_op("TensorScatter")
def parse_tensor_scatter(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """mgxir's addition (MIGraphX has no parser for it), opset 24's cache update: each batch's
    update written into the cache along `axis` from its write index (modulo the cache's length in
    circular mode), as a scatternd with a literal of the positions."""
    cache, update = args[0], args[1]
    if cache.shape.is_dynamic or update.shape.is_dynamic:
        raise ParseError("TensorScatter: dynamic shapes are not supported")
    rank = cache.shape.ndim
    axis = tune_axis(rank, info.attr_int("axis", -2), "TensorScatter")
    lens, update_lens = list(cache.shape.lens), list(update.shape.lens)
    if (
        axis == 0
        or len(update_lens) != rank
        or any(u != c if d != axis else u > c for d, (u, c) in enumerate(zip(update_lens, lens)))
    ):
        raise ParseError(f"TensorScatter: update {update_lens} does not fit the cache {lens} at axis {axis}")
    starts = [0] * lens[0]
    if len(args) > 2 and args[2].op.name != "undefined":
        starts = constant_values(info, args[2], "TensorScatter: `write_indices` input must be constant")
    mode = info.attr_str("mode", "linear")
    if mode not in ("linear", "circular"):
        raise ParseError(f"TensorScatter: unknown mode '{mode}'")
    check_literal_size(Shape.make(DType.int64, [*update_lens[: axis + 1], axis + 1]))
    where = np.indices(update_lens[: axis + 1])  # (axis + 1, *update_lens[: axis + 1])
    where[axis] += np.asarray(starts).reshape([-1] + [1] * axis)
    if mode == "circular":
        where[axis] %= lens[axis]
    elif where[axis].max(initial=0) >= lens[axis]:
        raise ParseError(f"TensorScatter: a write index writes past the cache's {lens[axis]} positions")
    positions = np.moveaxis(where, 0, -1)
    indices = info.add_literal(positions.astype(np.int64), DType.int64, list(positions.shape))
    return info.add("scatternd_none", cache, indices, update)


@onnx_op("Compress")
def parse_compress(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """mgxir's addition (MIGraphX has no parser for it): a gather of the positions whose condition
    holds, along `axis` (of the input flattened where there is none); a condition shorter than the
    axis leaves the rest out."""
    x, condition = args[0], args[1]
    if x.shape.is_dynamic:
        raise ParseError("Compress: dynamic input shapes are not supported")
    keep = constant_values(info, condition, "Compress: `condition` input must be constant")
    data = x if info.has("axis") else info.add("reshape", x, dims=[x.shape.elements])
    axis = tune_axis(data.shape.ndim, info.attr_int("axis", 0), "Compress")
    if len(keep) > data.shape.lens[axis]:
        raise ParseError(f"Compress: {len(keep)} conditions for an axis of {data.shape.lens[axis]}")
    picked = [i for i, c in enumerate(keep) if c]
    indices = info.add_literal(np.array(picked, np.int64), DType.int64, [len(picked)])
    return info.add("gather", data, indices, axis=axis)


# CumProd is mgxir's addition (MIGraphX has no parser for it)
_PREFIX_SCANS = {"CumSum": "prefix_scan_sum", "CumProd": "prefix_scan_prod"}


@onnx_op(*_PREFIX_SCANS)
def parse_cumsum(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    axis = constant_values(info, args[1], "PARSE_PREFIX_SCAN: axis - dynamic shape not supported")[0]
    exclusive = bool(info.attr_int("exclusive", 0))
    reverse = bool(info.attr_int("reverse", 0))
    return info.add(_PREFIX_SCANS[info.op_type], args[0], axis=axis, exclusive=exclusive, reverse=reverse)


@onnx_op("ReverseSequence")
def parse_reversesequence(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    batch_axis = int(info.attr_int("batch_axis", 1) or 0) if info.has("batch_axis") else 1
    if batch_axis not in (0, 1):
        raise ParseError("REVERSESEQUENCE: batch axis not 0 or 1")
    time_axis = int(info.attr_int("time_axis", 0) or 0)
    if time_axis not in (0, 1):
        raise ParseError("REVERSESEQUENCE: time axis not 0 or 1")
    if time_axis == batch_axis:
        raise ParseError("REVERSESEQUENCE: time axis and batch axis are the same")
    x = args[0]
    lens = x.shape.lens
    if len(lens) < 2:
        raise ParseError("REVERSESEQUENCE: input tensor must have rank >= 2")
    sequence_lens: list[int] = []
    if len(args) == 2:
        value = info.eval(args[1])
        if value is None:
            raise ParseError("REVERSESEQUENCE: cannot handle variable sequence_lens")
        sequence_lens = [int(v) for v in np.asarray(value).reshape(-1)]
    elif info.has("sequence_lens"):
        sequence_lens = info.attr_ints("sequence_lens") or []
    batch_size, time_size = lens[batch_axis], lens[time_axis]
    if len(sequence_lens) != batch_size:
        raise ParseError("REVERSESEQUENCE: sequence_lens has incorrect shape")

    def part(b: int, start: int, end: int) -> Instruction:
        return info.add("slice", x, axes=[batch_axis, time_axis], starts=[b, start], ends=[b + 1, end])

    result: Instruction | None = None
    for b in range(batch_size):
        n = sequence_lens[b]
        if n > 1:
            piece = info.add("reverse", part(b, 0, n), axes=[time_axis])
            if n < time_size:
                piece = info.add("concat", piece, part(b, n, time_size), axis=time_axis)
        else:
            piece = part(b, 0, time_size)
        result = piece if result is None else info.add("concat", result, piece, axis=batch_axis)
    assert result is not None
    return result


@onnx_op("Unique")
def parse_unique(parser: OnnxParser, info: NodeInfo, args: Args) -> list[Instruction]:
    sorted_ = int(info.attr_int("sorted", 1) or 0)
    if info.has("axis"):
        axis = tune_axis(args[0].shape.ndim, int(info.attr_int("axis") or 0), info.op_type)
        unique = info.add("unique", args[0], axis=axis, sorted=sorted_)
    else:
        unique = info.add("unique", args[0], sorted=sorted_)
    return [info.add("get_tuple_elem", unique, index=i) for i in range(4)]


@onnx_op("ConstantFill")
def parse_constant_fill(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    dtype = onnx_type(int(info.attr_int("dtype", 1) or 0))
    input_as_shape = int(info.attr_int("input_as_shape", 0) or 0)
    value = np.float32(info.attr_float("value", 0.0))
    if info.has("extra_shape"):
        raise ParseError("ConstantFill: cannot handle extra shape attribute")
    if input_as_shape == 1:
        if len(args) != 1:
            raise ParseError("ConstantFill: need an input argument as output shape")
        if info.has("shape"):
            raise ParseError("ConstantFill: cannot set the shape argument and pass in an input at the same time")
        given = info.eval(args[0])
        if given is None:
            raise ParseError("ConstantFill: dynamic shape is not supported")
        dims = [int(d) for d in np.asarray(given).reshape(-1)]
    elif input_as_shape == 0:
        if not info.has("shape"):
            raise ParseError("ConstantFill: attribute output shape is needed")
        dims = info.attr_ints("shape") or []
    else:
        raise ParseError("ConstantFill: wrong value of attribute input_as_shape")
    shape = Shape.make(dtype, dims)
    check_literal_size(shape)
    return info.add_literal(np.full(shape.elements, value), dtype, dims)


# ATen's embedding_bag modes: sum, mean, max (any other mode leaves the gathered rows)
_EMBEDDING_BAG_REDUCTIONS = {0: "reduce_sum", 1: "reduce_mean", 2: "reduce_max"}


@onnx_op("ATen")
def parse_aten(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """PyTorch's ATen fallback: only embedding_bag with one bag (one offset) is built."""
    if "embedding_bag" not in (info.attr_str("operator") or ""):
        raise ParseError("PARSE_ATEN: unsupported custom operator")
    if len(args) < 3:
        raise ParseError("PARSE_EMBEDDING_BAG: needs the weight, indices and offsets inputs")
    if args[2].shape.elements != 1:
        raise ParseError("PARSE_EMBEDDING_BAG: MIGraphX only supports offsets of size 1")
    rows = info.add("gather", args[0], args[1])
    mode = int(info.attributes["mode"].i) if info.has("mode") else 0
    reduction = _EMBEDDING_BAG_REDUCTIONS.get(mode)
    return rows if reduction is None else info.add(reduction, rows, axes=[0])


def _dft_matrix(n_in: int, channels: int, length: int, inverse: bool, onesided: bool) -> tuple[np.ndarray, int, int]:
    """The real matrix (n_in x channels, n_out x channels_out) that maps the signal's (real, imag)
    pairs along one axis to its transform's: e^(-2 pi i jk / N), or e^(+2 pi i jk / N) / N inverse;
    a onesided inverse reads the half spectrum (the other half its conjugate) and gives reals."""
    if inverse and onesided:
        n_out, channels_out = length, 1
    else:
        n_out, channels_out = (length // 2 + 1 if onesided else length), 2
    j = np.arange(min(n_in, length)).reshape(-1, 1)
    k = np.arange(n_out).reshape(1, -1)
    theta = 2 * np.pi * j * k / length
    cos, sin = np.cos(theta), np.sin(theta)
    matrix = np.zeros((n_in, channels, n_out, channels_out))
    rows = slice(0, min(n_in, length))
    if inverse and onesided:  # input index j is the frequency, k the time
        weight = np.where((j == 0) | (2 * j == length), 1.0, 2.0) / length
        matrix[rows, 0, :, 0] = weight * cos
        if channels == 2:
            matrix[rows, 1, :, 0] = -weight * sin
        return matrix.reshape(n_in * channels, n_out * channels_out), n_out, channels_out
    sign, scale = (1.0, 1.0 / length) if inverse else (-1.0, 1.0)
    matrix[rows, 0, :, 0] = scale * cos
    matrix[rows, 0, :, 1] = scale * sign * sin
    if channels == 2:
        matrix[rows, 1, :, 0] = -scale * sign * sin
        matrix[rows, 1, :, 1] = scale * cos
    return matrix.reshape(n_in * channels, n_out * channels_out), n_out, channels_out


@onnx_op("DFT")
def parse_dft(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """mgxir's addition (MIGraphX has no parser for it): the transform along `axis` as a product with
    a literal matrix of cosines and sines, in double precision."""
    x = args[0]
    if x.shape.is_dynamic or x.shape.ndim < 2 or x.shape.lens[-1] not in (1, 2):
        raise ParseError("DFT: the input must be static with a last dimension of 1 (real) or 2 (complex)")
    rank = x.shape.ndim
    if len(args) > 2 and args[2].op.name != "undefined":
        (axis,) = constant_values(info, args[2], "DFT: `axis` input must be constant")
    else:
        axis = info.attr_int("axis", 1 if parser.opset_version < 20 else -2)
    axis = tune_axis(rank, axis, "DFT")
    if axis == rank - 1:
        raise ParseError("DFT: the axis cannot be the last (real, imaginary) dimension")
    inverse, onesided = bool(info.attr_int("inverse", 0)), bool(info.attr_int("onesided", 0))
    n_in, channels = x.shape.lens[axis], x.shape.lens[-1]
    length = 2 * (n_in - 1) if inverse and onesided else n_in
    if len(args) > 1 and args[1].op.name != "undefined":
        (length,) = constant_values(info, args[1], "DFT: `dft_length` input must be constant")
    if length < 1:
        raise ParseError(f"DFT: length {length} is not positive")
    check_literal_size(Shape.make(DType.double, [n_in * channels, length * 2]))
    matrix, n_out, channels_out = _dft_matrix(n_in, channels, length, inverse, onesided)
    others = [d for d in range(rank - 1) if d != axis]
    perm = [*others, axis, rank - 1]
    lens = [x.shape.lens[d] for d in others]
    moved = info.add("contiguous", info.add("transpose", x, permutation=perm))
    rows = info.add("reshape", moved, dims=[math.prod(lens), n_in * channels])
    wide = info.add("convert", rows, target_type=DType.double)
    literal = info.add_literal(matrix, DType.double, list(matrix.shape))
    product = info.add("convert", info.add("dot", wide, literal), target_type=x.shape.dtype)
    out = info.add("reshape", product, dims=[*lens, n_out, channels_out])
    inverse_perm = [perm.index(d) for d in range(rank)]
    return info.add("transpose", out, permutation=inverse_perm)


@onnx_op("STFT")
def parse_stft(parser: OnnxParser, info: NodeInfo, args: Args) -> Instruction:
    """mgxir's addition (MIGraphX has no parser for it): the frames gathered by a literal of their
    positions, times the window, each transformed as DFT does (onesided by default)."""
    signal = args[0]
    if signal.shape.is_dynamic or signal.shape.ndim != 3 or signal.shape.lens[2] not in (1, 2):
        raise ParseError("STFT: the signal must be static (batch, length, 1 or 2)")
    (step,) = constant_values(info, args[1], "STFT: `frame_step` input must be constant")
    window = args[2] if len(args) > 2 and args[2].op.name != "undefined" else None
    if len(args) > 3 and args[3].op.name != "undefined":
        (frame,) = constant_values(info, args[3], "STFT: `frame_length` input must be constant")
    elif window is not None:
        frame = window.shape.lens[0]
    else:
        raise ParseError("STFT: a window or a frame_length is needed")
    batch, length, channels = signal.shape.lens
    if step < 1 or not 1 <= frame <= length or (window is not None and window.shape.lens != (frame,)):
        raise ParseError(f"STFT: frame_step {step} and frame_length {frame} do not fit a signal of {length}")
    frames = 1 + (length - frame) // step
    check_literal_size(Shape.make(DType.int64, [frames, frame]))
    starts = np.arange(frames).reshape(-1, 1) * step + np.arange(frame).reshape(1, -1)
    positions = info.add_literal(starts.astype(np.int64), DType.int64, [frames, frame])
    framed = info.add("gather", signal, positions, axis=1)  # (batch, frames, frame, channels)
    if window is not None:
        shaped = info.add("reshape", window, dims=[1, 1, frame, 1])
        framed = info.add("mul", framed, info.add("multibroadcast", shaped, out_lens=list(framed.shape.lens)))
    onesided = bool(info.attr_int("onesided", 1))
    check_literal_size(Shape.make(DType.double, [frame * channels, frame * 2]))
    matrix, n_out, _ = _dft_matrix(frame, channels, frame, False, onesided)
    rows = info.add("reshape", info.add("contiguous", framed), dims=[batch * frames, frame * channels])
    literal = info.add_literal(matrix, DType.double, list(matrix.shape))
    wide = info.add("dot", info.add("convert", rows, target_type=DType.double), literal)
    product = info.add("convert", wide, target_type=signal.shape.dtype)
    return info.add("reshape", product, dims=[batch, frames, n_out, 2])
