"""`--to-py`: a Python script in the style of MIGraphX's `--py` output that rebuilds the program.

Unlike MIGraphX's, the script is complete: it imports mgxir's building API, keeps every literal
value (decimal where that is exact, else the raw bytes), gives submodules their module inputs
(each submodule is built just before the instruction that first uses it), uses valid Python names,
and writes strides wherever they are not the ones the API assumes. Running it prints the program.
"""

from __future__ import annotations

import json
import keyword
import math
import re
from typing import Any

import numpy as np

from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape, standard_strides
from mgxir.text.writer import write_output
from mgxir.translate.mxr.values import EMPTY_OBJECT, Binary, Double, op_name, operation_to_value

DECIMAL_LIMIT = 1024  # MIGraphX's --py writes values up to this many elements
API_IMPORT = "from mgxir.translate.py import migraphx"


def program_to_script(program: Program) -> str:
    return _ScriptWriter(program).write()


class _ScriptWriter:
    def __init__(self, program: Program):
        self.program = program
        self.lines: list[str] = []
        self.names: dict[Instruction, str] = {}  # MIGraphX's printed names
        self.vars: dict[Instruction, str] = {}
        self.taken: set[str] = {"p", "m", "migraphx"}
        self.module_vars: dict[str, str] = {}
        self.emitted: set[str] = set()
        self.seed = 0

    def write(self) -> str:
        self.lines += [API_IMPORT, "", "p = migraphx.program()"]
        main = self.program.modules.get("main")
        if main is not None:
            self.module_vars["main"] = "m"
            self.lines.append("m = p.get_main_module()")
            self._module(main)
        for module in self.program.modules.values():
            if module.name not in self.emitted:
                self._create(module)
        self.lines += ["", 'if __name__ == "__main__":', '    print(p, end="")', ""]
        return "\n".join(self.lines)

    def _create(self, module: Module) -> None:
        var = self._unique("m" + _identifier(module.name.replace(":", "_module_")))
        self.module_vars[module.name] = var
        self.lines += ["", f"{var} = p.create_module({json.dumps(module.name)})"]
        self._module(module)
        self.lines.append("")

    def _module(self, module: Module) -> None:
        self.emitted.add(module.name)
        var = self.module_vars[module.name]
        prefix = f"{module.name}:" if self.names and module.name else ""
        last = module.last
        for count, ins in enumerate(module):
            for sub in ins.module_args:
                if sub.name not in self.emitted:
                    self._create(sub)
            op = ins.op
            kind = op.defn.name
            name = self.names.setdefault(ins, prefix + op.values[0] if kind == "@param" else f"{prefix}@{count}")
            target = self.vars[ins] = self._unique(_var_name(name))
            assign = "" if ins is last else f"{target} = "
            args = ", ".join(self._arg(a) for a in ins.args)
            if kind == "@param":
                scalar = module.name != "main"
                self.lines.append(
                    f"{assign}{var}.add_parameter({json.dumps(op.values[0])}, {_shape(ins.shape, scalar)})"
                )
            elif kind == "@literal":
                self.lines.append(f"{assign}{var}.add_literal({self._literal(op.values[0])})")
            elif kind == "@return":
                self.lines.append(f"{var}.add_return([{args}])")
            else:
                extra = ""
                if ins.module_args:
                    extra += ", [" + ", ".join(self.module_vars[m.name] for m in ins.module_args) + "]"
                if ins.symbols:
                    extra += f", debug_symbols=[{', '.join(json.dumps(s) for s in ins.symbols)}]"
                call = f"{var}.add_instruction({_op(op)}, [{args}]{extra})"
                comment = f" # {_shape(ins.shape)}" if ins.shape is not None else ""
                self.lines.append(f"{assign}{call}{comment}")

    def _arg(self, value: Instruction) -> str:
        found = self.vars.get(value)
        if found is None:
            # defined nowhere (`?` or outside an excerpt): a name the script leaves undefined,
            # which `--from-py --allow-undefined` reads back as a value of unknown shape
            name = value.op.values[0] if value.op.defn.name == "?" and value.op.values[0] else ""
            found = self.vars[value] = self._unique(_var_name(name) if name else "x_undefined")
        return found

    def _unique(self, base: str) -> str:
        name, n = base, 1
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def _literal(self, literal: Literal) -> str:
        shape_text = _shape(literal.shape, scalar_if_unwritten=True)
        if literal.data is None:
            self.seed += 1
            return f"migraphx.generate_argument({shape_text}, {self.seed - 1})"
        values = _decimal_values(literal)
        if values is not None:
            return f"migraphx.create_argument({shape_text}, [{', '.join(values)}])"
        bits = literal.shape.dtype.bits_dtype
        raw = np.ascontiguousarray(literal.data).view(bits).astype(bits.newbyteorder("<"), copy=False).tobytes()
        return f'migraphx.argument_from_hex({shape_text}, "{raw.hex()}")'


def _identifier(text: str) -> str:
    """MIGraphX's to_c_id: other characters as `_`, runs of `_` as one."""
    return re.sub(r"_+", "_", re.sub(r"\W", "_", text, flags=re.ASCII))


def _var_name(name: str) -> str:
    """MIGraphX's cpp_var_name: `x_` for instructions, `p_` for parameters, `:` as `_module_`."""
    return _identifier(("x_" if "@" in name else "p_") + name.replace(":", "_module_"))


def _shape(shape: Shape, scalar_if_unwritten: bool = False) -> str:
    """`migraphx.shape(...)`, with strides wherever they differ from what the API assumes (for
    literals and submodule parameters, a one-element shape without strides is the scalar one)."""
    if shape.sub_shapes is not None:
        return f'migraphx.shape(type="tuple_type", sub_shapes=[{", ".join(_shape(s) for s in shape.sub_shapes)}])'
    type_name = json.dumps(shape.dtype.type_name)
    if shape.dyn_dims is not None:
        dims = ", ".join(
            f"migraphx.shape.dynamic_dimension({d.min}, {d.max}, [{', '.join(map(str, d.optimals))}])"
            for d in shape.dyn_dims
        )
        return f"migraphx.shape(type={type_name}, dyn_dims=[{dims}])"
    lens = list(shape.lens)
    text = f"migraphx.shape(type={type_name}, lens=[{', '.join(map(str, lens))}]"
    ones = bool(lens) and all(n == 1 for n in lens)
    assumed = (0,) * len(lens) if scalar_if_unwritten and ones else standard_strides(lens)
    if shape.strides != assumed:
        text += f", strides=[{', '.join(map(str, shape.strides))}]"
    return text + ")"


def _op(op: Operation) -> str:
    """`migraphx.op("name", k=v)` with the attributes that differ from the defaults, as MIGraphX."""
    name = json.dumps(op_name(op))
    value = operation_to_value(op)
    if value is EMPTY_OBJECT or not value:
        return f"migraphx.op({name})"
    defaults = {} if op.defn.is_opaque else operation_to_value(op.defn.make())
    if defaults is EMPTY_OBJECT:
        defaults = {}
    plain, odd = [], []
    for key, v in value.items():
        if key in defaults and _same(defaults[key], v):
            continue
        if key.isidentifier() and not keyword.iskeyword(key):
            plain.append(f"{key}={_py(v)}")
        else:
            odd.append(f"{json.dumps(key)}: {_py(v)}")
    parts = [name, *plain]
    if odd:
        parts.append("**{" + ", ".join(odd) + "}")
    return f"migraphx.op({', '.join(parts)})"


def _same(a: Any, b: Any) -> bool:
    return _py(a) == _py(b)


def _py(v: Any) -> str:
    """A Python literal for a value, written the way MIGraphX writes JSON (`[1,1]`, `"linear"`)."""
    if v is None:
        return "None"
    if v is EMPTY_OBJECT:
        return "{}"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float | Double):
        if not math.isfinite(v):
            return f'float("{v}")'
        return repr(float(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, Binary | bytes):
        return f'bytes.fromhex("{bytes(v).hex()}")'
    if isinstance(v, list):
        return "[" + ",".join(_py(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_py(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"no Python literal for {type(v).__name__}")


def _decimal_values(literal: Literal) -> list[str] | None:
    """The values as decimal text that reads back bit for bit, or None (then raw bytes are used)."""
    data = literal.data
    if data is None or data.size > DECIMAL_LIMIT:
        return None
    dtype = literal.shape.dtype
    flat = np.ascontiguousarray(data).reshape(-1)
    if dtype is DType.bool:
        return ["1" if v else "0" for v in flat]
    if not dtype.is_float:
        if dtype.itemsize == 8 and flat.size and np.abs(flat.astype(np.float64)).max() >= 2**53:
            return None
        return [str(int(v)) for v in flat]
    if not np.all(np.isfinite(flat.astype(np.float64))):
        return None
    texts = [str(v) for v in flat] if dtype is DType.float else [repr(float(v)) for v in flat]
    back = np.array([float(t) for t in texts]).astype(dtype.numpy)
    if not np.array_equal(back.view(dtype.bits_dtype), flat.view(dtype.bits_dtype)):
        return None
    return texts


def write_py_program(program: Program, output: str | None) -> None:
    write_output(program_to_script(program), output)
