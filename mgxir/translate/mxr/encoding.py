"""The two encodings of a value tree: msgpack (`.mxr`, MIGraphX's `save`) and JSON (`--json`).

msgpack as MIGraphX's msgpack-c writer: objects as maps in insertion order, an empty object as an
empty array, binary data as an array of BIN chunks of at most 2**32-2 bytes, doubles that hold an
integer as integers. JSON as nlohmann's `dump()`: keys sorted, no spaces, binary data as
`{"bytes": [...]}`, an empty object as `{}`.
"""

from __future__ import annotations

import json
import math
from typing import Any

import msgpack

from mgxir.translate.mxr.values import EMPTY_OBJECT, Binary, Double

_CHUNK = 2**32 - 2  # msgpack_size_limit in MIGraphX's msgpack.cpp
_INT_RANGE = (-(2**63), 2**64 - 1)


def _msgpack_default(x: Any) -> Any:
    if isinstance(x, Double):
        if x.is_integer() and _INT_RANGE[0] <= x <= _INT_RANGE[1]:
            return int(x)
        return float(x)
    if isinstance(x, Binary):
        if not x:
            return [b""]
        return [bytes(x[i : i + _CHUNK]) for i in range(0, len(x), _CHUNK)]
    if x is EMPTY_OBJECT:
        return []
    raise TypeError(f"cannot encode {type(x).__name__} in msgpack")


def to_msgpack(value: Any) -> bytes:
    # strict_types hands Double and Binary (subclasses of float and bytes) to the default hook
    return msgpack.packb(value, default=_msgpack_default, use_bin_type=True, strict_types=True)


def from_msgpack(data: bytes) -> Any:
    """Raises ValueError on data that is not one complete msgpack document."""
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True)
    except msgpack.ExtraData:
        raise ValueError("data after the end of the msgpack document") from None
    except (msgpack.UnpackException, ValueError, TypeError) as e:
        raise ValueError(f"not valid msgpack ({type(e).__name__}: {e})") from None


def _json_default(x: Any) -> Any:
    if isinstance(x, Binary):
        return {"bytes": list(x)}
    if x is EMPTY_OBJECT:
        return {}
    raise TypeError(f"cannot encode {type(x).__name__} in JSON")


def to_json(value: Any) -> str:
    try:
        return json.dumps(
            value, default=_json_default, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except ValueError:
        return json.dumps(
            _without_nan(value),
            default=_json_default,
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )


def _without_nan(value: Any) -> Any:
    """nlohmann writes NaN and infinities as null; Python's json would write invalid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _without_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nan(v) for v in value]
    return value


def from_json(text: str) -> Any:
    """Raises ValueError (json.JSONDecodeError) with the line and column of a syntax error."""
    return json.loads(text)
