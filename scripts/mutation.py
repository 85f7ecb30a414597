"""Mutation testing of the modules a change touches: `python scripts/mutation.py [--base main]
[--tests 'test/unit/test_x.py -k name'] [MODULE.py ...]`.

The modules are the files under mgxir/{ops,passes,text,interp,drivers} that differ from `--base`
(or those named). mutmut (pyproject: [tool.mutmut]) runs in a scratch copy of the tracked files, so
the work tree stays clean; the tests it runs are `--tests` (default: all of test/unit). Prints
mutmut's list of surviving mutants and the score; exit 1 below `--min-score` percent killed.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MUTATED_PACKAGES = ("mgxir/ops/", "mgxir/passes/", "mgxir/text/", "mgxir/interp/", "mgxir/drivers/")


def changed_modules(base: str) -> list[str]:
    diff = subprocess.run(
        ["git", "diff", "--name-only", f"{base}...HEAD", "--", *MUTATED_PACKAGES],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return [path for path in diff if path.endswith(".py") and (REPO / path).exists()]


def scratch_copy(modules: list[str], tests: list[str]) -> Path:
    """The tracked files in a temporary directory, with [tool.mutmut] narrowed to `modules`."""
    root = Path(tempfile.mkdtemp(prefix="mgxir-mutation-"))
    files = subprocess.run(["git", "ls-files"], cwd=REPO, check=True, capture_output=True, text=True).stdout.split()
    for name in files:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_file():
            shutil.copy2(REPO / name, target)
    pyproject = (root / "pyproject.toml").read_text()
    section = tomllib.loads(pyproject)["tool"]["mutmut"]
    lines = [f"{key} = {value!r}".replace("'", '"') for key, value in section.items()]
    narrowed = "\n".join(
        line for line in lines if not line.startswith(("only_mutate", "pytest_add_cli_args_test_selection"))
    )
    narrowed += f"\nonly_mutate = {modules!r}\npytest_add_cli_args_test_selection = {tests!r}\n".replace("'", '"')
    pyproject = re.sub(r"\[tool\.mutmut\]\n(?:[^\[].*\n|\n)*", "[tool.mutmut]\n" + narrowed + "\n", pyproject)
    (root / "pyproject.toml").write_text(pyproject)
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="files to mutate (default: those changed since --base)")
    parser.add_argument("--base", default="main", help="git revision to diff against")
    parser.add_argument("--tests", default="test/unit", help="pytest arguments choosing the tests mutmut runs")
    parser.add_argument("--min-score", type=float, default=90.0, help="percent of mutants that must be killed")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy (its path is printed)")
    args = parser.parse_args()
    modules = args.modules or changed_modules(args.base)
    if not modules:
        print(f"no module under {', '.join(MUTATED_PACKAGES)} changed since {args.base}")
        return 0
    root = scratch_copy(modules, shlex.split(args.tests))
    print(f"mutating {', '.join(modules)} in {root}", flush=True)
    mutmut = Path(sys.executable).with_name("mutmut")
    try:
        subprocess.run([str(mutmut), "run"], cwd=root, check=False)
        results = subprocess.run(
            [str(mutmut), "results", "--all", "true"], cwd=root, check=False, capture_output=True, text=True
        ).stdout
        statuses = [line.rsplit(":", 1)[1].strip() for line in results.splitlines() if ":" in line]
        killed = sum(status == "killed" for status in statuses)
        survivors = [line.strip() for line in results.splitlines() if line.rstrip().endswith("survived")]
        print("\n".join(survivors) or "no survivors")
        score = 100.0 * killed / len(statuses) if statuses else 100.0
        print(f"mutation score: {killed}/{len(statuses)} killed ({score:.1f}%)")
        return 0 if score >= args.min_score else 1
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
