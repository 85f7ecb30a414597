"""A small `migraphx`-compatible building API: what MIGraphX's `--py` reproducers call.

    from mgxir.translate.py import migraphx
    p = migraphx.program()
    m = p.get_main_module()
    x = m.add_parameter("x", migraphx.shape(type="float_type", lens=[2, 3]))
    r = m.add_instruction(migraphx.op("relu"), [x])
    m.add_return([r])
    print(p)                      # the program as MIGraphX prints it
    program = p.to_mgxir()        # an mgxir Program

Calls are recorded and the program is built when asked for, the way MIGraphX loads a saved file:
a submodule before the instruction that uses it. That lets a reproducer printed by MIGraphX (which
creates submodules after the instructions that use them, and leaves their module inputs out) build
the program it was printed from. Unlike MIGraphX, `add_parameter` and `add_literal` append in call
order (MIGraphX inserts them at the front, reversing them), so a printed script gives back the
printed program. `argument_from_hex` and `to_mgxir` are mgxir's additions.
"""

from __future__ import annotations

import ast
import enum
import functools
import linecache
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mgxir.diagnostics import DiagnosticSink, Location, MgxError, check_allocation
from mgxir.ir.builtin import make_literal, make_param, make_return, undefined_value
from mgxir.ir.dtype import DType
from mgxir.ir.instruction import Instruction
from mgxir.ir.literal import Literal
from mgxir.ir.module import Module
from mgxir.ir.operation import Operation, ShapeError
from mgxir.ir.program import Program
from mgxir.ir.shape import DynamicDimension, Shape
from mgxir.ops import register_all_ops
from mgxir.text.printer import print_program
from mgxir.translate.mxr.values import ValueError_, dynamic_dimension_from_value, operation_from_value
from mgxir.translate.py import script

register_all_ops()  # a reproducer script imports this module and nothing else of mgxir


class ReproError(Exception):
    """A call the building API refuses; the reader reports it at the script line that made it."""


# -- where calls come from -------------------------------------------------------------------------

Where = tuple[str, int]  # the script file and line of a call
_API_FOLDER = os.path.dirname(os.path.abspath(__file__))
_COMMENT = "# migraphx.shape("


def caller() -> Where:
    """The script's line being evaluated (`--from-py`), else the file and line of the nearest
    frame outside this package: the call of a Python script that imports this module."""
    if _session.where is not None:
        return _session.where
    frame = sys._getframe(1)
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _API_FOLDER:
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("<python>", 0)


@functools.cache
def declared_shape(where: Where) -> Shape | None:
    """The shape a line's `# migraphx.shape(...)` comment declares, as MIGraphX's --py prints
    after each instruction (read with linecache, so it works for files and for registered text)."""
    text = linecache.getline(*where)
    cut = text.rfind(_COMMENT)
    if cut < 0:
        return None
    policy = script.Policy(
        {},
        {"migraphx": sys.modules[__name__]},
        script_attribute_allowed,
        user_errors=(ReproError, TypeError, ValueError),
    )
    try:
        expression = script.parse(text[cut + 2 :].strip(), where[0], "eval")
        assert isinstance(expression, ast.Expression)
        found = script.Evaluator(policy, {}).evaluate(expression.body)
    except (SyntaxError, script.Refused, script.CallFailed, script.Undefined, ReproError, MgxError):
        return None
    return found if isinstance(found, Shape) else None


@dataclass
class Session:
    """How scripts are being run: what to do with values defined outside an excerpt, where
    warnings go, and the programs built so far."""

    allow_undefined: bool = False
    sink: DiagnosticSink = field(default_factory=DiagnosticSink)
    programs: list[program] = field(default_factory=list)
    where: Where | None = None  # the line a script reader is evaluating

    @staticmethod
    def location(where: Where) -> tuple[Location | None, str | None]:
        filename, line = where
        if not line:
            return None, None
        return Location(filename, line, 1), linecache.getline(filename, line).rstrip("\n") or None

    def error(self, message: str, where: Where) -> MgxError:
        return MgxError(message, *self.location(where))


_DEFAULT_SESSION = Session()
_session: Session = _DEFAULT_SESSION


def run_in_session(session: Session, body: Callable[[], Any]) -> Any:
    global _session
    previous, _session = _session, session
    try:
        return body()
    finally:
        _session = previous


# -- shapes, operators, arguments ----------------------------------------------------------------


def _dtype(name: Any) -> DType:
    if isinstance(name, DType):
        return name
    text = str(name)
    try:
        return DType.from_name(text if text.endswith("_type") else text + "_type")
    except KeyError:
        raise ReproError(f"unknown shape type '{text}'") from None


class _ShapeFactory:
    """`migraphx.shape(type=..., lens=..., strides=...)`, `dyn_dims=[...]` or `permutation=[...]`;
    `migraphx.shape.dynamic_dimension(min, max, optimals)`."""

    @staticmethod
    def dynamic_dimension(lo: int = 0, hi: int = 0, optimals: Iterable[int] = ()) -> DynamicDimension:
        return DynamicDimension(int(lo), int(hi), tuple(sorted(int(o) for o in optimals)))

    def __call__(self, **kwargs: Any) -> Shape:
        dtype_name = kwargs.get("type", "float_type")
        if dtype_name == "tuple_type":
            return Shape.tuple_of(kwargs.get("sub_shapes", ()))
        dtype = _dtype(dtype_name)
        if "dyn_dims" in kwargs:
            try:
                return Shape.dynamic(dtype, [dynamic_dimension_from_value(d) for d in kwargs["dyn_dims"]])
            except ValueError_ as e:
                raise ReproError(str(e)) from None
        lens = [int(n) for n in kwargs.get("lens", [1])]
        if any(n < 0 for n in lens):
            raise ReproError(f"negative dimension in lens={lens}")
        if "strides" in kwargs:
            strides = [int(s) for s in kwargs["strides"]]
            if len(strides) != len(lens):
                raise ReproError(f"shape has {len(lens)} lens but {len(strides)} strides")
            return Shape.make(dtype, lens, strides)
        if "permutation" in kwargs:
            return Shape.from_permutation(dtype, lens, [int(i) for i in kwargs["permutation"]])
        if lens and all(n == 1 for n in lens):
            return _OnesWithoutStrides(dtype, lens)
        return Shape.make(dtype, lens)


class _OnesWithoutStrides(Shape):
    """A shape of one element written without strides: MIGraphX's --py prints a scalar (strides 0)
    and a `{1}` shape (stride 1) the same way. It is read as the scalar for a literal (what
    MIGraphX makes of a constant) and for a parameter of a submodule (fuse_pointwise and ONNX loop
    bodies make scalar parameters), elsewhere as the standard shape."""

    __slots__ = ()


def _scalar_if_unwritten(arg_shape: Shape) -> Shape:
    if type(arg_shape) is _OnesWithoutStrides:
        return Shape.make(arg_shape.dtype, arg_shape.lens, (0,) * len(arg_shape.lens))
    return arg_shape


shape = _ShapeFactory()


class op:
    """`migraphx.op(name, **attributes)`: attribute values as MIGraphX's `to_value` gives them
    (numbers, lists, strings, shapes as objects or `migraphx.shape(...)`)."""

    class pooling_mode(enum.IntEnum):
        average = 0
        max = 1
        lpnorm = 2

    class rnn_direction(enum.IntEnum):
        forward = 0
        reverse = 1
        bidirectional = 2

    def __init__(self, name: str, /, **attributes: Any):
        values = {k: int(v) if isinstance(v, enum.IntEnum) else v for k, v in attributes.items()}
        try:
            self.operation: Operation = operation_from_value(name, values)
        except ValueError_ as e:
            raise ReproError(str(e)) from None

    def name(self) -> str:
        return self.operation.name

    def __repr__(self) -> str:
        return self.operation.text


class argument:
    """Literal data: a shape and its values in logical order (`migraphx.argument(numpy_array)`)."""

    def __init__(self, data: Any, arg_shape: Shape | None = None):
        array = np.asarray(data)
        if arg_shape is None:
            try:
                arg_shape = Shape.make(DType.from_numpy(array.dtype), array.shape or (1,))
            except KeyError:
                raise ReproError(f"no MIGraphX type for numpy dtype {array.dtype}") from None
        self.literal = _literal(arg_shape, array)

    def get_shape(self) -> Shape:
        return self.literal.shape

    def tolist(self) -> list:
        return [] if self.literal.data is None else self.literal.data.reshape(-1).tolist()


def _literal(arg_shape: Shape, values: Any) -> Literal:
    arg_shape = _scalar_if_unwritten(arg_shape)
    if arg_shape.is_tuple or arg_shape.is_dynamic:
        raise ReproError("a literal needs a static shape")
    array = np.asarray(values, dtype=np.float64 if not isinstance(values, np.ndarray) else None)
    if array.size != arg_shape.elements:
        raise ReproError(f"{array.size} values for a shape of {arg_shape.elements} elements")
    try:
        return Literal(arg_shape, array.reshape(arg_shape.lens).astype(arg_shape.dtype.numpy))
    except (ValueError, OverflowError) as e:
        raise ReproError(f"values do not fit {arg_shape.dtype.type_name}: {e}") from None


def _check_literal_size(arg_shape: Shape, temporary_itemsize: int) -> None:
    """Refuses a literal the machine cannot hold, with the temporary it is made from, before
    either is allocated."""
    arg_shape = _scalar_if_unwritten(arg_shape)
    if arg_shape.is_tuple or arg_shape.is_dynamic:
        raise ReproError("a literal needs a static shape")
    itemsize = max(arg_shape.dtype.itemsize, 1)
    lens = ", ".join(map(str, arg_shape.lens))
    try:
        check_allocation(
            arg_shape.elements * (itemsize + temporary_itemsize),
            f"a literal of {arg_shape.dtype.type_name}, {{{lens}}}",
        )
    except MgxError as e:
        raise ReproError(e.message) from None


def create_argument(arg_shape: Shape, values: Sequence[float]) -> argument:
    """`migraphx.create_argument(shape, [values])`: values in logical order."""
    made = argument.__new__(argument)
    made.literal = _literal(arg_shape, list(values))
    return made


def argument_from_hex(arg_shape: Shape, hex_bytes: str) -> argument:
    """mgxir's bit-exact literal: the little-endian bytes of the values in logical order."""
    arg_shape = _scalar_if_unwritten(arg_shape)
    bits = arg_shape.dtype.bits_dtype
    raw = bytes.fromhex(hex_bytes)
    if len(raw) != arg_shape.elements * bits.itemsize:
        raise ReproError(f"{len(raw)} bytes for a shape of {arg_shape.elements * bits.itemsize}")
    values = np.frombuffer(raw, bits.newbyteorder("<")).astype(bits).view(arg_shape.dtype.numpy)
    made = argument.__new__(argument)
    made.literal = Literal(arg_shape, values)
    return made


def generate_argument(arg_shape: Shape, seed: int = 0) -> argument:
    """Deterministic data for a shape (MIGraphX's reproducers use it for literals whose values they
    do not print; the values differ from MIGraphX's generator)."""
    dtype = arg_shape.dtype
    _check_literal_size(arg_shape, np.dtype(np.float64).itemsize)  # drawn as float64 or int64 first
    rng = np.random.default_rng(int(seed))
    if dtype is DType.bool:
        data: np.ndarray = rng.integers(0, 2, arg_shape.lens).astype(bool)
    elif dtype.is_float:
        data = rng.uniform(-1.0, 1.0, arg_shape.lens)
    else:
        info = np.iinfo(dtype.numpy)
        data = rng.integers(max(info.min, -16), min(info.max, 16) + 1, arg_shape.lens)
    return create_argument(arg_shape, data.reshape(-1))


def fill_argument(arg_shape: Shape, value: float) -> argument:
    _check_literal_size(arg_shape, np.dtype(np.float64).itemsize)
    return create_argument(arg_shape, np.full(arg_shape.elements, value))


# -- programs and modules: recorded calls --------------------------------------------------------


class instruction_ref:
    """One recorded call; what `add_*` return and take as arguments."""

    __slots__ = ("args", "declared", "kind", "module", "module_args", "payload", "symbols", "where")

    def __init__(
        self, module_: module | None, kind: str, payload: Any, args: Sequence[Any] = (), where: Where = ("", 0)
    ):
        self.module = module_
        self.kind = kind  # "param", "literal", "op", "return" or "undefined"
        self.payload = payload  # parameter (name, shape), Literal, Operation, or the undefined name
        self.args = list(args)
        self.module_args: list[module] | None = None
        self.declared: Shape | None = None
        self.symbols: tuple[str, ...] = ()
        self.where = where

    def name(self) -> str:
        return {"param": "@param", "literal": "@literal", "return": "@return", "undefined": "?"}.get(
            self.kind, getattr(self.payload, "name", "?")
        )

    def __repr__(self) -> str:
        return f"<instruction_ref {self.name()} at {self.where[0]}:{self.where[1]}>"


def undefined(name: str) -> instruction_ref:
    """A value defined outside a script excerpt (read with allow_undefined)."""
    return instruction_ref(None, "undefined", name)


class module:
    def __init__(self, owner: program, name: str, discard: bool = False):
        self.owner = owner
        self._name = name
        self.calls: list[instruction_ref] = []
        self.discard = discard  # a module MIGraphX printed a second time: its calls repeat the first

    def name(self) -> str:
        return self._name

    def _record(self, call: instruction_ref) -> instruction_ref:
        if not self.discard:
            self.calls.append(call)
        return call

    def add_parameter(self, name: str, param_shape: Shape) -> instruction_ref:
        if not isinstance(param_shape, Shape):
            raise ReproError("add_parameter needs a migraphx.shape(...)")
        if self._name != "main":
            param_shape = _scalar_if_unwritten(param_shape)
        return self._record(instruction_ref(self, "param", (str(name), param_shape), (), caller()))

    def add_literal(self, data: Any) -> instruction_ref:
        lit = data.literal if isinstance(data, argument) else argument(data).literal
        return self._record(instruction_ref(self, "literal", lit, (), caller()))

    def add_instruction(
        self,
        operation: op,
        args: Sequence[instruction_ref] = (),
        mod_args: Sequence[module] | None = None,
        debug_symbols: Sequence[str] = (),
    ) -> instruction_ref:
        """MIGraphX's add_instruction; `debug_symbols` (mgxir's addition) are the names MIGraphX
        prints after `#` (the ONNX nodes an instruction came from)."""
        if not isinstance(operation, op):
            raise ReproError("add_instruction needs a migraphx.op(...) as its first argument")
        where = caller()
        call = instruction_ref(self, "op", operation.operation, _checked_args(args), where)
        if mod_args:
            call.module_args = [_checked_module(m) for m in mod_args]
        call.symbols = tuple(str(s) for s in debug_symbols)
        call.declared = declared_shape(where)
        return self._record(call)

    def add_return(self, args: Sequence[instruction_ref]) -> instruction_ref:
        return self._record(instruction_ref(self, "return", None, _checked_args(args), caller()))

    def __repr__(self) -> str:
        return f"<module {self._name}>"


def _checked_args(args: Sequence[Any]) -> list[instruction_ref]:
    if isinstance(args, instruction_ref):
        raise ReproError("arguments go in a list: [x]")
    out = []
    for a in args:
        if not isinstance(a, instruction_ref):
            raise ReproError(f"an argument is a {type(a).__name__}, not an instruction")
        out.append(a)
    return out


def _checked_module(m: Any) -> module:
    if not isinstance(m, module):
        raise ReproError(f"a module argument is a {type(m).__name__}, not a module")
    return m


class program:
    def __init__(self) -> None:
        self.modules: dict[str, module] = {"main": module(self, "main")}
        self.created: list[module] = []  # create_module calls in order, repeats included
        if _session is not _DEFAULT_SESSION:  # a script run by the reader: it picks the last one
            _session.programs.append(self)

    def get_main_module(self) -> module:
        return self.modules["main"]

    def create_module(self, name: str) -> module:
        found = self.modules.get(name)
        if found is not None:
            # MIGraphX's --py prints a module once per use: a repeat adds nothing
            repeat = module(self, name, discard=True)
            self.created.append(found)
            return repeat
        made = self.modules[name] = module(self, name)
        self.created.append(made)
        return made

    def to_mgxir(self) -> Program:
        """Builds the recorded program; raises MgxError at the script line of a bad call."""
        return _Builder(self, _session).build()

    def get_parameter_names(self) -> list[str]:
        return self.to_mgxir().main.parameter_names()

    def get_parameter_shapes(self) -> dict[str, Shape]:
        return {i.param_name: i.shape for i in self.to_mgxir().main.parameters()}

    def get_output_shapes(self) -> list[Shape]:
        return self.to_mgxir().main.output_shapes()

    def print(self) -> None:
        print(self)

    def __str__(self) -> str:
        return print_program(self.to_mgxir())

    __repr__ = __str__


# -- building ------------------------------------------------------------------------------------


class _Builder:
    """Turns recorded calls into a Program, submodules first as MIGraphX's loader does."""

    def __init__(self, recorded: program, session: Session):
        self.recorded = recorded
        self.session = session
        self.program = Program()
        self.built: dict[int, Instruction] = {}
        self.undefined: dict[str, Instruction] = {}
        self.modules: dict[str, Module] = {}
        self.done: set[str] = set()

    def build(self) -> Program:
        for name in self.recorded.modules:
            self.modules[name] = self.program.create_module(name)
        self._attach_printed_module_inputs()
        for recorded in self.recorded.modules.values():
            self._module(recorded)
        return self.program

    def _attach_printed_module_inputs(self) -> None:
        """MIGraphX's --py leaves module inputs out and creates the modules afterwards, in the
        order `get_sub_modules` lists them: main's instructions in order, each instruction's
        modules followed by theirs. Instructions that need modules and got none take them so."""
        created = self.recorded.created
        position = 0

        def walk(recorded: module, active: frozenset[str]) -> None:
            nonlocal position
            for call in recorded.calls:
                if call.kind != "op":
                    continue
                if call.module_args is None:
                    wanted = call.payload.defn.module_arity[0]
                    if not wanted:
                        continue
                    if position + wanted > len(created):
                        continue  # reported when the instruction is built
                    call.module_args = created[position : position + wanted]
                    position += wanted
                else:
                    for sub in call.module_args:
                        if position < len(created) and created[position] is sub:
                            position += 1
                for sub in call.module_args:
                    if sub.name() not in active:
                        walk(sub, active | {sub.name()})

        walk(self.recorded.modules["main"], frozenset({"main"}))

    def _module(self, recorded: module) -> Module:
        target = self.modules[recorded.name()]
        if recorded.name() in self.done:
            return target
        self.done.add(recorded.name())
        for call in recorded.calls:
            self.built[id(call)] = self._instruction(target, call)
        return target

    def _value(self, call: instruction_ref) -> Instruction:
        found = self.built.get(id(call))
        if found is not None:
            return found
        if call.kind == "undefined":
            name = call.payload
            found = self.undefined.get(name)
            if found is None:
                found = self.undefined[name] = undefined_value(name)
            return found
        if call.module is not None and call.module.owner is not self.recorded:
            raise ReproError("an argument comes from another program")
        raise ReproError("an argument is used before its definition (or comes from a module built later)")

    def _instruction(self, target: Module, call: instruction_ref) -> Instruction:
        try:
            return self._make(target, call)
        except ReproError as e:
            raise self.session.error(str(e), call.where) from None

    def _make(self, target: Module, call: instruction_ref) -> Instruction:
        if call.kind == "param":
            name, param_shape = call.payload
            ins = Instruction(make_param(name), (), param_shape)
        elif call.kind == "literal":
            ins = Instruction(make_literal(call.payload), (), call.payload.shape)
        else:
            args = [self._value(a) for a in call.args]
            subs = [self._module(m) for m in call.module_args or ()]
            if call.kind == "return":
                op_ = make_return()
                known = all(a.shape is not None for a in args)
                ins = Instruction(op_, args, op_.defn.shape(op_, [a.shape for a in args], ()) if known else None)
            else:
                ins = Instruction(call.payload, args, self._shape(call, args, subs), subs)
        ins.line = call.where[1]
        ins.symbols = call.symbols
        target.append_parsed(ins)
        return ins

    def _shape(self, call: instruction_ref, args: list[Instruction], subs: list[Module]) -> Shape | None:
        operation: Operation = call.payload
        declared = call.declared if call.declared is not None and not _vague(call.declared) else None
        if operation.defn.is_opaque or any(a.shape is None for a in args):
            if declared is None:
                why = "is not an operator mgxir knows"
                if not operation.defn.is_opaque:
                    why = "has an argument of unknown shape"
                raise ReproError(
                    f"'{operation.name}' {why}, so it needs its result shape in a comment: "
                    "# migraphx.shape(type=..., lens=[...])"
                )
            return declared
        problem = operation.defn.check_arity(len(args), len(subs))
        if problem:
            raise ReproError(problem)
        try:
            rule = operation.defn.shape(operation, [a.shape for a in args], subs)
        except ShapeError as e:  # any other exception is a bug in the rule: an internal error
            raise ReproError(str(e)) from None
        if rule is None:
            if declared is None:
                raise ReproError(f"'{operation.name}' has no shape rule here: give its result shape in a comment")
            return declared
        return rule


def _vague(declared: Shape) -> bool:
    """MIGraphX's --py comments print tuples without their elements."""
    return declared.is_tuple and not declared.sub_shapes


# -- what a script read by --from-py may reach ---------------------------------------------------

SCRIPT_NAMES = frozenset(
    {"program", "shape", "op", "argument", "create_argument", "argument_from_hex", "generate_argument", "fill_argument"}
)
_SCRIPT_METHODS: dict[type, frozenset[str]] = {
    program: frozenset(
        {
            "get_main_module",
            "create_module",
            "get_parameter_names",
            "get_parameter_shapes",
            "get_output_shapes",
            "print",
        }
    ),
    module: frozenset({"add_parameter", "add_literal", "add_instruction", "add_return", "name"}),
    instruction_ref: frozenset({"name"}),
    argument: frozenset({"get_shape", "tolist"}),
    _ShapeFactory: frozenset({"dynamic_dimension"}),
}


def script_attribute_allowed(owner: Any, name: str) -> bool:
    """The attributes of this API a script may read: the module's names, the methods MIGraphX's
    Python API has, and the members of `op`'s enumerations."""
    if owner is sys.modules[__name__]:
        return name in SCRIPT_NAMES
    if owner is op:
        return name in ("pooling_mode", "rnn_direction")
    if owner is op.pooling_mode or owner is op.rnn_direction:
        return name in owner.__members__
    allowed = _SCRIPT_METHODS.get(type(owner))
    return allowed is not None and name in allowed
