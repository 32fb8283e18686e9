"""Every plotted value of the fleet's charts is inside its axis: at every mission's start and three-star setup,
with the mission's own axes (locked to its broken start) and with a pinned baseline (which locks them too)."""

import pytest
from test_missions import SOLUTIONS

from lab.common.tracemission import mission_sources
from lab.page.urlstate import read_hash, write_hash
from lab.page.view import handle
from missions import MISSIONS

# y range -> the sources and columns drawn on it; a stacked area's top is the sum of its columns.
ON_AXIS = {
    "yr:ttft": {"src:ttft": (("p50",), ("p99",)), "src:ttft_base": (("p50",), ("p99",))},
    "yr:memory": {"src:memory": (("running", "cached"), ("pinned",), ("evicted",)), "src:memory_base": (("total",),)},
    "yr:dist": {"src:dist": (("share",),), "src:dist_base": (("share",),)},
}
FIXED = {"src:hit": (("hit",), 100.0), "src:hit_base": (("hit",), 100.0)}  # drawn on a 0-100% axis
FILES = mission_sources()


def off_chart(bokeh):
    """Every value drawn above its axis' top, as (source, columns, value, top)."""
    out = []
    for axis, sources in ON_AXIS.items():
        top = bokeh[axis]["end"]
        for name, stacks in sources.items():
            data = bokeh[name]["data"]
            for columns in stacks:
                for values in zip(*(data[c] for c in columns), strict=True):
                    if any(v is None for v in values):
                        continue
                    if sum(values) > top:
                        out.append((name, columns, sum(values), top))
    for name, (columns, top) in FIXED.items():
        out += [(name, columns, v, top) for v in bokeh[name]["data"][columns[0]] if v is not None and v > top]
    return out


def view(scenario, page):
    return handle({"hash": write_hash(scenario, {**page, "unlock": "all"})}, FILES)


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_every_value_is_inside_its_axis_at_the_start_and_the_three_star_setup(mission):
    for changes in ({}, *SOLUTIONS[mission.id]):
        answer = view(mission.start.with_text(changes), {"mission": mission.id})
        assert answer["fetch"] is None or answer["fetch"]["key"] == "sweeps", answer["fetch"]
        assert not off_chart(answer["patches"]["bokeh"]), (mission.id, changes, off_chart(answer["patches"]["bokeh"])[:3])


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_a_pinned_baseline_locks_the_axes_without_cutting_a_value_off(mission):
    pinned = handle({"hash": write_hash(mission.start, {"mission": mission.id, "unlock": "all"}),
                     "action": {"type": "pin"}}, FILES)
    page = dict(read_hash("#" + pinned["hash"]).page)
    assert "base" in page and "axes" in page
    for changes in SOLUTIONS[mission.id]:
        answer = view(mission.start.with_text(changes), page)
        assert not off_chart(answer["patches"]["bokeh"]), (mission.id, changes, off_chart(answer["patches"]["bokeh"])[:3])
