"""Lossless text with a sidecar .npz: writing and reading back, next to the one-archive-load-per-literal
reader that mgxir had before (`OneLoadPerLiteral`, measured in the same run) and `np.savez` of the same
arrays alone (the floor for writing).

Usage: VENV/bin/python bench/bench_sidecar.py [--literals 600] [--size 4096] [--instructions 18000]

Two programs: `--literals` literals of `--size` float32 values each (written with `-o`, so their data
goes to a sidecar), and a program of `--instructions` instructions, a third of them literals of 16
values (in the sidecar too) and the rest `add`s of them, as a large model's text is.
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time
from collections.abc import Callable

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.literal import Literal
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.ops import register_all_ops
from mgxir.text import literals, parser
from mgxir.text.parser import read_program
from mgxir.text.writer import write_program


class OneLoadPerLiteral(literals.Sidecars):
    """The reader before: `np.load` of the archive for each literal (each load reads the archive's
    directory, so reading n literals is quadratic in n)."""

    def array(self, file: str, key: str) -> tuple[np.ndarray, str]:
        path = os.path.join(str(self.base_dir), file)
        with np.load(path, allow_pickle=False) as archive:
            if key not in archive:
                raise literals.LiteralSyntaxError(f"sidecar {file} has no array '{key}'")
            return archive[key], path


def _literals_program(count: int, size: int) -> Program:
    program = Program()
    main = program.create_module("main")
    rng = np.random.default_rng(0)
    shape = Shape.make(DType.float, (size,))
    main.add_return([main.add_literal(Literal(shape, rng.random(size, np.float32))) for _ in range(count)])
    return program


def _chain_program(instructions: int) -> Program:
    program = Program()
    main = program.create_module("main")
    rng = np.random.default_rng(0)
    shape = Shape.make(DType.float, (16,))
    last = main.add_literal(Literal(shape, rng.random(16, np.float32)))
    for _ in range((instructions - 1) // 3):
        mid = main.add_instruction("add", [main.add_literal(Literal(shape, rng.random(16, np.float32))), last])
        last = main.add_instruction("add", [mid, mid])
    main.add_return([last])
    return program


def _seconds(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _read(path: str, sidecars: type[literals.Sidecars]) -> float:
    kept = parser.Sidecars
    parser.Sidecars = sidecars  # type: ignore[misc]
    try:
        return _seconds(lambda: read_program(path))
    finally:
        parser.Sidecars = kept  # type: ignore[misc]


def _measure(name: str, program: Program, folder: str) -> None:
    path = os.path.join(folder, f"{name}.mgx")
    sidecar = os.path.join(folder, f"{name}.npz")  # named: the chain's data alone is under the size for one
    write = _seconds(lambda: write_program(program, path, lossless=True, sidecar=sidecar))
    arrays = np.load(sidecar)
    data = {key: arrays[key] for key in arrays.files}
    savez = _seconds(lambda: np.savez(io.BytesIO(), **data))
    count = sum(len(m) for m in program.modules.values())
    size = os.path.getsize(sidecar) / 2**20
    print(f"{name}: {count} instructions, {len(data)} arrays in the sidecar ({size:.1f} MiB)")
    print(f"  write: {write:.3f} s (np.savez of the same arrays into memory: {savez:.3f} s)")
    new = _read(path, literals.Sidecars)
    before = _read(path, OneLoadPerLiteral)
    print(f"  read: {new:.3f} s; one np.load per literal (before): {before:.3f} s ({before / new:.1f}x)")


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_argument("--literals", type=int, default=600)
    arguments.add_argument("--size", type=int, default=4096)
    arguments.add_argument("--instructions", type=int, default=18000)
    options = arguments.parse_args()
    register_all_ops()
    with tempfile.TemporaryDirectory() as folder:
        _measure("literals", _literals_program(options.literals, options.size), folder)
        _measure("chain", _chain_program(options.instructions), folder)


if __name__ == "__main__":
    main()
