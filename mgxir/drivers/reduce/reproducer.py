"""The output: one self-contained reproducer, written atomically.

The file is the lossless program text (`mgx-opt --lossless`: every literal bit for bit, large
literal data in the `.npz` beside it that the text names) under a header of `//` comments: for a
pipeline's bug the first line is `// mgx-opt -p 'PIPELINE'`, which `mgx-opt --run-reproducer`
reads, and the lines after it give the command that replays the bug. The values of main's
parameters (the input's, and the values cut out of the program) are in `OUT.inputs.npz`, which
`mgx-run OUT.mgx --input=@OUT.inputs.npz` reads.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence

import numpy as np

from mgxir.ir.program import Program
from mgxir.text.writer import render, write_atomically

INPUTS_SUFFIX = ".inputs.npz"


def inputs_path(path: str) -> str:
    """Where the reproducer `path`'s inputs go: `prog.mgx` -> `prog.inputs.npz`."""
    stem, extension = os.path.splitext(path)
    return (stem if extension else path) + INPUTS_SUFFIX


def write_reproducer(program: Program, inputs: Mapping[str, np.ndarray], path: str, header: Sequence[str]) -> None:
    """Writes the reproducer, its inputs and (for large literals) its literal sidecar, each
    atomically; the program file last, so that whatever names the others is written after them."""
    from mgxir.drivers.run import _storable

    text, arrays = render(program, lossless=True, output=path)
    if arrays:
        write_atomically(os.path.splitext(path)[0] + ".npz", _npz(arrays))
    if inputs:
        write_atomically(inputs_path(path), _npz({k: _storable(np.asarray(v)) for k, v in inputs.items()}))
    elif os.path.exists(inputs_path(path)):
        os.unlink(inputs_path(path))
    write_atomically(path, "".join(f"// {line}\n" for line in header) + text)


def _npz(arrays: Mapping[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def replay_header(pipeline: str | None, replay: Sequence[str], summary: str) -> list[str]:
    """The header's lines: the pipeline line `--run-reproducer` reads (when there is a pipeline),
    what was reduced, and the replay commands."""
    lines = [f"mgx-opt -p '{pipeline}'"] if pipeline is not None else []
    lines.append(summary)
    lines.extend(f"replay: {command}" for command in replay)
    return lines
