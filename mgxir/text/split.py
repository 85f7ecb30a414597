"""`--split-input-file`: one input holding several cases between `// -----` lines, as in mlir-opt."""

from __future__ import annotations

import dataclasses

SPLIT_MARKER = "// -----"


@dataclasses.dataclass
class Chunk:
    text: str
    first_line: int  # 1-based line of the whole file where the chunk starts

    def line_map(self) -> list[int]:
        return [self.first_line + i for i in range(self.text.count("\n") + 1)]


def split_input(text: str) -> list[Chunk]:
    chunks: list[Chunk] = []
    start = 0
    current: list[str] = []
    for number, line in enumerate(text.split("\n")):
        if line.startswith(SPLIT_MARKER):
            chunks.append(Chunk("\n".join(current), start + 1))
            current = []
            start = number + 1
        else:
            current.append(line)
    chunks.append(Chunk("\n".join(current), start + 1))
    return chunks
