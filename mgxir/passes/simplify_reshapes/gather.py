"""simplify_reshapes rewrites (family: gather)."""

from __future__ import annotations

REWRITES: tuple = ()
