"""Mutation testing of the modules a change touches:
`python scripts/mutation.py [--base main] [--tests 'PYTEST ARGS'] [MODULE.py | PACKAGE_DIR ...]`.

The modules are the files under mgxir/{ops,passes,text,interp,drivers} that differ from `--base`,
or those named (a directory names every module under it: `mgxir/passes/` is the whole package).
mutmut (pyproject: [tool.mutmut]) runs in a scratch copy of the tracked files, so the work tree stays
clean. The tests it runs are `--tests`, or else those TEST_SELECTIONS below gives for the modules
(several modules: the union), or else all of test/unit. mutmut first runs them once to learn which
test calls which function, then runs only those tests against each mutant of that function.

Two things are arranged in the scratch copy for mutmut 3.8:
- mutmut does not mutate decorated functions, and the passes' rewrites are `@pattern(...)`
  functions: each decorated top-level function is rewritten as the plain function followed by
  `name = decorator(name)` (the same object under the same name), so that its body is mutated too;
- lit runs the tools in fresh processes, which never see a mutant: test/mutation/
  test_lit_in_process.py runs the lit cases of test/{opt,run,text,translate} that pipe one tool into filecheck
  with the tool called in-process; a selection's `lit` keyword chooses which of them.

Prints a table of mutants, killed and score per module, and the surviving mutants (`mutmut show
NAME` in the kept copy, `--keep`, shows each); exit 1 when a module scores below `--min-score`
percent killed. docs/mutation.md records the scores and the equivalent mutants.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MUTATED_PACKAGES = ("mgxir/ops/", "mgxir/passes/", "mgxir/text/", "mgxir/interp/", "mgxir/drivers/")
LIT_BRIDGE = "test/mutation/test_lit_in_process.py"
# mutmut's statuses that count as a mutant the tests noticed
KILLED = frozenset({"killed", "timeout", "segfault"})


@dataclasses.dataclass(frozen=True)
class Selection:
    """The tests that exercise a module: pytest files, and a `-k` expression over the lit bridge's
    case ids (`opt/dce.mgx:12`), empty for none."""

    files: tuple[str, ...]
    lit: str = ""


U = "test/unit/"
# module (or package directory, for every module under it without its own row) -> its tests
TEST_SELECTIONS: dict[str, Selection] = {
    "mgxir/passes/eliminate_identity.py": Selection((U + "test_eliminate_identity.py",), "eliminate_identity"),
    "mgxir/passes/simplify_algebra/elementwise.py": Selection(
        (U + "test_simplify_algebra_elementwise.py", U + "test_simplify_dispatch.py", U + "test_mutation_passes.py"),
        "simplify_algebra",
    ),
    "mgxir/ops/common.py": Selection(
        (U + "test_ops_common.py", U + "test_ops_shapes.py", U + "test_shape.py", U + "test_text_roundtrip.py"),
        "text/shape-rules or run/elementwise or run/layout",
    ),
    "mgxir/interp/interpreter.py": Selection((U + "test_ops_compute_last.py", U + "test_mutation_interp.py"), "run/"),
    "mgxir/text/printer.py": Selection((U + "test_text_printer.py", U + "test_text_roundtrip.py"), "text/"),
    # whole packages (a module without its own row takes its package's)
    "mgxir/passes/": Selection((U + "test_pass_differential.py", U + "test_mutation_passes.py"), "opt/"),
    "mgxir/ops/": Selection(
        tuple(
            f"{U}test_{name}.py"
            for name in ("ops_shapes", "ops_compute", "ops_compute_more", "ops_compute_last", "ops_rarely_used")
        ),
        "run/ or text/",
    ),
    "mgxir/text/": Selection((U + "test_text_roundtrip.py", U + "test_parser_line_reader.py"), "text/"),
    "mgxir/interp/": Selection((U + "test_ops_compute_last.py", U + "test_mutation_interp.py"), "run/"),
    "mgxir/drivers/": Selection(
        (
            U + "test_mutation_drivers.py",
            U + "test_tools_cli.py",
            U + "test_run_guarded.py",
            U + "test_compiled_for_ref.py",
        ),
        "opt/ or run/ or text/ or translate/",
    ),
    "mgxir/passes/dead_code_elimination.py": Selection((U + "test_mutation_passes.py",), "dce or opt/flags"),
    "mgxir/passes/eliminate_common_subexpression.py": Selection((U + "test_mutation_passes.py",), "cse"),
    "mgxir/passes/fuse_pointwise.py": Selection((U + "test_fuse.py",), "fuse_pointwise"),
    "mgxir/passes/simplify_reshapes/": Selection(
        (U + "test_simplify_reshapes_views.py", U + "test_simplify_reshapes_concat_gather.py"), "simplify_reshapes"
    ),
}


def selection_for(module: str) -> Selection | None:
    """The module's row, or that of the nearest package directory above it."""
    path = module
    while path:
        if path in TEST_SELECTIONS:
            return TEST_SELECTIONS[path]
        path = path.rstrip("/").rpartition("/")[0] + "/" if "/" in path.rstrip("/") else ""
    return None


def pytest_arguments(modules: list[str]) -> list[str]:
    """The union of the modules' selections as pytest arguments (all of test/unit if one has none)."""
    selections = [selection_for(m) for m in modules]
    if any(s is None for s in selections):
        return ["test/unit"]
    files = sorted({f for s in selections if s for f in s.files})
    lit = list(dict.fromkeys(f"({s.lit})" for s in selections if s and s.lit))  # once each, in order
    if not lit:
        return files
    # -k applies to every file: a test file's own tests match on its module name
    names = [Path(f).stem for f in files]
    return [*files, LIT_BRIDGE, "-k", " or ".join([*names, *lit])]


def expand(paths: list[str]) -> list[str]:
    """Files as given; a directory as the .py files under it (no __init__.py without code)."""
    modules: list[str] = []
    for name in paths:
        path = REPO / name
        if path.is_dir():
            modules += [
                str(p.relative_to(REPO)) for p in sorted(path.rglob("*.py")) if p.name != "__init__.py" or _has_code(p)
            ]
        else:
            modules.append(str(Path(name)))
    return modules


def _has_code(path: Path) -> bool:
    return any(isinstance(node, (ast.FunctionDef, ast.ClassDef)) for node in ast.parse(path.read_text()).body)


def changed_modules(base: str) -> list[str]:
    diff = subprocess.run(
        ["git", "diff", "--name-only", f"{base}...HEAD", "--", *MUTATED_PACKAGES],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return [path for path in diff if path.endswith(".py") and (REPO / path).exists()]


def undecorate(source: str) -> str:
    """Each decorated top-level function as the plain function then `name = decorator(name)`."""
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source)
    # from the last function up, so that earlier line numbers stay valid
    for node in reversed(tree.body):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.decorator_list:
            continue
        first = node.decorator_list[0].lineno - 1
        wrapped = node.name
        for decorator in reversed(node.decorator_list):
            wrapped = f"({ast.get_source_segment(source, decorator)})({wrapped})"
        end = node.end_lineno or node.lineno
        lines[end:end] = [f"{node.name} = {wrapped}\n"]
        del lines[first : node.lineno - 1]
    return "".join(lines)


def scratch_copy(modules: list[str], tests: list[str]) -> Path:
    """The tracked files in a temporary directory, with [tool.mutmut] narrowed to `modules`."""
    root = Path(tempfile.mkdtemp(prefix="mgxir-mutation-"))
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for name in files:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_file():
            shutil.copy2(REPO / name, target)
    for module in modules:
        (root / module).write_text(undecorate((REPO / module).read_text()))
    pyproject = (root / "pyproject.toml").read_text()
    section = tomllib.loads(pyproject)["tool"]["mutmut"] | {
        "only_mutate": modules,
        "pytest_add_cli_args_test_selection": tests,
    }
    # JSON's strings, lists and booleans are TOML's too
    narrowed = "".join(f"{key} = {json.dumps(value)}\n" for key, value in section.items())
    pyproject = re.sub(r"\[tool\.mutmut\]\n(?:[^\[].*\n|\n)*", lambda _: f"[tool.mutmut]\n{narrowed}\n", pyproject)
    (root / "pyproject.toml").write_text(pyproject)
    return root


def module_of(mutant: str) -> str:
    """`mgxir.passes.dce.x_f__mutmut_3` -> `mgxir/passes/dce.py`."""
    dotted = mutant.rsplit(".", 1)[0]
    return dotted.replace(".", "/") + ".py"


def report(results: str, modules: list[str], min_score: float) -> bool:
    """Prints the per-module table and the survivors; whether every module reached `min_score`."""
    statuses: dict[str, Counter[str]] = defaultdict(Counter)
    survivors: list[str] = []
    for line in results.splitlines():
        if ":" not in line:
            continue
        name, status = (part.strip() for part in line.rsplit(":", 1))
        module = module_of(name)
        module = module if module in modules else module.removesuffix(".py") + "/__init__.py"
        statuses[module][status] += 1
        if status not in KILLED:
            survivors.append(f"{name}: {status}")
    print("\n".join(survivors) or "no survivors")
    print(f"\n{'module':60} {'mutants':>8} {'killed':>7} {'score':>7}")
    passed = True
    for module in modules:
        counts = statuses.get(module, Counter())
        total = sum(counts.values())
        killed = sum(counts[s] for s in KILLED)
        score = 100.0 * killed / total if total else 100.0
        passed &= score >= min_score
        print(f"{module:60} {total:8} {killed:7} {score:6.1f}%")
    return passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="files or package directories to mutate (default: changed ones)")
    parser.add_argument("--base", default="main", help="git revision to diff against")
    parser.add_argument("--tests", help="pytest arguments choosing the tests mutmut runs (default: TEST_SELECTIONS)")
    parser.add_argument("--min-score", type=float, default=90.0, help="percent of mutants that must be killed")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy (its path is printed)")
    parser.add_argument("--max-children", type=int, help="mutmut's parallel test processes")
    args = parser.parse_args()
    modules = expand(args.modules) if args.modules else changed_modules(args.base)
    if not modules:
        print(f"no module under {', '.join(MUTATED_PACKAGES)} changed since {args.base}")
        return 0
    tests = shlex.split(args.tests) if args.tests else pytest_arguments(modules)
    root = scratch_copy(modules, tests)
    print(f"mutating {', '.join(modules)} in {root}\ntests: {shlex.join(tests)}", flush=True)
    mutmut = Path(sys.executable).with_name("mutmut")
    children = ["--max-children", str(args.max_children)] if args.max_children else []
    try:
        run = subprocess.run([str(mutmut), "run", *children], cwd=root, check=False, capture_output=True, text=True)
        # the last line of mutmut's progress display: the counts of each outcome
        print(run.stdout.rsplit("\r", 1)[-1].strip(), run.stderr[-2000:], sep="\n", flush=True)
        results = subprocess.run(
            [str(mutmut), "results", "--all", "true"], cwd=root, check=False, capture_output=True, text=True
        ).stdout
        return 0 if report(results, modules, args.min_score) else 1
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
