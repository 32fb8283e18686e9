"""Answers computed ahead of time by helper workers (static/scheduler.mjs, the bridge's `ahead`), and a change
made before the simulator is ready.

Until a person focuses, changes or presses anything, the helpers compute one step either way of the
first sliders shown; while the
Replicas slider has focus, the setups next to it. Reaching one is a remembered answer, which must be the answer a fresh page computes for the same setup. The scheduler's decisions are
checked by the order of its events (`window.prefixLab.ahead.log`), never by time. Each test opens its own
page in a guarded context: nothing may be requested from another origin, helpers included.
"""

import json

import pytest
from conftest import READY, expected_metrics, metrics, open_lab

pytestmark = [pytest.mark.browser, pytest.mark.helpers]  # a visitor's helper workers (tests/conftest.py)

REPLICAS = "ctl:fleet.replicas"
HELPERS_READY = "window.prefixLab.ahead && window.prefixLab.ahead.log.some((e) => e.event === 'ready')"


def replicas(page):
    handle = page.get_by_role("slider", name="Replicas", exact=True)
    assert handle.count() == 1, "no single slider named Replicas"
    return handle


def value_of(handle):
    return int(float(handle.get_attribute("aria-valuenow")))


def finished_for(value, since=None):
    """A JS condition: a helper has finished the settled request that moves Replicas to `value` (from a page
    whose hash holds `since`, when given: an answer is remembered by the request, hash included)."""
    where = f" && ('&' + JSON.parse(e.key)[0] + '&').includes({json.dumps('&' + since + '&')})" if since else ""
    return (f"window.prefixLab.ahead.log.some((e) => e.event === 'finished' && "
            f"JSON.parse(e.key)[1]['{REPLICAS}'] === {value} && JSON.parse(e.key)[2] === false{where})")


def test_a_value_computed_ahead_is_shown_as_remembered_and_equals_a_fresh_pages_answer(page, server, guarded):
    _, guard, watch = guarded
    open_lab(page, server)
    page.wait_for_function(HELPERS_READY, timeout=60_000)
    handle = replicas(page)
    start = value_of(handle)
    # Before anything has focus, one step either way of the first sliders shown, Replicas among them ...
    page.wait_for_function(f"{finished_for(start + 1)} && {finished_for(start - 1)}", timeout=60_000)
    handle.focus()
    page.wait_for_function(finished_for(start + 2), timeout=60_000)  # ... and two steps once it has focus
    for step in (1, 2):
        if step == 2:  # planned again from the state reached: the helper answers it from there
            page.wait_for_function(finished_for(start + 2, since=f"fleet.replicas={start + 1}"), timeout=60_000)
        handle.press("ArrowRight")
        page.wait_for_function(f"({READY}) && location.hash.includes('fleet.replicas={start + step}')",
                               timeout=30_000)
        assert page.evaluate("window.prefixLab.timings.changes.at(-1).remembered") is True, \
            f"step {step} was not answered from what the helper computed"
    ahead = metrics(page)
    assert ahead == expected_metrics(f"fleet.replicas={start + 2}")

    fresh = watch(page.context.new_page())
    open_lab(fresh, server, fragment=page.evaluate("location.hash.slice(1)"))
    assert metrics(fresh) == ahead
    snapshots = [url for url in guard.seen if "/snapshot." in url]
    assert len(snapshots) >= 3, "the helper was not restored from the snapshot"  # primary, helper, fresh page
    assert not guard.foreign


def test_asked_for_changes_go_first_and_queued_jobs_no_longer_usable_are_dropped(page, server):
    open_lab(page, server)
    page.wait_for_function(HELPERS_READY, timeout=60_000)
    handle = replicas(page)
    handle.focus()
    start = value_of(handle)
    for _ in range(3):  # faster than the helper: its queued jobs for the old states can no longer be used
        handle.press("ArrowRight")
    # The steps may all be answered from what the helpers computed (on a loaded machine a key press can
    # take longer than a helper's answer); no plan reaches the slider's end, so that one is asked for.
    end = int(float(handle.get_attribute("aria-valuemax")))
    assert end > start + 3 + 2, "the slider's end is within a plan's reach: pick a slider with more steps"
    handle.press("End")
    page.wait_for_function(f"({READY}) && location.hash.includes('fleet.replicas={end}')", timeout=30_000)
    page.wait_for_function("window.prefixLab.ahead.log.some((e) => e.event === 'start')", timeout=30_000)
    log = page.evaluate("window.prefixLab.ahead.log")

    asked = [i for i, e in enumerate(log) if e["event"] == "asked"]
    assert asked, "no change went to the primary worker"
    for i in asked:  # what the primary computes is never started again on a helper
        assert not any(e["event"] == "start" and e["key"] == log[i]["key"] for e in log[i + 1:])
    # (the first plan's jobs for the other sliders shown are dropped at the focus: not what is checked here)
    dropped = [e for e in log if e["event"] == "drop" and REPLICAS in json.loads(e["key"])[1]]
    assert dropped, "no queued job for the Replicas slider was dropped"
    plan = None
    for i, e in enumerate(log):  # a job is started only while the latest plan holds it
        if e["event"] == "plan":
            plan = set(e["keys"])
        elif e["event"] == "start":
            assert plan is not None and e["key"] in plan, (i, e)
        elif e["event"] == "drop" and plan is not None:
            plan.discard(e["key"])
    planned_states = {json.loads(key)[0] for e in log if e["event"] == "plan" for key in e["keys"]}
    assert len(planned_states) >= 2, "the helpers were not planned again from the states the steps reached"


def test_the_controls_work_before_the_simulator_is_ready_and_the_change_is_answered_once_it_is(page, server):
    held = []
    page.context.route("**/snapshot.*.bin", lambda route: held.append(route))  # readiness waits for it
    page.goto(server["url"])
    page.wait_for_function("document.documentElement.dataset.lab === 'booting'")
    handle = replicas(page)
    start = value_of(handle)
    handle.focus()
    handle.press("ArrowRight")
    status = page.locator("#status")
    assert "Your change is queued" in status.inner_text()
    assert page.evaluate("document.documentElement.dataset.lab") == "booting"
    assert held, "the snapshot was not held"
    page.context.unroute("**/snapshot.*.bin")
    for route in held:
        route.fallback()  # on to the guard, which lets the server's origin through
    page.wait_for_function(f"({READY}) && location.hash.includes('fleet.replicas={start + 1}')", timeout=60_000)
    assert metrics(page) == expected_metrics(f"fleet.replicas={start + 1}")
    assert value_of(handle) == start + 1
