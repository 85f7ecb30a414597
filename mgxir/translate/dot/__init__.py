"""Graphviz drawings of programs: `--to-dot` (DOT text) and `--to-svg` (through Graphviz's `dot`).

Drawn to stay readable at a thousand nodes: one node per instruction, labelled with its name, its
operator text (cut at `_LABEL_LIMIT` characters) and its result shape, once (edges carry no labels);
nodes are filled with the colour of their operator's family, which `op_family` reads off the op's
traits and flags in the registry, and a legend names the families drawn. Submodules are clusters;
an instruction's module inputs are dashed edges into their clusters; a submodule's use of an outer
value is an edge from that value into the cluster.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable

from mgxir.diagnostics import MgxError
from mgxir.ir.format import format_shape
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.operation import OpDef
from mgxir.ir.program import Program
from mgxir.ir.traits import (
    Contraction,
    HorizontallyFusable,
    PaddedWindow,
    Pointwise,
    Recurrent,
    Reduction,
    Reshaper,
    ShapeTransform,
)
from mgxir.text.literals import format_migraphx
from mgxir.text.printer import undefined_name
from mgxir.text.writer import write_output

__all__ = ["FAMILIES", "op_family", "program_to_dot", "program_to_svg", "write_dot", "write_svg"]

_LABEL_LIMIT = 48  # longer operator texts are cut in labels
_MAIN_PATH = " [weight=8]"  # the edge from an instruction's first argument

# Operator families, the first that an operator is in: (family, fill colour, test of the op's
# definition). Colours from ColorBrewer's Pastel1/Set3, told apart at a glance.
FAMILIES: tuple[tuple[str, str, Callable[[OpDef], bool]], ...] = (
    ("parameter", "#b3cde3", lambda d: d.name == "@param"),
    ("literal", "#e5e5e5", lambda d: d.name == "@literal"),
    ("return", "#ffffff", lambda d: d.name == "@return"),
    ("unknown", "#fb8072", lambda d: d.is_opaque),
    ("contraction", "#fdb462", lambda d: d.has(Contraction) or d.has(HorizontallyFusable)),
    ("window", "#ffffb3", lambda d: d.has(PaddedWindow)),
    ("reduction", "#fccde5", lambda d: d.has(Reduction)),
    ("pointwise", "#ccebc5", lambda d: d.has(Pointwise)),
    ("layout", "#decbe4", lambda d: d.has(ShapeTransform) or d.has(Reshaper) or d.is_view),
    ("recurrent", "#bc80bd", lambda d: d.has(Recurrent)),
    ("submodules", "#fed9a6", lambda d: d.module_arity[1] != 0),
    ("target", "#80b1d3", lambda d: d.writes_last_argument),
    ("other", "#f2f2f2", lambda d: True),
)
_COLOURS = {family: colour for family, colour, _ in FAMILIES}


def op_family(defn: OpDef) -> str:
    """The family an operator is drawn in (`FAMILIES`)."""
    return next(family for family, _, test in FAMILIES if test(defn))


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
        self.families: set[str] = set()  # the families drawn, for the legend

    def write(self) -> str:
        self.lines += [
            "digraph {",
            "\trankdir=TB;",
            "\tcompound=true;",
            "\tranksep=0.3;",
            "\tnodesep=0.2;",
            '\tnode [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, margin="0.08,0.03"];',
            "\tedge [arrowsize=0.6];",
        ]
        order = self.program.print_order()
        for module in order:
            self._name(module)
        for module in order:
            if module.name not in self.drawn:
                self._module(module, "\t")
        self._legend()
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    def _legend(self) -> None:
        """One node per family drawn, in `FAMILIES`' order."""
        self.lines += ['\tsubgraph "cluster_(legend)" {', '\t\tlabel="operator families";']
        for family, colour, _ in FAMILIES:
            if family in self.families:
                self.lines.append(
                    f"\t\t{quote('(legend) ' + family)} [label={quote(family)}, fillcolor={quote(colour)}];"
                )
        self.lines.append("\t}")

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
            family = op_family(ins.op.defn)
            self.families.add(family)
            colour = quote(_COLOURS[family])
            self.lines.append(f"{inner}{self.ids[ins]} [label={quote(self._label(ins))}, fillcolor={colour}];")
        if not main:
            self.lines.append(f"{indent}}}")
        for ins in module:
            for index, arg in enumerate(ins.args):  # the argument's shape is on its node
                source = self.ids.get(arg) or quote(undefined_name(arg))
                # the first argument is the main data path: weighted, it stays straight (without, a
                # chain of residual blocks drifts sideways and a 1000-node picture is 5x as wide)
                weight = _MAIN_PATH if index == 0 else ""
                self.lines.append(f"{indent}{source} -> {self.ids[ins]}{weight};")
            for sub in ins.module_args:
                if sub.name not in self.drawn:
                    self._module(sub, indent)
                style = f"ltail={quote('cluster_' + sub.name)}, style=dashed, arrowhead=odot"
                self.lines.append(f"{indent}{self.anchor[sub.name]} -> {self.ids[ins]} [{style}];")

    def _label(self, ins: Instruction) -> str:
        """`NAME = OP` (the operator text cut short), then the result shape."""
        if ins.is_param:
            text = "@param"
        elif ins.is_literal:
            text = "@literal" + format_migraphx(ins.literal)
        else:
            text = ins.op.text
        if len(text) > _LABEL_LIMIT:
            text = text[: _LABEL_LIMIT - 3] + "..."
        text = f"{self.names[ins]} = {text}"
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
