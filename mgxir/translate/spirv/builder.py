"""A SPIR-V assembly writer: named ids, types and constants made once each, and instructions whose
opcode and enumerant names are checked against the grammar (see grammar.py).

The text is what `spirv-as` reads: `%name = OpFAdd %float %a %b`. Sections follow the order the
SPIR-V specification requires (capabilities, extensions, imports, memory model, entry point,
execution modes, annotations, types/constants/globals, functions)."""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Sequence

import numpy as np

from mgxir.translate.spirv.grammar import Grammar, grammar

Operand = str | int | float

# spirv-as names: letters, digits and '_' (a leading '%' added)
_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9_]")


class Enumerant(str):
    """An enumerant checked against the grammar; printed as is."""


class Literal(str):
    """A literal operand printed as is (a number already formatted for its type)."""


class ModuleBuilder:
    def __init__(self, spirv: Grammar | None = None) -> None:
        self.spirv = spirv or grammar()
        self.capabilities: list[str] = []
        self.extensions: list[str] = []
        self.imports: list[str] = []
        self.header: list[str] = []
        self.annotations: list[str] = []
        self.globals: list[str] = []
        self.body: list[str] = []
        self.interface: list[str] = []  # Input variables the entry point must list
        self._cached: dict[tuple, str] = {}
        self._names: dict[str, int] = {}
        self.glsl_set = ""

    # -- ids, enumerants, instructions ----------------------------------------------------

    def fresh(self, hint: str = "t") -> str:
        base = _NAME_CHARACTERS.sub("_", hint) or "t"
        count = self._names.get(base, 0)
        self._names[base] = count + 1
        return f"%{base}" if count == 0 and not base[0].isdigit() else f"%{base}_{count}"

    def enum(self, kind: str, name: str) -> Enumerant:
        return Enumerant(self.spirv.enumerant(kind, name))

    def _line(self, opname: str, operands: Sequence[Operand], result_type: str | None, result: str | None) -> str:
        form = self.spirv.instruction(opname)
        if form.has_result_type != (result_type is not None):
            raise ValueError(f"{opname} {'needs' if form.has_result_type else 'takes no'} result type")
        words = [opname]
        if result_type is not None:
            words.append(result_type)
        words.extend(_format(o) for o in operands)
        text = " ".join(words)
        if form.has_result:
            return f"{result} = {text}"
        return text

    def emit(self, opname: str, *operands: Operand, type: str | None = None, name: str = "t") -> str:
        """An instruction in the current function; returns its result id (or '' if it has none)."""
        form = self.spirv.instruction(opname)
        result = self.fresh(name) if form.has_result else ""
        self.body.append(self._line(opname, operands, type, result))
        return result

    def emit_as(self, result: str, opname: str, *operands: Operand, type: str | None = None) -> str:
        """An instruction whose result id was reserved earlier with `fresh` (loop phis refer to it)."""
        self.body.append(self._line(opname, operands, type, result))
        return result

    def emit_global(self, opname: str, *operands: Operand, type: str | None = None, name: str = "g") -> str:
        form = self.spirv.instruction(opname)
        result = self.fresh(name) if form.has_result else ""
        self.globals.append(self._line(opname, operands, type, result))
        return result

    def decorate(self, target: str, decoration: str, *values: Operand) -> None:
        self.annotations.append(
            self._line("OpDecorate", [target, self.enum("Decoration", decoration), *values], None, None)
        )

    def decorate_member(self, target: str, member: int, decoration: str, *values: Operand) -> None:
        line = self._line(
            "OpMemberDecorate", [target, member, self.enum("Decoration", decoration), *values], None, None
        )
        self.annotations.append(line)

    def capability(self, name: str) -> None:
        line = self._line("OpCapability", [self.enum("Capability", name)], None, None)
        if line not in self.capabilities:
            self.capabilities.append(line)

    def extension(self, name: str) -> None:
        line = self._line("OpExtension", [name], None, None)
        if line not in self.extensions:
            self.extensions.append(line)

    def glsl(self, name: str, result_type: str, *operands: str) -> str:
        """A GLSL.std.450 extended instruction."""
        if not self.glsl_set:
            self.glsl_set = "%glsl"
            self.imports.append(f'{self.glsl_set} = {self.spirv.instruction("OpExtInstImport").opname} "GLSL.std.450"')
        instruction = Literal(self.spirv.glsl_instruction(name))
        return self.emit("OpExtInst", self.glsl_set, instruction, *operands, type=result_type, name=name.lower())

    # -- types ----------------------------------------------------------------------------

    def _type(self, key: tuple, opname: str, *operands: Operand, name: str) -> str:
        found = self._cached.get(key)
        if found is None:
            found = self.emit_global(opname, *operands, name=name)
            self._cached[key] = found
        return found

    def void(self) -> str:
        return self._type(("void",), "OpTypeVoid", name="void")

    def boolean(self) -> str:
        return self._type(("bool",), "OpTypeBool", name="bool")

    def int_type(self, width: int, signed: bool) -> str:
        return self._type(
            ("int", width, signed), "OpTypeInt", width, int(signed), name=f"{'i' if signed else 'u'}{width}"
        )

    def float_type(self, width: int) -> str:
        return self._type(("float", width), "OpTypeFloat", width, name=f"f{width}")

    def vector(self, element: str, count: int) -> str:
        return self._type(("vector", element, count), "OpTypeVector", element, count, name=f"v{count}{element[1:]}")

    def pointer(self, storage: str, pointee: str) -> str:
        key = ("pointer", storage, pointee)
        return self._type(key, "OpTypePointer", self.enum("StorageClass", storage), pointee, name=f"ptr_{pointee[1:]}")

    def array(self, element: str, count: int, stride: int | None = None) -> str:
        key = ("array", element, count, stride)
        found = self._cached.get(key)
        if found is None:
            found = self.emit_global("OpTypeArray", element, self.const_uint(count), name=f"arr_{element[1:]}")
            self._cached[key] = found
            if stride is not None:
                self.decorate(found, "ArrayStride", stride)
        return found

    def runtime_array(self, element: str, stride: int) -> str:
        key = ("runtime_array", element, stride)
        found = self._cached.get(key)
        if found is None:
            found = self.emit_global("OpTypeRuntimeArray", element, name=f"rarr_{element[1:]}")
            self._cached[key] = found
            self.decorate(found, "ArrayStride", stride)
        return found

    def block_struct(self, member: str, name: str) -> str:
        """A one-member `Block` struct (storage buffers, push constants), not shared between uses."""
        struct_id = self.emit_global("OpTypeStruct", member, name=name)
        self.decorate(struct_id, "Block")
        self.decorate_member(struct_id, 0, "Offset", 0)
        return struct_id

    def function_type(self, result: str) -> str:
        return self._type(("function", result), "OpTypeFunction", result, name="fn")

    # -- constants ------------------------------------------------------------------------

    def constant(self, type_id: str, value: float | int | bool) -> str:
        """A constant of a scalar type made by float_type/int_type/boolean."""
        key = ("constant", type_id, _constant_key(value))
        found = self._cached.get(key)
        if found is not None:
            return found
        if isinstance(value, bool):
            found = self.emit_global(
                "OpConstantTrue" if value else "OpConstantFalse", type=type_id, name=str(value).lower()
            )
        else:
            text, hint = _literal(type_id, value)
            found = self.emit_global("OpConstant", Literal(text), type=type_id, name=f"c_{type_id[1:]}_{hint}")
        self._cached[key] = found
        return found

    def const_uint(self, value: int) -> str:
        return self.constant(self.int_type(32, False), value)

    def const_composite(self, type_id: str, parts: Sequence[str], name: str = "cc") -> str:
        key = ("composite", type_id, tuple(parts))
        found = self._cached.get(key)
        if found is None:
            found = self.emit_global("OpConstantComposite", *parts, type=type_id, name=name)
            self._cached[key] = found
        return found

    def variable(self, pointer_type: str, storage: str, name: str) -> str:
        return self.emit_global("OpVariable", self.enum("StorageClass", storage), type=pointer_type, name=name)

    # -- text -----------------------------------------------------------------------------

    def text(self) -> str:
        sections = [
            self.capabilities,
            self.extensions,
            self.imports,
            self.header,
            self.annotations,
            self.globals,
            self.body,
        ]
        return "\n".join(line for section in sections for line in section) + "\n"


def _constant_key(value: float | int | bool) -> tuple:
    if isinstance(value, float):
        return ("f", struct.pack("<d", value))  # tells -0.0 and NaN payloads apart
    return (type(value).__name__, value)


def _literal(type_id: str, value: float | int) -> tuple[str, str]:
    """The literal text spirv-as reads for a constant, and a short hint for its name."""
    if type_id.startswith("%f"):
        number = _rounded(float(value), type_id)
        beyond = "1024" if type_id == "%f64" else "128"  # the exponent past the type's largest
        if math.isnan(number):
            return f"0x1.8p+{beyond}", "nan"
        if math.isinf(number):
            return ("-" if number < 0 else "") + f"0x1p+{beyond}", "ninf" if number < 0 else "inf"
        hint = repr(number).replace("-", "m").replace(".", "p").replace("+", "")
        return number.hex(), _NAME_CHARACTERS.sub("_", hint)[:16]
    number = int(value)
    return str(number), str(number).replace("-", "m")


def _rounded(number: float, type_id: str) -> float:
    """`number` rounded to the constant's float width, so spirv-as reads it exactly."""
    if type_id == "%f16":
        return float(np.float16(number))
    if type_id == "%f32":
        return float(np.float32(number))
    return number


def _format(operand: Operand) -> str:
    if isinstance(operand, Enumerant | Literal):
        return str(operand)
    if isinstance(operand, str):
        if operand.startswith("%"):
            return operand
        return '"' + operand.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(operand, bool):
        return str(int(operand))
    return str(operand)
