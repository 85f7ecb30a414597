"""The one table of passes, their short aliases and named pipelines, and MLIR-style pipeline text:
`dce,simplify_algebra,fuse_pointwise{max_rounds=8}`."""

from __future__ import annotations

import dataclasses
import os
import re
import typing

from mgxir.diagnostics import MgxError
from mgxir.passes.auto_contiguous import AutoContiguous
from mgxir.passes.base import Pass
from mgxir.passes.dead_code_elimination import DeadCodeElimination
from mgxir.passes.eliminate_common_subexpression import EliminateCommonSubexpression
from mgxir.passes.eliminate_concat import EliminateConcat
from mgxir.passes.eliminate_contiguous import EliminateContiguous
from mgxir.passes.eliminate_convert import EliminateConvert
from mgxir.passes.eliminate_identity import EliminateIdentity
from mgxir.passes.eliminate_pad import EliminatePad
from mgxir.passes.fuse_pointwise import FusePointwise
from mgxir.passes.fuse_reduce import FuseReduce
from mgxir.passes.inline_module import InlineModule
from mgxir.passes.insert_pad import InsertPad
from mgxir.passes.memory_coloring import MemoryColoring
from mgxir.passes.normalize_ops import NormalizeOps
from mgxir.passes.optimize_module import OptimizeModule
from mgxir.passes.propagate_constant import PropagateConstant
from mgxir.passes.ref_lowering import RefLowering
from mgxir.passes.rewrite_gelu import RewriteGelu
from mgxir.passes.rewrite_pooling import RewritePooling
from mgxir.passes.rewrite_reduce import RewriteReduce
from mgxir.passes.rewrite_rnn import RewriteRnn
from mgxir.passes.simplify_algebra import SimplifyAlgebra
from mgxir.passes.simplify_reshapes import SimplifyReshapes
from mgxir.passes.split_reduce import SplitReduce
from mgxir.passes.testing import TEST_PASSES_ENV, TestFail

PASSES: dict[str, type[Pass]] = {
    cls.name: cls
    for cls in (
        AutoContiguous,
        DeadCodeElimination,
        EliminateCommonSubexpression,
        EliminateConcat,
        EliminateIdentity,
        EliminateContiguous,
        EliminateConvert,
        EliminatePad,
        FusePointwise,
        FuseReduce,
        InlineModule,
        InsertPad,
        MemoryColoring,
        NormalizeOps,
        OptimizeModule,
        PropagateConstant,
        RefLowering,
        RewriteGelu,
        RewritePooling,
        RewriteReduce,
        RewriteRnn,
        SimplifyAlgebra,
        SimplifyReshapes,
        SplitReduce,
    )
}

if os.environ.get(TEST_PASSES_ENV):
    PASSES[TestFail.name] = TestFail

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
    PASSES[cls.name] = cls


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
        raise MgxError(f"unknown pass '{name}' (mgx-opt --list-passes lists them)")
    values = {}
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in cls.options()}
    for item in re.split(r"[\s,]+", options.strip()) if options and options.strip() else []:
        key, eq, raw = item.partition("=")
        if not eq or key not in fields:
            known = ", ".join(fields) or "none"
            raise MgxError(f"pass '{name}': unknown option '{key}' (options: {known})")
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
