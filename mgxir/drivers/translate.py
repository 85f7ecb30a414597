"""mgx-translate's driver: read a program in one format, verify it, write it in another.

`mgxir.tools.mgx_translate` only declares the options and calls `translate_main(TranslateOptions(...))`.

Formats plug in through two tables, one entry each, naming "module:function"; a format's module is
imported only when a command uses that format, so its dependencies (MLIR, ONNX, msgpack) cost nothing
to the others:
- `WRITERS`: `--to NAME` (also spelled `--to-NAME`) -> `write(program, output, options, sink)`, which
  writes the program to `output` (None or `-`: standard output), atomically, with
  `mgxir.drivers.common.write_output` (it takes text or bytes);
- `READERS`: `--from NAME` (also `--from-NAME`) -> `read(path, options, sink) -> Program` (path `-`:
  standard input); the driver verifies what a reader returns.
`options` is a mapping of the format-specific options the front end declares (ONNX's dimensions,
for example), by parameter name; a format reads the ones it knows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mgxir.diagnostics import DiagnosticSink, MgxError
from mgxir.drivers.common import check_output_path, keeps_literals, load_entry, run_guarded
from mgxir.drivers.formats import INPUT_FORMATS, input_format
from mgxir.ir.program import Program
from mgxir.records import Record
from mgxir.text.parser import read_program
from mgxir.text.writer import write_program
from mgxir.verifier import verify

Options = Mapping[str, Any]
Writer = Callable[[Program, str | None, Options, DiagnosticSink], None]
Reader = Callable[[str, Options, DiagnosticSink], Program]

WRITERS: dict[str, str] = {
    "mgx": "mgxir.drivers.translate:write_mgx",
    "mgx-lossless": "mgxir.drivers.translate:write_mgx_lossless",
    "mlir": "mgxir.drivers.formats:write_mlir",
    "mlirbc": "mgxir.drivers.formats:write_mlirbc",
    "spirv": "mgxir.drivers.formats:write_spirv",
    "spvasm": "mgxir.drivers.formats:write_spvasm",
    "mxr": "mgxir.drivers.formats:write_mxr",
    "json": "mgxir.drivers.formats:write_json",
    "py": "mgxir.drivers.formats:write_py",
    "dot": "mgxir.drivers.formats:write_dot",
    "svg": "mgxir.drivers.formats:write_svg",
}
# `--from NAME`: the input formats (without --from, the input's content says which)
READERS: dict[str, str] = {name: form.reader for name, form in INPUT_FORMATS.items()}
# writers whose -o names a folder they fill (not a file written atomically)
FOLDER_WRITERS = frozenset({"spirv"})


def write_mgx(program: Program, output: str | None, options: Options, sink: DiagnosticSink) -> None:
    """The program text, every literal value kept (as `mgx-lossless`), or as MIGraphX prints it with
    `elide_literals`."""
    lossless = keeps_literals(bool(options.get("lossless")), bool(options.get("elide_literals")))
    write_program(program, output, lossless=lossless)


def write_mgx_lossless(program: Program, output: str | None, options: Options, sink: DiagnosticSink) -> None:
    """The text with every literal value kept (a sidecar .npz beside a large output file)."""
    write_program(program, output, lossless=True)


def read_mgx(path: str, options: Options, sink: DiagnosticSink) -> Program:
    return read_program(path, sink, allow_undefined=bool(options.get("allow_undefined")))


def read_log(path: str, options: Options, sink: DiagnosticSink) -> Program:
    """The program printed inside MIGraphX log output (the last one, or after `log_pass`)."""
    return read_program(
        path,
        sink,
        from_log=True,
        log_pass=options.get("log_pass"),
        allow_undefined=bool(options.get("allow_undefined")),
    )


class TranslateOptions(Record):
    def __init__(
        self,
        input: str = "-",
        to: str = "mgx",
        source: str | None = None,
        output: str | None = None,
        split_input_file: bool = False,
        list_lowerings: bool = False,
        format_options: dict[str, Any] | None = None,
    ):
        self.input = input
        self.to = to
        self.source = source  # None: the input's content says which format it is
        self.output = output
        self.split_input_file = split_input_file  # with --to-mlir/--from-mlir: each `// -----` part on its own
        self.list_lowerings = list_lowerings  # print what each operator lowers to in MLIR, read nothing
        # format-specific options by name (None: not given)
        self.format_options: dict[str, Any] = {} if format_options is None else format_options


def translate_main(options: TranslateOptions) -> int:
    """Runs mgx-translate; returns the exit code."""
    return run_guarded(lambda sink: _translate(options, sink))


def _translate(options: TranslateOptions, sink: DiagnosticSink) -> int:
    if options.list_lowerings:
        load_entry("mgxir.drivers.formats:mlir_lowering_table")(options.output)
        return 0
    if options.format_options.get("bytecode_version") is not None and options.to != "mlirbc":
        raise MgxError("--bytecode-version goes with --to-mlirbc")
    write: Writer = _entry(WRITERS, options.to, "--to")
    if options.source is not None:
        _entry(READERS, options.source, "--from")
    if options.to not in FOLDER_WRITERS:
        check_output_path(options.output)
    source = options.source or input_format(options.input)
    read: Reader = _entry(READERS, source, "--from")
    if options.split_input_file:
        if (options.to, source) == ("mgx", "mlir"):
            load_entry("mgxir.drivers.formats:programs_of_split_mlir")(options.input, options.output, sink)
            return 0
        if options.to != "mlir" or source != "mgx":
            raise MgxError("--split-input-file goes with --to-mlir on program text or --from-mlir on MLIR text")
        load_entry("mgxir.drivers.formats:mlir_of_split_input")(options.input, options.output, sink)
        return 0
    program = read(options.input, options.format_options, sink)
    verify(program, sink)
    write(program, options.output, options.format_options, sink)
    return 0


def _entry(table: dict[str, str], name: str, flag: str) -> Any:
    if name not in table:
        raise MgxError(f"unknown format '{name}' for {flag} (available: {', '.join(table)})")
    return load_entry(table[name])


def spelled_formats(argv: list[str]) -> list[str]:
    """`--to-NAME` and `--from-NAME` as `--to=NAME` and `--from=NAME`, for the formats in the tables
    (mlir-translate's style)."""
    out = []
    for word in argv:
        for prefix, table in (("--to-", WRITERS), ("--from-", READERS)):
            if word.startswith(prefix) and word[len(prefix) :] in table:
                word = f"{prefix[:-1]}={word[len(prefix) :]}"
                break
        out.append(word)
    return out


def conflicting_formats(argv: list[str]) -> str | None:
    """The complaint about two input (or two output) formats on one command line, if there are."""
    for prefix, table in (("--from", READERS), ("--to", WRITERS)):
        given = [
            w
            for w in argv
            if (w.startswith(prefix + "-") and w[len(prefix) + 1 :] in table) or w.startswith(prefix + "=")
        ]
        if len(given) > 1:
            return "choose one of " + ", ".join(given)
    return None
