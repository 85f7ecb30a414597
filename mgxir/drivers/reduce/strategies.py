"""The delta passes: each names a kind of entity and yields candidates with some of them taken out.

As llvm-reduce's delta passes, most work on a list of entities (instructions, outputs, literals,
attributes) and try taking out chunks of them, the whole list first and then halves, quarters, ...
down to one at a time (`Chunked`); after a chunk is taken out the engine asks again from the same
chunk size, so a pass that keeps succeeding never starts again from the whole list. Taking an
instruction out cuts it (as torch's FX minifier does): its users read a new parameter whose input
is the value it had, and what only it used dies.

A candidate that a pass cannot make raises `Skip`; the engine verifies every candidate it gets and
drops the ones the verifier refuses.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from mgxir.drivers.reduce.candidate import Candidate, Skip, by_position, cut, refresh_shapes, tidy
from mgxir.ir.builtin import make_literal, make_return
from mgxir.ir.literal import Literal
from mgxir.ir.module import compute_shape

if TYPE_CHECKING:
    from mgxir.ir.instruction import Instruction
    from mgxir.ir.module import Module


class Chunked:
    """A delta pass over a list of entities: `entities(current)` lists them (as anything the pass
    can find again in a copy), `take_out(copy, chosen)` edits a copy of the current candidate."""

    name: ClassVar[str] = ""

    def __init__(self) -> None:
        self.chunk_size: int | None = None  # where the last call left off: the chunk size ...
        self.position = 0  # ... and the first entity of the chunk it was trying

    def reset(self) -> None:
        self.chunk_size = None
        self.position = 0

    def entities(self, current: Candidate) -> Sequence:
        raise NotImplementedError

    def take_out(self, copy: Candidate, chosen: Sequence, current: Candidate) -> None:
        raise NotImplementedError

    def candidates(self, current: Candidate) -> Iterator[Candidate]:
        """Chunks of the whole list, then of halves, ... then single entities; a call after a
        candidate was taken goes on from the chunk it came from (the entities before it were tried)."""
        entities = list(self.entities(current))
        if not entities:
            return
        size = min(self.chunk_size or len(entities), len(entities))
        start = self.position if self.chunk_size else 0
        while True:
            while start < len(entities):
                copy = current.copy()
                try:
                    self.take_out(copy, entities[start : start + size], current)
                    tidy(copy)
                except Skip:
                    start += size
                    continue
                copy.origin = (size, start)
                yield copy
                start += size
            if size == 1:
                return
            size, start = max(1, size // 2), 0

    def taken(self, candidate: Candidate) -> None:
        """The engine took `candidate`: the next call goes on from the chunk it was made of (the
        candidates made after it, tried alongside it by other workers, do not move this)."""
        if candidate.origin is not None:
            self.chunk_size, self.position = candidate.origin


class TruncateTail(Chunked):
    """Main returns the value of one of its instructions, and everything after it and not feeding
    it dies: the instruction halfway first, then three quarters of the way, seven eighths, ... (a
    binary search of the shortest prefix, as torch's FX minifier truncates)."""

    name = "truncate-tail"

    def candidates(self, current: Candidate) -> Iterator[Candidate]:
        instructions = [
            i
            for i, ins in enumerate(current.program.main)
            if not (ins.is_param or ins.is_return or ins.is_literal or ins.shape.is_tuple)
        ]
        lower = 0
        while len(instructions) - lower > 1:
            middle = (lower + len(instructions)) // 2
            copy = current.copy()
            main = copy.program.main
            kept = by_position(copy.program)[instructions[middle - 1]]
            ret = main.return_instruction
            if ret is not None:
                main.remove(ret)
            main.insert(None, make_return(), [kept])
            tidy(copy)
            yield copy
            lower = middle


class RemoveInstructions(Chunked):
    """Cuts instructions of main: each one still used becomes a parameter holding its value."""

    name = "remove-instructions"

    def entities(self, current: Candidate) -> Sequence[int]:
        return [i for i, ins in enumerate(current.program.main) if not (ins.is_param or ins.is_return)]

    def take_out(self, copy: Candidate, chosen: Sequence[int], current: Candidate) -> None:
        values = current.values()
        instructions = by_position(copy.program)
        for position in reversed(chosen):  # users before what they use: fewer values need cutting
            ins = instructions[position]
            if ins.users:
                cut(copy, ins, values[position])
            else:
                copy.program.main.remove(ins)
        refresh_shapes(copy.program.main)


class BypassInstructions(Chunked):
    """Replaces instructions of main by an argument of the same shape (a unary op, a no-op
    convert): no new parameter, unlike a cut."""

    name = "bypass-instructions"

    def entities(self, current: Candidate) -> Sequence[int]:
        return [i for i, ins in enumerate(current.program.main) if _same_shape_argument(ins) is not None]

    def take_out(self, copy: Candidate, chosen: Sequence[int], current: Candidate) -> None:
        instructions = by_position(copy.program)
        for position in reversed(chosen):
            ins = instructions[position]
            argument = _same_shape_argument(ins)
            if argument is None:
                raise Skip
            ins.replace_all_uses_with(argument)
            copy.program.main.remove(ins)


def _same_shape_argument(ins: Instruction) -> Instruction | None:
    if ins.is_param or ins.is_return or ins.is_literal:
        return None
    return next((a for a in ins.args if a.shape == ins.shape and a.parent is ins.parent), None)


class DropOutputs(Chunked):
    """Takes values out of main's `@return` (one is always left)."""

    name = "drop-outputs"

    def entities(self, current: Candidate) -> Sequence[int]:
        ret = current.program.main.return_instruction
        return [] if ret is None or len(ret.args) < 2 else list(range(len(ret.args)))

    def take_out(self, copy: Candidate, chosen: Sequence[int], current: Candidate) -> None:
        main = copy.program.main
        ret = main.return_instruction
        assert ret is not None
        kept = [a for i, a in enumerate(ret.args) if i not in set(chosen)]
        if not kept:
            raise Skip
        main.remove(ret)
        main.insert(None, make_return(), kept)


class ReturnEarlier(Chunked):
    """Truncates the tail: main returns an argument of one of its outputs instead of that output
    (what only the output used dies)."""

    name = "return-earlier"

    def entities(self, current: Candidate) -> Sequence[tuple[int, int]]:
        ret = current.program.main.return_instruction
        if ret is None:
            return []
        return [
            (i, j)
            for i, output in enumerate(ret.args)
            for j, argument in enumerate(output.args)
            if argument.parent is ret.parent and not argument.is_param and not argument.shape.is_tuple
        ]

    def take_out(self, copy: Candidate, chosen: Sequence[tuple[int, int]], current: Candidate) -> None:
        if len({i for i, _ in chosen}) != len(chosen):
            raise Skip
        main = copy.program.main
        ret = main.return_instruction
        assert ret is not None
        outputs = list(ret.args)
        for i, j in chosen:
            outputs[i] = outputs[i].args[j]
        main.remove(ret)
        main.insert(None, make_return(), outputs)


class InlineSubmodules(Chunked):
    """Replaces an instruction that runs a submodule (a `pointwise` body, a branch of an `if`) by
    the submodule's instructions, inlined into main; each module argument is one entity."""

    name = "inline-submodules"

    def entities(self, current: Candidate) -> Sequence[tuple[int, int]]:
        return [(i, m) for i, ins in enumerate(current.program.main) for m in range(len(ins.module_args))]

    def take_out(self, copy: Candidate, chosen: Sequence[tuple[int, int]], current: Candidate) -> None:
        instructions = by_position(copy.program)
        done: set[int] = set()
        for position, which in reversed(chosen):
            if position in done:
                raise Skip
            done.add(position)
            _inline(copy.program.main, instructions[position], which)
        refresh_shapes(copy.program.main)


def _inline(main: Module, ins: Instruction, which: int) -> None:
    body = ins.module_args[which]
    params = sorted(body.parameters(), key=lambda p: p.param_name)
    if params and len(params) != len(ins.args):
        raise Skip
    mapping: dict[Instruction, Instruction] = dict(zip(params, ins.args))
    results: list[Instruction] = []
    for inner in body:
        if inner.is_param:
            continue
        args = [mapping.get(a, a) for a in inner.args]
        if inner.is_return:
            results = args
            break
        if any(a.parent is not main for a in args):
            raise Skip
        try:
            shape = compute_shape(inner.op, args, inner.module_args)
            mapping[inner] = main.insert(ins, inner.op, args, inner.module_args, shape)
        except Exception:  # the body's op on main's shapes: its shape rule refuses
            raise Skip from None
    else:
        results = [mapping[body.last]] if body.last is not None and body.last in mapping else []
    if not ins.shape.is_tuple:
        if len(results) != 1:
            raise Skip
        ins.replace_all_uses_with(results[0])
    for user in list(ins.users):  # an `if` returns a tuple: its users take elements of it
        index = user.op.get("index") if user.name == "get_tuple_elem" else None
        if index is None or index >= len(results):
            raise Skip
        user.replace_all_uses_with(results[index])
        main.remove(user)
    main.remove(ins)


class ShrinkShapes(Chunked):
    """Makes a dimension of a parameter of main 1 (its input sliced), shapes after it recomputed."""

    name = "shrink-shapes"

    def entities(self, current: Candidate) -> Sequence[tuple[str, int]]:
        return [
            (p.param_name, axis)
            for p in current.program.main.parameters()
            if not p.shape.is_dynamic and not p.shape.is_tuple
            for axis, length in enumerate(p.shape.lens)
            if length > 1
        ]

    def take_out(self, copy: Candidate, chosen: Sequence[tuple[str, int]], current: Candidate) -> None:
        main = copy.program.main
        for name, axis in chosen:
            param = main.get_parameter(name)
            if param is None or name not in copy.inputs:
                raise Skip
            lens = list(param.shape.lens)
            lens[axis] = 1
            param.shape = param.shape.with_lens(lens)
            copy.inputs[name] = np.ascontiguousarray(np.take(copy.inputs[name], [0], axis=axis))
        refresh_shapes(main)


class ShrinkLiterals(Chunked):
    """Makes a literal of main a splat: every element its first value (then zero)."""

    name = "shrink-literals"

    def entities(self, current: Candidate) -> Sequence[tuple[int, str]]:
        out = []
        for i, ins in enumerate(current.program.main):
            data = ins.literal.data if ins.is_literal else None
            if data is None or data.size == 0:
                continue
            flat = data.reshape(-1)
            if not np.all(flat == flat[0]):
                out.append((i, "first"))
            if np.any(flat != 0):
                out.append((i, "zero"))
        return out

    def take_out(self, copy: Candidate, chosen: Sequence[tuple[int, str]], current: Candidate) -> None:
        instructions = by_position(copy.program)
        if len({position for position, _ in chosen}) != len(chosen):
            raise Skip
        for position, fill in chosen:
            ins = instructions[position]
            data = ins.literal.data
            assert data is not None
            value = data.reshape(-1)[0] if fill == "first" else np.zeros((), data.dtype)
            splat = np.full(data.shape, value, dtype=data.dtype)
            copy.program.main.replace(ins, make_literal(Literal(ins.literal.shape, splat)), [])


class ResetAttributes(Chunked):
    """Sets an attribute of an instruction of main back to its default (shapes recomputed)."""

    name = "reset-attributes"

    def entities(self, current: Candidate) -> Sequence[tuple[int, str]]:
        return [
            (i, a.name)
            for i, ins in enumerate(current.program.main)
            if not ins.op.defn.is_builtin
            for a, v in zip(ins.op.defn.attributes, ins.op.values)
            if a.default is not None and v != a.default
        ]

    def take_out(self, copy: Candidate, chosen: Sequence[tuple[int, str]], current: Candidate) -> None:
        instructions = by_position(copy.program)
        for position, attribute in chosen:
            ins = instructions[position]
            default = ins.op.defn.attributes[ins.op.defn.attribute_index[attribute]].default
            try:
                ins.op = ins.op.replace(**{attribute: default})
            except Exception:  # the default does not convert to the attribute's kind
                raise Skip from None
        refresh_shapes(copy.program.main)


# in the order a round tries them: the ones that take most out first
STRATEGIES: tuple[type[Chunked], ...] = (
    DropOutputs,
    TruncateTail,
    RemoveInstructions,
    ReturnEarlier,
    BypassInstructions,
    InlineSubmodules,
    ShrinkShapes,
    ShrinkLiterals,
    ResetAttributes,
)


def strategy_names() -> list[str]:
    return [s.name for s in STRATEGIES]
