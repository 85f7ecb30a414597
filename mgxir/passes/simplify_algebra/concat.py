"""simplify_algebra rewrites (family: concat)."""

from __future__ import annotations

REWRITES: tuple = ()
