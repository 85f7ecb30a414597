"""Programs as MIGraphX's `program::to_value()` writes them and `program::from_value()` reads them.

`{version, migraphx_version, targets, contexts, modules: {NAME: {name, nodes: [...]}}}`; each node
is `{output, name, shape, normalized, literal?, operator, inputs, module_inputs?, debug_symbols?}`
with instructions named as MIGraphX prints them (`@N`, parameters by name, `module:` prefixes in
submodules). Modules are written main first, then in the order MIGraphX lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mgxir.diagnostics import DiagnosticSink, MgxError, one_line
from mgxir.ir.builtin import make_literal, make_param, make_return
from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.program import Program
from mgxir.ir.shape import Shape
from mgxir.text.parser import SourceText
from mgxir.text.printer import print_program
from mgxir.translate.mxr.values import (
    EMPTY_OBJECT,
    ValueError_,
    as_array,
    as_int,
    as_object,
    as_str,
    literal_from_value,
    literal_to_value,
    named_operation_value,
    operation_from_value,
    shape_from_mxr_value,
    shape_to_value,
)

FILE_VERSION = 8  # MIGraphX 2.16's program_file_version
READABLE_VERSIONS = (7, 8)  # 7: ROCm 6.0 to 7.2, which had no debug_symbols
MIGRAPHX_VERSION = "2.16.0"


# what MIGraphX's GPU context writes (`context::to_value`): no events without its schedule pass, one stream
TARGET_CONTEXTS: dict[str, dict[str, Any]] = {"gpu": {"events": 0, "streams": 1}}


def program_to_value(program: Program) -> dict:
    """The value tree MIGraphX saves for `program`. A compiled program (one whose operators hold
    values with a `target_entry()`, gpu::code_object's) names its target in `targets`, as
    MIGraphX's `target` value does (`{name}`), with what mgxir adds there about the code objects
    (architecture, wave size, payload format, producer, toolchain: MIGraphX reads only `name`)."""
    names: dict[Instruction, str] = {}
    modules: dict[str, Any] = {}
    targets: dict[str, dict[str, Any]] = {}
    for module in program.print_order():
        if module.name not in modules:
            modules[module.name] = {"name": module.name, "nodes": _nodes(module, names, targets)}
    return {
        "version": FILE_VERSION,
        "migraphx_version": MIGRAPHX_VERSION,
        "targets": [{"name": name, **entry} for name, entry in targets.items()],
        "contexts": [TARGET_CONTEXTS.get(name, EMPTY_OBJECT) for name in targets],
        "modules": modules if modules else EMPTY_OBJECT,
    }


def _add_target_entries(op: Operation, output: str, targets: dict[str, dict[str, Any]]) -> None:
    """The target entries of `op`'s values into `targets`: every code object of one target must
    agree (a program file has one entry per target), but for tables, which are merged."""
    for x in op.values:
        target_entry = getattr(x, "target_entry", None)
        if target_entry is None:
            continue
        name, entry = target_entry(f"'{output}' ({op.text})")
        known = targets.setdefault(name, {k: dict(v) if isinstance(v, dict) else v for k, v in entry.items()})
        for key, table in entry.items():  # tables (the kept sources by digest) are merged
            if isinstance(table, dict) and isinstance(known.get(key), dict):
                known[key].update(table)
        differ = sorted(
            k for k in set(entry) | set(known) if not isinstance(entry.get(k), dict) and entry.get(k) != known.get(k)
        )
        if differ:
            raise MgxError(
                f"cannot save '{output}' ({op.text}): its code object differs from an earlier one in "
                + ", ".join(f"{k} ({entry.get(k)} vs {known.get(k)})" for k in differ)
                + "; a program file has one entry per target"
            )


def _nodes(module: Module, names: dict[Instruction, str], targets: dict[str, dict[str, Any]]) -> list[dict]:
    prefix = f"{module.name}:" if names and module.name else ""
    nodes: list[dict] = []
    append = nodes.append
    for count, ins in enumerate(module):
        op = ins.op
        kind = op.defn.name
        output = names.setdefault(ins, prefix + op.values[0] if kind == "@param" else f"{prefix}@{count}")
        try:
            inputs = [names[a] for a in ins.args]
        except KeyError:
            raise MgxError(
                f"cannot save '{output}' ({op.text}) in module '{module.name}': an argument is not defined "
                "in the program (a '?' or undefined value)"
            ) from None
        shape = ins.shape
        if shape is None and ins.is_return:
            shape = op.defn.shape(op, [a.shape for a in ins.args], ())
        if shape is None:
            raise MgxError(f"cannot save '{output}' ({op.text}) in module '{module.name}': its shape is unknown")
        if kind == "@param":
            node: dict[str, Any] = {"output": output, "name": kind, "shape": shape_to_value(shape)}
            node["normalized"] = False
            node["operator"] = {"parameter": op.values[0]}
        elif kind == "@literal":
            node = {"output": output, "name": kind, "shape": shape_to_value(shape), "normalized": False}
            node["literal"] = literal_to_value(op.values[0])
            node["operator"] = EMPTY_OBJECT
        else:
            name, fields = named_operation_value(op)
            if "::" in kind:  # a target's operator
                _add_target_entries(op, output, targets)
            node = {"output": output, "name": name, "shape": shape_to_value(shape), "normalized": False}
            node["operator"] = fields
        node["inputs"] = inputs
        if ins.module_args:
            node["module_inputs"] = [m.name for m in ins.module_args]
        if ins.symbols:
            node["debug_symbols"] = sorted(set(ins.symbols))
        append(node)
    return nodes


def program_from_value(value: Any, filename: str, sink: DiagnosticSink | None = None) -> Program:
    """The program of a value tree MIGraphX saved; raises MgxError naming the file and the place."""
    sink = sink if sink is not None else DiagnosticSink()
    try:
        top = as_object(value, "the file")
        if "version" not in top:
            raise ValueError_("no 'version': this is not a program MIGraphX saved")
        version = as_int(top["version"], "'version'")
        if version not in READABLE_VERSIONS:
            raise MgxError(
                f"{filename}: unsupported program file version {version} (written by MIGraphX "
                f"{top.get('migraphx_version', 'of unknown version')}); mgxir reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))}"
            )
        if "modules" not in top:
            raise ValueError_("no 'modules'")
        modules = as_object(top["modules"], "'modules'")
        targets = _target_entries(top.get("targets", []))
        foreign = [name for name, entry in targets.items() if "format" not in entry]
        if foreign:  # MIGraphX's own: what mgxir adds (architecture, payload, ...) is not there
            sink.warn(f"{filename}: compiled for {len(foreign)} target(s); the target contexts are ignored")
    except ValueError_ as e:
        raise MgxError(one_line(f"{filename}: not a MIGraphX program file: {e}")) from None
    loader = _Loader(modules, filename, sink, targets)
    if "main" not in modules and modules:
        raise MgxError(one_line(f"{filename}: the program has no module 'main'"))
    for name in ["main", *[n for n in modules if n != "main"]]:
        if name in modules:
            loader.load(loader.module(name))
    if not loader.program.modules:
        loader.program.create_module("main")
    _number_as_printed(loader.program, filename)
    return loader.program


def _target_entries(value: Any) -> dict[str, Mapping[str, Any]]:
    """`targets` by name (`[{name: "gpu", ...}]`); what a target's values read their metadata from."""
    entries: dict[str, Mapping[str, Any]] = {}
    for index, item in enumerate(as_array(value, "'targets'")):
        entry = as_object(item, f"target {index}")
        entries[as_str(entry.get("name"), f"target {index}: 'name'")] = entry
    return entries


class _PrintedSource(SourceText):
    """The program's printed text, made when a diagnostic first quotes it: a binary file has no
    lines of its own to point at."""

    def __init__(self, filename: str, program: Program):
        super().__init__(f"{filename} (as printed)", "")
        self.program: Program | None = program

    @property
    def lines(self) -> list[str]:
        if self.program is not None:
            self.text, self.program = print_program(self.program), None
            self._lines = None
        return super().lines


def _number_as_printed(program: Program, filename: str) -> None:
    """Gives each instruction the line it prints on, so that the verifier quotes it."""
    line = 0
    for module in program.print_order():
        line += 1  # the module header
        for ins in module:
            line += 1
            if not ins.line:
                ins.line = line
        line += 1  # the blank line after the module
    program.source = _PrintedSource(filename, program)  # type: ignore[attr-defined]


class _Loader:
    """Loads modules as `mod_from_val` does: a submodule before the instruction that uses it, and
    one name table for the whole program (submodules refer to outer values by name)."""

    def __init__(self, modules: dict, filename: str, sink: DiagnosticSink, targets: Mapping[str, Mapping[str, Any]]):
        self.values = modules
        self.targets = targets
        self.filename = filename
        self.sink = sink
        self.program = Program()
        for name in ["main", *[n for n in modules if n != "main"]]:
            if name in modules:
                self.program.create_module(name)
        self.loaded: set[str] = set()
        self.instructions: dict[str, Instruction] = {}
        self.shapes: dict[tuple, Shape] = {}
        self.operations: dict[tuple[str, str], Operation] = {}

    def module(self, name: str) -> Module:
        found = self.program.get_module(name)
        if found is None:
            raise MgxError(
                one_line(f"{self.filename}: an instruction refers to module '{name}', which the file does not have")
            )
        return found

    def load(self, module: Module) -> None:
        if module.name in self.loaded:
            return
        self.loaded.add(module.name)
        where = f"module '{module.name}'"
        try:
            body = as_object(self.values[module.name], where)
            nodes = as_array(body.get("nodes", []), f"{where}: 'nodes'")
        except ValueError_ as e:
            raise MgxError(one_line(f"{self.filename}: {e}")) from None
        for index, node in enumerate(nodes):
            try:
                self._node(module, node)
            except ValueError_ as e:
                raise MgxError(one_line(f"{self.filename}: {where}, node {index}: {e}")) from None

    def _node(self, module: Module, node: Any) -> None:
        node = as_object(node, "the node")
        try:
            output, name, shape_value = node["output"], node["name"], node["shape"]
        except KeyError as e:
            raise ValueError_(f"no {e}") from None
        if type(output) is not str or type(name) is not str:
            raise ValueError_("'output' and 'name' should be strings")
        shape = self._shape(shape_value)
        args: list[Instruction] = []
        instructions = self.instructions
        for arg in as_array(node.get("inputs", ()), "'inputs'"):
            found = instructions.get(arg) if type(arg) is str else None
            if found is None:
                raise ValueError_(f"'{output}' uses {arg!r}, which is not defined before it")
            args.append(found)
        module_inputs = node.get("module_inputs")
        module_args = (
            [self.module(as_str(m, "a module input")) for m in as_array(module_inputs, "")] if module_inputs else []
        )
        for sub in module_args:
            self.load(sub)
        fields = node.get("operator", EMPTY_OBJECT)
        if name == "@param":
            op = make_param(as_str(as_object(fields, "'operator'").get("parameter"), "the parameter name"))
        elif name == "@literal":
            if "literal" not in node:
                raise ValueError_("a literal without 'literal'")
            literal = literal_from_value(node["literal"])
            op = make_literal(literal)
            shape = literal.shape
        elif name == "@return":
            op = make_return()
            shape = op.defn.shape(op, [a.shape for a in args], ())
        else:
            op = self._operation(name, fields, shape)
        ins = Instruction(op, args, shape, module_args)
        symbols = node.get("debug_symbols")
        if symbols:
            ins.symbols = tuple(as_str(s, "a debug symbol") for s in as_array(symbols, "'debug_symbols'"))
        module.append_parsed(ins)
        instructions[output] = ins

    def _shape(self, value: Any) -> Shape:
        """Shapes repeat: a static one is looked up by (type, lens, strides) once it was read."""
        try:
            if not value["dynamic_dimensions"] and not value["sub_shapes"] and not value.get("dyn_strides"):
                key = (value["type"], tuple(value["lens"]), tuple(value["strides"]))
                found = self.shapes.get(key)
                if found is None:
                    found = self.shapes[key] = shape_from_mxr_value(value, "'shape'")
                return found
        except (KeyError, TypeError, AttributeError):
            pass
        return shape_from_mxr_value(value, "'shape'")

    def _operation(self, name: str, fields: Any, shape: Shape) -> Operation:
        key = (name, repr(fields)) if fields and fields is not EMPTY_OBJECT else (name, "")
        op = self.operations.get(key)
        if op is None:
            op = operation_from_value(name, fields, targets=self.targets)
            if op.defn.is_opaque:
                self.sink.warn(
                    one_line(
                        f"{self.filename}: operator '{name}' is not one mgxir knows (or has attributes it does "
                        "not know): kept as written; its shape is not checked"
                    ),
                    once_key=f"opaque:{name}",
                )
            if name != "load":  # load takes its instruction's shape
                self.operations[key] = op
        if not op.defn.is_opaque:
            op = op.defn.complete(op, shape)
        return op
