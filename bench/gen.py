"""Generates large programs for the benchmarks: a chain of add/mul/tanh over one parameter."""

from __future__ import annotations


def chain_program(n: int, lens: tuple[int, ...] = (4, 8)) -> str:
    """`n` instructions (parameters and the return included) as MIGraphX prints them."""
    shape = f"float_type, {{{', '.join(map(str, lens))}}}, {{{', '.join(map(str, _strides(lens)))}}}"
    lines = ['module: "main"', f"x = @param:x -> {shape}", f"y = @param:y -> {shape}"]
    prev = "x"
    for i in range(2, n - 1):
        kind = i % 3
        if kind == 0:
            lines.append(f"@{i} = add({prev},y) -> {shape}")
        elif kind == 1:
            lines.append(f"@{i} = mul({prev},{prev}) -> {shape}")
        else:
            lines.append(f"@{i} = tanh({prev}) -> {shape}")
        prev = f"@{i}"
    lines.append(f"@{n - 1} = @return({prev})")
    return "\n".join(lines) + "\n\n\n"


def _strides(lens: tuple[int, ...]) -> list[int]:
    out = [1] * len(lens)
    for i in range(len(lens) - 2, -1, -1):
        out[i] = out[i + 1] * lens[i + 1]
    return out
