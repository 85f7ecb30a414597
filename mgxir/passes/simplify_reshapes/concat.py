"""simplify_reshapes rewrites (family: concat)."""

from __future__ import annotations

REWRITES: tuple = ()
