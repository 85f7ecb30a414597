"""Generated kernels for the sequence-length helpers rewrite_rnn leaves around an unrolled RNN whose
sequence lengths differ or are not constant: `rnn_var_sl_shift_sequence` (right-aligns each batch
entry's sequence before the reverse direction reads it), `rnn_var_sl_shift_output` (moves the
reverse direction's states back to the start) and `rnn_var_sl_last_output` (each batch entry's
state after its own length). The unrolled cells themselves are gemms and pointwise kernels.

Each is one thread per output element (kernels.indexed_kernel) computing what the operator's
reference (mgxir/ops/rnn.py) computes for it; a length is read as the reference reads it (the
lengths flattened, entry b for batch entry b) and held to [0, sequence length], where the
reference's slices are defined.
"""

from __future__ import annotations

from mgxir.ops.rnn import REVERSE
from mgxir.targets.gpu.data_kernels import coordinates, offset_at, standard_offset
from mgxir.targets.gpu.kernels import Kernel, Tensor, compute_type, indexed_kernel


def _length(lengths: Tensor, batch: str, sequence: int) -> list[str]:
    """Lines that set `n` to batch entry `batch`'s length, held to [0, sequence]."""
    return [
        f"  long long n = (long long)mgx_load(x1 + {standard_offset(lengths, batch)});",
        f"  n = n < 0 ? 0LL : (n > {sequence}LL ? {sequence}LL : n);",
    ]


def shift_sequence_kernel(x: Tensor, lengths: Tensor, output: Tensor) -> Kernel:
    """out[t, b] = x[t - (seq - n_b), b] for the last n_b steps, zeros before them."""
    sequence = x.lens[0]
    coords = coordinates(len(output.lens))
    source = ["(c0 - first)", *coords[1:]]
    body = [*_length(lengths, "c1", sequence), f"  const long long first = {sequence}LL - n;"]
    value = f"(c0 >= first ? ({compute_type(output.dtype)})mgx_load(x0 + {offset_at(x, source)}) : 0)"
    return indexed_kernel("rnn_var_sl_shift_sequence_kernel", [x, lengths], output, body, value)


def _shifted(direction: int, slot: str) -> str:
    """Whether direction slot `slot` ran over right-aligned sequences: all of a reverse RNN's, the
    second of a bidirectional one's."""
    return "true" if direction == REVERSE else f"({slot} == 1)"


def shift_output_kernel(states: Tensor, lengths: Tensor, direction: int, output: Tensor) -> Kernel:
    """out[t, d, b] = states[start + t, d, b] for t < n_b (start = seq - n_b where the direction
    ran right-aligned, else 0), zeros after."""
    sequence = states.lens[0]
    coords = coordinates(len(output.lens))
    source = ["(start + c0)", *coords[1:]]
    body = [
        *_length(lengths, "c2", sequence),
        f"  const long long start = {_shifted(direction, 'c1')} ? {sequence}LL - n : 0LL;",
    ]
    value = f"(c0 < n ? ({compute_type(output.dtype)})mgx_load(x0 + {offset_at(states, source)}) : 0)"
    return indexed_kernel("rnn_var_sl_shift_output_kernel", [states, lengths], output, body, value)


def last_output_kernel(states: Tensor, lengths: Tensor, direction: int, output: Tensor) -> Kernel:
    """out[d, b] = states[0, d, b] where the direction ran right-aligned, else states[n_b - 1, d, b]
    (a length of 0 reads the last step, as the reference's index -1 does)."""
    sequence = states.lens[0]
    coords = coordinates(len(output.lens))
    body = [
        *_length(lengths, "c1", sequence),
        f"  const long long step = {_shifted(direction, 'c0')} ? 0LL : (n > 0 ? n - 1 : {sequence - 1}LL);",
    ]
    value = f"mgx_load(x0 + {offset_at(states, ['step', *coords])})"
    return indexed_kernel("rnn_var_sl_last_output_kernel", [states, lengths], output, body, value)
