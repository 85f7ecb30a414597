"""`--split-input-file`: one input holding several cases between `// -----` lines, as in mlir-opt.

A case may name itself with a comment line `// case: NAME` (as an MLIR test names its function);
the tools print that line before the case's output, so that FileCheck's CHECK-LABEL can anchor
each case's checks on its own name."""

from __future__ import annotations

import dataclasses

SPLIT_MARKER = "// -----"
CASE_PREFIX = "// case: "


@dataclasses.dataclass
class Chunk:
    text: str
    first_line: int  # 1-based line of the whole file where the chunk starts

    def line_map(self) -> list[int]:
        return [self.first_line + i for i in range(self.text.count("\n") + 1)]

    def case_name(self) -> str | None:
        """The NAME of the chunk's first `// case: NAME` line, if it has one."""
        for line in self.text.split("\n"):
            if line.strip().startswith(CASE_PREFIX):
                return line.strip().removeprefix(CASE_PREFIX).strip()
        return None

    def labelled(self, output: str) -> str:
        """The chunk's output, after its `// case: NAME` line when it names itself."""
        name = self.case_name()
        return output if name is None else f"{CASE_PREFIX}{name}\n{output}"


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
