"""Copying instructions and whole modules into a fused module, as MIGraphX's `module::fuse`,
`module::add_params` and `find_inputs` (param_utils) do: outside values become parameters x0, x1, ...
in the order first met, and a map from outer (or old inner) instructions to their copies records
what each became."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation
from mgxir.ir.shape import Shape

InstructionMap = dict[Instruction, Instruction]
ShapeTransform = Callable[[Shape], Shape]
# inserter(module, op, args, module_args) -> the new instruction, appended to `module`
Inserter = Callable[[Module, Operation, list[Instruction], list[Module]], Instruction]


def param_name(index: int) -> str:
    """MIGraphX's parameter names: x0..x9, then x:00010 (so that names sort by number)."""
    if index < 10:
        return f"x{index}"
    return f"x:{index:05d}"


def count_parameters(module: Module) -> int:
    """Parameters and literals are inserted at the front, so the count stops at the first other."""
    count = 0
    for ins in module:
        if ins.is_param:
            count += 1
        elif not ins.is_literal:
            break
    return count


def sorted_parameters(module: Module) -> list[Instruction]:
    """A module's parameters in name order (MIGraphX's sort_params)."""
    return sorted((ins for ins in module if ins.is_param), key=lambda p: p.param_name)


def add_params(
    module: Module,
    inputs: Iterable[Instruction],
    map_ins: InstructionMap,
    shape_transform: ShapeTransform | None = None,
) -> None:
    """A parameter for each input not mapped yet, of its standard shape (or `shape_transform`'s)."""
    n = count_parameters(module)
    for ins in inputs:
        if ins in map_ins:
            continue
        shape = shape_transform(ins.shape) if shape_transform else ins.shape.as_standard()
        map_ins[ins] = module.add_parameter(param_name(n), shape)
        n += 1


def copy_instructions(
    module: Module, instructions: Iterable[Instruction], map_ins: InstructionMap, insert: Inserter | None = None
) -> list[Instruction]:
    """Appends copies of `instructions` (those not mapped yet) and returns what a copied
    `@return` returned, else the copy of the last instruction."""
    outputs: list[Instruction] | None = None
    last: Instruction | None = None
    for ins in instructions:
        last = ins
        if ins in map_ins:
            continue
        if ins.is_literal:
            copy = module.add_literal(ins.literal)
        elif ins.is_param:
            copy = module.add_parameter(ins.param_name, ins.shape)
        else:
            args = [map_ins.get(a, a) for a in ins.args]
            if ins.is_return:
                outputs = args
                break
            if insert is None:
                # the same op on arguments of the same shapes has the same shape: no need to
                # run its rule again (for a pointwise that walks its whole module)
                same = all(a.shape == b.shape for a, b in zip(args, ins.args))
                copy = module.insert(None, ins.op, args, ins.module_args, ins.shape if same else None)
            else:
                copy = insert(module, ins.op, args, list(ins.module_args))
        map_ins[ins] = copy
    if outputs is None:
        return [] if last is None else [map_ins[last]]
    return outputs


def fuse_instructions(
    module: Module,
    instructions: Sequence[Instruction],
    map_ins: InstructionMap | None = None,
    insert: Inserter | None = None,
    shape_transform: ShapeTransform | None = None,
) -> list[Instruction]:
    """`module::fuse(inss)`: the inputs from outside `instructions` become parameters, then the
    instructions are copied."""
    if map_ins is None:
        map_ins = {}
    members = set(instructions)
    inputs: dict[Instruction, None] = {}
    for ins in instructions:
        for arg in ins.args:
            if arg not in members:
                inputs[arg] = None
    add_params(module, inputs, map_ins, shape_transform)
    return copy_instructions(module, instructions, map_ins, insert)


def fuse_module(
    module: Module,
    source: Module,
    inputs: Sequence[Instruction],
    map_ins: InstructionMap | None = None,
    insert: Inserter | None = None,
    shape_transform: ShapeTransform | None = None,
) -> list[Instruction]:
    """`module::fuse(m, inputs)`: `source`'s body copied in, its parameters (by name order)
    standing for `inputs`, which become parameters of `module` where not mapped yet."""
    if map_ins is None:
        map_ins = {}
    add_params(module, inputs, map_ins, shape_transform)
    for param, outer in zip(sorted_parameters(source), inputs, strict=True):
        map_ins[param] = map_ins[outer]
    return copy_instructions(module, source, map_ins, insert)


def find_inputs(map_ins: InstructionMap, parent: Module, sub: Module) -> list[Instruction]:
    """The instructions of `parent` that `sub`'s parameters stand for, in parameter-name order."""
    by_name: dict[str, Instruction] = {}
    for outer, param in map_ins.items():
        if param.parent is sub and param.is_param and outer.parent is parent:
            by_name[param.param_name] = outer
    return [by_name[name] for name in sorted(by_name)]


def last_output(module: Module) -> Instruction:
    """MIGraphX's `get_returns().front()`: the first returned value, else the last instruction."""
    last = module.last
    assert last is not None
    return last.args[0] if last.is_return else last
