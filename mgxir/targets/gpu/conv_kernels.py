"""Generated convolution kernels where one beats the DNN library: depthwise convolutions (one input
channel per group, MobileNet's, EfficientNet's, ConvNeXt's), with the pointwise module the
convolution feeds (bias, activation, residual add) computed in the same kernel; and direct
kernels for what the libraries are not asked for yet: transposed convolutions and int8 products.

One thread per output element, walked in the output's memory order (channels fastest for a
channels-last output), so that neighbouring threads read neighbouring input channels; the window
is unrolled (its size is known when the kernel is generated) and accumulated in float (double for
double), as the reference accumulates in float64 and rounds once.
"""

from __future__ import annotations

from collections.abc import Sequence

from mgxir.ir.dtype import DType
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.shape import Shape
from mgxir.targets.gpu import kernels
from mgxir.targets.gpu.kernels import Kernel, Tensor, Unsupported


def is_depthwise(op: Operation, x: Shape, w: Shape) -> bool:
    """Each group reads one input channel (its output channels a multiple of it)."""
    return x.ndim >= 3 and op["group"] == x.lens[1] and w.lens[1] == 1 and op["group"] > 1


def _element(tensor: Tensor, coords: Sequence[str]) -> str:
    terms = [f"({c}) * {s}LL" for c, n, s in zip(coords, tensor.lens, tensor.strides) if n != 1 and s != 0]
    return " + ".join(terms) or "0"


def channel_vector_width(x: Tensor, output: Tensor, multiplier: int) -> int:
    """Channels each thread computes, moved as one 16-byte (or narrower) vector of the input and
    the output: where channels are contiguous in both (channels-last), every other stride and the
    channel count are multiples of the width, and the pointers are aligned; else 1."""
    if multiplier != 1 or x.strides[1] != 1 or output.strides[1] != 1 or not (x.aligned and output.aligned):
        return 1
    width = max(1, 16 // max(x.dtype.itemsize, output.dtype.itemsize))

    def fits(t: Tensor) -> bool:
        others = (s for d, (n, s) in enumerate(zip(t.lens, t.strides)) if d != 1 and n != 1)
        return t.lens[1] % width == 0 and all(s % width == 0 for s in others)

    while width > 1 and not (fits(x) and fits(output)):
        width //= 2
    return width


def channels_fastest(shape: Shape) -> Shape:
    """Depthwise weights (channels, 1, window...) laid out with the channels innermost, so that
    a thread's vector of channels reads its weights as one vector too."""
    return Shape.from_permutation(shape.dtype, shape.lens, (*range(1, shape.ndim), 0))


def _weights_are_vectors(w: Tensor, width: int) -> bool:
    others = (s for d, (n, s) in enumerate(zip(w.lens, w.strides)) if d != 0 and n != 1)
    return width > 1 and w.aligned and w.strides[0] == 1 and all(s % width == 0 for s in others)


def depthwise_kernel(
    op: Operation,
    x: Tensor,
    w: Tensor,
    output: Tensor,
    epilogue: Module | None = None,
    extras: Sequence[Tensor] = (),
    conv_arg: int = 0,
) -> Kernel:
    """out = epilogue(depthwise convolution of x by w, extras...); without an epilogue, the
    convolution. `conv_arg` is the convolution's position among the epilogue's parameters (name
    order), the extras fill the others in order; each is read at the output's coordinates. Each
    thread computes `channel_vector_width` neighbouring channels (a vector load of the input per
    window position, one vector store)."""
    if not output.dtype.is_float or not x.dtype.is_float:
        raise Unsupported("generated depthwise convolutions: floating point")
    k = len(x.lens) - 2
    pads = list(op["padding"])
    begin = pads[:k] if len(pads) == 2 * k else pads
    stride, dilation = op["stride"], op["dilation"]
    multiplier = w.lens[0] // x.lens[1]
    width = channel_vector_width(x, output, multiplier)
    acc = "double" if DType.double in (x.dtype, output.dtype) else "float"
    channel = f"(c1 * {width}LL + e)"  # the output channel of lane e (c1 counts vectors)
    body = [f"  {acc} acc[{width}] = {{}};"]
    for d in range(k):
        body.append("#pragma unroll")
        body.append(f"  for (int w{d} = 0; w{d} < {w.lens[d + 2]}; ++w{d}) {{")
        body.append(f"  const long long q{d} = c{d + 2} * {stride[d]}LL - {begin[d]}LL + w{d} * {dilation[d]}LL;")
    inside = " && ".join(f"q{d} >= 0 && q{d} < {x.lens[d + 2]}LL" for d in range(k))
    window = [f"q{d}" for d in range(k)]
    w_at = _element(w, [channel, "0", *[f"w{d}" for d in range(k)]])
    body.append(f"  if ({inside}) {{")
    if width > 1:
        vector = f"mgx_vec<{kernels.storage_type(x.dtype)}, {width}>"
        x_at = _element(x, ["c0", f"c1 * {width}LL", *window])
        body.append(f"    const {vector} xv = *(const {vector}*)(x0 + {x_at});")
        load = "mgx_load(&xv.v[e])"
    else:
        load = f"mgx_load(x0 + {_element(x, ['c0', f'c1 / {multiplier}LL', *window])})"
    weight = f"mgx_load(x1 + {w_at})"
    if _weights_are_vectors(w, width):
        vector = f"mgx_vec<{kernels.storage_type(w.dtype)}, {width}>"
        taps = _element(w, [f"c1 * {width}LL", "0", *[f"w{d}" for d in range(k)]])
        body.append(f"    const {vector} wv = *(const {vector}*)(x1 + {taps});")
        weight = "mgx_load(&wv.v[e])"
    body.append("#pragma unroll")
    body.append(f"    for (int e = 0; e < {width}; ++e) acc[e] += ({acc}){load} * ({acc}){weight};")
    body.append("  }")
    body.extend("  }" for _ in range(k))
    out_type = kernels.storage_type(output.dtype)
    body.append(f"  mgx_vec<{out_type}, {width}> r;")
    body.append("#pragma unroll")
    body.append(f"  for (int e = 0; e < {width}; ++e) {{")
    value = "acc[e]"
    if epilogue is not None:
        coords = ["c0", channel, *[f"c{d}" for d in range(2, len(output.lens))]]
        loads = []
        for n, extra in enumerate(extras):
            ct = kernels.compute_type(extra.dtype)
            body.append(f"  const {ct} e{n} = mgx_load(x{n + 2} + {_element(extra, coords)});")
            loads.append(f"e{n}")
        args = [*loads[:conv_arg], f"({kernels.compute_type(x.dtype)})acc[e]", *loads[conv_arg:]]
        statements, value = kernels.pointwise_body(epilogue, args, "t")
        body.extend("  " + s for s in statements)
    body.append(f"  mgx_store(&r.v[e], {value});")
    body.append("  }")
    symbol = kernels.kernel_name(epilogue, "depthwise_kernel") if epilogue is not None else "depthwise_kernel"
    return kernels.indexed_kernel(
        symbol, [x, w, *extras], _in_vectors(output, width), body, "r", f"mgx_vec<{out_type}, {width}>"
    )


def _in_vectors(t: Tensor, width: int) -> Tensor:
    """`t` with its channels counted in vectors of `width` (their element stride the width)."""
    lens, strides = list(t.lens), list(t.strides)
    lens[1], strides[1] = lens[1] // width, width if width > 1 else strides[1]
    return Tensor(t.dtype, tuple(lens), tuple(strides), t.aligned)


def convolution_backwards_kernel(op: Operation, x: Tensor, w: Tensor, output: Tensor) -> Kernel:
    """A transposed convolution (ONNX ConvTranspose; weights {C_in, C_out / group, window...}), one
    thread per output element: the sum over its group's input channels and the window positions
    whose stride grid reaches it, the leading padding cropped, accumulated in float (double for
    double) as the reference accumulates in float64."""
    if not output.dtype.is_float:
        raise Unsupported("generated transposed convolutions: floating point")
    k = len(x.lens) - 2
    pads = list(op["padding"])
    begin = pads[:k] if len(pads) == 2 * k else pads
    stride, dilation, group = op["stride"], op["dilation"], op["group"]
    in_per_group, out_per_group = x.lens[1] // group, w.lens[1]
    acc = "double" if DType.double in (x.dtype, output.dtype) else "float"
    body = [
        f"  {acc} acc = 0;",
        f"  const long long g = c1 / {out_per_group}LL;",
        f"  const long long o = c1 % {out_per_group}LL;",
        f"  for (long long ci = 0; ci < {in_per_group}LL; ++ci) {{",
        f"  const long long ch = g * {in_per_group}LL + ci;",
    ]
    reached = []
    for d in range(k):
        body.append(f"  for (long long t{d} = 0; t{d} < {w.lens[d + 2]}LL; ++t{d}) {{")
        body.append(f"  const long long r{d} = c{d + 2} + {begin[d]}LL - t{d} * {dilation[d]}LL;")
        body.append(f"  const long long q{d} = r{d} / {stride[d]}LL;")
        reached.append(f"r{d} >= 0 && r{d} % {stride[d]}LL == 0 && q{d} < {x.lens[d + 2]}LL")
    x_at = _element(x, ["c0", "ch", *[f"q{d}" for d in range(k)]])
    w_at = _element(w, ["ch", "o", *[f"t{d}" for d in range(k)]])
    body.append(f"  if ({' && '.join(reached)}) acc += ({acc})mgx_load(x0 + {x_at}) * ({acc})mgx_load(x1 + {w_at});")
    body.extend("  }" for _ in range(k + 1))
    return kernels.indexed_kernel("convolution_backwards_kernel", [x, w], output, body, "acc")


def quant_dot_kernel(a: Tensor, b: Tensor, output: Tensor) -> Kernel:
    """An int8 matrix product into int32 (batched alike), one thread per output element summing
    its row and column in 64 bits, which wraps to int32 as the reference's int32 matmul does: a
    direct kernel (no int8 tensor cores yet)."""
    if a.dtype.is_float or b.dtype.is_float:
        raise Unsupported("generated quant_dot: integer inputs")
    rank = len(output.lens)
    batch = [f"c{d}" for d in range(rank - 2)]
    acc = kernels.accumulator_type(output.dtype)
    a_at = _element(a, [*batch, f"c{rank - 2}", "j"])
    b_at = _element(b, [*batch, "j", f"c{rank - 1}"])
    body = [
        f"  {acc} acc = 0;",
        f"  for (long long j = 0; j < {a.lens[-1]}LL; ++j)",
        f"    acc += ({acc})mgx_load(x0 + {a_at}) * ({acc})mgx_load(x1 + {b_at});",
    ]
    value = f"({kernels.compute_type(output.dtype)})acc"
    return kernels.indexed_kernel("quant_dot_kernel", [a, b], output, body, value)
