"""The tools' guard: user errors exit 1 with one line, a bug in mgxir exits 2 with one line (the
traceback only when asked for), an interrupt 130, a closed pipe quietly 0."""

from __future__ import annotations

import gc

import pytest

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.drivers.common import run_guarded


@pytest.fixture(autouse=True)
def collector_back_on():
    """run_guarded turns the cycle collector off for the life of a tool's process."""
    yield
    gc.enable()


def raising(error: BaseException):
    def body(sink: DiagnosticSink) -> int:
        sink.warn("a warning first")
        raise error

    return body


def test_user_error_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_guarded(raising(MgxError("bad input"))) == 1
    assert capsys.readouterr().err.splitlines() == ["warning: a warning first", "error: bad input"]


def test_internal_error_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MGXIR_TRACEBACK", raising=False)
    assert run_guarded(raising(KeyError("oops"))) == 2
    assert capsys.readouterr().err.splitlines() == [
        "warning: a warning first",
        "internal error: KeyError: 'oops' (set MGXIR_TRACEBACK=1 for the traceback)",
    ]


def test_internal_error_raises_with_traceback_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MGXIR_TRACEBACK", "1")
    with pytest.raises(KeyError):
        run_guarded(raising(KeyError("oops")))


def test_interrupt_and_closed_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_guarded(raising(KeyboardInterrupt())) == 130
    assert capsys.readouterr().err.endswith("interrupted\n")
    assert run_guarded(raising(BrokenPipeError())) == 0
    assert run_guarded(lambda sink: None) == 0


def test_missing_optional_package_names_its_extra(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_guarded(raising(ModuleNotFoundError("No module named 'iree'", name="iree"))) == 1
    err = capsys.readouterr().err
    assert "error: this needs the 'iree' package: pip install 'mgxir[mlir]'" in err
    assert "internal error" not in err


def test_missing_module_of_mgxir_itself_is_a_bug(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_guarded(raising(ModuleNotFoundError("No module named 'mgxir.nowhere'", name="mgxir.nowhere"))) == 2
    assert "internal error: ModuleNotFoundError" in capsys.readouterr().err
