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

from mgxir.diagnostics import DiagnosticSink, MgxError, did_you_mean
from mgxir.drivers.common import check_output_path, keeps_literals, load_entry, run_guarded
from mgxir.drivers.formats import INPUT_FORMATS, input_format
from mgxir.drivers.options import DeclaredOptions, Option, flag
from mgxir.ir.program import Program
from mgxir.progress import progress, set_quiet
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


class TranslateOptions(DeclaredOptions):
    """What mgx-translate was asked to do: each field, its default, help text and command-line spellings.
    The fields after `FORMAT_OPTIONS_FROM` are the formats' own options (`format_options`)."""

    DECLARED = (
        Option("input", help="Program to read ('-' for standard input).", default="-", positional=True),
        Option("to", ("--to",), f"Output format: {', '.join(WRITERS)} (or --to-FORMAT).", default="mgx"),
        Option(
            "source",
            ("--from",),
            f"Input format: {', '.join(READERS)} (or --from-FORMAT; default: as the input's content says).",
        ),
        Option("output", ("-o", "--output"), "Write here (atomically) instead of standard output."),
        flag("from_log", "--from-log", help="The input is MIGraphX log output (--from=log)."),
        flag(
            "split_input_file",
            "--split-input-file",
            help="With --to-mlir or --from-mlir: translate each '// -----' part on its own.",
        ),
        flag("list_lowerings", "--list-lowerings", help="Print the table of what each operator lowers to in MLIR."),
        flag("quiet", "-q", "--quiet", help="No progress display (shown on a terminal for work that takes seconds)."),
        flag(
            "allow_undefined",
            "--allow-undefined",
            help="Read values used but not defined (an excerpt) as of unknown shape.",
        ),
        Option(
            "log_pass", ("--log-pass",), "With --from-log: the program printed after this pass (default: the last one)."
        ),
        Option(
            "bytecode_version",
            ("--bytecode-version",),
            "With --to-mlirbc: the bytecode format version (0 to 6).",
            kind=int,
        ),
        Option(
            "default_dim_value", ("--default-dim-value",), "ONNX: size of dimensions the model leaves open.", kind=int
        ),
        Option("batch", ("--batch",), "ONNX: as --default-dim-value.", kind=int),
        Option("input_dim", ("--input-dim",), "ONNX: an input's dims, '@name d1 d2 ...' (repeatable).", many=True),
        Option(
            "dyn_input_dim",
            ("--dyn-input-dim",),
            "ONNX: an input's dynamic dims, '@name [{min:1,max:4},3]' (repeatable).",
            many=True,
        ),
        Option(
            "dim_param", ("--dim-param",), "ONNX: a symbolic dim, 'N=4' or 'N={min:1,max:8}' (repeatable).", many=True
        ),
        flag(
            "skip_unknown_operators", "--skip-unknown-operators", help="ONNX: keep unknown operators as unknown:OpType."
        ),
        flag("lossless", "--lossless", help="Text: keep every literal value exactly (the default)."),
        flag(
            "elide_literals",
            "--elide-literals",
            help="Text: print literals as MIGraphX does ('{ ... }' past 10 values).",
        ),
    )
    FORMAT_OPTIONS_FROM = "allow_undefined"

    @property
    def format_options(self) -> dict[str, Any]:
        """The formats' own options by name (None: not given), for the READERS and WRITERS."""
        names = type(self)._fields  # type: ignore[attr-defined]
        return {name: getattr(self, name) for name in names[names.index(self.FORMAT_OPTIONS_FROM) :]}

    @property
    def input_format(self) -> str | None:
        """The format asked for (None: the input's content says)."""
        return "log" if self.from_log else self.source


def translate_main(options: TranslateOptions) -> int:
    """Runs mgx-translate; returns the exit code."""
    set_quiet(options.quiet)
    return run_guarded(lambda sink: _translate(options, sink))


def _translate(options: TranslateOptions, sink: DiagnosticSink) -> int:
    if options.list_lowerings:
        load_entry("mgxir.drivers.formats:mlir_lowering_table")(options.output)
        return 0
    format_options = options.format_options
    source = options.input_format
    if options.bytecode_version is not None and options.to != "mlirbc":
        raise MgxError("--bytecode-version goes with --to-mlirbc")
    write: Writer = _entry(WRITERS, options.to, "--to")
    if source is not None:
        _entry(READERS, source, "--from")
    if options.to not in FOLDER_WRITERS:
        check_output_path(options.output)
    source = source or input_format(options.input)
    read: Reader = _entry(READERS, source, "--from")
    if options.split_input_file:
        if (options.to, source) == ("mgx", "mlir"):
            load_entry("mgxir.drivers.formats:programs_of_split_mlir")(options.input, options.output, sink)
            return 0
        if options.to != "mlir" or source != "mgx":
            raise MgxError("--split-input-file goes with --to-mlir on program text or --from-mlir on MLIR text")
        load_entry("mgxir.drivers.formats:mlir_of_split_input")(options.input, options.output, sink)
        return 0
    with progress(f"reading {options.input} ({source})"):
        program = read(options.input, format_options, sink)
        verify(program, sink)
    with progress(f"writing {options.to}"):
        write(program, options.output, format_options, sink)
    return 0


def _entry(table: dict[str, str], name: str, flag: str) -> Any:
    if name not in table:
        raise MgxError(f"unknown format '{name}' for {flag}{did_you_mean(name, table)} (available: {', '.join(table)})")
    return load_entry(table[name])


def spelled_formats(argv: list[str]) -> list[str]:
    """`--to-NAME` and `--from-NAME` as `--to=NAME` and `--from=NAME` (mlir-translate's style), for
    every NAME that is not an option of its own: a name not in the tables then gets the driver's
    "unknown format ...; did you mean" line."""
    declared = {flag for option in TranslateOptions.DECLARED for flag in option.flags} - {"--from-log"}
    out = []
    for word in argv:
        for prefix in ("--to-", "--from-"):
            if word.startswith(prefix) and len(word) > len(prefix) and "=" not in word and word not in declared:
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
