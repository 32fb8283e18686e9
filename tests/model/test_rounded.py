"""`model.metrics.rounded` is `round(x, digits)` to the bit: on the values the lab rounds, near halves and ties,
zeros, negatives, huge numbers and the values that are not numbers."""

import math
import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.metrics import rounded, rounded_all


def same(a: float, b: float) -> bool:
    """Equal to the bit (NaN equal to NaN, 0.0 unequal to -0.0)."""
    return struct.pack("<d", a) == struct.pack("<d", b)


@settings(max_examples=1000, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True), st.integers(0, 9))
def test_any_double_rounds_as_round_does(x, digits):
    assert same(rounded(x, digits), round(x, digits))


@pytest.mark.parametrize("digits", range(10))
def test_values_at_and_beside_every_half_round_as_round_does(digits):
    """Decimal halves (k + 0.5) / 10**digits and the doubles a few places either side of them: the ties and
    near-ties where a product in floating point could land on the wrong side."""
    rng = random.Random(digits)
    for _ in range(5_000):
        k = rng.randrange(0, 10 ** rng.randrange(1, 12))
        half = (k + 0.5) / 10 ** digits
        for x in (half, *(math.nextafter(half, math.inf if j > 0 else 0.0) for j in (1, -1)),
                  *(half + j * math.ulp(half) for j in (-3, -2, 2, 3))):
            assert same(rounded(x, digits), round(x, digits)), (x, digits)


@pytest.mark.parametrize("digits", [1, 3, 4, 6])
def test_the_lab_s_times_and_milliseconds_round_as_round_does(digits):
    """Seconds of a run (arrivals, prefill starts) and milliseconds, as the lab rounds them, from random draws."""
    rng = random.Random(7)
    for _ in range(50_000):
        x = rng.expovariate(1.0) * 10 ** rng.randrange(-3, 6)
        assert same(rounded(x, digits), round(x, digits)), (x, digits)
        y = rng.randrange(0, 10 ** 8) / 10 ** digits  # a value already on the grid, as a record's are
        assert same(rounded(y, digits), round(y, digits)), (y, digits)


def test_zeros_negatives_and_the_largest_values_go_to_round():
    for x in (0.0, -0.0, -1e-9, -2.5, -123.456789, 4.5e15, 1e300, 5e-324, math.inf, -math.inf):
        for digits in (0, 3, 6, 9):
            assert same(rounded(x, digits), round(x, digits)), (x, digits)
    assert math.isnan(rounded(math.nan, 4))


def test_an_int_stays_an_int_as_round_keeps_it():
    assert rounded(5, 3) == 5 and type(rounded(5, 3)) is int
    assert type(rounded(True, 2)) is type(round(True, 2))
    assert type(rounded(False, 2)) is type(round(False, 2)) is int


def test_digits_outside_the_table_go_to_round():
    for x in (1234.5678, 0.123456789012, 98765.4321):
        for digits in (-3, -1, 10, 12):
            assert same(rounded(x, digits), round(x, digits)), (x, digits)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6)), max_size=30),
       st.integers(-2, 11))
def test_a_column_rounds_as_round_does_value_by_value(values, digits):
    got = rounded_all(values, digits)
    assert len(got) == len(values)
    assert all(same(a, round(x, digits)) and type(a) is type(round(x, digits)) for a, x in zip(got, values))


@pytest.mark.parametrize("digits", [1, 3, 4, 6])
def test_a_column_beside_the_halves_rounds_as_round_does(digits):
    rng = random.Random(digits)
    halves = [(rng.randrange(0, 10 ** 9) + 0.5) / 10 ** digits for _ in range(2_000)]
    column = [y for h in halves for y in (h, math.nextafter(h, 0.0), math.nextafter(h, math.inf), 0.0, -h)]
    assert all(same(a, round(x, digits)) for a, x in zip(rounded_all(column, digits), column))
