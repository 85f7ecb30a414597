"""Every unit test sees the whole operator catalogue, as the tools do.

test/unit mirrors mgxir/: a test's folder is the package it tests. Helpers other tests import live in
support/; a few test modules lend their program builders to tests in other folders (the differential
harness in passes/, the compute helpers in ops/, the example programs in text/), so those folders are
importable from anywhere too (pytest puts only the test's own folder on sys.path)."""

import sys
from pathlib import Path

from mgxir.ops import register_all_ops

UNIT = Path(__file__).resolve().parent
for folder in ("support", "passes", "ops", "text"):
    sys.path.insert(0, str(UNIT / folder))

register_all_ops()
