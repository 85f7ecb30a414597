"""The cases of a lit test file as program texts, for unit tests that run them on the interpreter."""

from __future__ import annotations

from pathlib import Path

OPT_TESTS = Path(__file__).resolve().parents[1] / "opt"


def lit_cases(path: Path | str) -> list[str]:
    """Each `// -----` case of `path` (a file name in test/opt, or a path) without its `//` lines."""
    path = Path(path)
    if not path.is_absolute():
        path = OPT_TESTS / path
    chunks = path.read_text().split("// -----")
    return ["\n".join(x for x in chunk.splitlines() if not x.lstrip().startswith("//")) + "\n" for chunk in chunks]
