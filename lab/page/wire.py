"""JSON as the worker sends it to the page, its long lists of floats as the doubles themselves.

Printing a float is the dearest thing JSON does under Pyodide, about ten times
an int's cost, and a new setup's answer prints thousands: the charts' columns
and the film's. So `dumps` writes a list of `PACKED_AT` or more floats (None
among them) as `{"f64": text}`: the base64 of its
values as little-endian IEEE doubles, None as NaN (a gap in a chart, as the
page already draws a null). `static/wire.mjs` reads it back into the same
numbers, and `loads` here does (for the tests). Dicts are walked; a list's
items are not, so a list of lists goes as it is.
"""

import base64
import json
import math
import sys
from array import array
from typing import Any

__all__ = ["PACKED_AT", "dumps", "loads", "packed"]

PACKED_AT = 16  # a shorter list goes as JSON numbers: its packing would cost more than it saves

_dumps = json.JSONEncoder(separators=(",", ":")).encode  # compact, as the worker sends every answer


def dumps(value: Any) -> str:
    """`value` as compact JSON, its long float lists packed."""
    return _dumps(packed(value))


def packed(value: Any) -> Any:
    """`value` with every long list of floats in it (in dicts, at any depth) as `{"f64": base64}`."""
    if type(value) is dict:
        return {k: packed(v) for k, v in value.items()}
    if type(value) is list and len(value) >= PACKED_AT:
        text = _doubles(value)
        if text is not None:
            return {"f64": text}
    return value


def _doubles(values: list) -> str | None:
    """The base64 of `values` as little-endian doubles (None as NaN), if they are floats and None only, with a
    float among them; else None (an int, a bool or anything else goes as JSON writes it)."""
    kinds = set(map(type, values))
    if float not in kinds or not kinds <= _FLOATS:
        return None
    doubles = array("d", [math.nan if v is None else v for v in values] if type(None) in kinds else values)
    if sys.byteorder == "big":
        doubles.byteswap()
    return base64.b64encode(doubles.tobytes()).decode("ascii")


_FLOATS = frozenset((float, type(None)))


def loads(text: str) -> Any:
    """`json.loads(text)`, every packed list read back as floats (NaN where `dumps` was given None)."""
    return json.loads(text, object_hook=_unpacked)


def _unpacked(obj: dict) -> Any:
    if len(obj) == 1 and type(obj.get("f64")) is str:
        doubles = array("d", base64.b64decode(obj["f64"]))
        if sys.byteorder == "big":
            doubles.byteswap()
        return doubles.tolist()
    return obj
