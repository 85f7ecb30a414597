"""The rewriting API: a `Rewriter` through which every rewrite edits the IR, patterns (the root ops
a rewrite may fire on, as traits or op names, and the rewrite), and MIGraphX's `find_matches` loop
that tries them in order on each instruction. The matcher helpers patterns share are in matchers.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Concatenate, ParamSpec, TypeVar

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.operation import OpDef, Operation, ShapeError
from mgxir.ir.registry import make_op
from mgxir.ir.shape import Shape
from mgxir.ir.traits import Trait
from mgxir.passes.base import PassContext


class _MatchedUnchanged:
    """What a rewrite returns when its pattern matched but it left the module as it was: as in
    MIGraphX's find_matches, the later rewrites are then not tried on that instruction."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "MATCHED_UNCHANGED"


MATCHED_UNCHANGED = _MatchedUnchanged()


EditArgs = ParamSpec("EditArgs")
Result = TypeVar("Result")


def _on_module(
    edit: Callable[Concatenate[Module, EditArgs], Result],
) -> Callable[Concatenate[Rewriter, EditArgs], Result]:
    """A rewriter method that is the module's own edit `edit`, done on the rewriter's module."""

    def on_module(rewriter: Rewriter, *args: EditArgs.args, **kwargs: EditArgs.kwargs) -> Result:
        return edit(rewriter.module, *args, **kwargs)

    on_module.__name__ = edit.__name__
    on_module.__qualname__ = f"Rewriter.{edit.__name__}"
    return on_module


def _users_follow(
    edit: Callable[Concatenate[Module, Instruction, EditArgs], Instruction],
) -> Callable[Concatenate[Rewriter, Instruction, EditArgs], Instruction]:
    """A rewriter method doing the module's in-place edit `edit` of an instruction, after which,
    if the instruction's shape changed, its users' shapes follow."""

    def edit_then_follow(
        rewriter: Rewriter, ins: Instruction, *args: EditArgs.args, **kwargs: EditArgs.kwargs
    ) -> Instruction:
        old_shape = ins.shape
        edit(rewriter.module, ins, *args, **kwargs)
        if ins.shape != old_shape:
            rewriter.recompute_shapes(list(ins.users))
        return ins

    edit_then_follow.__name__ = edit.__name__
    edit_then_follow.__qualname__ = f"Rewriter.{edit.__name__}"
    return edit_then_follow


class Rewriter:
    """The one way rewrites edit a module (MLIR's PatternRewriter), behaving as MIGraphX's module
    methods do so that pass output matches its text: use lists stay right, and after an argument
    changes, users' shapes are recomputed, and so on downstream while they change (pointwise results
    take their strides from their inputs)."""

    __slots__ = ("module",)

    def __init__(self, module: Module):
        self.module = module

    # the module's own edits, on the rewriter's module: `insert(pos, op, args, module_args)` puts
    # `op(args)` before `pos` (at the end for None), its shape by the op's rule; `remove(ins)` takes
    # out an instruction nothing uses; `move_before(ins, pos)`
    insert = _on_module(Module.insert)
    remove = _on_module(Module.remove)
    move_before = _on_module(Module.move_before)

    def insert_after(self, ins: Instruction, op: Operation, args: Sequence[Instruction]) -> Instruction:
        """`op(args)` inserted just after `ins`, in `ins`'s module."""
        return (ins.parent or self.module).insert(ins.next, op, args)

    # `ins` becomes `op(args)` in place, as Module.replace does it; if its shape changes, its users'
    # shapes follow
    replace = _users_follow(Module.replace)

    def rebind(
        self, ins: Instruction, op: Operation, args: Sequence[Instruction], module_args: Sequence[Module], shape: Shape
    ) -> None:
        """`ins` becomes `op(args)` in place with a result shape the caller knows (computing it can
        cost a walk of a body module); if the shape changes, its users' shapes follow."""
        ins.op = op
        ins.set_args(args, module_args)
        if shape is not ins.shape and shape != ins.shape:
            ins.shape = shape
            self.recompute_shapes(list(ins.users))

    def replace_all_uses(self, ins: Instruction, replacement: Instruction) -> Instruction:
        """Users of `ins` use `replacement`; the last instruction instead becomes `identity(replacement)`
        in place, since moving `replacement` to the end could break its earlier users."""
        if ins is self.module.last:
            return self.replace(ins, make_op("identity"), [replacement])
        users = [u for u in ins.users if u is not replacement]
        for user in users:
            user.replace_arg(ins, replacement)
        self.recompute_shapes(users)
        return replacement

    def replace_arg(self, user: Instruction, old: Instruction, new: Instruction) -> None:
        """`user` takes `new` where it took `old`; shapes downstream follow."""
        user.replace_arg(old, new)
        self.recompute_shapes([user])

    def set_args(
        self, ins: Instruction, args: Sequence[Instruction], module_args: Sequence[Module] | None = None
    ) -> None:
        """`ins` takes these arguments; its shape and those downstream follow."""
        ins.set_args(args, module_args)
        self.recompute_shapes([ins])

    @staticmethod
    def recompute_shapes(start: Sequence[Instruction]) -> None:
        """Recomputes the shapes of `start` and, while they change, of their users; then of the
        instructions that call a module whose @return changed (an `if` returns its branches'
        shapes). Such a caller whose branches disagree is left as it is: the other branch has yet
        to change, and its change recomputes the caller again."""
        pending = list(start)
        callers: list[Instruction] = []
        while pending or callers:
            calling = not pending
            ins = callers.pop() if calling else pending.pop()
            defn = ins.op.defn
            if defn.is_opaque:
                continue
            try:
                shape = defn.shape(ins.op, [a.shape for a in ins.args], ins.module_args)
            except ShapeError:
                if calling:
                    continue
                raise
            if shape is not None and shape != ins.shape:
                ins.shape = shape
                pending.extend(ins.users)
                if ins.is_return:
                    callers.extend(_callers(ins.parent))


def _callers(module: Module | None) -> list[Instruction]:
    """The instructions of `module`'s program that take it as a module argument."""
    program = module.program if module is not None else None
    if program is None:
        return []
    return [ins for other in program.modules.values() for ins in other if module in ins.module_args]


OpTest = Callable[[OpDef], bool]
# a rewrite outcome: True, changed; False, no match; MATCHED_UNCHANGED, matched and changed nothing
Outcome = object


class Pattern:
    """A rewrite of one instruction (MLIR's RewritePattern): the root ops it may fire on (`roots`:
    traits or single op names; `where`: a test of the definition; neither: any op), `match`, which
    binds what the rewrite needs (None: no match; MATCHED_UNCHANGED: matched, leave it), and
    `rewrite`, which edits through the rewriter. Calling it matches, then rewrites."""

    roots: tuple[str | type[Trait], ...] = ()
    where: OpTest | None = None

    def __init__(self) -> None:
        self.__name__ = type(self).__name__

    def match(self, ins: Instruction, *args: object) -> object:
        return None

    def rewrite(self, rewriter: Rewriter, ins: Instruction, binding: object) -> Outcome:
        raise NotImplementedError

    def __call__(self, rewriter: Rewriter, ins: Instruction, *args: object) -> Outcome:
        binding = self.match(ins, *args)
        if binding is None:
            return False
        if binding is MATCHED_UNCHANGED:
            return MATCHED_UNCHANGED
        return self.rewrite(rewriter, ins, binding)

    def may_fire_on(self, defn: OpDef) -> bool:
        if not self.roots and self.where is None:
            return True
        if defn.name in self.roots or any(defn.has(k) for k in self.roots if not isinstance(k, str)):
            return True
        return self.where is not None and self.where(defn)


class FunctionPattern(Pattern):
    """A pattern written as one function that matches and rewrites (MLIR's matchAndRewrite):
    `function(rewriter, ins, *args) -> outcome`."""

    def __init__(self, function: Callable[..., Outcome], roots: tuple[str | type[Trait], ...], where: OpTest | None):
        self.function = function
        self.roots = roots
        self.where = where
        self.__name__ = function.__name__
        self.__doc__ = function.__doc__

    def __call__(self, rewriter: Rewriter, ins: Instruction, *args: object) -> Outcome:
        return self.function(rewriter, ins, *args)

    def __repr__(self) -> str:
        return f"<pattern {self.__name__}>"


def pattern(
    *roots: str | type[Trait], where: OpTest | None = None
) -> Callable[[Callable[..., Outcome]], FunctionPattern]:
    """Makes a match-and-rewrite function a pattern firing only on ops with one of the traits, of the
    one op named, or whose definition passes `where` (none given: on any op)."""

    def make(function: Callable[..., Outcome]) -> FunctionPattern:
        return FunctionPattern(function, roots, where)

    return make


def may_fire_on(rewrite: Callable[..., Outcome], defn: OpDef) -> bool:
    """Whether a rewrite may fire on `defn` (a plain function: on any op)."""
    return rewrite.may_fire_on(defn) if isinstance(rewrite, Pattern) else True


class RootDispatch:
    """The rewrites, in their order, that may fire on an op, built on first sight of each operator
    definition (one per op name) and kept."""

    def __init__(self, rewrites: Sequence[Callable[..., Outcome]]):
        self.rewrites = tuple(rewrites)
        self._by_defn: dict[OpDef, tuple[Callable[..., Outcome], ...]] = {}
        self._calls: dict[OpDef, tuple[tuple[str, Callable[..., Outcome]], ...]] = {}

    def __call__(self, defn: OpDef) -> tuple[Callable[..., Outcome], ...]:
        found = self._by_defn.get(defn)
        if found is None:
            found = self._by_defn[defn] = tuple(r for r in self.rewrites if may_fire_on(r, defn))
        return found

    def calls(self, defn: OpDef | None) -> tuple[tuple[str, Callable[..., Outcome]], ...]:
        """(name, callable) of the rewrites that may fire on `defn` (None: every rewrite), the
        callable being a function pattern's function itself (it saves a call per try)."""
        found = self._calls.get(defn)  # type: ignore[arg-type]
        if found is None:
            rewrites = self.rewrites if defn is None else self(defn)
            found = tuple((r.__name__, r.function if isinstance(r, FunctionPattern) else r) for r in rewrites)
            self._calls[defn] = found  # type: ignore[index]
        return found


def find_matches(
    module: Module, rewrites: RootDispatch, context: PassContext, *args: object, by_root: bool = True
) -> bool:
    """MIGraphX's match::find_matches: on each instruction of `module`, the first rewrite that matches
    (called as `rewrite(rewriter, ins, *args)`) is the only one applied; True if any changed the
    module. `by_root=False` tries every rewrite on every instruction (tests compare the two)."""
    changed = False
    rewriter = Rewriter(module)
    every = rewrites.calls(None)
    table: dict[OpDef, tuple[tuple[str, Callable[..., Outcome]], ...]] = {}
    for ins in module:
        if ins.parent is not module:
            continue
        if by_root:
            defn = ins.op.defn
            tries = table.get(defn)
            if tries is None:
                tries = table[defn] = rewrites.calls(defn)
        else:
            tries = every
        for name, rewrite in tries:
            outcome = rewrite(rewriter, ins, *args)
            if outcome is MATCHED_UNCHANGED:
                break
            if outcome:
                context.count(f"{name} applied")
                changed = True
                break
    return changed
