"""Writes inputs for dynamic_ops.mgx: x of the given size, a and b of the given batch sizes."""

import sys

import numpy as np

path, n, h, w, rows_a, rows_b = sys.argv[1], *map(int, sys.argv[2:])
rng = np.random.default_rng(n * 100 + h * 10 + w)
np.savez(
    path,
    x=rng.integers(-4, 4, (n, 4, h, w)).astype(np.float32),  # small integers: ties for argmax/argmin
    a=rng.uniform(-1, 1, (rows_a, 3)).astype(np.float32),
    b=rng.uniform(-1, 1, (rows_b, 3)).astype(np.float32),
)
