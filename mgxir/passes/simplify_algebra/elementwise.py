"""simplify_algebra rewrites (family: elementwise)."""

from __future__ import annotations

REWRITES: tuple = ()
