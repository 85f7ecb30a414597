"""Reads a Python script without running it: parses it with `ast` and evaluates only straight-line
code over names and attributes the caller allows.

MIGraphX's `--py` reproducers are pasted from strangers' bug reports, so `--from-py` must not run
them. The evaluator knows constants, lists, tuples, dicts, names, arithmetic on numbers, calls,
`for` over a list or `range(...)`, `import` of the modules the caller lists, and attribute access
only where `Policy.attribute_allowed` says so (never a `__dunder__`): an `os.system(...)`, an
`__import__`, `().__class__.__bases__` or a `def` is refused at its line and column before
anything of the script has run. Nesting, loop iterations and the size of integers are bounded, so
a clumsy or hostile script cannot exhaust the stack, the time or the memory of the reader.

The standard library has no such evaluator (`ast.literal_eval` knows no calls or names), and the
sandboxing libraries (RestrictedPython, asteval) still execute a subset of Python with its object
model reachable; this one only ever calls what the policy hands out.
"""

from __future__ import annotations

import ast
import io
import operator
import tokenize
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

from mgxir.diagnostics import MgxError

MAX_NESTING = 100  # syntax-tree depth; MIGraphX's reproducers nest about 12 deep
MAX_BRACKETS = 64  # bracket depth reported when Python's own parser gives up
MAX_LOOP_ITERATIONS = 100_000  # in all the script's loops together
MAX_INTEGER_BITS = 4096


class Refused(Exception):
    """A construct the evaluator does not run; `line` and `column` are 1-based."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.line = line
        self.column = column


class CallFailed(Exception):
    """A call the script made raised `error` (the API's own refusal, or a wrong argument)."""

    def __init__(self, error: Exception, line: int, column: int):
        super().__init__(str(error))
        self.error = error
        self.line = line
        self.column = column


class Policy:
    """What a script may reach: `modules` are what `import NAME` binds, `builtins` the names
    visible everywhere, `attribute_allowed(value, name)` the attributes it may read, and `at_line`
    is told the line of each statement and call before it runs (for the API's diagnostics).
    `user_errors` are the exceptions a call may raise for a wrong call (the API's refusals, wrong
    arguments); any other exception from a call is a bug and propagates as it is."""

    def __init__(
        self,
        modules: Mapping[str, Any],
        builtins: Mapping[str, Any],
        attribute_allowed: Callable[[Any, str], bool],
        at_line: Callable[[int], None] = lambda line: None,
        user_errors: tuple[type[Exception], ...] = (TypeError, ValueError, ArithmeticError),
    ):
        self.modules = modules
        self.builtins = builtins
        self.attribute_allowed = attribute_allowed
        self.at_line = at_line
        self.user_errors = user_errors


class Namespace:
    """A module-like object whose attributes are exactly `members` (what `import numpy` binds)."""

    def __init__(self, name: str, members: Mapping[str, Any]):
        self.name = name
        self.members = dict(members)

    def __repr__(self) -> str:
        return f"<{self.name}>"


def parse(source: str, filename: str, mode: str = "exec") -> ast.AST:
    """`ast.parse` with the depth bounded; SyntaxError as Python gives it, Refused where the
    script nests past what the reader takes."""
    try:
        tree = ast.parse(source, filename, mode)
    except (RecursionError, MemoryError):
        # CPython's parser gives these for deep nesting (200 brackets, long operator chains)
        line, column = _deepest_bracket(source)
        raise Refused(f"the script nests too deeply (more than {MAX_BRACKETS} levels)", line, column) from None
    _check_depth(tree)
    return tree


def _deepest_bracket(source: str) -> tuple[int, int]:
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
                if depth > MAX_BRACKETS:
                    return token.start[0], token.start[1] + 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth -= 1
    except (tokenize.TokenError, SyntaxError):
        pass
    return 1, 1


def _check_depth(tree: ast.AST) -> None:
    pending: list[tuple[ast.AST, int]] = [(tree, 0)]
    while pending:
        node, depth = pending.pop()
        if depth > MAX_NESTING and hasattr(node, "lineno"):
            raise Refused(f"the script nests too deeply (more than {MAX_NESTING} levels)", *_position(node))
        pending.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1


def _bounded_power(base: Any, exponent: Any) -> Any:
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        if max(abs(base).bit_length(), 1) * exponent > MAX_INTEGER_BITS and abs(base) > 1:
            raise ArithmeticError(f"{base} ** {exponent} is too large")
    return base**exponent


def _bounded_product(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and a.bit_length() + b.bit_length() > MAX_INTEGER_BITS:
        raise ArithmeticError("the product is too large")
    return a * b


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: _bounded_product,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _bounded_power,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float)  # bool is an int


class Evaluator:
    """Evaluates a parsed script (or one expression) into `names` under `policy`."""

    def __init__(self, policy: Policy, names: MutableMapping[str, Any]):
        self.policy = policy
        self.names = names
        self.loop_iterations = 0
        self._statements: dict[type[ast.stmt], Callable[[Any], None]] = {
            ast.Expr: self._expression_statement,
            ast.Assign: self._assign,
            ast.AugAssign: self._augmented_assign,
            ast.Import: self._import,
            ast.ImportFrom: self._import_from,
            ast.For: self._for,
            ast.If: self._main_guard,
            ast.Pass: lambda node: None,
        }
        self._expressions: dict[type[ast.expr], Callable[[Any], Any]] = {
            ast.Constant: lambda node: node.value,
            ast.Name: self._name,
            ast.List: lambda node: [self.evaluate(e) for e in self._unstarred(node.elts)],
            ast.Tuple: lambda node: tuple(self.evaluate(e) for e in self._unstarred(node.elts)),
            ast.Dict: self._dict,
            ast.UnaryOp: self._unary,
            ast.BinOp: self._binary,
            ast.Attribute: self._attribute,
            ast.Subscript: self._subscript,
            ast.Call: self._call,
        }

    # -- statements --------------------------------------------------------------------------------

    def run(self, tree: ast.Module) -> None:
        self._block(tree.body)

    def _block(self, body: list[ast.stmt]) -> None:
        for statement in body:
            handler = self._statements.get(type(statement))
            if handler is None:
                raise Refused(f"{_describe(statement)} is not part of MIGraphX's building API", *_position(statement))
            self.policy.at_line(statement.lineno)
            handler(statement)

    def _expression_statement(self, node: ast.Expr) -> None:
        self.evaluate(node.value)

    def _assign(self, node: ast.Assign) -> None:
        value = self.evaluate(node.value)
        for target in node.targets:
            self._bind(target, value)

    def _augmented_assign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise Refused("only a name can be updated", *_position(node.target))
        current = self._name(ast.Name(node.target.id, ast.Load(), lineno=node.lineno, col_offset=node.col_offset))
        self.names[node.target.id] = self._arithmetic(node.op, current, self.evaluate(node.value), node)

    def _bind(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.names[target.id] = value
            return
        if isinstance(target, ast.Tuple | ast.List) and all(isinstance(t, ast.Name) for t in target.elts):
            if not isinstance(value, list | tuple) or len(value) != len(target.elts):
                raise Refused(f"cannot unpack into {len(target.elts)} names", *_position(target))
            for name, item in zip(target.elts, value, strict=True):
                self._bind(name, item)
            return
        raise Refused(f"assigning to {_describe(target)} is not supported: assign to a name", *_position(target))

    def _import(self, node: ast.Import) -> None:
        for alias in node.names:
            module = self._module(alias.name, node)
            self.names[alias.asname or alias.name] = module

    def _import_from(self, node: ast.ImportFrom) -> None:
        module = self._module(node.module or "", node)
        for alias in node.names:
            if alias.name == "*" or not self._readable(module, alias.name):
                raise Refused(f"'{alias.name}' is not part of {node.module}'s building API", *_position(node))
            self.names[alias.asname or alias.name] = _member(module, alias.name)

    def _module(self, name: str, node: ast.stmt) -> Any:
        if name not in self.policy.modules:
            allowed = ", ".join(sorted(self.policy.modules))
            raise Refused(f"importing '{name}' is refused: a reproducer may import only {allowed}", *_position(node))
        return self.policy.modules[name]

    def _main_guard(self, node: ast.If) -> None:
        """`if __name__ == "__main__":` is skipped, as when the script is imported (its `else`
        runs); other `if`s are refused."""
        test = node.test
        guard = (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__"
        )
        if not guard:
            raise Refused(f"{_describe(node)} is not part of MIGraphX's building API", *_position(node))
        self._block(node.orelse)

    def _for(self, node: ast.For) -> None:
        if node.orelse:
            raise Refused("'for ... else' is not supported", *_position(node.orelse[0]))
        for item in self._iteration(node.iter):
            self.loop_iterations += 1
            if self.loop_iterations > MAX_LOOP_ITERATIONS:
                raise Refused(f"the script's loops run more than {MAX_LOOP_ITERATIONS} times", *_position(node))
            self._bind(node.target, item)
            self._block(node.body)

    def _iteration(self, node: ast.expr) -> Iterator[Any] | list[Any] | tuple[Any, ...]:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            if node.keywords or not 1 <= len(node.args) <= 3:
                raise Refused("range takes 1 to 3 numbers", *_position(node))
            bounds = [self.evaluate(a) for a in node.args]
            if not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
                raise Refused("range takes integers", *_position(node))
            return iter(range(*bounds))
        items = self.evaluate(node)
        if not isinstance(items, list | tuple):
            raise Refused("a loop runs over a list, a tuple or range(...)", *_position(node))
        return items

    # -- expressions -------------------------------------------------------------------------------

    def evaluate(self, node: ast.expr) -> Any:
        handler = self._expressions.get(type(node))
        if handler is None:
            raise Refused(f"{_describe(node)} is not part of MIGraphX's building API", *_position(node))
        return handler(node)

    def _unstarred(self, elements: list[ast.expr]) -> list[ast.expr]:
        for element in elements:
            if isinstance(element, ast.Starred):
                raise Refused("'*' unpacking is not supported here", *_position(element))
        return elements

    def _name(self, node: ast.Name) -> Any:
        self.policy.at_line(node.lineno)
        try:
            return self.names[node.id]
        except KeyError:
            pass
        if node.id in self.policy.builtins:
            return self.policy.builtins[node.id]
        raise Undefined(f"name '{node.id}' is not defined", node.lineno, node.col_offset + 1)

    def _dict(self, node: ast.Dict) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                raise Refused("'**' in a dict is not supported", *_position(value))
            evaluated = self.evaluate(key)
            if not isinstance(evaluated, str | int | float | bool) and evaluated is not None:
                raise Refused("dict keys are strings or numbers", *_position(key))
            out[evaluated] = self.evaluate(value)
        return out

    def _unary(self, node: ast.UnaryOp) -> Any:
        operand = self.evaluate(node.operand)
        apply = _UNARY.get(type(node.op))
        if apply is None or not _is_number(operand):
            raise Refused(f"{_describe(node)} is only supported as '-' or '+' of a number", *_position(node))
        return apply(operand)

    def _binary(self, node: ast.BinOp) -> Any:
        return self._arithmetic(node.op, self.evaluate(node.left), self.evaluate(node.right), node)

    def _arithmetic(self, op: ast.operator, left: Any, right: Any, node: ast.AST) -> Any:
        apply = _BINARY.get(type(op))
        if apply is None or not (_is_number(left) and _is_number(right)):
            raise Refused("arithmetic (+ - * / // % **) is only supported on numbers", *_position(node))
        try:
            return apply(left, right)
        except ArithmeticError as e:
            raise Refused(f"arithmetic fails: {e}", *_position(node)) from None

    def _attribute(self, node: ast.Attribute) -> Any:
        owner = self.evaluate(node.value)
        if not self._readable(owner, node.attr):
            raise Refused(f"'{node.attr}' of {_kind(owner)} is not part of MIGraphX's building API", *_position(node))
        return _member(owner, node.attr)

    def _readable(self, owner: Any, name: str) -> bool:
        if isinstance(owner, Namespace):
            return name in owner.members
        return not name.startswith("_") and self.policy.attribute_allowed(owner, name)

    def _subscript(self, node: ast.Subscript) -> Any:
        owner = self.evaluate(node.value)
        index = self.evaluate(node.slice)
        if not isinstance(owner, list | tuple | dict) or not isinstance(index, int | str):
            raise Refused("indexing is only supported on lists, tuples and dicts", *_position(node))
        try:
            return owner[index]
        except (IndexError, KeyError, TypeError):
            raise Refused(f"index {index!r} is not in the {type(owner).__name__}", *_position(node)) from None

    def _call(self, node: ast.Call) -> Any:
        function = self.evaluate(node.func)
        args: list[Any] = []
        for argument in node.args:
            if isinstance(argument, ast.Starred):
                spread = self.evaluate(argument.value)
                if not isinstance(spread, list | tuple):
                    raise Refused("'*' unpacks a list or a tuple", *_position(argument))
                args.extend(spread)
            else:
                args.append(self.evaluate(argument))
        keywords: dict[str, Any] = {}
        for keyword in node.keywords:
            value = self.evaluate(keyword.value)
            if keyword.arg is not None:
                keywords[keyword.arg] = value
            elif isinstance(value, dict) and all(isinstance(k, str) for k in value):
                keywords.update(value)
            else:
                raise Refused("'**' unpacks a dict with string keys", *_position(keyword.value))
        if not callable(function) or isinstance(function, Namespace):
            raise Refused(f"{_kind(function)} cannot be called", *_position(node))
        self.policy.at_line(node.lineno)
        try:
            return function(*args, **keywords)
        except (Refused, CallFailed, Undefined, MgxError):
            raise
        except self.policy.user_errors as e:
            raise CallFailed(e, *_position(node)) from None


class Undefined(Exception):
    """A name the script reads but never bound."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.line = line
        self.column = column


def _member(owner: Any, name: str) -> Any:
    return owner.members[name] if isinstance(owner, Namespace) else getattr(owner, name)


def _kind(value: Any) -> str:
    if isinstance(value, Namespace):
        return f"'{value.name}'"
    if isinstance(value, type):
        return f"'{value.__name__}'"
    return f"a {type(value).__name__}"


_DESCRIPTIONS: dict[type[ast.AST], str] = {
    ast.FunctionDef: "a 'def'",
    ast.AsyncFunctionDef: "a 'def'",
    ast.ClassDef: "a 'class'",
    ast.Lambda: "a 'lambda'",
    ast.If: "an 'if'",
    ast.While: "a 'while' loop",
    ast.With: "a 'with'",
    ast.Try: "a 'try'",
    ast.Raise: "a 'raise'",
    ast.Global: "a 'global'",
    ast.Delete: "a 'del'",
    ast.Assert: "an 'assert'",
    ast.JoinedStr: "an f-string",
    ast.ListComp: "a list comprehension",
    ast.Compare: "a comparison",
    ast.BoolOp: "'and'/'or'",
}


def _describe(node: ast.AST) -> str:
    return _DESCRIPTIONS.get(type(node), f"'{type(node).__name__}'")
