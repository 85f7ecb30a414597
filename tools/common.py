"""What the three command-line front ends share: error reporting and atomic output files."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable

from mgxir.diagnostics import DiagnosticSink, MgxError


def run_guarded(body: Callable[[DiagnosticSink], int | None]) -> int:
    """Runs a tool's body: user errors print `file:line:col: error: ...` and give exit code 1;
    a bug in mgxir prints one line (the traceback only with MGXIR_TRACEBACK=1) and exit code 2."""
    # A tool lives for one command: Python's cycle collector would only rescan the whole IR
    # (instructions link to each other) again and again, so it stays off and exit frees everything.
    gc.disable()
    sink = DiagnosticSink()
    try:
        code = body(sink) or 0
        sink.flush()
        return code
    except MgxError as e:
        sink.flush()
        print(e.render(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug in mgxir, not in the input
        if os.environ.get("MGXIR_TRACEBACK"):
            raise
        sink.flush()
        print(
            f"internal error: {type(e).__name__}: {e} (set MGXIR_TRACEBACK=1 for the traceback)",
            file=sys.stderr,
        )
        return 2
