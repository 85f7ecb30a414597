"""The one table of passes, their short aliases and named pipelines, and MLIR-style pipeline text:
`dce,simplify_algebra,fuse_pointwise{max_rounds=8}`."""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import typing
from collections.abc import Iterator, Mapping

from mgxir.diagnostics import MgxError, did_you_mean
from mgxir.passes.base import Pass


class PassTable(Mapping[str, type[Pass]]):
    """Pass classes by name. A pass is filed as "module:Class" and its module imported only when
    the pass is looked up, so a command pays only for the passes it runs (`--list-passes` and
    iterating over the values import all of them)."""

    def __init__(self, places: Mapping[str, str]):
        self._places = dict(places)
        self._loaded: dict[str, type[Pass]] = {}

    def __getitem__(self, name: str) -> type[Pass]:
        cls = self._loaded.get(name)
        if cls is None:
            module, _, attribute = self._places[name].partition(":")
            cls = self._loaded[name] = getattr(importlib.import_module(module), attribute)
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(self._places)

    def __len__(self) -> int:
        return len(self._places)

    def file(self, name: str, place: str) -> None:
        """Files the pass `place` ("module:Class") under `name`."""
        self._places[name] = place
        self._loaded.pop(name, None)

    def register(self, cls: type[Pass]) -> None:
        """Files a pass class already imported."""
        self.file(cls.name, f"{cls.__module__}:{cls.__qualname__}")
        self._loaded[cls.name] = cls


PASSES = PassTable(
    {
        "auto_contiguous": "mgxir.passes.auto_contiguous:AutoContiguous",
        "dead_code_elimination": "mgxir.passes.dead_code_elimination:DeadCodeElimination",
        "eliminate_common_subexpression": "mgxir.passes.eliminate_common_subexpression:EliminateCommonSubexpression",
        "eliminate_concat": "mgxir.passes.eliminate_concat:EliminateConcat",
        "eliminate_contiguous": "mgxir.passes.eliminate_contiguous:EliminateContiguous",
        "eliminate_convert": "mgxir.passes.eliminate_convert:EliminateConvert",
        "eliminate_identity": "mgxir.passes.eliminate_identity:EliminateIdentity",
        "eliminate_pad": "mgxir.passes.eliminate_pad:EliminatePad",
        "fuse_pointwise": "mgxir.passes.fuse_pointwise:FusePointwise",
        "fuse_reduce": "mgxir.passes.fuse_reduce:FuseReduce",
        "inline_module": "mgxir.passes.inline_module:InlineModule",
        "insert_pad": "mgxir.passes.insert_pad:InsertPad",
        "memory_coloring": "mgxir.passes.memory_coloring:MemoryColoring",
        "normalize_ops": "mgxir.passes.normalize_ops:NormalizeOps",
        "optimize_module": "mgxir.passes.optimize_module:OptimizeModule",
        "propagate_constant": "mgxir.passes.propagate_constant:PropagateConstant",
        "ref_lowering": "mgxir.passes.ref_lowering:RefLowering",
        "rewrite_gelu": "mgxir.passes.rewrite_gelu:RewriteGelu",
        "rewrite_pooling": "mgxir.passes.rewrite_pooling:RewritePooling",
        "rewrite_reduce": "mgxir.passes.rewrite_reduce:RewriteReduce",
        "rewrite_rnn": "mgxir.passes.rewrite_rnn:RewriteRnn",
        "simplify_algebra": "mgxir.passes.simplify_algebra:SimplifyAlgebra",
        "simplify_reshapes": "mgxir.passes.simplify_reshapes:SimplifyReshapes",
        "split_reduce": "mgxir.passes.split_reduce:SplitReduce",
    }
)

# passes that exist only for tests (mgxir.passes.testing), filed only where this is set
TEST_PASSES_ENV = "MGXIR_TEST_PASSES"
if os.environ.get(TEST_PASSES_ENV):
    PASSES.file("test_fail", "mgxir.passes.testing:TestFail")

ALIASES: dict[str, str] = {"dce": "dead_code_elimination", "cse": "eliminate_common_subexpression"}


def _after_each(names: list[str], follow: str) -> str:
    return ",".join(f"{n},{follow}" for n in names)


# what `migraphx-driver read -O` runs (on the main module only); passes not yet written are left out
_READ_O = ["eliminate_identity", "simplify_algebra", "simplify_reshapes", "propagate_constant", "eliminate_pad"]

PIPELINES: dict[str, str] = {
    "fuse": "fuse_pointwise,fuse_reduce,dead_code_elimination",
    "O": _after_each(_READ_O, "dead_code_elimination"),
    # the reference target's passes (rewrite_rnn not yet written)
    "ref": _after_each(
        ["normalize_ops,eliminate_pad", "insert_pad", "rewrite_rnn", "auto_contiguous", "ref_lowering"],
        "dead_code_elimination",
    ),
}


def register_pass(cls: type[Pass]) -> None:
    """Files a pass that a later layer defines (a target's lowering) under its name."""
    PASSES.register(cls)


def register_pipeline(name: str, text: str) -> None:
    """Files a named pipeline that a later layer defines (a target's `gpu`)."""
    PIPELINES[name] = text


def list_passes() -> str:
    lines = []
    for name, cls in sorted(PASSES.items()):
        lines.append(f"  {name}: {cls.description}")
        for f in cls.options():
            lines.append(f"      {f.name}: {_type_name(cls, f)} = {f.default}")
    lines.append("aliases:")
    lines.extend(f"  {a} = {n}" for a, n in ALIASES.items())
    lines.append("pipelines:")
    lines.extend(f"  {p} = {text}" for p, text in PIPELINES.items())
    return "\n".join(lines) + "\n"


def _type_name(cls: type[Pass], f: dataclasses.Field) -> str:
    return getattr(typing.get_type_hints(cls).get(f.name), "__name__", str(f.type))


_ITEM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\{([^}]*)\})?\s*")


def parse_pipeline(text: str, *, skip_unknown: bool = False) -> list[Pass]:
    """Reads `a,b{opt=1},c`; names may be aliases or named pipelines. Raises MgxError."""
    passes: list[Pass] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _ITEM.match(text, pos)
        if not m or m.end() == pos:
            raise MgxError(f"pass pipeline: cannot read '{text[pos:]}' (expected a pass name)")
        name, options = m.group(1), m.group(2)
        pos = m.end()
        if pos < len(text):
            if text[pos] != ",":
                raise MgxError(f"pass pipeline: expected ',' after '{name}', got '{text[pos:]}'")
            pos += 1
        passes.extend(_make(name, options, skip_unknown))
    return passes


def _make(name: str, options: str | None, skip_unknown: bool) -> list[Pass]:
    name = ALIASES.get(name, name)
    if name in PIPELINES:
        if options:
            raise MgxError(f"pass pipeline: the pipeline '{name}' takes no options")
        return parse_pipeline(PIPELINES[name], skip_unknown=True)
    cls = PASSES.get(name)
    if cls is None:
        if skip_unknown:
            return []
        hint = did_you_mean(name, [*PASSES, *PIPELINES, *ALIASES])
        raise MgxError(f"unknown pass '{name}'{hint} (mgx-opt --list-passes lists them)")
    values = {}
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in cls.options()}
    for item in re.split(r"[\s,]+", options.strip()) if options and options.strip() else []:
        key, eq, raw = item.partition("=")
        if not eq or key not in fields:
            known = ", ".join(fields) or "none"
            hint = did_you_mean(key, fields)
            raise MgxError(f"pass '{name}': unknown option '{key}'{hint} (options: {known})")
        values[key] = _read_option(name, key, hints[key], raw)
    return [cls(**values)]


def _read_option(pass_name: str, key: str, kind: type, raw: str) -> object:
    try:
        if kind is bool:
            if raw.lower() not in ("true", "false", "1", "0"):
                raise ValueError(raw)
            return raw.lower() in ("true", "1")
        return kind(raw)
    except ValueError:
        raise MgxError(f"pass '{pass_name}': option '{key}' must be of type {kind.__name__}, got '{raw}'") from None


def format_pipeline(passes: list[Pass]) -> str:
    return ",".join(p.pipeline_text() for p in passes)
