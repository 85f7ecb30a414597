""".npy and .npz files read without trusting them: `--input=@f.npz`, `--input=x=@x.npy` and the
`{npz:FILE:KEY}` sidecars of literals.

`numpy.load` trusts the file: an array header can claim more data than the file holds or the
machine has (it allocates first), a damaged member is found only when it is read, and a `.npz`
member's CRC is checked only when read to its end. Here every header is read first and its size
checked (in Python integers, so no product wraps around) against the bytes the file holds and the
memory the machine can give (`diagnostics.check_allocation`), strings and Python objects are
refused, and every member is read to its end inside the check, so each fault is one
`ArrayFileError` line.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from tokenize import TokenError
from typing import IO

import numpy as np

from mgxir.diagnostics import MgxError, check_allocation

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members, an empty zip
_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}
_SLACK = 64  # bytes a member may hold past its array (alignment padding)


class ArrayFileError(Exception):
    """A file that holds no readable arrays; the message says why, without the file's name."""


def load_arrays(path: str) -> np.ndarray | dict[str, np.ndarray]:
    """The array of a .npy file, or the arrays of a .npz file by name."""
    with _reading():
        with open(path, "rb") as f:
            magic = f.read(len(_NPY_MAGIC))
            if not magic:
                raise ArrayFileError("is empty")
            f.seek(0, 2)
            size = f.tell()
            f.seek(0)
            if magic == _NPY_MAGIC:
                return _read_npy(f, size)
        with NpzArchive(path) as archive:
            return {name: archive.read(name) for name in archive.names}


class NpzArchive:
    """An .npz file opened once, its members read one at a time as they are asked for (a text's
    sidecar holds many literals), each with `load_arrays`' checks."""

    def __init__(self, path: str):
        import zipfile

        self.path = path
        with _reading():
            self.file = open(path, "rb")  # closed by close()
            try:
                magic = self.file.read(len(_NPY_MAGIC))
                if not magic:
                    raise ArrayFileError("is empty")
                if magic == _NPY_MAGIC:
                    raise ArrayFileError("is a .npy file (one array), not a .npz archive")
                if magic[:4] not in _ZIP_MAGICS:
                    raise ArrayFileError("is neither a .npy nor a .npz file")
                self.file.seek(0)
                self.zip = zipfile.ZipFile(self.file)
            except BaseException:
                self.file.close()
                raise
        self.members = {
            (i.filename[:-4] if i.filename.endswith(".npy") else i.filename): i
            for i in self.zip.infolist()
            if not i.filename.endswith("/")  # a folder (ZipInfo.is_dir fails on an empty name)
        }
        self.names = list(self.members)

    def read(self, name: str) -> np.ndarray:
        info = self.members[name]
        with _reading(), self.zip.open(info) as member:
            try:
                array = _read_npy(member, info.file_size)
            except ArrayFileError as e:
                raise ArrayFileError(f"member '{name}' {e}") from None
            # the CRC is checked when a member is read to its end
            if len(member.read(_SLACK + 1)) > _SLACK:
                raise ArrayFileError(f"member '{name}' holds more than its array")
        return array

    def close(self) -> None:
        self.zip.close()
        self.file.close()

    def __enter__(self) -> NpzArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def _reading() -> Iterator[None]:
    """Turns what reading a damaged or missing file raises into ArrayFileError."""
    import zipfile
    import zlib

    try:
        yield
    except IsADirectoryError:
        raise ArrayFileError("is a directory") from None
    except OSError as e:
        raise ArrayFileError(f"cannot be read: {e.strerror or e}") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, UnicodeDecodeError) as e:
        raise ArrayFileError(f"is a damaged .npz file: {e}") from None  # a member name not UTF-8: the last


def _read_npy(f: IO[bytes], size: int) -> np.ndarray:
    """One .npy stream of `size` bytes: the header, checked, then exactly the data it names."""
    try:
        version = np.lib.format.read_magic(f)
        reader = _HEADER_READERS.get(version)
        if reader is None:
            raise ArrayFileError(f"is a .npy file of version {version[0]}.{version[1]}, which is not read here")
        shape, fortran_order, dtype = reader(f)
    except (ValueError, SyntaxError, TokenError, TypeError) as e:  # numpy tokenizes and evaluates the header
        raise ArrayFileError(f"has a damaged .npy header: {e}") from None
    if dtype.hasobject:
        raise ArrayFileError("holds Python objects, not numbers")
    if dtype.kind in ("U", "S", "M", "m") or dtype.fields is not None or dtype.subdtype is not None:
        raise ArrayFileError(f"holds {dtype} values, not numbers")
    if dtype.itemsize == 0:
        raise ArrayFileError(f"holds {dtype} values, not numbers")
    nbytes = math.prod(shape) * dtype.itemsize
    header = _position(f)
    if header + nbytes > size:
        raise ArrayFileError(
            f"holds {max(size - header, 0)} bytes of data, but its header says {dtype} {tuple(shape)} ({nbytes} bytes)"
        )
    try:
        check_allocation(nbytes, f"an array of {dtype} {tuple(shape)}")
    except MgxError as e:
        raise ArrayFileError(e.message) from None
    buffer = bytearray(nbytes)
    view = memoryview(buffer)
    done = 0
    while done < nbytes:
        got = f.readinto(view[done:])  # type: ignore[attr-defined]
        if not got:
            raise ArrayFileError(f"ends after {done} of its {nbytes} bytes of data")
        done += got
    flat = np.frombuffer(buffer, dtype, count=math.prod(shape))
    return flat.reshape(shape, order="F" if fortran_order else "C")


def _position(f: IO[bytes]) -> int:
    try:
        return f.tell()
    except (OSError, AttributeError):
        return 0
