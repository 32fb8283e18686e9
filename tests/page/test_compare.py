"""Compare mode: a pinned baseline travels in the URL, the deltas are the difference of the two runs, the baseline's
lines are drawn behind, and locked axes hold still across a change."""

import lab.page.view as view
from lab.page.compare import AXES, bounds, read_axes
from model import Scenario, simulate


def handle(hash_="", **extra):
    return view.handle({"hash": hash_, **extra})


def deltas(answer):
    html = answer["patches"]["dom"]["#deltas"]["html"]
    return {part.split('data-delta="')[1].split('"')[0]: float(part.split('data-value="')[1].split('"')[0])
            for part in html.split("<span")[1:]}


def test_a_pinned_baseline_survives_a_reload_and_the_deltas_are_the_difference_of_the_runs():
    pinned = handle("fleet.replicas=3", action={"type": "pin"})
    assert "base=fleet.replicas%3D3" in pinned["hash"]
    changed = handle(pinned["hash"], controls={"ctl:router.kind": "cache_aware"})
    reloaded = handle(changed["hash"])  # a reload, or the link shared: only the URL
    assert reloaded["summary"] == changed["summary"] and deltas(reloaded) == deltas(changed)
    now = simulate(Scenario().with_text({"fleet.replicas": "3", "router.kind": "cache_aware"}))
    before = simulate(Scenario().with_text({"fleet.replicas": "3"}))
    got = deltas(reloaded)
    assert got["hit_rate"] == round((now.hit_rate - before.hit_rate) * 100, 6)
    assert got["ttft_p99_ms"] == round(now.ttft_p99_ms - before.ttft_p99_ms, 6) < 0
    assert got["prefill_gpu_s"] == round(now.prefill_gpu_s - before.prefill_gpu_s, 6) < 0
    assert "Against the pinned baseline" in reloaded["patches"]["dom"]["#deltas"]["html"]
    base_line = reloaded["patches"]["bokeh"]["src:ttft_base"]["data"]["p99"]
    assert base_line == list(before.series.ttft_p99_ms) != reloaded["patches"]["bokeh"]["src:ttft"]["data"]["p99"]


def test_locked_axes_stay_fixed_across_a_change_and_free_ones_follow_the_data():
    pinned = handle("fleet.replicas=3", action={"type": "pin"})
    axes = read_axes(pinned["hash"].split("axes=")[1])
    assert set(axes) == set(AXES)
    assert axes == bounds(simulate(Scenario().with_text({"fleet.replicas": "3"})))
    for change in ({"ctl:fleet.replicas": 8}, {"ctl:fleet.cache": False}):
        moved = handle(pinned["hash"], controls=change)
        assert {name: moved["patches"]["bokeh"][f"yr:{name}"]["end"] for name in AXES} == axes
    cleared = handle(pinned["hash"], action={"type": "unpin"})
    assert "base=" not in cleared["hash"] and "axes=" not in cleared["hash"]
    assert cleared["patches"]["dom"]["#deltas"]["hidden"]
    fitted = bounds(simulate(Scenario().with_text({"fleet.replicas": "3"})))  # free again: fitted to the run
    assert {name: cleared["patches"]["bokeh"][f"yr:{name}"]["end"] for name in AXES} == fitted
    locked = handle("", action={"type": "lock_axes"})
    assert "axes=" in locked["hash"] and "base=" not in locked["hash"]
    assert "axes=" not in handle(locked["hash"], action={"type": "free_axes"})["hash"]


def test_a_mission_compares_with_its_broken_start_on_axes_that_hold_still():
    opened = handle("unlock=all", action={"type": "select_mission", "mission": "round-robin"})
    assert "axes=" not in opened["hash"] and "base=" not in opened["hash"]  # links to missions stay as they were
    fixed = handle(opened["hash"], controls={"ctl:router.kind": "cache_aware"})
    tops = {name: fixed["patches"]["bokeh"][f"yr:{name}"]["end"] for name in AXES}
    assert tops == {name: opened["patches"]["bokeh"][f"yr:{name}"]["end"] for name in AXES}
    assert "Against the mission's broken start" in fixed["patches"]["dom"]["#deltas"]["html"]
    assert deltas(fixed)["hit_rate"] > 10


def test_a_baseline_that_does_not_read_is_dropped_with_a_notice():
    answer = handle("fleet.replicas=3&base=fleet.replicas%3Dlots&axes=ttft:500")
    assert answer["hash"] == "fleet.replicas=3"
    assert any("baseline (base=)" in n for n in answer["notices"])
