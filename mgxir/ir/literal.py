"""Literal data: a shape and its values in logical (row-major over lens) order, or elided."""

from __future__ import annotations

import numpy as np

from mgxir.ir.shape import Shape


class Literal:
    """A constant. `data` has dtype `shape.dtype.numpy` and shape `shape.lens`; None when elided.

    MIGraphX prints literals of more than ten elements as `{ ... }`: such a literal loads as elided,
    keeps its shape, and prints back elided.
    """

    __slots__ = ("data", "digest", "shape", "source")

    def __init__(self, shape: Shape, data: np.ndarray | None, source: str | None = None):
        self.shape = shape
        if data is not None:
            data = np.asarray(data)
            want = shape.dtype.numpy
            if data.dtype != want:
                data = data.astype(want)
            # MIGraphX's empty literal has no lens (and no elements): its data stays an empty list
            data = data.reshape(shape.lens) if shape.lens or data.size else data.reshape(0)
        self.data = data
        self.source = source  # the sidecar file the data came from, if any
        self.digest: str | None = None  # the data's digest, once mgxir.ir.fingerprint has computed it

    @property
    def elided(self) -> bool:
        return self.data is None

    @property
    def elements(self) -> int:
        return self.shape.elements

    def __repr__(self) -> str:
        return f"Literal({self.shape!r}, {'elided' if self.data is None else self.data.ravel()[:10]!r})"
