"""Per-instruction timing that targets record while they run (`mgx-run --timing` prints it)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from mgxir.records import FrozenRecord, Record


class TimingRecord(FrozenRecord):
    def __init__(self, instruction: str, operator: str, where: str, seconds: float, note: str = ""):
        object.__setattr__(self, "instruction", instruction)  # the printed name, `@3`
        object.__setattr__(self, "operator", operator)
        object.__setattr__(self, "where", where)  # the target that ran it: `vulkan`, `ref`, ...
        object.__setattr__(self, "seconds", seconds)
        object.__setattr__(self, "note", note)  # e.g. why an instruction did not run on the target


class TimingLog(Record):
    def __init__(self, records: list[TimingRecord] | None = None):
        self.records: list[TimingRecord] = [] if records is None else records

    def render(self) -> str:
        if not self.records:
            return "timing: nothing was timed"
        width = max(len(r.instruction) for r in self.records)
        op_width = max(len(r.operator) for r in self.records)
        lines = []
        for r in self.records:
            line = (
                f"timing: {r.instruction:<{width}}  {r.operator:<{op_width}}  {r.where:<6}  {r.seconds * 1e3:10.4f} ms"
            )
            lines.append(line + (f"  ({r.note})" if r.note else ""))
        totals: dict[str, float] = {}
        for r in self.records:
            totals[r.where] = totals.get(r.where, 0.0) + r.seconds
        summary = ", ".join(f"{where} {seconds * 1e3:.4f} ms" for where, seconds in totals.items())
        lines.append(f"timing: total: {summary}")
        return "\n".join(lines)


_ACTIVE: ContextVar[TimingLog | None] = ContextVar("mgxir_timing", default=None)


@contextlib.contextmanager
def collect_timing() -> Iterator[TimingLog]:
    log = TimingLog()
    token = _ACTIVE.set(log)
    try:
        yield log
    finally:
        _ACTIVE.reset(token)


def record(instruction: str, operator: str, where: str, seconds: float, note: str = "") -> None:
    log = _ACTIVE.get()
    if log is not None:
        log.records.append(TimingRecord(instruction, operator, where, seconds, note))
