"""MLIR bytecode: writing with a pinned format version and a producer string naming mgxir's and MLIR's
versions; reading only what this MLIR version wrote (bytecode does not load across MLIR versions:
dialect attributes and op encodings change between them).

The header is `ML\\xefR`, the format version as a prefix varint, then the producer as a
NUL-terminated string; sections follow with their own lengths, so the producer can be replaced."""

from __future__ import annotations

import functools
import io
import re
from importlib import metadata

from iree.compiler import ir

from mgxir.diagnostics import MgxError

MAGIC = b"ML\xefR"
VERSIONS = range(0, 7)  # the bytecode format versions MLIR 24 writes
_MLIR_PRODUCER = re.compile(r"MLIR\s*([0-9][^\s)]*)")


def mgxir_version() -> str:
    try:
        return metadata.version("mgxir")
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def mlir_version() -> str:
    """The version of the MLIR inside iree.compiler, as its own bytecode writer names it."""
    with ir.Context(), ir.Location.unknown():
        buffer = io.BytesIO()
        ir.Module.create().operation.write_bytecode(buffer)
    found = _MLIR_PRODUCER.search(read_header(buffer.getvalue())[1])
    assert found is not None
    return found.group(1)


def producer() -> str:
    return f"mgxir {mgxir_version()} (MLIR {mlir_version()})"


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    """MLIR's prefix varint: the trailing zero bits of the first byte say how many bytes follow."""
    first = data[at]
    if first == 0:
        return int.from_bytes(data[at + 1 : at + 9], "little"), at + 9
    extra = (first & -first).bit_length() - 1
    value = int.from_bytes(data[at : at + 1 + extra], "little") >> (extra + 1)
    return value, at + 1 + extra


def is_bytecode(data: bytes) -> bool:
    return data.startswith(MAGIC)


def read_header(data: bytes) -> tuple[int, str, int]:
    """(format version, producer, offset of the first section)."""
    version, at = _read_varint(data, len(MAGIC))
    end = data.index(b"\0", at)
    return version, data[at:end].decode("utf-8", "replace"), end + 1


def write_bytecode(module: ir.Module, version: int | None = None) -> bytes:
    if version is not None and version not in VERSIONS:
        raise MgxError(f"--bytecode-version must be {VERSIONS.start} to {VERSIONS.stop - 1}, not {version}")
    buffer = io.BytesIO()
    try:
        module.operation.write_bytecode(buffer, desired_version=version)
    except ValueError as e:
        raise MgxError(f"cannot write bytecode version {version}: {e}") from None
    data = buffer.getvalue()
    _, after_version = _read_varint(data, len(MAGIC))
    _, _, body = read_header(data)
    return data[:after_version] + producer().encode() + b"\0" + data[body:]


def check_readable(data: bytes, filename: str) -> None:
    """Refuses bytecode that another MLIR version wrote, naming both versions."""
    try:
        version, written_by, _ = read_header(data)
    except (IndexError, ValueError):
        raise MgxError(f"{filename}: not a complete MLIR bytecode file") from None
    found = _MLIR_PRODUCER.search(written_by)
    theirs = found.group(1) if found else None
    ours = mlir_version()
    if theirs != ours:
        raise MgxError(
            f"{filename}: written by MLIR {theirs or 'of an unknown version'} (producer '{written_by}'), "
            f"but this mgxir reads MLIR {ours} bytecode: bytecode does not load across MLIR versions; "
            "translate the program again with this version"
        )
    if version not in VERSIONS:
        raise MgxError(f"{filename}: bytecode format version {version} is not one MLIR {ours} reads")
