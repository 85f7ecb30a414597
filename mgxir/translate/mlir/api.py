"""Entry points of the MLIR translation: program -> MLIR text or bytecode, MLIR file -> program."""

from __future__ import annotations

import contextlib
import json
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
from mgxir.text.writer import write_program
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
    In this process: `program_from_mlir` calls it only in the child it reads a file in."""
    with context:
        try:
            return ir.Module.parse(data if is_bytecode(data) else data.decode("utf-8"))
        except UnicodeDecodeError:
            raise MgxError(f"{filename}: neither MLIR text (UTF-8) nor MLIR bytecode") from None
        except RuntimeError as e:  # the bindings: MLIR's diagnostic about a damaged file is not UTF-8
            raise MgxError(f"{filename}: MLIR's reader rejected this file ({e})") from None
        except MemoryError:  # std::bad_alloc under the child's memory limit: a damaged size, most likely
            raise MgxError(f"{filename}: MLIR's reader ran out of memory on this file") from None
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


# A read that takes longer is a hang (fuzzed bytecode made MLIR loop forever). The child also reads
# the program back, about 1 s a megabyte of MLIR: a large file gets more time.
CHILD_SECONDS = 60
CHILD_SECONDS_PER_MIB = 20


def child_seconds(data: bytes) -> int:
    """How long the child may take to read `data`."""
    return CHILD_SECONDS + CHILD_SECONDS_PER_MIB * (len(data) >> 20)


class ChildReaderFailed(RuntimeError):
    """The child reading an MLIR file raised what is not a user error (a bug in mgxir): its traceback."""


def program_from_mlir(data: bytes, filename: str) -> Program:
    """The mgxir program of MLIR (text or bytecode) that `--to-mlir`/`--to-mlirbc` wrote.

    MLIR's C++ readers abort, loop or corrupt the heap on some damaged files (bytecode above all),
    and heap corruption need not end the process it happens in. So the whole file is read in a
    forked child (with the memory this process may still use, and `child_seconds`), which hands the
    program back as mgxir's lossless text and an .npz of its larger literals (read with the checks
    of any sidecar): MLIR's reader never runs in this process. Where there is no fork, it does."""
    if is_bytecode(data):
        check_readable(data, filename)
    if not hasattr(os, "fork"):
        return _read_here(data, filename)
    return _read_in_child(data, filename)


def _read_here(data: bytes, filename: str) -> Program:
    context = ir.Context()
    context.enable_multithreading(False)
    module = parse_mlir(data, filename, context)
    text = "" if is_bytecode(data) else data.decode("utf-8", "replace")
    with context:
        return from_mlir(module, filename, text)


_TEXT, _ARRAYS, _ERROR, _FAILURE = "program.mgx", "program.npz", "error.json", "failure.txt"
_USER_ERROR, _INTERNAL_ERROR = 1, 3  # the child's exit codes besides 0


def _read_in_child(data: bytes, filename: str) -> Program:
    import signal
    import tempfile

    available, _ = available_memory()
    with tempfile.TemporaryDirectory(prefix="mgxir-mlir-") as folder:
        pid = os.fork()
        if pid == 0:
            _child_reads(data, filename, folder, available)  # never returns
        seconds = child_seconds(data)
        status = _wait(pid, seconds + 1)
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            if number in (signal.SIGALRM, signal.SIGKILL):
                raise MgxError(f"{filename}: MLIR's reader did not finish within {seconds} s")
            kind = "bytecode" if is_bytecode(data) else "text"
            raise MgxError(
                f"{filename}: MLIR's {kind} reader crashed on this file ({signal.Signals(number).name}): "
                "it is damaged, or not what this MLIR version writes"
            )
        code = os.WEXITSTATUS(status)
        if code == 0:
            text = Path(folder, _TEXT).read_text()
            return parse_program(text, f"{filename} (as read back)", base_dir=folder)
        if code == _USER_ERROR:
            raise _error_of(json.loads(Path(folder, _ERROR).read_text()))
        if code == _INTERNAL_ERROR:
            raise ChildReaderFailed(Path(folder, _FAILURE).read_text())
        raise MgxError(f"{filename}: MLIR's reader ran out of memory or failed on this file (exit {code})")


def _wait(pid: int, seconds: float) -> int:
    """The child's wait status; one still running after `seconds` is killed (SIGKILL). The child's
    own alarm is not enough: a child forked while another thread of this process held a lock can
    block before it has set one."""
    import select
    import signal

    try:
        watch = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd (Linux before 5.3): the child's alarm ends it
        watch = None
    try:
        if watch is not None and not select.select([watch], [], [], seconds)[0]:
            os.kill(pid, signal.SIGKILL)
        return os.waitpid(pid, 0)[1]
    except BaseException:  # interrupted: the child does not outlive the reader
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        raise
    finally:
        if watch is not None:
            os.close(watch)


def _child_reads(data: bytes, filename: str, folder: str, available: int) -> None:
    """In the forked child: reads the file and writes what the parent reads back; never returns.
    Its standard error is closed: LLVM's fatal-error text on a damaged file is not the user's."""
    import resource
    import signal
    import traceback

    code = _INTERNAL_ERROR
    try:
        signal.alarm(child_seconds(data))
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        _, address_space = process_memory()
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (address_space + available, resource.RLIM_INFINITY))
        try:
            try:
                program = _read_here(data, filename)
            except RecursionError:
                raise MgxError(f"{filename}: the module nests too deeply for mgxir") from None
            write_program(program, os.path.join(folder, _TEXT), lossless=True, sidecar=os.path.join(folder, _ARRAYS))
            code = 0
        except MgxError as e:
            Path(folder, _ERROR).write_text(json.dumps(_fields_of(e)))
            code = _USER_ERROR
        except BaseException:
            Path(folder, _FAILURE).write_text(f"reading {filename} in a child process:\n{traceback.format_exc()}")
    finally:
        os._exit(code)


def _fields_of(e: MgxError) -> dict:
    where = e.location
    return {
        "message": e.message,
        "location": None if where is None else [where.file, where.line, where.column],
        "source_line": e.diagnostic.source_line,
    }


def _error_of(fields: dict) -> MgxError:
    where = fields["location"]
    return MgxError(fields["message"], None if where is None else Location(*where), fields["source_line"])


def looks_like_mlir(path: str, data: bytes) -> bool:
    return Path(path).suffix in MLIR_SUFFIXES or is_bytecode(data)
