"""Writes inputs for half_rounding.mgx: a and b = a*a*(1 +- 1%) in f16 (b - a*a cancels, so a product
left unrounded changes the difference by many ulp), and x, f32 values around f16's halfway points and
in its subnormal range (ties round to even)."""

import sys

import numpy as np

rng = np.random.default_rng(3)
n = 4096
a = (rng.standard_normal(n) * np.exp2(rng.uniform(-4, 4, n))).astype(np.float16)
b = (a.astype(np.float32) ** 2 * (1 + rng.uniform(-1e-2, 1e-2, n)) + 2.0**-20).astype(np.float16)
bits = rng.integers(0x33000000, 0x477FE000, n, dtype=np.int64).astype(np.uint32)
bits[: n // 2] = (bits[: n // 2] & ~np.uint32(0x1FFF)) | np.uint32(0x1000)  # exactly halfway
x = bits.view(np.float32) * np.where(rng.random(n) < 0.5, -1, 1).astype(np.float32)
np.savez(sys.argv[1], a=a, b=b, x=x)
