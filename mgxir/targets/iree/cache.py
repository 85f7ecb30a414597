"""The on-disk cache of compiled modules: one `.vmfb` per key, the key a hash of the program, the
device, the compiler flags, the compiler's version, the code that lowers programs to MLIR (and the
CPU for host-tuned CPU code)."""

from __future__ import annotations

import functools
import hashlib
import os
import platform
from importlib import metadata
from pathlib import Path

from mgxir.diagnostics import DiagnosticSink
from mgxir.ir.program import Program
from mgxir.text.parser import read_program
from mgxir.text.writer import write_atomically, write_program

CACHE_ENV = "MGXIR_CACHE_DIR"


def default_dir() -> Path:
    """$MGXIR_CACHE_DIR, else $XDG_CACHE_HOME/mgxir/iree, else ~/.cache/mgxir/iree."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "mgxir" / "iree"


@functools.cache
def compiler_version() -> str:
    """iree-base-compiler's version; where only the runtime is installed (a machine that runs what
    another compiled), the runtime's, which is released with the compiler of the same version."""
    for package in ("iree-base-compiler", "iree-base-runtime"):
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"


@functools.cache
def host_cpu() -> str:
    """The CPU's feature flags: code compiled for `host` runs only on CPUs that have them."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return platform.machine() + ":" + hashlib.sha256(line.encode()).hexdigest()[:16]
    except OSError:
        pass
    return platform.machine() + ":" + platform.processor()


# what decides the MLIR a program lowers to: the lowering, the op definitions and the IR it reads
LOWERING_PACKAGES = ("translate/mlir", "ops", "ir")
MGXIR_ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def lowering_fingerprint(root: Path = MGXIR_ROOT) -> str:
    """A hash of the source of `LOWERING_PACKAGES`: a module compiled from an older lowering (another
    mgxir release, or a working tree since edited) is not taken for the program's."""
    h = hashlib.sha256()
    for package in LOWERING_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            h.update(path.relative_to(root).as_posix().encode() + b"\0")
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def cache_key(source: bytes, device: str, flags: list[str], host_tuned: bool) -> str:
    h = hashlib.sha256(source)
    h.update(f"\0{device}\0{' '.join(flags)}\0iree-base-compiler {compiler_version()}".encode())
    h.update(f"\0lowering {lowering_fingerprint()}".encode())
    if host_tuned:
        h.update(host_cpu().encode())
    return h.hexdigest()[:32]


class ModuleCache:
    def __init__(self, directory: Path | None) -> None:
        self.directory = directory if directory is not None else default_dir()

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.vmfb"

    def get(self, key: str) -> Path | None:
        path = self.path(key)
        return path if path.is_file() else None

    def put(self, key: str, vmfb: bytes) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.path(key)
        write_atomically(path, vmfb)
        return path

    def program_path(self, key: str) -> Path:
        return self.directory / f"{key}.mgx"

    def put_program(self, key: str, program: Program) -> None:
        """The program an MLIR file reads back as, kept beside its module (lossless; large literals
        in an .npz beside it), so that a warm run reads it without MLIR's bindings."""
        self.directory.mkdir(parents=True, exist_ok=True)
        write_program(program, str(self.program_path(key)), lossless=True)

    def program(self, key: str, sink: DiagnosticSink) -> Program | None:
        """The stored program of a module that is in the cache (None where either is missing)."""
        path = self.program_path(key)
        if self.get(key) is None or not path.is_file():
            return None
        return read_program(path, sink)
