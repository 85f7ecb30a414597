"""Finds the program inside MIGraphX log output, so that a bug report's text loads as it is.

Understood: `Run instruction: ` prefixes (MIGRAPHX_TRACE_EVAL), `Pass: Y` and `Module: X, Pass: Y`
headers (MIGRAPHX_TRACE_COMPILE, one program dump after each pass), `Reading: file` lines, and
perf-report suffixes (`: 0.21ms, 52%`). Every other line is log noise and is skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mgxir.diagnostics import MgxError

_RUN = re.compile(r"^\s*Run instruction:\s*")
_PASS = re.compile(r"^\s*(?:Module:\s*(?P<module>[^,]*),\s*)?Pass:\s*(?P<pass>\S+)\s*$")
_PERF = re.compile(r":\s*[-+0-9.eE]+\s*ms,\s*[-+0-9.eE]+\s*%\s*$")
_INSTRUCTION = re.compile(r"^[^\s=]+ = \S")
_MODULE = re.compile(r'^module:\s*"')


@dataclass
class LogSegment:
    after_pass: str | None
    lines: list[str] = field(default_factory=list)
    line_map: list[int] = field(default_factory=list)  # 1-based line in the log for each line
    has_main: bool = False

    @property
    def instruction_count(self) -> int:
        return sum(1 for ln in self.lines if _INSTRUCTION.match(ln))


def split_log(text: str) -> list[LogSegment]:
    segments: list[LogSegment] = [LogSegment(None)]
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        m = _PASS.match(line)
        if m:
            segments.append(LogSegment(m.group("pass")))
            continue
        run = _RUN.match(line)
        if run:
            line = line[run.end() :]
        line = _PERF.sub("", line)
        cur = segments[-1]
        if _MODULE.match(line):
            if line.startswith('module: "main"') and cur.has_main:
                cur = LogSegment(cur.after_pass)
                segments.append(cur)
            cur.has_main = cur.has_main or line.startswith('module: "main"')
            cur.lines.append(line)
            cur.line_map.append(number)
        elif _INSTRUCTION.match(line):
            cur.lines.append(line)
            cur.line_map.append(number)
        elif not line.strip() and cur.lines:
            cur.lines.append("")
            cur.line_map.append(number)
    return [s for s in segments if s.instruction_count]


def program_from_log(text: str, after_pass: str | None = None) -> tuple[str, list[int]]:
    """The program text of one dump in a log (the last one, or the last after `after_pass`),
    and for each of its lines the line number in the log."""
    segments = split_log(text)
    if after_pass is not None:
        segments = [s for s in segments if s.after_pass == after_pass]
        if not segments:
            raise MgxError(f"the log has no program printed after pass '{after_pass}'")
    if not segments:
        raise MgxError("the log contains no program (no lines of the form 'NAME = OP ...')")
    chosen = segments[-1]
    return "\n".join(chosen.lines) + "\n", chosen.line_map
