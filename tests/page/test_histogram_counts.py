"""The TTFT histogram counts per bin, then clamps: the same counts as placing each value on its own."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from lab.page.figures.fleet import remembered_histograms


def placed_one_by_one(ttfts: tuple[float, ...]) -> list[int]:
    lo = math.floor(math.log10(max(min(ttfts), 1.0)) * 10)
    hi = math.floor(math.log10(max(max(ttfts), 1.0)) * 10) + 1
    counts = [0] * (hi - lo)
    for t in ttfts:
        counts[min(hi - lo - 1, max(0, math.floor(math.log10(max(t, 1.0)) * 10) - lo))] += 1
    return counts


EDGES = [10 ** (k / 10) for k in range(60)]  # bin edges themselves, where rounding could part the two ways


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(0.0, 1e6, allow_nan=False), st.sampled_from(EDGES), st.sampled_from([0.5, 1.0])),
                min_size=1, max_size=300))
def test_counts_match_placing_each_value(values):
    ttfts = tuple(values)
    got = remembered_histograms.__wrapped__(ttfts)
    assert got["count"] == placed_one_by_one(ttfts)
    assert sum(got["count"]) == len(ttfts)


def test_a_small_case_by_hand():
    got = remembered_histograms.__wrapped__((0.5, 1.0, 11.0, 12.0, 100.0))
    assert got["left"][0] == 1.0 and got["count"][0] == 2  # below 1 ms counts as 1 ms
    assert got["count"][10] == 2 and got["count"][-1] == 1  # 11 and 12 ms share a bin; 100 ms is the last
