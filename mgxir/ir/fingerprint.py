"""A program's structural content fingerprint, found without printing it.

Two programs have the same fingerprint when they compute the same thing the same way: the same
modules (in print order) holding the same instructions — operator, every attribute value exactly
(floats by their bits), result shape, target id, arguments by position, module arguments — and the
same literal data, bit for bit. Instruction names, module names and source lines do not count;
parameter names do (they are a program's interface). Every cache key in mgxir comes from here.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import numpy as np

from mgxir.ir.literal import Literal
from mgxir.ir.shape import Shape, format_shape

if TYPE_CHECKING:
    from mgxir.ir.instruction import Instruction
    from mgxir.ir.module import Module
    from mgxir.ir.operation import Operation
    from mgxir.ir.program import Program

DIGEST_SIZE = 16


def program_fingerprint(program: Program) -> str:
    """The fingerprint of every module of `program` (hex, 32 characters)."""
    return _fingerprint(program.print_order())


def module_fingerprint(module: Module) -> str:
    """The fingerprint of `module` and the modules it reaches through module arguments."""
    return _fingerprint(module.reachable_modules())


def data_digest(data: np.ndarray) -> str:
    """The digest of an array's element type, dimensions and values in row-major order."""
    h = hashlib.blake2b(digest_size=DIGEST_SIZE)
    h.update(f"{data.dtype.str}{data.shape}".encode())
    # as bytes: a buffer of ml_dtypes' types (bf16, fp8) has a format memoryview cannot cast
    h.update(memoryview(np.ascontiguousarray(data).reshape(-1).view(np.uint8)))
    return h.hexdigest()


def literal_digest(literal: Literal) -> str:
    """`data_digest` of a literal's values (kept on the literal: literal data is never changed in place)."""
    if literal.digest is None:
        literal.digest = "elided" if literal.data is None else data_digest(literal.data)
    return literal.digest


def _fingerprint(modules: list[Module]) -> str:
    index: dict[int, int] = {}
    unique: list[Module] = []
    for m in modules:
        if id(m) not in index:
            index[id(m)] = len(unique)
            unique.append(m)
    position: dict[Instruction, tuple[int, int]] = {}
    for k, m in enumerate(unique):
        for n, ins in enumerate(m):
            position[ins] = (k, n)
    ops: dict[int, str] = {}
    h = hashlib.blake2b(digest_size=DIGEST_SIZE)
    for m in unique:
        parts = [f"module {len(m)} bypass={int(m.bypass)}"]
        for ins in m:
            op_key = ops.get(id(ins.op))
            if op_key is None:
                op_key = ops[id(ins.op)] = _operation_key(ins.op)
            args = ",".join(
                f"{position[a][0]}.{position[a][1]}" if a in position else f"?{a.op.values[0] if a.op.values else ''}"
                for a in ins.args
            )
            mods = ",".join(str(index.get(id(s), -1)) for s in ins.module_args)
            shape = "" if ins.shape is None else _shape_key(ins.shape)
            parts.append(f"{op_key}|{shape}|{ins.target_id}|({args})|[{mods}]")
        h.update("\n".join(parts).encode())
        h.update(b"\0")
    return h.hexdigest()


def _operation_key(op: Operation) -> str:
    return op.defn.name + "".join(_value_key(v) for v in op.values)


def _shape_key(shape: Shape) -> str:
    if shape.text is None:
        shape.text = format_shape(shape)
    return shape.text


def _value_key(x: Any) -> str:
    if x is None:
        return "N"
    if isinstance(x, bool):
        return "T" if x else "F"
    if isinstance(x, int):
        return f"i{int(x)};"
    if isinstance(x, float):
        return f"f{x.hex()};"
    if isinstance(x, str):
        return f"s{len(x)}:{x}"
    if isinstance(x, (tuple, list)):
        return "(" + "".join(_value_key(v) for v in x) + ")"
    if isinstance(x, Shape):
        return "S" + _shape_key(x)
    if isinstance(x, Literal):
        return f"L{_shape_key(x.shape)}#{literal_digest(x)}"
    if isinstance(x, np.ndarray):
        return "A" + data_digest(x)
    if isinstance(x, (bytes, bytearray, memoryview)):
        return "B" + hashlib.blake2b(bytes(x), digest_size=DIGEST_SIZE).hexdigest()
    if isinstance(x, np.generic):
        return _value_key(x.item())
    return f"{type(x).__qualname__}:{x!r}"
