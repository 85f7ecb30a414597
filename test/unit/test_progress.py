"""Progress (mgxir.progress): shown on a terminal once work has lasted the delay, never in a pipe
or a file, never with -q; rich is imported only when a display is shown."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mgxir import progress

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _defaults():
    yield
    progress.configure()


def test_shown_on_a_terminal_after_the_delay() -> None:
    screen = Terminal()
    progress.configure(stream=screen, delay=0.0)
    with progress.progress("passes", total=2) as advance:
        time.sleep(0.3)
        advance(1, "dce")
        time.sleep(0.3)
    assert "passes" in screen.getvalue()


@pytest.mark.parametrize(
    ("stream", "delay", "quiet"),
    [(Terminal(), 0.0, True), (io.StringIO(), 0.0, False), (Terminal(), 5.0, False)],
    ids=["quiet", "not a terminal", "quick work"],
)
def test_not_shown(stream: io.StringIO, delay: float, quiet: bool) -> None:
    progress.configure(stream=stream, delay=delay, quiet=quiet)
    with progress.progress("passes") as advance:
        time.sleep(0.2)
        advance(1, "dce")
    assert stream.getvalue() == ""


def _tool_on_a_terminal(*args: str) -> bytes:
    """A tool's standard error when it is a terminal (a pty), with no delay before the display."""
    controller, terminal = pty.openpty()
    env = {**os.environ, "MGXIR_PROGRESS_DELAY": "0"}
    env = {k: v for k, v in env.items() if not k.startswith("COVERAGE_")}
    done = subprocess.run([str(BIN / "mgx-opt"), *args], stdout=subprocess.PIPE, stderr=terminal, env=env, timeout=60)
    os.close(terminal)
    seen = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(controller)
    assert done.returncode == 0
    assert done.stdout.startswith(b'module: "main"')
    return seen


def test_the_tools_show_it_on_a_terminal_and_q_silences_it() -> None:
    example = str(ROOT / "examples" / "fuse.mgx")
    assert b"passes" in _tool_on_a_terminal(example, "-p", "fuse")
    assert _tool_on_a_terminal(example, "-p", "fuse", "-q") == b""


def test_standard_output_is_left_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """The program text written while the display is up goes to standard output, not into the display."""
    screen = Terminal()
    progress.configure(stream=screen, delay=0.0)
    with progress.progress("writing"):
        time.sleep(0.3)
        print('module: "main"')
    assert capsys.readouterr().out == 'module: "main"\n'
    assert "main" not in screen.getvalue()
