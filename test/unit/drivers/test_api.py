"""The Python API (`import mgxir`, mgxir/drivers/api.py): docs/api.md's examples and the API's
docstrings run as doctests, and what the examples do not show."""

from __future__ import annotations

import doctest
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mgxir
from mgxir.drivers import api

ROOT = Path(__file__).resolve().parents[3]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def test_the_api_page_runs() -> None:
    result = doctest.testfile(str(ROOT / "docs" / "api.md"), module_relative=False, optionflags=FLAGS)
    assert result.attempted > 20
    assert result.failed == 0


@pytest.mark.parametrize("module", [mgxir, api])
def test_the_docstrings_run(module: object) -> None:
    result = doctest.testmod(module, extraglobs={"mgxir": mgxir}, optionflags=FLAGS)  # type: ignore[arg-type]
    assert result.attempted > 0
    assert result.failed == 0


def test_import_mgxir_loads_nothing_heavy() -> None:
    script = "import sys, mgxir; print(sorted(m for m in sys.modules if m.startswith(('mgxir.', 'numpy'))))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_public_name_loads() -> None:
    for name in mgxir.__all__:
        assert getattr(mgxir, name) is not None, name
    assert mgxir.print is api.print_text
    with pytest.raises(AttributeError):
        mgxir.no_such_name  # noqa: B018


def test_load_onnx_takes_the_drivers_options() -> None:
    model = ROOT.parent / "shared" / "onnx-models" / "variable_batch_test.onnx"
    if not model.exists():
        pytest.skip("needs ../shared/onnx-models")
    p = mgxir.load(model, batch=4)
    assert p.main.parameters()[0].shape.lens[0] == 4


def test_compile_checks_before_running() -> None:
    dynamic = mgxir.parse("image = @param:image -> float_type, {[1..4], 3}\n@1 = relu(image)\n")
    with pytest.raises(mgxir.MgxError, match="no input for parameter 'image'"):
        mgxir.run(dynamic, {}, fill="ones")
    outputs = mgxir.run(dynamic, {"image": np.ones((2, 3), np.float32)})
    assert outputs[0].shape == (2, 3)
    with pytest.raises(mgxir.MgxError, match="input 'imgae' is not a parameter of main; did you mean 'image'"):
        mgxir.run(dynamic, {"imgae": 1})
    with pytest.raises(mgxir.MgxError, match="fill must be random, zeros or ones, not 'twos'"):
        mgxir.run(dynamic, {}, fill="twos")
