"""A driver's options, declared once: each field with its type, default, help text and spellings.

A driver's options class (`OptOptions`, `RunOptions`, `TranslateOptions`) lists its fields as
`Option`s in `DECLARED`; that one list is

- the class's fields: `OptOptions(input="a.mgx", pipeline="dce")` fills the others from their
  defaults, and the repr, `==` and field order are those of a record (`mgxir.records`);
- the tool's command line: `mgxir.tools.cli` reads a plain command line from it without typer, and
  builds the typer command (help, error messages) from it otherwise.

The declarations are plain records rather than dataclass fields because a tool's start-up path
imports them, and dataclasses compile their methods at import time (`mgxir.records` says why).
"""

from __future__ import annotations

from typing import Any, ClassVar

from mgxir.records import FrozenRecord, Record


class Option(FrozenRecord):
    """One field of a driver's options and its command-line spellings.

    `flags`: the spellings, long and short (`("-o", "--output")`); empty for the positional argument
    (`positional=True`) or for a field the command line does not set. `kind`: str, int, float or bool
    (a flag; `negatable` adds `--no-NAME`). `many`: repeatable, collected in a list. `aliases`: other
    spellings read as this option (MLIR's `--mlir-timing` for `--timing`) and not shown by --help.
    """

    __slots__ = ("aliases", "default", "flags", "help", "kind", "many", "metavar", "name", "negatable", "positional")

    def __init__(
        self,
        name: str,
        flags: tuple[str, ...] = (),
        help: str = "",
        default: Any = None,
        kind: type = str,
        many: bool = False,
        positional: bool = False,
        negatable: bool = False,
        metavar: str | None = None,
        aliases: tuple[str, ...] = (),
    ):
        for field, value in (
            ("name", name),
            ("flags", flags),
            ("help", help),
            ("default", default),
            ("kind", kind),
            ("many", many),
            ("positional", positional),
            ("negatable", negatable),
            ("metavar", metavar),
            ("aliases", aliases),
        ):
            object.__setattr__(self, field, value)

    def spellings(self) -> tuple[str, ...]:
        """Every flag read as this option (not `--no-NAME`)."""
        return self.flags + self.aliases

    @property
    def long_flag(self) -> str:
        """The first `--NAME` spelling (what an alias is read as)."""
        return next(f for f in self.flags if f.startswith("--"))

    @property
    def negation(self) -> str | None:
        """`--no-NAME` for a negatable flag `--NAME`."""
        return "--no-" + self.long_flag[2:] if self.negatable else None


def flag(name: str, *flags: str, help: str, aliases: tuple[str, ...] = (), default: bool = False) -> Option:
    """A boolean flag (off unless given)."""
    return Option(name, flags, help, default, bool, aliases=aliases)


class DeclaredOptions(Record):
    """The base of a driver's options class; `DECLARED` lists its fields as `Option`s.

    The constructor takes the fields by keyword (or in declared order) and fills the others from their
    defaults; a name that is not declared is a TypeError, as for any class.
    """

    DECLARED: ClassVar[tuple[Option, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._fields = tuple(o.name for o in cls.DECLARED)  # what mgxir.records.fields reads
        cls._defaults = {o.name: o.default for o in cls.DECLARED}

    def __init__(self, *positional: Any, **given: Any):
        names = type(self)._fields  # type: ignore[attr-defined]
        if len(positional) > len(names):
            raise TypeError(f"{type(self).__name__} takes at most {len(names)} positional arguments")
        for name, value in zip(names, positional):
            if name in given:
                raise TypeError(f"{type(self).__name__} got two values for '{name}'")
            given[name] = value
        defaults = type(self)._defaults  # type: ignore[attr-defined]
        unknown = [n for n in given if n not in defaults]
        if unknown:
            raise TypeError(f"{type(self).__name__} has no option '{unknown[0]}'")
        for name, default in defaults.items():
            setattr(self, name, given.get(name, default))
