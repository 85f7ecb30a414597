"""The lit cases of test/{opt,run,text,translate} whose RUN line is one tool piped into filecheck, run with the
tool called in this process: mutmut's mutants live only in the process that imported them (lit starts
fresh `mgx-opt` processes that never see a mutant), so scripts/mutation.py adds these tests to get
the lit suite's verdict on each mutant. CI runs lit itself and does not collect this directory."""

from __future__ import annotations

import gc
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mgxir.drivers.translate import spelled_formats
from mgxir.tools import cli, mgx_opt, mgx_run, mgx_translate

TEST = Path(__file__).resolve().parents[1]
TOOLS = {"mgx-opt": mgx_opt.mgx_opt, "mgx-run": mgx_run.mgx_run, "mgx-translate": mgx_translate.mgx_translate}
# what a tool's `main` does to its command line before reading it
SPELLINGS = {"mgx-translate": spelled_formats}
# `[not] TOOL ARGS [2>&1 | 2> %tFILE] | filecheck ARGS` (stderr sent to a %t file is left unchecked here)
PIPED = re.compile(
    r"^(?P<not>not )?(?P<tool>mgx-opt|mgx-run|mgx-translate) "
    r"(?P<args>[^|<>]*?)(?:(?P<err> 2>&1)|(?P<errfile> 2> ?%t\S*))? \| filecheck (?P<check>.*)$"
)


def _run_lines(path: Path) -> list[str]:
    """RUN lines with continuations joined."""
    lines, pending = [], ""
    for line in path.read_text().splitlines():
        found = re.match(r"^\s*(?://|#) RUN:\s?(.*)$", line)
        if not found:
            continue
        pending += found.group(1).rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip() + " "
            continue
        lines.append(pending.strip())
        pending = ""
    return lines


def _cases() -> list[tuple[Path, str]]:
    found = []
    for area, pattern in (("opt", "*.*"), ("run", "*.*"), ("text", "**/*.*"), ("translate", "**/*.*")):
        for path in sorted((TEST / area).glob(pattern)):
            if path.suffix in (".mgx", ".test"):
                found += [(path, line) for line in _run_lines(path) if _piped_without_files(line)]
    return found


def _piped_without_files(line: str) -> bool:
    """One tool into filecheck, reading no file made by an earlier RUN line (%t)."""
    found = PIPED.match(line)
    return bool(found) and "%t" not in line.replace(found["errfile"] or "\0", "")


CASES = _cases()


@pytest.mark.parametrize(
    ("path", "line"), CASES, ids=[f"{p.relative_to(TEST).parent}/{p.name}:{i}" for i, (p, _) in enumerate(CASES)]
)
def test_lit_run_line(
    path: Path, line: str, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def expand(text: str) -> str:
        return text.replace("%s", str(path)).replace("%S", str(path.parent))

    found = PIPED.match(line)
    assert found
    if found["errfile"]:
        line = line.replace(found["errfile"], "")
    if "%" in expand(line) or re.search(r"%[A-Za-z_]{2,}", line):  # %shared, %examples: lit.cfg's own
        pytest.skip("a lit substitution this bridge does not expand")
    command = TOOLS[found["tool"]]
    argv = cli.canonical_argv(command, SPELLINGS.get(found["tool"], list)(shlex.split(expand(found["args"]))))
    monkeypatch.setattr(cli, "_exit_now", lambda code: (_ for _ in ()).throw(SystemExit(code)))
    arguments = cli.plain_arguments(command, argv)
    if arguments is None:
        pytest.skip("not a plain command line")
    capfd.readouterr()
    with pytest.raises(SystemExit) as done:
        command(**arguments)
    gc.enable()  # run_guarded turns the collector off for the tool's one command
    out, err = capfd.readouterr()
    assert (done.value.code not in (0, None)) == bool(found["not"]), err
    checked = out + err if found["err"] else out
    check = subprocess.run(
        [str(Path(sys.executable).with_name("filecheck")), *shlex.split(expand(found["check"]))],
        input=checked,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr[-3000:]
