"""Progress for work that can take seconds (reading a model, a pass pipeline, an IREE compile, GPU
tuning, a run): a rich progress display on standard error, shown only on a terminal and only once
the work has lasted `DELAY_SECONDS`, so that quick commands, pipes, files and tests see nothing.

    with progress("running passes", total=len(passes)) as advance:
        for p in passes:
            advance(1, p.name)

`set_quiet(True)` (the tools' `-q`) turns it off. rich is imported only when a display is shown.
A module of its own, outside the layers, so that passes, targets and drivers can all report.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TextIO

# how long work runs before its display shows (MGXIR_PROGRESS_DELAY changes it; 0 in tests)
DELAY_SECONDS = float(os.environ.get("MGXIR_PROGRESS_DELAY", "2"))
# where the display goes (a test gives a terminal-like stream); None: sys.stderr at the time
_settings: dict[str, Any] = {"quiet": False, "stream": None, "delay": DELAY_SECONDS}

Advance = Callable[..., None]


def set_quiet(quiet: bool) -> None:
    _settings["quiet"] = quiet


def configure(stream: TextIO | None = None, delay: float = DELAY_SECONDS, quiet: bool = False) -> None:
    """Where and after how long the display shows (tests); `configure()` restores the defaults."""
    _settings.update(stream=stream, delay=delay, quiet=quiet)


def _stream() -> TextIO:
    return _settings["stream"] or sys.stderr


def _shown() -> bool:
    if _settings["quiet"]:
        return False
    try:
        return _stream().isatty()
    except (AttributeError, ValueError):
        return False


def _ignore(steps: int = 1, description: str | None = None) -> None:
    return None


class _Display:
    """One rich Progress shared by the tasks open at a time (a pass inside a pipeline inside a run)."""

    lock = threading.Lock()
    progress: Any = None
    tasks = 0

    @classmethod
    def add(cls, description: str, total: int | None) -> Any:
        with cls.lock:
            if cls.progress is None:
                from rich.console import Console
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    SpinnerColumn,
                    TextColumn,
                    TimeElapsedColumn,
                )

                cls.progress = Progress(
                    SpinnerColumn(),
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    console=Console(file=_stream(), force_terminal=True),
                    transient=True,
                    # the program text goes to standard output unchanged, never through the display
                    redirect_stdout=False,
                )
                cls.progress.start()
            cls.tasks += 1
            return cls.progress.add_task(description, total=total)

    @classmethod
    def remove(cls, task: Any) -> None:
        with cls.lock:
            cls.progress.remove_task(task)
            cls.tasks -= 1
            if cls.tasks == 0:
                cls.progress.stop()
                cls.progress = None


@contextlib.contextmanager
def progress(description: str, total: int | None = None) -> Iterator[Advance]:
    """A task shown after the delay; the function yielded advances it (`advance(1, "now: dce")`)."""
    if not _shown():
        yield _ignore
        return
    state: dict[str, Any] = {"task": None, "completed": 0, "description": description}
    lock = threading.Lock()

    def show() -> None:
        with lock:
            if state.get("done"):
                return
            state["task"] = _Display.add(state["description"], total)
            _Display.progress.update(state["task"], completed=state["completed"])

    def advance(steps: int = 1, now: str | None = None) -> None:
        with lock:
            state["completed"] += steps
            if now is not None:
                state["description"] = f"{description}: {now}"
            if state["task"] is not None:
                _Display.progress.update(state["task"], completed=state["completed"], description=state["description"])

    timer = threading.Timer(_settings["delay"], show)
    timer.daemon = True
    timer.start()
    try:
        yield advance
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            if state["task"] is not None:
                _Display.remove(state["task"])
