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
