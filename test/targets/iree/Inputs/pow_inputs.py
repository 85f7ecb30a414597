"""Writes inputs for pow.mgx: a, b (and h, g in f16) pair bases and exponents whose C pow is exact
(zeros, infinities, NaNs, +-1, negative bases with fractional exponents); c, d pair negative bases
with integral exponents and positive bases with fractional ones."""

import sys

import numpy as np

inf, nan = np.inf, np.nan
exponents = [-inf, -3, -2, -0.5, 0, 0.5, 2, 3, inf, nan]
exact = [(b, e) for b in [-inf, -1, -0.0, 0.0, 1, inf, nan] for e in exponents]
exact += [(b, e) for b in [-2, -0.5] for e in [-0.5, 0.5]]
exact += [(b, e) for b in [-2, -0.5, 0.5, 2] for e in [-inf, inf]]
finite = [(b, e) for b in [-2, -0.5, -3] for e in [-3, -2, -1, 1, 2, 3]]
finite += [(b, e) for b in [0.5, 2, 3] for e in [-2.5, -0.5, 0.5, 2.5]]
a, b = (np.array(column, np.float32) for column in zip(*exact))
c, d = (np.array(column, np.float32) for column in zip(*finite))
np.savez(sys.argv[1], a=a, b=b, c=c, d=d, h=a.astype(np.float16), g=b.astype(np.float16))
