"""Literal bodies: MIGraphX's `{1, 2}` / `{ ... }` form and mgxir's lossless forms.

Lossless forms (all inside `@literal{...}`; each is one value of the grammar):
  * `{v, v, ...}`     every value in logical order, written so that it reads back bit-exactly
  * `{hex:HEX}`       the raw little-endian bytes of the values in logical order
  * `{npz:FILE:KEY}`  the values live in array KEY of the sidecar FILE (relative to the text)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.format import format_float
from mgxir.ir.literal import Literal
from mgxir.ir.shape import Shape

if TYPE_CHECKING:
    from pathlib import Path

ELIDED = "..."
PRINT_LIMIT = 10  # MIGraphX prints literals of at most this many elements
LOSSLESS_DECIMAL_LIMIT = 64  # past this many elements the lossless form uses hex


class LiteralSyntaxError(ValueError):
    pass


def format_migraphx(lit: Literal) -> str:
    """What MIGraphX prints after `@literal`."""
    if lit.data is None or lit.shape.elements > PRINT_LIMIT:
        return "{ ... }"
    return "{" + ", ".join(_format_values_g6(lit.data, lit.shape.dtype)) + "}"


def _format_values_g6(data: np.ndarray, dtype: DType) -> list[str]:
    flat = data.reshape(-1)
    if dtype is DType.bool:
        return ["1" if v else "0" for v in flat]
    if dtype.is_float:
        return [format_float(float(v)) for v in flat]
    return [str(int(v)) for v in flat]


def _exact_strings(data: np.ndarray, dtype: DType) -> list[str]:
    """Each value as MIGraphX prints it (`%g`) where that reads back bit for bit, else exactly."""
    flat = data.reshape(-1)
    if dtype is DType.bool or not dtype.is_float:
        return _format_values_g6(flat, dtype)
    texts = _format_values_g6(flat, dtype)
    back = values_from_strings(texts, dtype)
    bits = dtype.bits_dtype
    for i in np.flatnonzero(back.view(bits) != flat.view(bits)):
        # numpy: the shortest text that reads back as this float32; the other float types' values
        # are all float64 values, so their repr is exact
        texts[i] = str(flat[i]) if dtype is DType.float else repr(float(flat[i]))
    return texts


def _same_bits(a: np.ndarray, b: np.ndarray, dtype: DType) -> bool:
    if dtype is DType.bool:
        return bool(np.array_equal(a, b))
    return bool(np.array_equal(a.view(dtype.bits_dtype), b.view(dtype.bits_dtype)))


def format_lossless(lit: Literal, sidecar: dict[str, np.ndarray] | None, sidecar_name: str | None, key: str) -> str:
    """An exact literal body. Each value is written as MIGraphX prints it (`%g`) where that reads back
    bit for bit, else exactly, so that the literals MIGraphX prints (at most PRINT_LIMIT values) print
    as MIGraphX prints them wherever its text is exact. Larger literals go to the sidecar's array when
    `sidecar` is given; without one they are decimals up to LOSSLESS_DECIMAL_LIMIT values, then the
    raw bytes in hex (a value no decimal reads back as, a NaN's payload, also takes hex)."""
    if lit.data is None:
        return "{ ... }"
    dtype = lit.shape.dtype
    data = np.ascontiguousarray(lit.data)
    if sidecar is not None and sidecar_name is not None and data.size > PRINT_LIMIT:
        sidecar[key] = data.view(dtype.bits_dtype) if dtype is not DType.bool and not _npz_native(dtype) else data
        return "{npz:" + sidecar_name + ":" + key + "}"
    if data.size <= LOSSLESS_DECIMAL_LIMIT:
        texts = _exact_strings(data, dtype)
        if _same_bits(values_from_strings(texts, dtype), data.reshape(-1), dtype):
            return "{" + ", ".join(texts) + "}"
    return "{hex:" + data.astype(data.dtype.newbyteorder("<"), copy=False).tobytes().hex() + "}"


def _npz_native(dtype: DType) -> bool:
    """numpy's .npz records these dtypes; bf16 and fp8 are stored as their raw bits."""
    return not (dtype.is_fp8 or dtype is DType.bf16)


def values_from_strings(texts: list[str] | tuple, dtype: DType) -> np.ndarray:
    np_dtype = dtype.numpy
    try:
        if dtype is DType.bool:
            return np.array([_parse_bool(t) for t in texts], dtype=np_dtype)
        if dtype.is_float:
            if dtype is DType.double:
                return np.array([float(t) for t in texts], dtype=np.float64)
            return np.array([float(t) for t in texts], dtype=np.float64).astype(np_dtype)
        values = [int(t) for t in texts]
    except (ValueError, TypeError) as e:
        raise LiteralSyntaxError(f"bad {dtype.type_name} literal value: {e}") from None
    info = np.iinfo(np_dtype)
    for v in values:
        if not info.min <= v <= info.max:
            raise LiteralSyntaxError(f"literal value {v} does not fit {dtype.type_name}")
    return np.array(values, dtype=np_dtype)


def _parse_bool(t: str) -> bool:
    if t in ("1", "true"):
        return True
    if t in ("0", "false"):
        return False
    raise ValueError(f"'{t}' is not 0 or 1")


def literal_from_items(
    items: tuple, shape: Shape, base_dir: str | Path | None, sidecars: Sidecars | None = None
) -> Literal:
    """A Literal from the items of a parsed literal body; `sidecars` holds the archives a program's
    text names, each opened once (a reader of one literal opens its own)."""
    if shape.is_tuple or shape.is_dynamic:
        raise LiteralSyntaxError("a literal needs a static shape")
    dtype = shape.dtype
    n = shape.elements
    if len(items) == 1 and items[0] == ELIDED:
        return Literal(shape, None)
    if len(items) == 1 and isinstance(items[0], str) and items[0].startswith("hex:"):
        try:
            raw = bytes.fromhex(items[0][4:])
        except ValueError:
            raise LiteralSyntaxError("bad hex digits in literal") from None
        itemsize = dtype.itemsize
        if len(raw) != n * itemsize:
            raise LiteralSyntaxError(f"hex literal has {len(raw)} bytes, the shape needs {n * itemsize}")
        data = np.frombuffer(raw, dtype=dtype.numpy.newbyteorder("<") if itemsize > 1 else dtype.numpy)
        return Literal(shape, data.astype(dtype.numpy))
    if len(items) == 1 and isinstance(items[0], str) and items[0].startswith("npz:"):
        if sidecars is not None:
            return _from_sidecar(items[0][4:], shape, sidecars)
        with Sidecars(base_dir) as own:
            return _from_sidecar(items[0][4:], shape, own)
    if not all(isinstance(t, str) for t in items):
        raise LiteralSyntaxError("literal values must be numbers")
    if len(items) != n:
        raise LiteralSyntaxError(f"literal has {len(items)} values, its shape has {n} elements")
    return Literal(shape, values_from_strings(items, dtype))


class Sidecars:
    """The sidecar .npz archives a text names, each opened once and its arrays read as literals ask
    for them: reading a program is linear in its literals (numpy's `np.load` of an archive reads its
    whole directory, and `key in archive` scans a list, so one load per literal is quadratic)."""

    def __init__(self, base_dir: str | Path | None):
        self.base_dir = base_dir
        self._archives: dict[str, tuple[Any, str]] = {}  # file -> (NpzArchive, path)

    def __enter__(self) -> Sidecars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for archive, _ in self._archives.values():
            archive.close()
        self._archives.clear()

    def array(self, file: str, key: str) -> tuple[np.ndarray, str]:
        """Array `key` of sidecar `file` (relative to the text's folder), and the archive's path;
        read by mgxir.arrayfiles: sizes checked against the file and memory, a damaged, empty or
        .npy file, Python objects and strings are one line."""
        from mgxir.arrayfiles import ArrayFileError

        archive, path = self._archives.get(file) or self._open(file)
        if key not in archive.members:
            raise LiteralSyntaxError(f"sidecar {file} has no array '{key}'")
        try:
            return archive.read(key), path
        except ArrayFileError as e:
            raise LiteralSyntaxError(f"sidecar {file} {e}") from None

    def _open(self, file: str) -> tuple[Any, str]:
        from mgxir.arrayfiles import ArrayFileError, NpzArchive

        path = file if os.path.isabs(file) or self.base_dir is None else os.path.join(self.base_dir, file)
        try:
            archive = NpzArchive(path)
        except ArrayFileError as e:
            raise LiteralSyntaxError(f"sidecar {file} {e}") from None
        self._archives[file] = opened = (archive, path)
        return opened


def _from_sidecar(ref: str, shape: Shape, sidecars: Sidecars) -> Literal:
    file, sep, key = ref.rpartition(":")
    if not sep or not file:
        raise LiteralSyntaxError("expected npz:FILE:KEY")
    data, path = sidecars.array(file, key)
    dtype = shape.dtype
    if data.dtype != dtype.numpy:
        if data.dtype == dtype.bits_dtype:
            data = data.view(dtype.numpy)
        else:
            raise LiteralSyntaxError(f"sidecar array '{key}' has dtype {data.dtype}, the shape needs {dtype.type_name}")
    if data.size != shape.elements:
        raise LiteralSyntaxError(
            f"sidecar array '{key}' has {data.size} values, the shape has {shape.elements} elements"
        )
    return Literal(shape, data, source=path)
