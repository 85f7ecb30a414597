"""Writes program text to files: atomically, with an optional sidecar .npz for lossless data."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import numpy as np

from mgxir.diagnostics import MgxError
from mgxir.ir.program import Program
from mgxir.text.printer import PrintOptions, print_program

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import BinaryIO

# pathlib (with fnmatch, urllib.parse, ipaddress) is imported only where a file is written: a tool
# that reads a program and prints it does not pay for it

SIDECAR_THRESHOLD = 1 << 20  # bytes of literal data past which `-o FILE --lossless` uses a sidecar


def user_cache_dir(env: str, name: str) -> Path | None:
    """Where mgxir caches `name` (parsers, kernels): `$env` if set ("off": no disk cache), else
    $XDG_CACHE_HOME/mgxir/NAME, else ~/.cache/mgxir/NAME."""
    from pathlib import Path

    folder = user_cache_folder(env, name)
    return None if folder is None else Path(folder)


def user_cache_folder(env: str, name: str) -> str | None:
    """`user_cache_dir` as a string, without importing pathlib."""
    where = os.environ.get(env)
    if where == "off":
        return None
    if where:
        return where
    return os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "mgxir", name
    )


def write_atomically(path: str | Path, data: str | bytes | Callable[[BinaryIO], object]) -> None:
    """Writes through a temporary file in the same folder and a rename: a reader never sees a
    half-written file, and a failure leaves whatever was there before. `data` may be a function
    that writes to the open file (a sidecar streamed, not built in memory first). A target that
    exists and is no regular file (`-o /dev/null`, a FIFO) is written in place: the rename put a
    regular file where the device was (as root, /dev/null itself)."""
    import tempfile  # here: tempfile imports shutil, random, bz2, lzma; most runs print to stdout
    from pathlib import Path

    target = Path(path)
    if _is_special(target):
        try:
            with open(target, "wb") as f:
                _write_to(f, data)
        except OSError as e:
            raise MgxError(f"cannot write {target}: {e.strerror or e}") from None
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as e:
        raise MgxError(f"cannot write {target}: {e.strerror or e}") from None
    try:
        os.fchmod(fd, _mode_for(target))
        with os.fdopen(fd, "wb") as f:
            _write_to(f, data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as e:
        _remove(tmp)
        raise MgxError(f"cannot write {target}: {e.strerror or e}") from None
    except BaseException:
        _remove(tmp)
        raise


def _write_to(f: BinaryIO, data: str | bytes | Callable[[BinaryIO], object]) -> None:
    if callable(data):
        data(f)
    else:
        f.write(data.encode() if isinstance(data, str) else data)


def _is_special(target: os.PathLike[str]) -> bool:
    import stat

    try:
        mode = os.stat(target).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _mode_for(target: os.PathLike[str]) -> int:
    """The permissions the written file gets: the file's own where it exists, else what `open`
    gives a new file under the umask (mkstemp's temporary is 0600)."""
    import stat

    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_output(data: str | bytes, output: str | None) -> None:
    """Standard output (`output` None or `-`), or the file, written atomically."""
    if output is None or output == "-":
        if isinstance(data, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            sys.stdout.write(data)
            sys.stdout.flush()
    else:
        write_atomically(output, data)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def literal_bytes(program: Program) -> int:
    return sum(
        ins.literal.data.nbytes
        for m in program.modules.values()
        for ins in m
        if ins.is_literal and ins.literal.data is not None
    )


def sidecar_path(output: str) -> str:
    """The sidecar beside an output file: its name with `.npz` for its suffix."""
    stem, _ = os.path.splitext(output)
    return (stem if os.path.basename(stem) else output) + ".npz"


def render(
    program: Program, lossless: bool = False, output: str | None = None, sidecar: str | None = None
) -> tuple[str, dict]:
    """The text to write, and the sidecar arrays (empty when everything is inline)."""
    options = PrintOptions(lossless=lossless or sidecar is not None)
    if options.lossless:
        file = None if output == "-" else output
        if sidecar is None and file is not None and literal_bytes(program) > SIDECAR_THRESHOLD:
            sidecar = sidecar_path(file)
        if sidecar is not None:
            options.sidecar_name = sidecar if file is None else os.path.relpath(sidecar, os.path.dirname(file) or ".")
    text = print_program(program, options)
    return text, (options.sidecar if options.sidecar_name else {})


def write_program(program: Program, output: str | None, lossless: bool = False, sidecar: str | None = None) -> None:
    """Prints to standard output (`output` None or `-`) or writes the file atomically; the sidecar,
    where literal data goes to one, is written first, in one pass over its arrays."""
    text, arrays = render(program, lossless, output, sidecar)
    if arrays:
        target = sidecar if sidecar is not None or output is None else sidecar_path(output)
        assert target is not None  # arrays go to a sidecar only where there is one
        # streamed into the file: a copy in memory first doubled the literals' memory (MemoryError
        # on a program whose literals fit; fuzz/run.py, json)
        write_atomically(target, lambda f: np.savez(f, **arrays))
    if output is None or output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_atomically(output, text)
