"""Editing helpers that behave as MIGraphX's module methods do, so pass output matches its text:
after an argument changes, users' shapes are recomputed, and so on downstream while they change
(pointwise results take their strides from their inputs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from mgxir.ir.instruction import Instruction
from mgxir.ir.module import Module
from mgxir.ir.operation import OpDef, Operation
from mgxir.ir.registry import make_op
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


def replace_instruction(module: Module, ins: Instruction, replacement: Instruction) -> Instruction:
    """Users of `ins` use `replacement`; the last instruction instead becomes `identity(replacement)`
    in place, since moving `replacement` to the end could break its earlier users."""
    if ins is module.last:
        return replace_op(module, ins, make_op("identity"), [replacement])
    users = [u for u in ins.users if u is not replacement]
    for user in users:
        user.replace_arg(ins, replacement)
    recompute_shapes(users)
    return replacement


def replace_op(
    module: Module, ins: Instruction, op: Operation, args: Sequence[Instruction] | None = None
) -> Instruction:
    """`ins` becomes `op(args)` in place; if its shape changes, its users' shapes follow."""
    old_shape = ins.shape
    module.replace(ins, op, args)
    if ins.shape != old_shape:
        recompute_shapes(list(ins.users))
    return ins


def recompute_shapes(start: list[Instruction]) -> None:
    pending = list(start)
    while pending:
        ins = pending.pop()
        if ins.op.defn.is_opaque:
            continue
        shape = ins.op.defn.shape(ins.op, [a.shape for a in ins.args], ins.module_args)
        if shape is not None and shape != ins.shape:
            ins.shape = shape
            pending.extend(ins.users)


RewriteT = TypeVar("RewriteT", bound=Callable[..., object])


def roots(*kinds: str | type[Trait], where: Callable[[OpDef], bool] | None = None) -> Callable[[RewriteT], RewriteT]:
    """Marks a rewrite as able to fire only on instructions whose op is the one named, has one of
    the traits, or whose definition satisfies `where`; a rewrite left unmarked may fire on any op."""

    def mark(rewrite: RewriteT) -> RewriteT:
        rewrite.root_names = frozenset(k for k in kinds if isinstance(k, str))  # type: ignore[attr-defined]
        rewrite.root_traits = tuple(k for k in kinds if not isinstance(k, str))  # type: ignore[attr-defined]
        rewrite.root_test = where  # type: ignore[attr-defined]
        return rewrite

    return mark


def may_fire_on(rewrite: Callable[..., object], defn: OpDef) -> bool:
    names: frozenset[str] | None = getattr(rewrite, "root_names", None)
    if names is None or defn.name in names:
        return True
    if any(defn.has(trait) for trait in getattr(rewrite, "root_traits", ())):
        return True
    test: Callable[[OpDef], bool] | None = getattr(rewrite, "root_test", None)
    return test is not None and test(defn)


class RootDispatch(Generic[RewriteT]):
    """The rewrites, in their order, that may fire on an op, built on first sight of each operator
    definition (one per op name) and kept."""

    def __init__(self, rewrites: Sequence[RewriteT]):
        self.rewrites = tuple(rewrites)
        self._by_defn: dict[OpDef, tuple[RewriteT, ...]] = {}

    def __call__(self, defn: OpDef) -> tuple[RewriteT, ...]:
        found = self._by_defn.get(defn)
        if found is None:
            found = self._by_defn[defn] = tuple(r for r in self.rewrites if may_fire_on(r, defn))
        return found


def find_matches(
    module: Module, rewrites: RootDispatch, context: PassContext, *args: object, by_root: bool = True
) -> bool:
    """MIGraphX's match::find_matches: on each instruction of `module`, the first rewrite that matches
    (called as `rewrite(module, ins, *args)`) is the only one applied; True if any changed the module.
    `by_root=False` tries every rewrite on every instruction (tests compare the two)."""
    changed = False
    for ins in module:
        if ins.parent is not module:
            continue
        for rewrite in rewrites(ins.op.defn) if by_root else rewrites.rewrites:
            outcome = rewrite(module, ins, *args)
            if outcome is MATCHED_UNCHANGED:
                break
            if outcome:
                context.count(f"{rewrite.__name__} applied")
                changed = True
                break
    return changed
