"""Mutation testing of the modules a change touches:
`python scripts/mutation.py [--base main] [--tests 'PYTEST ARGS'] [MODULE.py | PACKAGE_DIR ...]`.

The modules are the files under mgxir/{ops,passes,text,interp,drivers,translate,targets} that differ
from `--base`, or those named (a directory names every module under it: `mgxir/passes/` is the whole
package).
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
percent killed. docs/mutation.md records the scores, docs/mutation-survivors.md the equivalent mutants.

For long runs: `--json PATH` writes the counts per module and each surviving mutant with its diff,
every 30 seconds while mutmut runs and once at the end; `--deadline SECONDS` stops mutmut that long
after the start and reports what it checked (the rest are "not checked", left out of the score);
`--scratch DIR` puts the copy there and keeps it, and a later run with the same DIR goes on where
that one stopped (mutmut skips the mutants that have a result); `--refresh` with it copies the
repository's current files in (the functions that changed are checked again), `--recheck` does that and
checks the survivors again too (new tests belong in files the selection
already names: a changed selection makes mutmut start over).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import filecmp
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MUTATED_PACKAGES = (
    "mgxir/ops/",
    "mgxir/passes/",
    "mgxir/text/",
    "mgxir/interp/",
    "mgxir/drivers/",
    "mgxir/translate/",
    "mgxir/targets/",
)
LIT_BRIDGE = "test/mutation/test_lit_in_process.py"
# mutmut's statuses that count as a mutant the tests noticed
KILLED = frozenset({"killed", "timeout", "segfault"})
NOT_CHECKED = "not checked"
# modules mutmut cannot mutate, with the reason: before the mutants, mutmut checks that the tests fail when
# every mutated function raises, and a function that runs while pytest collects then stops the run there
NOT_MUTATED = {
    "mgxir/ops/__init__.py": "test/unit/conftest.py calls register_all_ops() while pytest collects",
}
JSON_EVERY_S = 30.0


@dataclasses.dataclass(frozen=True)
class Selection:
    """The tests that exercise a module: pytest files, and a `-k` expression over the lit bridge's
    case ids (`opt/dce.mgx:12`), empty for none."""

    files: tuple[str, ...]
    lit: str = ""


U = "test/unit/"
# the passes package's tests: every pass module's row starts with them, so a row of its own keeps their kills
PASS_TESTS = (U + "passes/test_pass_differential.py", U + "passes/test_dce_and_cse_exactly.py")
TEXT_TESTS = (
    U + "text/test_text_roundtrip.py",
    U + "text/test_parser_line_reader.py",
    U + "text/test_text_literals_and_files.py",
    U + "text/test_text_reader_errors.py",
)
ONNX_TESTS = (
    U + "translate/onnx/test_onnx_import.py",
    U + "translate/onnx/test_onnx_import_edges.py",
    U + "translate/onnx/test_onnx_parser_refusals.py",
    U + "translate/onnx/test_onnx_quantized.py",
    U + "translate/onnx/test_onnx_attention_scan.py",
    U + "translate/onnx/test_onnx_parser_numerics.py",
)
GPU_TESTS = tuple(
    f"{U}targets/gpu/test_{name}.py"
    for name in (
        "gpu_target",
        "gpu_data_kernels",
        "gpu_convolutions",
        "gpu_gemm_layout",
        "gpu_kernel_cache",
        "gpu_compiler_errors",
        "gpu_amdgpu",
    )
)
MLIR_TESTS = tuple(
    f"{U}translate/mlir/test_mlir_{name}.py"
    for name in ("translate", "control", "dynamic", "ops_refusals", "scalar_lowerings")
)
SPIRV_TESTS = (
    U + "translate/spirv/test_spirv_pointwise.py",
    U + "translate/spirv/test_spirv_reduce.py",
    U + "translate/spirv/test_spirv_corners.py",
)
# module (or package directory, for every module under it without its own row) -> its tests
TEST_SELECTIONS: dict[str, Selection] = {
    "mgxir/passes/eliminate_identity.py": Selection((U + "passes/test_eliminate_identity.py",), "eliminate_identity"),
    "mgxir/passes/simplify_algebra/elementwise.py": Selection(
        (
            U + "passes/test_simplify_algebra_elementwise.py",
            U + "passes/test_simplify_dispatch.py",
            U + "passes/test_dce_and_cse_exactly.py",
        ),
        "simplify_algebra",
    ),
    "mgxir/ops/common.py": Selection(
        (
            U + "ops/test_ops_common.py",
            U + "ops/test_ops_shapes.py",
            U + "ir/test_shape.py",
            U + "text/test_text_roundtrip.py",
        ),
        "text/shape-rules or run/elementwise or run/layout",
    ),
    "mgxir/interp/interpreter.py": Selection(
        (U + "ops/test_ops_compute_last.py", U + "interp/test_interpreter.py"), "run/"
    ),
    "mgxir/text/printer.py": Selection((U + "text/test_text_printer.py", U + "text/test_text_roundtrip.py"), "text/"),
    # whole packages (a module without its own row takes its package's)
    "mgxir/passes/": Selection(PASS_TESTS, "opt/"),
    "mgxir/ops/": Selection(
        (
            U + "ops/test_ops_shapes.py",
            U + "ops/test_ops_compute.py",
            U + "ops/test_ops_compute_more.py",
            U + "ops/test_ops_compute_last.py",
            U + "ops/test_ops_compute_edges.py",
            U + "ops/test_ops_rarely_used.py",
            U + "ops/test_ops_dynamic_shapes.py",
            U + "ops/test_ops_common.py",
            U + "ops/test_shape_rule_edges.py",
            U + "ops/test_shape_rule_refusals.py",
            U + "ir/test_shape_properties.py",
            U + "interp/test_interpreter_edges.py",
            U + "passes/test_pass_memory_coloring.py",
            U + "translate/mxr/test_mxr_operation_values.py",
            U + "translate/onnx/test_onnx_conformance.py",
            U + "translate/onnx/test_onnx_import.py",
            U + "translate/onnx/test_onnx_import_edges.py",
            U + "translate/onnx/test_onnx_quantized.py",
            U + "translate/onnx/test_onnx_attention_scan.py",
            U + "passes/test_pass_differential.py",
            U + "passes/test_fuse.py",
        ),
        "run/ or text/",
    ),
    "mgxir/text/": Selection(TEXT_TESTS, "text/"),
    # the LALR tables: built fresh into a scratch cache folder and compared with lark (the session's
    # parsers come from a cache written before mutmut runs, so only these tests reach lalr.py's writer)
    "mgxir/text/lalr.py": Selection((*TEXT_TESTS, U + "text/test_lalr_runtime.py"), "text/"),
    "mgxir/text/lalr_runtime.py": Selection((*TEXT_TESTS, U + "text/test_lalr_runtime.py"), "text/"),
    "mgxir/interp/": Selection((U + "ops/test_ops_compute_last.py", U + "interp/test_interpreter.py"), "run/"),
    "mgxir/drivers/": Selection(
        (
            U + "drivers/test_drivers_in_process.py",
            U + "tools/test_tools_cli.py",
            U + "drivers/test_run_guarded.py",
            U + "drivers/test_compiled_for_ref.py",
        ),
        "opt/ or run/ or text/ or translate/",
    ),
    "mgxir/passes/dead_code_elimination.py": Selection((U + "passes/test_dce_and_cse_exactly.py",), "dce or opt/flags"),
    "mgxir/passes/eliminate_common_subexpression.py": Selection((U + "passes/test_dce_and_cse_exactly.py",), "cse"),
    "mgxir/passes/fuse_pointwise.py": Selection(
        (*PASS_TESTS, U + "passes/test_fuse.py", U + "passes/test_fuse_helpers.py"), "fuse_pointwise"
    ),
    "mgxir/passes/fuse_reduce.py": Selection(
        (*PASS_TESTS, U + "passes/test_fuse.py", U + "passes/test_fuse_helpers.py"), "opt/"
    ),
    "mgxir/passes/rewrite_reshapes.py": Selection(
        (*PASS_TESTS, U + "passes/test_fuse.py", U + "passes/test_fuse_helpers.py"), "opt/"
    ),
    "mgxir/passes/module_fusion.py": Selection(
        (*PASS_TESTS, U + "passes/test_fuse.py", U + "passes/test_fuse_helpers.py"), "opt/"
    ),
    "mgxir/passes/manager.py": Selection(
        (
            U + "passes/test_pass_manager.py",
            U + "passes/test_pass_manager_unchanged.py",
            U + "passes/test_pass_manager_reports.py",
        ),
        "opt/",
    ),
    "mgxir/passes/base.py": Selection(
        (U + "passes/test_pass_manager_reports.py", U + "passes/test_pass_manager.py"), "opt/"
    ),
    "mgxir/passes/testing.py": Selection(
        (U + "passes/test_pass_manager_reports.py", U + "passes/test_pass_manager.py")
    ),
    "mgxir/passes/registry.py": Selection(
        (
            U + "passes/test_pass_registry.py",
            U + "passes/test_pass_manager_reports.py",
            U + "passes/test_pass_differential.py",
        ),
        "opt/",
    ),
    "mgxir/passes/eliminate_concat.py": Selection(
        (U + "passes/test_new_passes.py", U + "passes/test_eliminate_concat.py"), "eliminate_concat"
    ),
    "mgxir/passes/memory_coloring.py": Selection((*PASS_TESTS, U + "passes/test_pass_memory_coloring.py"), "opt/"),
    "mgxir/passes/eliminate_contiguous.py": Selection(
        (*PASS_TESTS, U + "passes/test_eliminate_contiguous.py"),
        "opt/",
    ),
    "mgxir/passes/optimize_module.py": Selection(
        (*PASS_TESTS, U + "passes/test_optimize_module.py"),
        "opt/",
    ),
    "mgxir/passes/matchers.py": Selection((*PASS_TESTS, U + "passes/test_matchers.py"), "opt/"),
    "mgxir/passes/auto_contiguous.py": Selection((*PASS_TESTS, U + "passes/test_ref_passes.py"), "opt/"),
    "mgxir/passes/normalize_ops.py": Selection((*PASS_TESTS, U + "passes/test_ref_passes.py"), "opt/"),
    "mgxir/passes/ref_lowering.py": Selection((*PASS_TESTS, U + "passes/test_ref_passes.py"), "opt/"),
    "mgxir/passes/propagate_constant.py": Selection(
        (*PASS_TESTS, U + "passes/test_propagate_constant.py"),
        "opt/",
    ),
    "mgxir/passes/rewrite.py": Selection((*PASS_TESTS, U + "passes/test_rewrite.py"), "opt/"),
    # pass modules with tests of their own: those and the package's
    "mgxir/passes/rewrite_rnn.py": Selection((*PASS_TESTS, U + "passes/test_rewrite_rnn.py"), "opt/"),
    "mgxir/passes/split_reduce.py": Selection(
        (
            *PASS_TESTS,
            U + "passes/test_split_reduce.py",
            U + "passes/test_new_passes.py",
        ),
        "opt/",
    ),
    "mgxir/passes/rewrite_gelu.py": Selection((*PASS_TESTS, U + "passes/test_rewrite_gelu_forms.py"), "opt/"),
    "mgxir/passes/rewrite_reduce.py": Selection((*PASS_TESTS, U + "passes/test_rewrite_reduce.py"), "opt/"),
    "mgxir/passes/rewrite_pooling.py": Selection((*PASS_TESTS, U + "passes/test_rewrite_pooling.py"), "opt/"),
    "mgxir/passes/eliminate_pad.py": Selection((*PASS_TESTS, U + "passes/test_eliminate_and_insert_pad.py"), "opt/"),
    "mgxir/passes/insert_pad.py": Selection((*PASS_TESTS, U + "passes/test_eliminate_and_insert_pad.py"), "opt/"),
    "mgxir/passes/inline_module.py": Selection(
        (*PASS_TESTS, U + "passes/test_inline_module_and_eliminate_convert.py"), "opt/"
    ),
    "mgxir/passes/eliminate_convert.py": Selection(
        (*PASS_TESTS, U + "passes/test_inline_module_and_eliminate_convert.py"), "opt/"
    ),
    "mgxir/passes/simplify_algebra/linear.py": Selection(
        (*PASS_TESTS, U + "passes/test_simplify_algebra_linear.py"),
        "opt/",
    ),
    "mgxir/passes/simplify_algebra/concat.py": Selection(
        (*PASS_TESTS, U + "passes/test_simplify_algebra_concat.py"),
        "opt/",
    ),
    # translate/ and targets/: each format and target by its own tests (the lit bridge's translate/ cases
    # call mgx-translate in-process)
    "mgxir/translate/": Selection((U + "translate/test_translate_files.py",), "translate/"),
    "mgxir/translate/onnx/": Selection(ONNX_TESTS, "translate/onnx"),
    "mgxir/translate/mxr/": Selection(
        (
            U + "translate/mxr/test_mxr_values.py",
            U + "translate/mxr/test_mxr_program_values.py",
            U + "translate/mxr/test_mxr_operation_values.py",
        ),
        "translate/mxr",
    ),
    "mgxir/translate/mlir/": Selection(MLIR_TESTS, "translate/mlir"),
    "mgxir/translate/spirv/": Selection(SPIRV_TESTS, "translate/spirv"),
    "mgxir/translate/py/": Selection(
        (U + "translate/py/test_py_writer_round_trip.py", U + "translate/py/test_py_repro_api.py"), "translate/py"
    ),
    "mgxir/translate/dot/": Selection((U + "translate/dot/test_dot_labels.py",), "translate/dot"),
    "mgxir/targets/": Selection(
        (
            U + "targets/test_targets.py",
            U + "targets/test_target_cache_keys.py",
        ),
        "run/",
    ),
    "mgxir/targets/gpu/": Selection(GPU_TESTS),
    "mgxir/targets/iree/": Selection(
        (
            U + "targets/iree/test_iree_cache.py",
            U + "targets/iree/test_iree_devices.py",
            U + "targets/iree/test_mlir_ops_iree.py",
        )
    ),
    "mgxir/targets/vulkan/": Selection((U + "targets/vulkan/test_vulkan_device.py", *SPIRV_TESTS)),
    "mgxir/passes/simplify_reshapes/": Selection(
        (U + "passes/test_simplify_reshapes_views.py", U + "passes/test_simplify_reshapes_concat_gather.py"),
        "simplify_reshapes",
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


def source_files() -> list[str]:
    """The repository's files: git's tracked and untracked-not-ignored ones, or, outside a git checkout
    (an exported tree), every file not under a dot-directory, a cache or a mutmut output."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, text=True
    )
    if listed.returncode == 0 and (REPO / ".git").exists():
        return listed.stdout.split()
    skipped = {"__pycache__", "mutants", "build", "dist"}
    return [
        str(path.relative_to(REPO))
        for path in sorted(REPO.rglob("*"))
        if path.is_file()
        and not any(part.startswith(".") or part in skipped for part in path.relative_to(REPO).parent.parts)
        and not path.name.endswith(".pyc")
    ]


def scratch_copy(modules: list[str], tests: list[str], root: Path | None = None, refresh: bool = False) -> Path:
    """The repository's files in `root` (a new temporary directory if None), with [tool.mutmut]
    narrowed to `modules`. A `root` that already holds a copy is kept as it is (with mutmut's results
    in root/mutants, or with only its .meta files and stats there, as a run elsewhere left them), unless
    `refresh`: then the repository's current files replace the copy's, and mutmut's results stay."""
    if root is not None and (root / "pyproject.toml").is_file() and not refresh:
        return root
    root = Path(tempfile.mkdtemp(prefix="mgxir-mutation-")) if root is None else root
    root.mkdir(parents=True, exist_ok=True)
    for name in source_files():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_file() and not (target.is_file() and filecmp.cmp(REPO / name, target, shallow=False)):
            shutil.copy2(REPO / name, target)
    # tests find the reference material at ../shared from the checkout: the same from the copy
    shared = REPO.parent / "shared"
    if shared.is_dir() and not (root / "shared").exists():
        (root / "shared").symlink_to(shared)
    for module in modules:
        text = undecorate((REPO / module).read_text())
        if not (root / module).is_file() or (root / module).read_text() != text:  # an unchanged file keeps its time
            (root / module).write_text(text)
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


def reset_survivors(root: Path, modules: list[str]) -> int:
    """Forget the results of the mutants that survived or had no tests, so that mutmut checks them
    again; returns how many."""
    from mutmut.stats import status_by_exit_code

    count = 0
    for module in modules:
        meta = root / "mutants" / f"{module}.meta"
        if not meta.is_file():
            continue
        data = json.loads(meta.read_text())
        codes = data["exit_code_by_key"]
        for name, code in codes.items():
            if code is not None and status_by_exit_code[code] in ("survived", "no tests"):
                codes[name] = None
                count += 1
        meta.write_text(json.dumps(data, indent=4))
    return count


def mutant_statuses(
    root: Path, modules: list[str], before: dict[str, dict[str, str]] | None = None
) -> dict[str, dict[str, str]]:
    """module -> {mutant: mutmut's status}, from the .meta file mutmut rewrites after each mutant; for a
    module whose file cannot be read (not generated yet, or being written, or cut short by the deadline's
    kill), what `before` had."""
    from mutmut.stats import status_by_exit_code  # mutmut is needed only once it ran

    found: dict[str, dict[str, str]] = {}
    for module in modules:
        try:
            codes = json.loads((root / "mutants" / f"{module}.meta").read_text())["exit_code_by_key"]
            found[module] = {name: status_by_exit_code[code] for name, code in codes.items()}
        except (OSError, ValueError, KeyError):
            found[module] = (before or {}).get(module, {})
    return found


@dataclasses.dataclass(frozen=True)
class Counts:
    """One module's mutants by outcome; `other`: the statuses not named here (suspicious, skipped...)."""

    mutants: int
    killed: int  # KILLED's statuses
    survived: int
    no_tests: int
    timeout: int
    not_checked: int
    other: dict[str, int]

    @property
    def checked(self) -> int:
        return self.mutants - self.not_checked

    @property
    def score(self) -> float | None:
        """Percent killed of those checked (None before any is checked)."""
        return round(100.0 * self.killed / self.checked, 2) if self.checked else None

    def as_json(self) -> dict[str, object]:
        return dataclasses.asdict(self) | {"score": self.score}


def counts(statuses: dict[str, str]) -> Counts:
    by_status = Counter(statuses.values())
    named = {"survived", "no tests", "timeout", NOT_CHECKED, *KILLED}
    return Counts(
        mutants=len(statuses),
        killed=sum(by_status[s] for s in KILLED),
        survived=by_status["survived"],
        no_tests=by_status["no tests"],
        timeout=by_status["timeout"],
        not_checked=by_status[NOT_CHECKED],
        other={status: n for status, n in sorted(by_status.items()) if status not in named},
    )


def survivors(statuses: dict[str, dict[str, str]]) -> list[tuple[str, str, str]]:
    """(module, mutant, status) of each mutant checked and not killed."""
    return [
        (module, name, status)
        for module, of_module in statuses.items()
        for name, status in of_module.items()
        if status not in KILLED and status != NOT_CHECKED
    ]


def report(statuses: dict[str, dict[str, str]], min_score: float) -> bool:
    """Prints the survivors and the per-module table; whether every module was checked in full and
    reached `min_score`."""
    print("\n".join(f"{name}: {status}" for _, name, status in survivors(statuses)) or "no survivors")
    print(f"\n{'module':60} {'mutants':>8} {'checked':>8} {'killed':>7} {'score':>7}")
    passed = True
    for module, of_module in statuses.items():
        row = counts(of_module)
        score = 100.0 if row.score is None else row.score
        passed &= score >= min_score and not row.not_checked
        print(f"{module:60} {row.mutants:8} {row.checked:8} {row.killed:7} {score:6.1f}%")
    return passed


class JsonResults:
    """The run's results as JSON at `path`: the counts per module and each survivor with its diff (the
    diffs need the working directory to be the scratch copy, as `mutmut show` does)."""

    def __init__(self, path: Path, about: dict[str, object]) -> None:
        self.path = path
        self.about = about
        self.diffs: dict[str, str] = {}

    def diff(self, name: str, module: str) -> str:
        if name not in self.diffs:
            from mutmut.mutation.diff_apply import get_diff_for_mutant

            try:
                self.diffs[name] = get_diff_for_mutant(name, path=module)
            except Exception as error:  # a diff that cannot be read must not stop the run
                return f"(no diff: {error})"
        return self.diffs[name]

    def write(self, statuses: dict[str, dict[str, str]], **state: object) -> None:
        document = {
            **self.about,
            **state,
            "modules": {module: counts(of_module).as_json() for module, of_module in statuses.items()},
            "survivors": [
                {"module": module, "name": name, "status": status, "diff": self.diff(name, module)}
                for module, name, status in survivors(statuses)
            ],
        }
        partial = self.path.with_name(self.path.name + ".part")
        partial.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
        partial.replace(self.path)


def run_mutmut(
    root: Path, arguments: list[str], deadline: float | None, every: float, progress: Callable[[], None]
) -> tuple[int, bool]:
    """`mutmut run` in `root`, its output appended to root/mutmut.log, `progress` called every `every`
    seconds; stopped at `deadline` (time.monotonic()): interrupted, then killed 5 s later (the tests
    that run in mutmut's own process may leave their SIGINT handler behind). Returns its exit status and
    whether the deadline stopped it."""
    mutmut = Path(sys.executable).with_name("mutmut")
    with (root / "mutmut.log").open("a") as log:
        process = subprocess.Popen(
            [str(mutmut), "run", *arguments], cwd=root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        next_progress = time.monotonic() + every
        interrupted_at: float | None = None
        while process.poll() is None:
            time.sleep(1.0)
            now = time.monotonic()
            if deadline is not None and interrupted_at is None and now >= deadline:
                process.send_signal(signal.SIGINT)
                interrupted_at = now
            elif interrupted_at is not None and now >= interrupted_at + 5:
                os.killpg(process.pid, signal.SIGKILL)
            if now >= next_progress:
                progress()
                next_progress = now + every
        with contextlib.suppress(ProcessLookupError):  # the test processes it left behind
            os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, interrupted_at is not None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="files or package directories to mutate (default: changed ones)")
    parser.add_argument("--base", default="main", help="git revision to diff against")
    parser.add_argument("--tests", help="pytest arguments choosing the tests mutmut runs (default: TEST_SELECTIONS)")
    parser.add_argument("--min-score", type=float, default=90.0, help="percent of mutants that must be killed")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy (its path is printed)")
    parser.add_argument("--max-children", type=int, help="mutmut's parallel test processes")
    parser.add_argument("--json", type=Path, help="write the counts and the survivors with their diffs here")
    parser.add_argument("--deadline", type=float, help="stop mutmut this many seconds after the start")
    parser.add_argument("--scratch", type=Path, help="the copy's directory (kept; a run there goes on)")
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="with --scratch: copy the repository's current files in (mutmut checks the changed functions again)",
    )
    parser.add_argument(
        "--recheck",
        action="store_true",
        help="with --scratch: copy the repository's current files in and check again the mutants that survived",
    )
    args = parser.parse_args()
    if (args.recheck or args.refresh) and not args.scratch:
        print("error: --recheck and --refresh go on in a kept copy: name it with --scratch DIR", file=sys.stderr)
        return 1
    started = time.monotonic()
    modules = expand(args.modules) if args.modules else changed_modules(args.base)
    for module in modules:
        if not (REPO / module).is_file() or not module.startswith(MUTATED_PACKAGES) or not module.endswith(".py"):
            print(f"error: {module}: not a Python module under {', '.join(MUTATED_PACKAGES)}", file=sys.stderr)
            return 1
    for module in sorted(set(modules) & NOT_MUTATED.keys()):
        print(f"not mutating {module}: {NOT_MUTATED[module]}")
    modules = [module for module in modules if module not in NOT_MUTATED]
    if not modules:
        print(f"no module under {', '.join(MUTATED_PACKAGES)} changed since {args.base}")
        return 0
    tests = shlex.split(args.tests) if args.tests else pytest_arguments(modules)
    root = scratch_copy(
        modules, tests, args.scratch.resolve() if args.scratch else None, refresh=args.recheck or args.refresh
    )
    if args.recheck:
        print(f"checking again {reset_survivors(root, modules)} mutants that survived", flush=True)
    print(f"mutating {', '.join(modules)} in {root}\ntests: {shlex.join(tests)}", flush=True)
    children = ["--max-children", str(args.max_children)] if args.max_children else []
    results = JsonResults(args.json.resolve(), {"command": sys.argv, "tests": tests}) if args.json else None
    os.chdir(root)  # mutmut's diffs read the copy's relative paths

    last: dict[str, dict[str, str]] = {}

    def progress() -> None:
        last.update(mutant_statuses(root, modules, last))
        rows = [counts(of_module) for of_module in last.values()]
        total, checked = sum(r.mutants for r in rows), sum(r.checked for r in rows)
        killed = sum(r.killed for r in rows)
        print(f"[{time.monotonic() - started:5.0f} s] checked {checked}/{total}, killed {killed}", flush=True)
        if results:
            results.write(last, finished=False, elapsed_s=round(time.monotonic() - started))

    try:
        deadline = started + args.deadline if args.deadline is not None else None
        status, stopped = run_mutmut(root, children, deadline, JSON_EVERY_S, progress)
        print("".join((root / "mutmut.log").read_text().splitlines(keepends=True)[-12:]), flush=True)
        statuses = mutant_statuses(root, modules, last)
        if results:
            finished = status == 0 and not stopped
            results.write(
                statuses, finished=finished, mutmut_status=status, elapsed_s=round(time.monotonic() - started)
            )
        return 0 if report(statuses, args.min_score) else 1
    finally:
        os.chdir(REPO)
        if not (args.keep or args.scratch):
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
