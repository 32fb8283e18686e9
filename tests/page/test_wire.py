"""The worker's JSON (lab/page/wire.py): long float lists go as packed doubles, and come back as the same numbers,
in Python (`wire.loads`) and in the page (static/wire.mjs under Node)."""

import json
import math
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.page import wire

WIRE = Path(__file__).resolve().parents[2] / "static" / "wire.mjs"
NODE = shutil.which("node")


def bits(values: list) -> list:
    """Each value's 64 bits (None as NaN's): equal lists of these are the same numbers, -0.0 and all."""
    return [struct.pack("<d", math.nan if v is None else v) for v in values]


floats = st.floats(allow_nan=True, allow_infinity=True)
columns = st.lists(st.one_of(floats, st.none()), min_size=wire.PACKED_AT, max_size=64).filter(
    lambda c: any(v is not None for v in c) and isinstance(next(v for v in c if v is not None), float))


@given(columns)
def test_a_long_list_of_floats_is_packed_and_read_back_to_the_bit(column):
    text = wire.dumps({"data": {"y": column}})
    assert '"f64"' in text
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in the JSON: JSON.parse would refuse it"))
    back = wire.loads(text)["data"]["y"]
    assert bits(back) == bits(column)


def test_what_is_not_a_long_list_of_floats_goes_as_plain_json():
    value = {"short": [0.5] * (wire.PACKED_AT - 1), "ints": list(range(40)), "words": ["a"] * 40,
             "nones": [None] * 40, "nested": [[0.5] * 40], "flags": [True] + [0.5] * 40, "mixed": [0.5] * 20 + ["a"],
             "a flag": [0.5] * 20 + [True], "an int": [0.5] * 20 + [2**60], "a huge int": [0.5] * 20 + [10**400],
             "scalar": 0.25, "deep": {"deeper": {"x": [1.5] * 20}}}
    packed = wire.packed(value)
    assert {k: v for k, v in packed.items() if k != "deep"} == {k: v for k, v in value.items() if k != "deep"}
    assert set(packed["deep"]["deeper"]["x"]) == {"f64"}
    assert wire.loads(wire.dumps(value)) == value


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_the_page_reads_a_packed_list_as_the_same_numbers_python_packed():
    columns = [[0.1 * k for k in range(50)], [-0.0, 5e-324, 1.7976931348623157e308, math.inf, -math.inf] * 4,
               [None, 2.5] * 10, [1 / 3] * 16]
    text = wire.dumps({f"c{i}": c for i, c in enumerate(columns)})
    script = (f"import {{ unpacked }} from {json.dumps(WIRE.as_uri())};\n"
              f"const got = JSON.parse({json.dumps(text)});\n"
              "const out = Object.values(got).map((c) => Array.from(new Uint8Array(new Float64Array(unpacked(c)).buffer)));\n"
              "console.log(JSON.stringify([out, unpacked({ x: 1 }), unpacked(null), unpacked([1, 2])]));")
    done = subprocess.run([NODE, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out, other, none, plain = json.loads(done.stdout)
    assert [bytes(b) for b in out] == [b"".join(bits(c)) for c in columns]
    assert (other, none, plain) == ({"x": 1}, None, [1, 2])  # anything else as it is
