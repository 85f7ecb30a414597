"""simplify_algebra rewrites (family: linear)."""

from __future__ import annotations

REWRITES: tuple = ()
