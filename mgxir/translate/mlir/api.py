"""Entry points of the MLIR translation: program -> MLIR text or bytecode, MLIR file -> program."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path

from iree.compiler import ir

from mgxir.diagnostics import DiagnosticSink, Location, MgxError, available_memory, process_memory
from mgxir.ir.program import Program
from mgxir.text.parser import parse_program
from mgxir.text.printer import print_program
from mgxir.text.split import SPLIT_MARKER, split_input
from mgxir.translate.mlir.bytecode import check_readable, is_bytecode, write_bytecode
from mgxir.translate.mlir.lower import to_mlir
from mgxir.translate.mlir.readback import from_mlir
from mgxir.verifier import verify

MLIR_SUFFIXES = frozenset({".mlir", ".mlirbc"})
_FILE_LINE_COL = re.compile(r'loc\("[^"]*":(\d+):(\d+)')


def mlir_text(program: Program, sink: DiagnosticSink | None = None) -> str:
    module = to_mlir(program, sink)
    with module.context:
        return module.operation.get_asm(assume_verified=True)  # verified once, after lowering


def mlir_bytecode(program: Program, version: int | None = None, sink: DiagnosticSink | None = None) -> bytes:
    module = to_mlir(program, sink)
    with module.context:
        return write_bytecode(module, version)


def mlir_text_of_chunks(text: str, filename: str, sink: DiagnosticSink) -> str:
    """`--split-input-file`: each `// -----` separated program translated on its own, the modules
    joined by the same marker."""
    outputs = []
    for chunk in split_input(text):
        program = parse_program(chunk.text, filename, sink=sink, line_map=chunk.line_map())
        verify(program, sink)
        outputs.append(chunk.labelled(mlir_text(program, sink)))
    return f"{SPLIT_MARKER}\n".join(outputs)


def programs_of_mlir_chunks(text: str, filename: str, sink: DiagnosticSink) -> str:
    """`--split-input-file --from-mlir`: each `// -----` separated module read back on its own, the
    programs printed and joined by the same marker."""
    outputs = []
    for chunk in split_input(text):
        program = program_from_mlir(chunk.text.encode(), filename)
        verify(program, sink)
        outputs.append(chunk.labelled(print_program(program)))
    return f"{SPLIT_MARKER}\n".join(outputs)


def read_bytes(path: str) -> tuple[bytes, str]:
    """A file's bytes and the name to report it by (`-` reads standard input)."""
    if path == "-":
        return sys.stdin.buffer.read(), "<stdin>"
    try:
        return Path(path).read_bytes(), path
    except OSError as e:
        raise MgxError(f"cannot read {path}: {e.strerror or e}") from None


def parse_mlir(data: bytes, filename: str, context: ir.Context) -> ir.Module:
    """A module from MLIR text or bytecode, in `context`; MLIR's diagnostics become one error.
    The data is parsed in a child process first: MLIR's C++ readers abort or corrupt the heap on
    some damaged files (bytecode above all), which must end the child, not this process."""
    if is_bytecode(data):
        check_readable(data, filename)
    _check_in_child(data, filename)
    with context:
        try:
            return ir.Module.parse(data if is_bytecode(data) else data.decode("utf-8"))
        except UnicodeDecodeError:
            raise MgxError(f"{filename}: neither MLIR text (UTF-8) nor MLIR bytecode") from None
        except ir.MLIRError as e:
            first = e.error_diagnostics[0] if e.error_diagnostics else None
            if first is None:
                raise MgxError(f"{filename}: {e}") from None
            found = _FILE_LINE_COL.search(str(first.location))
            if found is None or is_bytecode(data):
                raise MgxError(f"{filename}: {first.message}") from None
            line, column = int(found.group(1)), int(found.group(2))
            lines = data.decode("utf-8", "replace").splitlines()
            source_line = lines[line - 1] if 0 < line <= len(lines) else None
            raise MgxError(first.message, Location(filename, line, column), source_line) from None


CHILD_SECONDS = 60  # a parse that takes longer is a hang (fuzzed bytecode made MLIR loop forever)


def _check_in_child(data: bytes, filename: str) -> None:
    """Parses `data` in a forked child (with the memory this process may still use, and a time
    limit); a child killed by a signal is one error line. Where there is no fork, nothing is checked."""
    if not hasattr(os, "fork"):
        return
    import resource
    import signal

    available, _ = available_memory()
    pid = os.fork()
    if pid == 0:  # the child: its own diagnostics (LLVM's fatal-error text) are not the user's
        status = 1
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            _, address_space = process_memory()
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_AS, (address_space + available, resource.RLIM_INFINITY))
            signal.alarm(CHILD_SECONDS)
            context = ir.Context()
            context.enable_multithreading(False)
            with context:
                with contextlib.suppress(ir.MLIRError, UnicodeDecodeError):
                    ir.Module.parse(data if is_bytecode(data) else data.decode("utf-8"))
            status = 0
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number == signal.SIGALRM:
            raise MgxError(f"{filename}: MLIR's reader did not finish within {CHILD_SECONDS} s")
        kind = "bytecode" if is_bytecode(data) else "text"
        raise MgxError(
            f"{filename}: MLIR's {kind} reader crashed on this file ({signal.Signals(number).name}): "
            "it is damaged, or not what this MLIR version writes"
        )
    if os.WEXITSTATUS(status) != 0:
        raise MgxError(f"{filename}: MLIR's reader ran out of memory or failed on this file")


def program_from_mlir(data: bytes, filename: str) -> Program:
    """The mgxir program of MLIR (text or bytecode) that `--to-mlir`/`--to-mlirbc` wrote."""
    context = ir.Context()
    module = parse_mlir(data, filename, context)
    text = "" if is_bytecode(data) else data.decode("utf-8", "replace")
    with context:
        return from_mlir(module, filename, text)


def looks_like_mlir(path: str, data: bytes) -> bool:
    return Path(path).suffix in MLIR_SUFFIXES or is_bytecode(data)
