"""What the drivers share: error reporting with exit codes, and reading and writing the tools' files."""

from __future__ import annotations

import gc
import importlib
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.ops import register_all_ops
from mgxir.stack import with_room
from mgxir.targets.base import target_ops_modules

T = TypeVar("T")


# Operators that targets define for their compiled programs (gpu::code_object, gpu::gemm, ...), so
# that a tool reads such a program back with its shapes checked: modules imported by every tool
# (from the table of targets).
TARGET_OPS: tuple[str, ...] = target_ops_modules()


def register_target_ops() -> None:
    for module in TARGET_OPS:
        importlib.import_module(module)


# The optional dependencies (pyproject's extras) by top-level package: a format or target whose
# package is not installed is a user's one-line error naming the extra, not an internal error.
OPTIONAL_PACKAGES: dict[str, str] = {
    "iree": "mlir",
    "onnx": "onnx",
    "onnxruntime": "onnx",
    "vulkan": "vulkan",
    "cmeel": "spirv",
    "cuda": "cuda",
    "nvmath": "cuda",
    "cudnn": "cuda",
}


def run_guarded(body: Callable[[DiagnosticSink], int | None]) -> int:
    """Runs a tool's body: user errors print `file:line:col: error: ...` and give exit code 1;
    a bug in mgxir prints one line (the traceback only with MGXIR_TRACEBACK=1) and exit code 2."""
    # A tool lives for one command: Python's cycle collector would only rescan the whole IR
    # (instructions link to each other) again and again, so it stays off and exit frees everything.
    gc.disable()
    register_all_ops()
    register_target_ops()
    sink = DiagnosticSink()
    try:
        code = in_deep_stack(lambda: body(sink)) or 0
        sink.flush()
        return code
    except MgxError as e:
        sink.drop_superseded(e.diagnostic)
        sink.flush()
        print(e.render(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except ModuleNotFoundError as e:
        extra = OPTIONAL_PACKAGES.get((e.name or "").split(".")[0])
        if extra is None:
            return _internal_error(e, sink)
        sink.flush()
        print(f"error: this needs the '{e.name}' package: pip install 'mgxir[{extra}]'", file=sys.stderr)
        return 1
    except RecursionError:
        sink.flush()
        print("error: the program nests too deeply for mgxir (modules inside modules)", file=sys.stderr)
        return 1
    except Exception as e:  # a bug in mgxir, not in the input
        return _internal_error(e, sink)


def _internal_error(e: Exception, sink: DiagnosticSink) -> int:
    if os.environ.get("MGXIR_TRACEBACK"):
        raise e
    sink.flush()
    print(f"internal error: {type(e).__name__}: {e} (set MGXIR_TRACEBACK=1 for the traceback)", file=sys.stderr)
    return 2


# Modules nest (`if` branches inside `if` branches) and the verifier, printer and interpreter walk
# them recursively: a thread with a deep stack runs thousands of levels.
DEEP_STACK_BYTES = 512 << 20
DEEP_RECURSION_LIMIT = 60_000


def in_deep_stack(work: Callable[[], T]) -> T:
    """`work()` on a thread with a deep stack and recursion limit; its exception is re-raised here."""
    outcome: list = []

    def target() -> None:
        try:
            outcome.append((True, with_room(work)))  # mgxir.stack says why
        except BaseException as e:
            outcome.append((False, e))

    previous_size = threading.stack_size(DEEP_STACK_BYTES)
    previous_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous_limit, DEEP_RECURSION_LIMIT))
    try:
        thread = threading.Thread(target=target, name="mgxir-driver", daemon=True)
        thread.start()
    finally:
        threading.stack_size(previous_size)
    try:
        thread.join()
    finally:
        sys.setrecursionlimit(previous_limit)
    succeeded, value = outcome[0]
    if not succeeded:
        raise value
    return value


def read_text(path: str) -> str:
    """A whole input file as text (`-` reads standard input)."""
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        raise MgxError(f"cannot read {path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise MgxError(f"{path} is not UTF-8 text") from None


def check_output_path(output: str | None) -> None:
    """Refuses an output file that cannot be written, before any work is done."""
    if output is None or output == "-":
        return
    from pathlib import Path  # only with -o: a plain run does not import pathlib (mgxir.text.writer)

    folder = Path(output).parent
    if not folder.is_dir():
        raise MgxError(f"cannot write {output}: folder '{folder}' does not exist")
    if Path(output).is_dir():
        raise MgxError(f"cannot write {output}: it is a folder")


def load_entry(reference: str) -> Any:
    """The object a plug-in table names as "package.module:attribute", imported on first use."""
    module_name, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def keeps_literals(lossless: bool, elide_literals: bool, sidecar: str | None = None) -> bool:
    """Whether a tool writes every literal value (the default: what it writes reads back as the same
    program), or prints them as MIGraphX does, when asked with `--elide-literals`."""
    if elide_literals and (lossless or sidecar is not None):
        flag = "--lossless" if lossless else "--sidecar"
        raise MgxError(f"{flag} keeps every literal value: not with --elide-literals")
    return not elide_literals
