"""`mgxir.records`: the hand-written value classes behave as the dataclasses they replaced."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from mgxir.diagnostics import Diagnostic, Location
from mgxir.drivers.opt import OptOptions
from mgxir.ir.attributes import INT, Attr, EnumKind, OptionalKind


@dataclasses.dataclass(frozen=True)
class LocationTwin:
    file: str
    line: int
    column: int = 1


@dataclasses.dataclass
class DiagnosticTwin:
    severity: str
    message: str
    location: object = None
    source_line: str | None = None


def _same(record: object, twin: object) -> None:
    assert repr(record).replace(type(record).__name__, "", 1) == repr(twin).replace(type(twin).__name__, "", 1)


def test_a_frozen_record_is_a_frozen_dataclass() -> None:
    place = Location("a.mgx", 3)
    _same(place, LocationTwin("a.mgx", 3))
    assert place == Location("a.mgx", 3, 1) and place != Location("a.mgx", 3, 2)
    assert hash(place) == hash(LocationTwin("a.mgx", 3)) == hash(("a.mgx", 3, 1))
    assert place.__eq__(LocationTwin("a.mgx", 3)) is NotImplemented
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'line'"):
        place.line = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'file'"):
        del place.file  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(place)) == place == copy.deepcopy(place)
    kind = OptionalKind(EnumKind(("a", "b"), print_words=True))
    assert repr(Attr("mode", kind, 1)) == (
        "Attr(name='mode', kind=OptionalKind(inner=EnumKind(words=('a', 'b'), print_words=True)), default=1)"
    )
    assert {Attr("x", INT), Attr("x", INT)} == {Attr("x", INT)}


def test_a_record_is_a_dataclass() -> None:
    diagnostic = Diagnostic("error", "bad", Location("f", 1), "x = y")
    _same(diagnostic, DiagnosticTwin("error", "bad", Location("f", 1), "x = y"))
    assert diagnostic == Diagnostic("error", "bad", Location("f", 1), "x = y")
    assert diagnostic != Diagnostic("warning", "bad", Location("f", 1), "x = y")
    with pytest.raises(TypeError, match="unhashable"):
        hash(diagnostic)
    options = OptOptions(input="in.mgx", passes=["dce"])
    assert options == OptOptions("in.mgx", passes=["dce"]) and options.verify_each
    assert repr(options).startswith("OptOptions(input='in.mgx', output=None, lossless=False,")
    assert copy.copy(options) == options
