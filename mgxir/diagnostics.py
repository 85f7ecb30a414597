"""Errors and warnings that point at a place in the source text."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from mgxir.records import FrozenRecord, Record


class Location(FrozenRecord):
    """A 1-based line and column in a named source."""

    __slots__ = ("column", "file", "line")

    file: str
    line: int
    column: int

    def __init__(self, file: str, line: int, column: int = 1):
        object.__setattr__(self, "file", file)
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "column", column)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class Diagnostic(Record):
    __slots__ = ("location", "message", "severity", "source_line")

    def __init__(self, severity: str, message: str, location: Location | None = None, source_line: str | None = None):
        self.severity = severity  # "error", "warning" or "note"
        self.message = message
        self.location = location
        self.source_line = source_line

    def render(self) -> str:
        """`file:line:col: error: message`, then the source line and a caret under the column."""
        head = f"{self.location}: " if self.location else ""
        text = f"{head}{self.severity}: {self.message}"
        if self.location and self.source_line is not None:
            line = self.source_line.rstrip("\r\n").expandtabs(1)
            caret = " " * (max(self.location.column, 1) - 1) + "^"
            text += f"\n{line}\n{caret}"
        return text


class MgxError(Exception):
    """An error in the user's input or request; tools print it and exit with status 1."""

    def __init__(self, message: str, location: Location | None = None, source_line: str | None = None):
        super().__init__(message)
        self.diagnostic = Diagnostic("error", message, location, source_line)

    @property
    def message(self) -> str:
        return self.diagnostic.message

    @property
    def location(self) -> Location | None:
        return self.diagnostic.location

    def render(self) -> str:
        return self.diagnostic.render()

    def __str__(self) -> str:
        return self.render()


_CONTROL_ESCAPES = {c: repr(chr(c))[1:-1] for c in (*range(0x20), 0x7F)}


def one_line(text: str) -> str:
    """`text` with its control characters written as Python escapes (a newline as \\n): for a
    message that quotes what a file holds, which must stay one line."""
    return text.translate(_CONTROL_ESCAPES)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`; did you mean 'relu'?` for the closest of `choices` to a misspelt `word` (difflib's ratio of
    at least 0.7: foo_op is not taken for loop), or an empty string when none is close."""
    import difflib  # on an error only

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.7)
    return f"; did you mean '{close[0]}'?" if close else ""


class DiagnosticSink(Record):
    """Collects warnings; errors are raised as MgxError."""

    def __init__(self, warnings: list[Diagnostic] | None = None, seen: set[str] | None = None):
        self.warnings: list[Diagnostic] = [] if warnings is None else warnings
        self.seen: set[str] = set() if seen is None else seen

    def warn(
        self,
        message: str,
        location: Location | None = None,
        source_line: str | None = None,
        once_key: str | None = None,
    ) -> None:
        if once_key is not None:
            if once_key in self.seen:
                return
            self.seen.add(once_key)
        self.warnings.append(Diagnostic("warning", message, location, source_line))

    def drop_superseded(self, error: Diagnostic) -> None:
        """Forgets the warnings at the line an error points at: the error says what is wrong there,
        once (a misspelt operator is kept with a warning, then refused by the verifier)."""
        where = error.location
        if where is not None:
            self.warnings = [
                w
                for w in self.warnings
                if w.location is None or (w.location.file, w.location.line) != (where.file, where.line)
            ]

    def flush(self, stream=None) -> None:
        stream = stream or sys.stderr
        for w in self.warnings:
            print(w.render(), file=stream)
        self.warnings.clear()


# -- memory: what the machine can still give --------------------------------------------------------

_CGROUP_LIMITS = (
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),  # cgroup v2
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),  # v1
)


def _read_number(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max" is no limit


def process_memory() -> tuple[int, int]:
    """(resident bytes, address-space bytes) of this process, from /proc/self/status."""
    found = {"VmRSS:": 0, "VmSize:": 0}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                words = line.split()
                if words and words[0] in found:
                    found[words[0]] = int(words[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return found["VmRSS:"], found["VmSize:"]


def memory_limits() -> dict[str, int]:
    """The bytes this process may still allocate under each limit that applies: physical memory
    less what the process holds, the address-space limit (RLIMIT_AS, `ulimit -v`) less the address
    space in use, and the cgroup's limit less the cgroup's use."""
    import os
    import resource

    resident, address_space = process_memory()
    limits: dict[str, int] = {}
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        limits["physical memory"] = max(physical - resident, 0)
    except (ValueError, OSError, AttributeError):
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limits["the address-space limit (ulimit -v)"] = max(soft - address_space, 0)
    for limit_path, usage_path in _CGROUP_LIMITS:
        limit = _read_number(limit_path)
        if limit is not None and limit < 1 << 60:
            limits["the cgroup's memory limit"] = max(limit - (_read_number(usage_path) or 0), 0)
            break
    return limits


def available_memory() -> tuple[int, str]:
    """The bytes this process may still allocate, and the limit that sets it."""
    limits = memory_limits()
    if not limits:
        return 1 << 62, "no limit"
    name = min(limits, key=limits.__getitem__)
    return limits[name], name


def check_allocation(nbytes: int, what: str, location: Location | None = None, source_line: str | None = None) -> None:
    """Refuses, before anything is allocated, `what` needing `nbytes` (a Python int: sizes are
    multiplied out without wrapping around) when the machine cannot give that much."""
    available, limit = available_memory()
    if nbytes > available:
        raise MgxError(
            f"{what} needs {_bytes(nbytes)}, more than the {_bytes(available)} this process can still allocate "
            f"(under {limit})",
            location,
            source_line,
        )


def _bytes(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}" if n < 1 << 70 else f"{n} bytes"
    return f"{n} bytes"
