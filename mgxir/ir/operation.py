"""The declarative operator definition that the parser, printer, verifier and interpreter all read.

An operator is a subclass of `OpDef` registered once (see `registry.py`): its name, its reflected
attributes in MIGraphX's print order, its input and module arity, the flags passes need, its shape
rule and its reference compute. An `Operation` is one use of a definition with attribute values;
operations are immutable and hashable, so instructions can share them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from mgxir.ir.attributes import Attr, AttributeError_, OptionalKind
from mgxir.ir.traits import Pointwise, Trait
from mgxir.ir.values import OpNode

if TYPE_CHECKING:
    from mgxir.ir.module import Module
    from mgxir.ir.shape import Shape


class ShapeError(ValueError):
    """An operator's shape rule rejects its inputs; the message names the op and the problem."""


class ComputeError(ValueError):
    """The reference compute cannot evaluate an operation (no implementation, bad runtime values)."""


# run_module(module, args) -> the module's returned values: how if/loop/pointwise evaluate bodies
RunModule = Callable[["Module", list[np.ndarray]], list[np.ndarray]]
RuntimeValue = np.ndarray | tuple[np.ndarray, ...]


class OpDef:
    """One operator. Subclasses set the class attributes and override `shape` (and `compute`)."""

    name: ClassVar[str] = ""
    attributes: ClassVar[tuple[Attr, ...]] = ()
    # old attribute name -> new name, or None where the attribute was dropped
    legacy_attributes: ClassVar[Mapping[str, str | None]] = {}
    # number of inputs: (minimum, maximum or None for any)
    arity: ClassVar[tuple[int, int | None]] = (0, None)
    # number of module inputs (then/else of `if`, the body of `loop` or `pointwise`)
    module_arity: ClassVar[tuple[int, int | None]] = (0, 0)
    pointwise: ClassVar[bool] = False  # elementwise on scalars: fuse_pointwise may fuse it
    commutative: ClassVar[bool] = False
    is_view: ClassVar[bool] = False  # the output aliases input 0's memory
    has_side_effects: ClassVar[bool] = False  # never removed by dead-code elimination
    is_opaque: ClassVar[bool] = False  # an operator mgxir does not know; printed as read
    is_builtin: ClassVar[bool] = False  # @param, @literal, @return
    # the result is written into the last argument, an allocation (MIGraphX's lowered target ops)
    writes_last_argument: ClassVar[bool] = False
    # attributes holding axes that normalize_ops makes non-negative: name -> whose rank bounds
    # them ("input": input 0's rank, "output": the result's rank as for unsqueeze)
    axis_attributes: ClassVar[Mapping[str, str]] = {}
    # attributes holding padding that may be symmetric (k values) or begin/end (2k values)
    padding_attributes: ClassVar[tuple[str, ...]] = ()
    # what the operator is, as passes ask it (`defn.has(Broadcasting)`); see mgxir/ir/traits.py
    traits: ClassVar[tuple[type[Trait], ...]] = ()

    def __init__(self) -> None:
        self.attribute_index = {a.name: i for i, a in enumerate(self.attributes)}
        self.defaults = tuple(a.kind.coerce(a.default) if a.default is not None else None for a in self.attributes)
        self._no_attributes: Operation | None = None
        declared = (*self.traits, Pointwise) if self.pointwise else self.traits
        # each trait with the traits it implies (its Trait base classes)
        self.trait_set: frozenset[type[Trait]] = frozenset(
            base for trait in declared for base in trait.__mro__ if issubclass(base, Trait) and base is not Trait
        )

    def has(self, trait: type[Trait]) -> bool:
        """Whether the operator has `trait` (declared, implied by a declared one, or Pointwise by flag)."""
        return trait in self.trait_set

    # -- construction -----------------------------------------------------------------------

    def make(self, **values: Any) -> Operation:
        """An operation with these attribute values, the rest at their defaults."""
        if not values:
            if self._no_attributes is None:
                self._no_attributes = Operation(self, self.defaults)
            return self._no_attributes
        out = list(self.defaults)
        for key, x in values.items():
            i = self.attribute_index.get(key)
            if i is None:
                raise KeyError(f"{self.name} has no attribute '{key}'")
            out[i] = self.attributes[i].kind.coerce(x)
        return Operation(self, tuple(out))

    def from_node(self, node: OpNode, raw_attributes: str) -> Operation:
        """Reads attribute values as printed (any order, older names); raises AttributeError_."""
        out = list(self.defaults)
        for key, value in node.attributes:
            if key in self.legacy_attributes:
                renamed = self.legacy_attributes[key]
                if renamed is None:
                    continue
                key = renamed
            i = self.attribute_index.get(key)
            if i is None:
                raise UnknownAttribute(key)
            try:
                out[i] = self.attributes[i].kind.read(value)
            except AttributeError_ as e:
                raise AttributeError_(f"attribute '{key}' of {self.name}: {e}") from None
        return Operation(self, tuple(out))

    def complete(self, op: Operation, declared: Shape | None) -> Operation:
        """Lets an op whose attributes live in its result shape (`load`) take that shape."""
        return op

    # -- text -------------------------------------------------------------------------------

    def format(self, op: Operation) -> str:
        if not self.attributes:
            return self.name
        parts = [
            f"{a.name}={a.kind.format(v) if v is not None or isinstance(a.kind, OptionalKind) else ''}"
            for a, v in zip(self.attributes, op.values)
        ]
        return f"{self.name}[{','.join(parts)}]"

    def format_exact(self, op: Operation) -> str:
        """The text that reads back as exactly `op` (float attributes with all their bits), for the
        lossless text form: `op.text` wherever that already does."""
        if type(self).format is not OpDef.format or not any(
            a.kind.format_exact(v) != a.kind.format(v) for a, v in zip(self.attributes, op.values) if v is not None
        ):
            return op.text
        parts = [
            f"{a.name}={a.kind.format_exact(v) if v is not None or isinstance(a.kind, OptionalKind) else ''}"
            for a, v in zip(self.attributes, op.values)
        ]
        return f"{self.name}[{','.join(parts)}]"

    # -- semantics --------------------------------------------------------------------------

    def shape(self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module]) -> Shape | None:
        """The result shape, or None where the rule is unknown and the printed shape is trusted."""
        return None

    def compute(
        self, op: Operation, inputs: list[np.ndarray], modules: Sequence[Module], run_module: RunModule
    ) -> RuntimeValue:
        """The reference result on numpy arrays whose `.shape` is each input shape's lens."""
        raise ComputeError(f"no reference implementation for '{self.name}'")

    def kernel(
        self, op: Operation, inputs: Sequence[Shape], modules: Sequence[Module], run_module: RunModule
    ) -> Callable:
        """A callable taking the input arrays positionally, for the interpreter's loop. Families whose
        compute is one numpy call return that call directly to keep interpretation cheap."""
        compute = self.compute

        def run(*args: np.ndarray) -> RuntimeValue:
            return compute(op, list(args), modules, run_module)

        return run

    @property
    def has_compute(self) -> bool:
        return type(self).compute is not OpDef.compute

    def normalize(self, op: Operation, inputs: Sequence[Shape]) -> Operation:
        """`op` with non-negative axes and begin/end padding (what normalize_ops rewrites to)."""
        changes: dict[str, Any] = {}
        for attr, rank_of in self.axis_attributes.items():
            value = op.get(attr)
            if value is None or not inputs or inputs[0].is_tuple:
                continue
            rank = inputs[0].ndim
            if rank_of == "output":
                rank += len(value) if isinstance(value, tuple) else 1
            if isinstance(value, tuple):
                fixed: Any = tuple(a + rank if a < 0 else a for a in value)
            else:
                fixed = value + rank if value < 0 else value
            if fixed != value:
                changes[attr] = fixed
        for attr in self.padding_attributes:
            pads = op.get(attr)
            spatial = inputs[0].ndim - 2 if inputs else 0
            if pads is not None and spatial > 0 and len(pads) == spatial:
                changes[attr] = (*pads, *pads)
        return op.replace(**changes) if changes else op

    def check_arity(self, n_inputs: int, n_modules: int) -> str | None:
        lo, hi = self.arity
        if n_inputs < lo or (hi is not None and n_inputs > hi):
            want = str(lo) if lo == hi else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
            return f"'{self.name}' takes {want} argument{'s' if want != '1' else ''}, got {n_inputs}"
        lo, hi = self.module_arity
        if n_modules < lo or (hi is not None and n_modules > hi):
            want = str(lo) if lo == hi else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
            return f"'{self.name}' takes {want} module input{'s' if want != '1' else ''}, got {n_modules}"
        return None

    def __repr__(self) -> str:
        return f"<OpDef {self.name}>"


class UnknownAttribute(Exception):
    """An attribute the definition does not declare: the op is kept opaque instead."""


class Operation:
    """An operator with its attribute values. Immutable; equal operations compare and hash equal."""

    __slots__ = ("_hash", "_text", "defn", "values")

    def __init__(self, defn: OpDef, values: tuple):
        self.defn = defn
        self.values = values
        self._hash: int | None = None
        self._text: str | None = None

    @property
    def name(self) -> str:
        return self.defn.name

    @property
    def text(self) -> str:
        """The operator as MIGraphX prints it: `name[attr=value,...]`."""
        if self._text is None:
            self._text = self.defn.format(self)
        return self._text

    @property
    def attributes(self) -> dict[str, Any]:
        return {a.name: v for a, v in zip(self.defn.attributes, self.values)}

    def __getitem__(self, key: str) -> Any:
        return self.values[self.defn.attribute_index[key]]

    def get(self, key: str, default: Any = None) -> Any:
        i = self.defn.attribute_index.get(key)
        return default if i is None else self.values[i]

    def replace(self, **changes: Any) -> Operation:
        values = list(self.values)
        for key, x in changes.items():
            i = self.defn.attribute_index[key]
            values[i] = self.defn.attributes[i].kind.coerce(x)
        return Operation(self.defn, tuple(values))

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Operation):
            return NotImplemented
        return self.defn is other.defn and self.values == other.values

    def __hash__(self) -> int:
        if self._hash is None:
            try:
                self._hash = hash((self.defn.name, self.values))
            except TypeError:
                self._hash = id(self)
        return self._hash

    def __repr__(self) -> str:
        return f"Operation({self.text})"
