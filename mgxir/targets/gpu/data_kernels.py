"""Generated kernels for the data-movement and indexing operators that ran on the host: pad's
reflect and edge modes, reverse, onehot, resize (nearest, linear, cubic: separable taps whose
positions and weights are computed here, as the reference computes them, and written into the
kernel), gathernd, fill, unpack_int4 and concat_past_present (the KV-cache update).

Each is one thread per output element with coordinates `c<d>` (kernels.indexed_kernel), computing
what the operator's reference (mgxir/ops) computes for that element.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.operation import Operation
from mgxir.ops.nn import resize_taps
from mgxir.targets.gpu.kernels import Kernel, Tensor, Unsupported, accumulator_type, compute_type, indexed_kernel


def offset_at(tensor: Tensor, coords: Sequence[str]) -> str:
    terms = [f"({c}) * {s}LL" for c, n, s in zip(coords, tensor.lens, tensor.strides) if n != 1 and s != 0]
    return " + ".join(terms) or "0"


def coordinates(rank: int) -> list[str]:
    return [f"c{d}" for d in range(rank)]


# pad mode -> the source coordinate `s` (may be outside [0, n)) mapped into [0, n)
_PAD_INDEX = {
    1: lambda s, n: f"mgx_reflect({s}, {n}LL)",  # reflect (numpy's: the edge is not repeated)
    2: lambda s, n: f"({s} < 0 ? 0LL : ({s} >= {n}LL ? {n - 1}LL : {s}))",  # edge
}
_REFLECT = """
__device__ inline long long mgx_reflect(long long s, long long n) {
  if (n == 1) return 0;
  const long long period = 2 * (n - 1);
  long long t = s % period;
  if (t < 0) t += period;
  return t >= n ? period - t : t;
}
"""


def pad_kernel(source: Tensor, pads: Sequence[int], mode: int, output: Tensor) -> Kernel:
    """reflect (1) and edge (2) padding; negative pads crop, as in the reference."""
    if mode not in _PAD_INDEX:
        raise Unsupported(f"pad mode {mode}")
    body = []
    coords = []
    for d, n in enumerate(source.lens):
        body.append(f"  const long long s{d} = c{d} - {pads[d]}LL;")
        body.append(f"  const long long p{d} = {_PAD_INDEX[mode](f's{d}', n)};")
        coords.append(f"p{d}")
    kernel = indexed_kernel("pad_kernel", [source], output, body, f"mgx_load(x0 + {offset_at(source, coords)})")
    return _with_helper(kernel, _REFLECT)


def _with_helper(kernel: Kernel, helper: str) -> Kernel:
    """`kernel` with a device function defined before its entry point."""
    head, entry, rest = kernel.source.partition('extern "C"')
    return Kernel(kernel.symbol, head + helper + entry + rest, kernel.global_size, kernel.local_size)


def reverse_kernel(source: Tensor, axes: Sequence[int], output: Tensor) -> Kernel:
    coords = [f"({source.lens[d] - 1}LL - c{d})" if d in axes else f"c{d}" for d in range(len(source.lens))]
    return indexed_kernel("reverse_kernel", [source], output, [], f"mgx_load(x0 + {offset_at(source, coords)})")


def onehot_kernel(indices: Tensor, values: Tensor, axis: int, depth: int, output: Tensor) -> Kernel:
    """out = values[1] where the class (coordinate `axis`) is the index there, else values[0]."""
    index_coords = [c for d, c in enumerate(coordinates(len(output.lens))) if d != axis]
    values_step = values.strides[0] if values.lens[0] > 1 else 0
    body = [
        f"  long long k = (long long)mgx_load(x0 + {offset_at(indices, index_coords)});",
        f"  if (k < 0) k += {depth}LL;",
    ]
    value = f"mgx_load(x1 + (c{axis} == k ? {values_step}LL : 0LL))"
    return indexed_kernel("onehot_kernel", [indices, values], output, body, value)


def gathernd_kernel(data: Tensor, indices: Tensor, batch_dims: int, output: Tensor) -> Kernel:
    depth = indices.lens[-1]
    q = len(indices.lens)
    trailing = len(data.lens) - batch_dims - depth
    rank = q - 1 + trailing
    coords = coordinates(rank)  # an output of rank 0 is {1}: no coordinate
    body = []
    picked = []
    for j in range(depth):
        at = offset_at(indices, [*coords[: q - 1], str(j)])
        n = data.lens[batch_dims + j]
        body.append(f"  long long k{j} = (long long)mgx_load(x1 + {at});")
        body.append(f"  if (k{j} < 0) k{j} += {n}LL;")
        picked.append(f"k{j}")
    data_at = offset_at(data, [*coords[:batch_dims], *picked, *coords[q - 1 :]])
    return indexed_kernel("gathernd_kernel", [data, indices], output, body, f"mgx_load(x0 + {data_at})")


def fill_kernel(value: Tensor, buffer: Tensor, output: Tensor) -> Kernel:
    """The buffer's every element the value (the buffer is an argument, as it is fill's, unread)."""
    return indexed_kernel("fill_kernel", [value, buffer], output, [], "mgx_load(x0)")


def lrn_kernel(op: Operation, source: Tensor, output: Tensor) -> Kernel:
    """Local response normalization across channels (axis 1), in double as the reference: the
    squares of the `size` channels around c (before it: (size - 1) / 2) summed in channel order,
    x / (bias + alpha / size * sum) ** beta."""
    size = op["size"]
    before = (size - 1) // 2
    coords = coordinates(len(output.lens))
    window = [coords[0], "k", *coords[2:]]
    body = [
        "  double acc = 0;",
        f"  for (long long j = 0; j < {size}LL; ++j) {{",
        f"    const long long k = c1 - {before}LL + j;",
        f"    if (k < 0 || k >= {source.lens[1]}LL) continue;",
        f"    const double v = (double)mgx_load(x0 + {offset_at(source, window)});",
        "    acc += v * v;",
        "  }",
        f"  const double scale = {float(op['bias'])!r} + {float(op['alpha']) / size!r} * acc;",
        f"  const double x = (double)mgx_load(x0 + {offset_at(source, coords)});",
        f"  const double value = x / pow(scale, {float(op['beta'])!r});",
    ]
    return indexed_kernel("lrn_kernel", [source], output, body, f"({compute_type(output.dtype)})value")


def zeros_kernel(output: Tensor) -> Kernel:
    """`undefined`'s value as the reference gives it: zeros (it reads nothing)."""
    return indexed_kernel("undefined_kernel", [], output, [], "0")


def unpack_int4_kernel(source: Tensor, axis: int, output: Tensor) -> Kernel:
    """Each byte of `source` along `axis` holds two values: the low nibble first; int8 signed."""
    coords = coordinates(len(output.lens))
    packed = [f"(c{d} / 2)" if d == axis else c for d, c in enumerate(coords)]
    body = [
        f"  const unsigned byte = (unsigned char)x0[{offset_at(source, packed)}];",
        f"  int v = (c{axis} & 1) ? (int)(byte >> 4) : (int)(byte & 15u);",
    ]
    if source.dtype is DType.int8:
        body.append("  if (v >= 8) v -= 16;")
    return indexed_kernel("unpack_int4_kernel", [source], output, body, "v")


def concat_past_present_kernel(new: Tensor, seqlens: Tensor, cache: Tensor, kv_heads: int, output: Tensor) -> Kernel:
    """The cache with each (batch, head)'s new rows written from row seqlens[b] (0 for a prompt of
    several rows), in the flat buffers as the reference writes them: each output element takes the
    last writer whose span covers it, else the cache's value."""
    batch, _, sequence, head_size = new.lens
    rows = cache.lens[2]
    chunk = sequence * head_size
    total = math.prod(cache.lens)
    flat = _flat(output)
    body = [f"  const long long o = {flat};", "  long long from = -1;"]
    body.append(f"  for (long long b = 0; b < {batch}LL; ++b) {{")
    if sequence == 1:  # seqlens read flat, as the reference reshapes it ({batch} or {batch, 1})
        body.append(f"    const long long past = (long long)mgx_load(x1 + {standard_offset(seqlens, 'b')});")
    else:
        body.append("    const long long past = 0;")
    body.append(f"    for (long long h = 0; h < {kv_heads}LL; ++h) {{")
    body.append(f"      const long long start = (b * {kv_heads}LL + h) * {rows * head_size}LL + past * {head_size}LL;")
    body.append(f"      if (past >= 0 && start + {chunk}LL <= {total}LL && o >= start && o < start + {chunk}LL)")
    body.append(f"        from = (b * {kv_heads}LL + h) * {chunk}LL + (o - start);")
    body.append("    }")
    body.append("  }")
    new_at = standard_offset(new, "from")
    value = f"(from >= 0 ? mgx_load(x0 + {new_at}) : mgx_load(x2 + {offset_at(cache, coordinates(len(cache.lens)))}))"
    return indexed_kernel("concat_past_present_kernel", [new, seqlens, cache], output, body, value)


def _flat(t: Tensor) -> str:
    """The standard (row-major) index of coordinates c0.. over `t`'s lens."""
    terms, step = [], 1
    for d in reversed(range(len(t.lens))):
        terms.append(f"c{d} * {step}LL")
        step *= t.lens[d]
    return " + ".join(terms)


def standard_offset(t: Tensor, index: str) -> str:
    """The memory offset in `t` of its `index`-th element in standard order."""
    terms, step = [], 1
    for d in reversed(range(len(t.lens))):
        n = t.lens[d]
        if n != 1 and t.strides[d] != 0:
            terms.append(f"((({index}) / {step}LL) % {n}LL) * {t.strides[d]}LL")
        step *= n
    return " + ".join(terms) or "0"


# -- resize --------------------------------------------------------------------------------------


def _resize_taps(op: Operation, n_in: int, n_out: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(source indices, weights), each (n_out, taps), of one axis: the reference's (resize_taps)."""
    try:
        taps = resize_taps(op, n_in, n_out, scale)
    except ValueError as e:
        raise Unsupported(f"resize: {e}") from None
    if taps is None:  # not resampled
        return np.arange(n_out, dtype=np.int64)[:, None], np.ones((n_out, 1))
    return taps


def resize_kernel(op: Operation, source: Tensor, output: Tensor) -> Kernel:
    """Each output element the weighted sum of its taps' product over the axes (in double, as the
    reference resamples axis after axis in float64); an axis with one tap of weight 1 is a gather."""
    if op["mode"] not in ("nearest", "linear", "cubic"):
        raise Unsupported(f"resize: mode '{op['mode']}'")
    if op["sizes"]:
        scales = [n / m if m else 1.0 for n, m in zip(op["sizes"], source.lens)]
    else:
        scales = list(op["scales"])
    tables, body, loops = [], ["  double acc = 0;"], 0
    coords = []
    weight_terms = []
    for d, (n_in, n_out, scale) in enumerate(zip(source.lens, output.lens, scales)):
        index, weight = _resize_taps(op, n_in, n_out, scale)
        taps = index.shape[1]
        if taps == 1 and np.all(weight == 1.0):
            tables.append(f"__device__ const long long mgx_index{d}[{n_out}] = {{{', '.join(map(str, index[:, 0]))}}};")
            coords.append(f"mgx_index{d}[c{d}]")
            continue
        tables.append(
            f"__device__ const long long mgx_index{d}[{n_out * taps}] = {{{', '.join(map(str, index.reshape(-1)))}}};"
        )
        tables.append(
            f"__device__ const double mgx_weight{d}[{n_out * taps}] = "
            f"{{{', '.join(repr(float(w)) for w in weight.reshape(-1))}}};"
        )
        body.append(f"  for (int t{d} = 0; t{d} < {taps}; ++t{d}) {{")
        loops += 1
        coords.append(f"mgx_index{d}[c{d} * {taps} + t{d}]")
        weight_terms.append(f"mgx_weight{d}[c{d} * {taps} + t{d}]")
    weight = " * ".join(weight_terms) or "1.0"
    body.append(f"  acc += {weight} * (double)mgx_load(x0 + {offset_at(source, coords)});")
    body.extend("  }" for _ in range(loops))
    value = f"({compute_type(output.dtype)})acc"
    kernel = indexed_kernel("resize_kernel", [source], output, body, value)
    return _with_helper(kernel, "\n".join(tables) + "\n")


# -- scatter -------------------------------------------------------------------------------------

# reduction -> how an update `u` combines with the value `v` already there (NaN propagating, as
# numpy's minimum and maximum)
SCATTER_COMBINE = {
    "none": "{u}",
    "add": "{v} + {u}",
    "mul": "{v} * {u}",
    "min": "mgx_op_min()({v}, {u})",
    "max": "mgx_op_max()({v}, {u})",
}
SCATTER_SCAN_LIMIT = 65536  # updates one output element scans at most; beyond, the host scatters


def _combine(reduction: str, value: str, update: str) -> str:
    if reduction not in SCATTER_COMBINE:
        raise Unsupported(f"scatter reduction '{reduction}'")
    return SCATTER_COMBINE[reduction].format(v=value, u=update)


def scatter_elements_kernel(
    data: Tensor, indices: Tensor, updates: Tensor, axis: int, reduction: str, output: Tensor
) -> Kernel:
    """out = data, then for each index position p in order (row-major), out[p with
    p[axis] = indices[p]] combined with updates[p]. Each output element scans the index positions
    that can reach it (those along `axis` sharing its other coordinates) in that order, so
    repeated targets combine as the reference's loop does. An index outside the axis is skipped
    (the reference reports it, unless skip_out_of_bounds)."""
    if indices.lens[axis] > SCATTER_SCAN_LIMIT:
        raise Unsupported(f"scatter of {indices.lens[axis]} positions along one axis")
    rank = len(output.lens)
    ct = compute_type(output.dtype)
    coords = coordinates(rank)
    scan = [*coords[:axis], "j", *coords[axis + 1 :]]
    reach = " && ".join(f"c{d} < {indices.lens[d]}LL" for d in range(rank) if d != axis) or "true"
    body = [
        f"  {ct} v = mgx_load(x0 + {offset_at(data, coords)});",
        f"  if ({reach}) for (long long j = 0; j < {indices.lens[axis]}LL; ++j) {{",
        f"    long long k = (long long)mgx_load(x1 + {offset_at(indices, scan)});",
        f"    if (k < 0) k += {data.lens[axis]}LL;",
        f"    if (k == c{axis}) v = {_combine(reduction, 'v', f'({ct})mgx_load(x2 + {offset_at(updates, scan)})')};",
        "  }",
    ]
    return indexed_kernel(f"scatter_{reduction}_kernel", [data, indices, updates], output, body, "v")


def scatternd_kernel(data: Tensor, indices: Tensor, updates: Tensor, reduction: str, output: Tensor) -> Kernel:
    """out = data, then for each index tuple t in order, the block of data's trailing axes at the
    offset the tuple addresses (MIGraphX's: the dot product with the row-major strides, so a
    negative index moves the offset back) combined with updates' t-th block. Each output element
    scans every tuple in order; an offset outside the output is skipped (the reference reports
    it)."""
    depth = indices.lens[-1]
    tuples = math.prod(indices.lens[:-1])
    if tuples > SCATTER_SCAN_LIMIT:
        raise Unsupported(f"scatternd of {tuples} index tuples")
    block = math.prod(data.lens[depth:])
    total = math.prod(data.lens)
    row_major = [math.prod(data.lens[d + 1 :]) for d in range(len(data.lens))]
    ct = compute_type(output.dtype)
    indexed = [f"(long long)mgx_load(x1 + {standard_offset(indices, f't * {depth}LL + {j}LL')})" for j in range(depth)]
    address = " + ".join(f"{c} * {row_major[j]}LL" for j, c in enumerate(indexed))
    update = f"({ct})mgx_load(x2 + {standard_offset(updates, f't * {block}LL + (f - offset)')})"
    body = [
        f"  const long long f = {_flat(output)};",
        f"  {ct} v = mgx_load(x0 + {offset_at(data, coordinates(len(data.lens)))});",
        f"  for (long long t = 0; t < {tuples}LL; ++t) {{",
        f"    const long long offset = {address};",
        f"    if (offset >= 0 && offset + {block}LL <= {total}LL && f >= offset && f < offset + {block}LL)",
        f"      v = {_combine(reduction, 'v', update)};",
        "  }",
    ]
    return indexed_kernel(f"scatternd_{reduction}_kernel", [data, indices, updates], output, body, "v")


# -- prefix scans --------------------------------------------------------------------------------

PREFIX_SCAN_LIMIT = 4096  # elements one output element sums at most; a longer axis stays on the host


def prefix_scan_sum_kernel(source: Tensor, axis: int, exclusive: bool, reverse: bool, output: Tensor) -> Kernel:
    """Each output element the sum of the elements before it along `axis` (itself included unless
    `exclusive`; after it with `reverse`), in order from the scan's start, accumulated wide (float
    for half, 64-bit for integers, which wrap to the type as the reference's cumsum does)."""
    n = source.lens[axis]
    if n > PREFIX_SCAN_LIMIT:
        raise Unsupported(f"prefix scan along an axis of {n} elements")
    acc = accumulator_type(output.dtype)
    coords = coordinates(len(output.lens))
    scanned = [*coords[:axis], "j", *coords[axis + 1 :]]
    first, last = ("0", f"c{axis}") if not reverse else (f"c{axis}", f"{n - 1}LL")
    if exclusive:
        first, last = (first, f"c{axis} - 1") if not reverse else (f"c{axis} + 1", last)
    step = "++j" if not reverse else "--j"
    start, stop = (first, f"j <= {last}") if not reverse else (last, f"j >= {first}")
    body = [
        f"  {acc} acc = 0;",
        f"  for (long long j = {start}; {stop}; {step}) acc += ({acc})mgx_load(x0 + {offset_at(source, scanned)});",
    ]
    return indexed_kernel("prefix_scan_sum_kernel", [source], output, body, f"({compute_type(output.dtype)})acc")
