"""mgx-verify's result cache: a task's record kept on disk under a content fingerprint of everything
that decides it, so that a run with nothing changed redoes no work.

The key of a result is the SHA-256 of (the program's fingerprint, the pipeline and every other task
option, the target, the target's toolchain versions, mgxir's version and source digest). The
program's fingerprint needs the program, and importing it is much of a task's work, so an input
index maps the input file's content and folder (and every other file its import read: ONNX external
data, literal sidecars, each checked by content) to the fingerprint; an input whose import failed is keyed
by that content instead. A record is written atomically (a temporary file renamed), so workers and
runs share one folder. A timeout is kept (the timeout is part of every key: a run with another
timeout runs again), and so is a task the memory limit stopped and mgxir's refusal of an input;
records of work stopped from outside (dead workers) and refusals that do not depend on the input
(a target missing here, onnxruntime refusing) are never kept: `cacheable` says which are.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from importlib import metadata
from typing import Any

from mgxir.drivers.verify.tasks import TOOLCHAINS, Task, file_digest

CACHE_ENV = "MGXIR_VERIFY_CACHE"  # a folder; "off" keeps nothing


def default_cache_dir() -> str | None:
    from mgxir.text.writer import user_cache_folder

    return user_cache_folder(CACHE_ENV, "verify")


@functools.cache
def mgxir_version() -> str:
    """mgxir's package version and a digest of its source (a change to any pass, reader or target
    is a new version: an editable checkout has the same package version through many changes)."""
    try:
        version = metadata.version("mgxir")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"{version}+{source_digest()}"


@functools.cache
def source_digest() -> str:
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    digest = hashlib.sha256()
    for folder, subfolders, files in os.walk(package):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".lark")):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, package).encode() + b"\0")
                with open(path, "rb") as f:
                    digest.update(f.read())
    return digest.hexdigest()[:16]


@functools.cache
def toolchain(target: str) -> dict[str, str]:
    """The installed versions of the packages that decide `target`'s results."""
    versions = {}
    for package in TOOLCHAINS.get(target, ()):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "absent"
    return versions


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def cacheable(record: dict) -> bool:
    """Whether a record is the task's own outcome (it ran to its end, its timeout or its memory
    limit, and read its input, `reads`), not work stopped from outside (a dead worker) or a refusal
    that says nothing about the input (a target's package missing, onnxruntime refusing): those
    records have no `reads`. mgxir's own refusal of the input (it does not parse, an op MIGraphX
    lacks) is kept: the same input is refused again until mgxir changes."""
    return bool(record.get("reads"))


class ResultCache:
    """Records by key in `directory` (None: a cache that keeps nothing)."""

    def __init__(self, directory: str | None, extra: dict[str, str] | None = None):
        self.directory = directory
        # what else decides every result (the --against file's content, a device's name and driver)
        self.extra = extra or {}
        self.hits = 0

    # -- keys ----------------------------------------------------------------------------------

    def input_key(self, path: str) -> str:
        """The input's content where it lies: two copies of a model in two folders read different
        files beside them (ONNX external data)."""
        return _digest(["input", file_digest(path), os.path.dirname(os.path.abspath(path)), mgxir_version()])

    def result_key(self, program_key: str, task: Task) -> str:
        return _digest(
            [
                "result",
                program_key,
                task.target,
                task.options.as_dict(),
                toolchain(task.target),
                mgxir_version(),
                self.extra,
            ]
        )

    # -- lookups ---------------------------------------------------------------------------------

    def lookup(self, task: Task) -> dict | None:
        """The record kept for the task, its input's path and target set to this task's."""
        if self.directory is None:
            return None
        try:
            input_key = self.input_key(task.input)
        except OSError:
            return None
        entry = self._read("inputs", input_key)
        if entry is None or not self._reads_unchanged(task.input, entry.get("reads", {})):
            return None
        program_key = entry.get("fingerprint") or f"file:{input_key}"
        found = self._read("results", self.result_key(program_key, task))
        if found is None:
            return None
        self.hits += 1
        return {**found, "input": task.input, "target": task.target, "cached": True}

    def store(self, task: Task, record: dict) -> None:
        if self.directory is None or record.get("cached") or not cacheable(record):
            return
        try:
            input_key = self.input_key(task.input)
            folder = os.path.dirname(os.path.abspath(task.input))
            reads = {
                os.path.relpath(path, folder): file_digest(path) for path in record["reads"][1:] if os.path.isfile(path)
            }
        except OSError:
            return
        fingerprint = record.get("fingerprint")
        if fingerprint is None:  # a task that failed before its import ended: keep another task's fingerprint
            fingerprint = (self._read("inputs", input_key) or {}).get("fingerprint")
        self._write("inputs", input_key, {"fingerprint": fingerprint, "reads": reads})
        program_key = fingerprint or f"file:{input_key}"
        kept = {k: v for k, v in record.items() if k not in ("input", "cached")}
        self._write("results", self.result_key(program_key, task), kept)

    def _reads_unchanged(self, path: str, reads: dict[str, str]) -> bool:
        folder = os.path.dirname(os.path.abspath(path))
        for name, digest in reads.items():
            try:
                if file_digest(os.path.join(folder, name)) != digest:
                    return False
            except OSError:
                return False
        return True

    # -- files -----------------------------------------------------------------------------------

    def _path(self, kind: str, key: str) -> str:
        assert self.directory is not None
        return os.path.join(self.directory, kind, key[:2], key + ".json")

    def _read(self, kind: str, key: str) -> dict | None:
        try:
            with open(self._path(kind, key)) as f:
                found = json.load(f)
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) else None

    def _write(self, kind: str, key: str, value: dict) -> None:
        path = self._path(kind, key)
        temp = f"{path}.tmp{os.getpid()}"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(temp, "w") as f:
                json.dump(value, f)
            os.replace(temp, path)
        except OSError:  # a cache that cannot be written only costs time
            with_suppressed_os_error(os.unlink, temp)


def with_suppressed_os_error(function: Any, *arguments: Any) -> None:
    try:
        function(*arguments)
    except OSError:
        pass
