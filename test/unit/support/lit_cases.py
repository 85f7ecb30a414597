"""The cases of a lit test file as program texts, for unit tests that run them on the interpreter."""

from __future__ import annotations

import re
from pathlib import Path

OPT_TESTS = Path(__file__).resolve().parents[2] / "opt"


def lit_cases(path: Path | str) -> list[str]:
    """Each `// -----` case of `path` (a file name in test/opt, or a path) without its `//` lines."""
    path = Path(path)
    if not path.is_absolute():
        path = OPT_TESTS / path
    chunks = path.read_text().split("// -----")
    return ["\n".join(x for x in chunk.splitlines() if not x.lstrip().startswith("//")) + "\n" for chunk in chunks]


def lit_runs(name: str) -> list[tuple[str, str]]:
    """(pipeline, FileCheck prefixes) of each `mgx-opt -p PIPELINE | filecheck` RUN line of a lit file in test/opt."""
    runs = []
    for line in (OPT_TESTS / name).read_text().splitlines():
        if line.startswith("// RUN:"):
            pipeline = re.search(r"-p (\"[^\"]*\"|'[^']*'|\S+)", line).group(1).strip("'\"")
            prefixes = re.search(r"--check-prefix(?:es)?=(\S+)", line)
            runs.append((pipeline, prefixes.group(1) if prefixes else "CHECK"))
    return runs


def check_lit_in_process(name: str, pipeline: str, prefixes: str, scratch: Path) -> None:
    """What lit's `mgx-opt FILE -p PIPELINE | filecheck FILE` checks, with mgx-opt's driver run in this
    process (lit's subprocess never sees a mutant: scripts/mutation.py) and FileCheck's Python API."""
    from filecheck.matcher import Matcher
    from filecheck.options import parse_argv_options

    from mgxir.drivers.opt import OptOptions, opt_main

    output = scratch / "out.mgx"
    options = OptOptions(input=str(OPT_TESTS / name), output=str(output), pipeline=pipeline, split=True)
    assert opt_main(options) == 0
    argv = ["filecheck", str(OPT_TESTS / name), "--input-file", str(output), f"--check-prefixes={prefixes}"]
    assert Matcher.from_opts(parse_argv_options(argv)).run() == 0, output.read_text()
