"""The pass table imports a pass's module only when the pass is looked up (start-up cost), and every
place it names holds the class of that name."""

from __future__ import annotations

import importlib
import subprocess
import sys

from mgxir.passes.base import Pass
from mgxir.passes.registry import PASSES, PassTable, list_passes, parse_pipeline


def test_each_place_holds_the_pass_of_its_name() -> None:
    for name in PASSES:
        cls = PASSES[name]
        assert issubclass(cls, Pass)
        assert cls.name == name


def test_a_pipeline_imports_only_the_passes_it_names() -> None:
    script = (
        "import sys\n"
        "from mgxir.passes.registry import parse_pipeline\n"
        "parse_pipeline('dce')\n"
        "print(sorted(m for m in sys.modules if m.startswith('mgxir.passes.') and m != 'mgxir.passes.registry'))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = eval(result.stdout)
    assert "mgxir.passes.dead_code_elimination" in loaded
    assert "mgxir.passes.fuse_pointwise" not in loaded
    assert "mgxir.passes.simplify_algebra" not in loaded


def test_list_passes_names_every_pass() -> None:
    listing = list_passes()
    for name, cls in PASSES.items():
        assert f"  {name}: {cls.description}" in listing


def test_a_filed_place_is_imported_on_lookup_and_a_registered_class_kept() -> None:
    table = PassTable({"dead_code_elimination": "mgxir.passes.dead_code_elimination:DeadCodeElimination"})
    module = importlib.import_module("mgxir.passes.dead_code_elimination")
    assert table["dead_code_elimination"] is module.DeadCodeElimination
    assert len(table) == 1
    eliminate = importlib.import_module("mgxir.passes.eliminate_common_subexpression")
    table.register(eliminate.EliminateCommonSubexpression)
    assert list(table) == ["dead_code_elimination", "eliminate_common_subexpression"]
    assert table["eliminate_common_subexpression"] is eliminate.EliminateCommonSubexpression
    assert [type(p).__name__ for p in parse_pipeline("dce,cse")] == [
        "DeadCodeElimination",
        "EliminateCommonSubexpression",
    ]
