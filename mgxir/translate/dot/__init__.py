"""Graphviz drawings of programs: `--to-dot` (DOT text) and `--to-svg` (through Graphviz's `dot`).

In the manner of MIGraphX's `print_graph`: one node per instruction labelled with its operator
text, edges from each argument labelled with the argument's shape. Submodules are clusters; an
instruction's module inputs are dashed edges into their clusters; a submodule's use of an outer
value is an edge from that value into the cluster.
"""

from __future__ import annotations

import shutil
import subprocess

from mgxir.diagnostics import MgxError
from mgxir.ir.format import format_shape
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.program import Program
from mgxir.text.literals import format_migraphx
from mgxir.text.printer import undefined_name
from mgxir.text.writer import write_output

__all__ = ["program_to_dot", "program_to_svg", "write_dot", "write_svg"]

_LABEL_LIMIT = 120  # longer operator texts are cut in labels


def quote(text: str) -> str:
    """A DOT double-quoted string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def program_to_dot(program: Program) -> str:
    return _DotWriter(program).write()


class _DotWriter:
    def __init__(self, program: Program):
        self.program = program
        self.names: dict[Instruction, str] = {}
        self.ids: dict[Instruction, str] = {}
        self.lines: list[str] = []
        self.drawn: set[str] = set()
        self.anchor: dict[str, str] = {}  # module name -> one node id inside its cluster

    def write(self) -> str:
        self.lines += ["digraph {", "\trankdir=TB;", "\tcompound=true;", "\tnode [shape=box];"]
        order = self.program.print_order()
        for module in order:
            self._name(module)
        for module in order:
            if module.name not in self.drawn:
                self._module(module, "\t")
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    def _name(self, module: Module) -> None:
        if module.name in self.anchor:
            return
        prefix = f"{module.name}:" if self.names and module.name else ""
        for count, ins in enumerate(module):
            name = prefix + ins.op.values[0] if ins.is_param else f"{prefix}@{count}"
            self.names.setdefault(ins, name)
            self.ids[ins] = quote(self.names[ins])
        self.anchor[module.name] = quote(f"{module.name}:(module)")

    def _module(self, module: Module, indent: str) -> None:
        self.drawn.add(module.name)
        main = module.name == "main"
        inner = indent if main else indent + "\t"
        if not main:
            self.lines.append(f"{indent}subgraph {quote('cluster_' + module.name)} {{")
            self.lines.append(f"{inner}label={quote(module.name)};")
            self.lines.append(f"{inner}{self.anchor[module.name]} [label={quote(module.name)}, shape=point];")
        for ins in module:
            self.lines.append(f"{inner}{self.ids[ins]} [label={quote(self._label(ins))}];")
        if not main:
            self.lines.append(f"{indent}}}")
        for ins in module:
            for arg in ins.args:
                source = self.ids.get(arg) or quote(undefined_name(arg))
                shape = format_shape(arg.shape) if arg.shape is not None else "?"
                self.lines.append(f"{indent}{source} -> {self.ids[ins]} [label={quote(shape)}];")
            for sub in ins.module_args:
                if sub.name not in self.drawn:
                    self._module(sub, indent)
                style = f"ltail={quote('cluster_' + sub.name)}, style=dashed, arrowhead=odot"
                self.lines.append(f"{indent}{self.anchor[sub.name]} -> {self.ids[ins]} [{style}];")

    def _label(self, ins: Instruction) -> str:
        text = ins.op.text
        if ins.is_param:
            text = "@param:" + ins.param_name
        elif ins.is_literal:
            text = "@literal" + format_migraphx(ins.literal)
        if len(text) > _LABEL_LIMIT:
            text = text[: _LABEL_LIMIT - 3] + "..."
        if ins.shape is not None and not ins.is_return:
            text += "\n" + format_shape(ins.shape)
        return text


def program_to_svg(program: Program) -> bytes:
    """The drawing as SVG, made by Graphviz's `dot`; MgxError when Graphviz is not installed."""
    dot = shutil.which("dot")
    if dot is None:
        raise MgxError("--to-svg needs Graphviz's 'dot' program, which is not installed (apt-get install graphviz)")
    result = subprocess.run([dot, "-Tsvg"], input=program_to_dot(program).encode(), capture_output=True, check=False)
    if result.returncode != 0:
        message = result.stderr.decode(errors="replace").strip().splitlines()
        raise MgxError(f"Graphviz's dot failed: {message[0] if message else f'exit status {result.returncode}'}")
    return result.stdout


def write_dot(program: Program, output: str | None) -> None:
    write_output(program_to_dot(program), output)


def write_svg(program: Program, output: str | None) -> None:
    write_output(program_to_svg(program), output)
