"""simplify_reshapes rewrites (family: views)."""

from __future__ import annotations

REWRITES: tuple = ()
