"""`--split-input-file` and `--verify-diagnostics` as mlir-opt has them."""

from __future__ import annotations

import dataclasses
import re

from mgxir.diagnostics import Diagnostic
from mgxir.text.split import SPLIT_MARKER, Chunk, split_input

__all__ = ["SPLIT_MARKER", "Chunk", "Expected", "check", "expectations", "split_input"]

_EXPECTED = re.compile(r"//\s*expected-(error|warning|note)(-re)?(@[+-]\d+|@above|@below)?\s*\{\{(.*)\}\}\s*$")


@dataclasses.dataclass
class Expected:
    severity: str
    line: int
    pattern: re.Pattern[str]
    text: str
    where: int  # the line of the annotation
    seen: bool = False


def expectations(chunk: Chunk) -> list[Expected]:
    out: list[Expected] = []
    for i, line in enumerate(chunk.text.split("\n")):
        m = _EXPECTED.search(line)
        if not m:
            continue
        severity, regex, offset, body = m.groups()
        here = chunk.first_line + i
        target = here
        if offset in ("@above",):
            target = here - 1
        elif offset == "@below":
            target = here + 1
        elif offset:
            target = here + int(offset[1:])
        out.append(Expected(severity, target, _pattern(body, bool(regex)), body, here))
    return out


def _pattern(body: str, is_regex: bool) -> re.Pattern[str]:
    if not is_regex:
        return re.compile(re.escape(body))
    parts = re.split(r"\{\{(.*?)\}\}", body)  # odd parts are regular expressions
    return re.compile("".join(p if i % 2 else re.escape(p) for i, p in enumerate(parts)))


def check(found: list[Diagnostic], expected: list[Expected], filename: str) -> list[str]:
    """Problems as messages: diagnostics nobody expected, and expectations nothing produced."""
    problems: list[str] = []
    for d in found:
        line = d.location.line if d.location else 0
        match = next(
            (
                e
                for e in expected
                if not e.seen and e.severity == d.severity and e.line == line and e.pattern.search(d.message)
            ),
            None,
        )
        if match is None:
            problems.append(f"{d.location or filename}: unexpected {d.severity}: {d.message}")
        else:
            match.seen = True
    for e in expected:
        if not e.seen:
            problems.append(f'{filename}:{e.where}: expected {e.severity} "{e.text}" was not produced')
    return problems
