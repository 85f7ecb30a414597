"""Start-up cost (issue 8): a plain tool run imports neither lark nor typer. The grammar's parsers
come from the tables lark builds once into a cache, run by `mgxir.text.lalr_runtime`, and they read
every test input exactly as lark itself does (output and diagnostics)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mgxir.drivers.common import in_deep_stack
from mgxir.text import lalr

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
EXAMPLE = str(ROOT / "examples" / "conv_relu_pool.mgx")
# what a plain command line must not import: lark (its grammar compiler, Earley parser, logging
# handlers, tempfile, hashlib) and typer (click, rich); the tools read plain command lines themselves;
# nor the passes for tests (without MGXIR_TEST_PASSES)
HEAVY = re.compile(r"(lark|typer|click|rich|pydantic)(\..*)?|mgxir\.passes\.testing")
# nor, without passes (which are dataclasses), `dataclasses` (each dataclass compiles its methods as
# its module is imported: mgxir.records) or `logging`
UNLESS_PASSES = re.compile(r"(dataclasses|logging)(\..*)?")
COMMANDS = {
    "mgx-opt": ["mgx-opt", EXAMPLE],
    "mgx-opt -p dce": ["mgx-opt", EXAMPLE, "-p", "dce"],
    "mgx-run": ["mgx-run", EXAMPLE, "--quiet", "--fill=random"],
    "mgx-translate": ["mgx-translate", EXAMPLE],
}


def _env(cache: Path | str) -> dict[str, str]:
    return {**os.environ, lalr.CACHE_ENV: str(cache)}


def _imported(command: list[str], cache: Path) -> set[str]:
    # without coverage's subprocess measurement (CI's): coverage itself imports dataclasses and more
    env = {k: v for k, v in _env(cache).items() if not k.startswith("COVERAGE_")}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(BIN / command[0]), *command[1:]],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, re.M))


def test_plain_runs_import_neither_lark_nor_typer(tmp_path: Path) -> None:
    first = _imported(COMMANDS["mgx-opt"], tmp_path)
    assert "lark.parsers.lalr_analysis" in first  # the first run has lark build the tables it caches
    assert list(tmp_path.glob("grammar_parsers_*.py"))
    for name, command in COMMANDS.items():
        plain = "-p" not in command
        heavy = sorted(
            m for m in _imported(command, tmp_path) if HEAVY.fullmatch(m) or (plain and UNLESS_PASSES.fullmatch(m))
        )
        assert heavy == [], f"{name} imports {heavy}"


# parses every text input with both layers (the line reader and lark's LALR parser for layer 1)
# and prints each program or its diagnostic
_READ_ALL = """
import sys
from pathlib import Path
from mgxir.diagnostics import MgxError
from mgxir.text import lalr, parser
from mgxir.text.printer import print_program
print(lalr.runtime().__name__)
for fast in (True, False):
    parser.FAST_LINES = fast
    for path in sys.argv[1:]:
        try:
            program = parser.parse_program(Path(path).read_text(), path, base_dir=Path(path).parent)
        except MgxError as e:
            print(path, e)
            continue
        try:
            print(path, print_program(program))
        except Exception as e:  # a shape the verifier would refuse
            print(path, [(n, [i.op.name for i in m]) for n, m in program.modules.items()], type(e).__name__)
"""


def test_the_cached_parsers_read_as_lark_does(tmp_path: Path) -> None:
    inputs = sorted(
        str(p) for folder in ("test/text", "test/text/errors", "examples") for p in (ROOT / folder).glob("*.mgx")
    )
    assert len(inputs) > 20
    outputs = {}
    for cache in (tmp_path, "off"):
        done = subprocess.run(
            [sys.executable, "-c", _READ_ALL, *inputs], capture_output=True, text=True, env=_env(cache), cwd=ROOT
        )
        assert done.returncode == 0, done.stderr[-2000:]
        runtime, _, outputs[cache] = done.stdout.partition("\n")
        assert runtime == ("lark" if cache == "off" else "_mgxir_grammar_parsers")
    assert "error:" in outputs["off"] and "@literal" in outputs["off"]
    assert outputs[tmp_path] == outputs["off"]


def _runtime_in_subprocess(cache: Path) -> str:
    script = "from mgxir.text import lalr; print(lalr.runtime().__name__)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_env(cache), check=True)
    return done.stdout.strip()


def test_a_cached_module_of_another_grammar_is_written_again(tmp_path: Path) -> None:
    grammar, version = lalr.grammar_text(), lalr.lark_version()
    path = lalr.cached_module_path(tmp_path, grammar, version)
    assert path != lalr.cached_module_path(tmp_path, grammar.replace("OP:", "OP :"), version)
    assert path != lalr.cached_module_path(tmp_path, grammar, version + ".1")
    Path(path).write_text("SOURCE_KEY = 'another grammar'\n")
    assert _runtime_in_subprocess(tmp_path) == "_mgxir_grammar_parsers"
    assert "another grammar" not in Path(path).read_text()


@pytest.mark.parametrize("where", ["a-file/parsers", "off"])
def test_without_a_cache_lark_itself_parses(tmp_path: Path, where: str) -> None:
    (tmp_path / "a-file").write_text("")
    cache = tmp_path / where if where != "off" else where
    assert _runtime_in_subprocess(cache) == "lark"


# whether the code calling it runs below a `with_room` frame (in a frame chunk of its own)
_IN_ROOM = """
def in_room():
    from mgxir import stack
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is stack.with_room.__code__:
            return frame.f_code.co_stacksize >= stack.ROOM_SLOTS
        frame = frame.f_back
    return False
"""


def test_the_tools_work_and_numpy_import_run_with_room_on_the_frame_stack() -> None:
    namespace = {"sys": sys}
    exec(_IN_ROOM, namespace)
    assert not namespace["in_room"]()
    assert in_deep_stack(namespace["in_room"])
    # numpy's import, as a tool's first import (`mgxir.tools`) makes it
    script = f"""import sys
{_IN_ROOM}
class Finder:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy":
            print("numpy imported with room:", in_room())
sys.meta_path.insert(0, Finder())
import mgxir.tools
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout == "numpy imported with room: True\n"


# a map of a fresh 16 KiB frame chunk (mgxir.stack): one for the main thread, one for the tool's thread
_CHUNK_MAP = re.compile(r"mmap\(NULL, 16384, PROT_READ\|PROT_WRITE, MAP_PRIVATE\|MAP_ANONYMOUS, -1, 0\)")


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
@pytest.mark.parametrize(
    "command", [COMMANDS["mgx-opt"], COMMANDS["mgx-run"], ["mgx-translate", EXAMPLE, "--to", "mlir"]], ids=" ".join
)
def test_a_tool_maps_few_frame_chunks(command: list[str], tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    subprocess.run(
        ["strace", "-f", "-e", "trace=mmap", "-o", str(trace), str(BIN / command[0]), *command[1:]],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    assert len(_CHUNK_MAP.findall(trace.read_text())) <= 4


# runs a tool in this process after forgetting pathlib, which an editable install's finder imports
# while Python starts, and prints whether the tool imported it again
_RUN_FORGETTING_PATHLIB = """
import os, runpy, sys
sys.modules.pop("pathlib", None)
exit_now = os._exit
def report(code):
    sys.stdout.flush()
    print("imports pathlib:", "pathlib" in sys.modules, file=sys.stderr)
    exit_now(code)
os._exit = report
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as done:
    report(done.code)
"""


@pytest.mark.parametrize("name", list(COMMANDS))
def test_plain_runs_do_not_import_pathlib(name: str) -> None:
    command = COMMANDS[name]
    done = subprocess.run(
        [sys.executable, "-c", _RUN_FORGETTING_PATHLIB, str(BIN / command[0]), *command[1:]],
        capture_output=True,
        text=True,
    )
    assert done.stderr.strip().splitlines()[-1] == "imports pathlib: False", done.stderr[-2000:]
