"""Links built to freeze or flood the lab are read in bounded work, with a notice, and never run a script."""

import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.page.urlstate import MAX_HASH, MAX_NOTICES, read_hash
from lab.page.view import PAGE_BUDGET, handle
from model import KEYS, Scenario, simulate

# The links a probe found: each once ran hundreds of thousands of requests (or ran out of memory) per change.
FREEZING = {
    "eight doublings": "events=" + ",".join(["burst@0+179x2"] * 8),
    "two x20 bursts": "events=burst@0+179x20,burst@0+179x20",
    "twelve doublings": "events=" + ",".join(["burst@0+179x2"] * 12),
    "24 x1.5 bursts": "events=" + ",".join(["burst@0+179x1.5"] * 24),
}


@pytest.mark.parametrize("name", sorted(FREEZING))
def test_a_freezing_link_is_shown_at_the_labs_size_with_a_notice(name):
    started = time.perf_counter()
    view = handle({"hash": FREEZING[name]})
    assert time.perf_counter() - started < 10  # bounded by the request count, not by the link (generous for CI)
    assert view["summary"]["requests"] <= PAGE_BUDGET
    assert any("more than 40,000 requests" in n for n in view["notices"])
    assert "burst" not in view["hash"]  # what the page shows is what its URL says
    assert view["summary"]["requests"] == simulate(Scenario()).requests  # the lab's size, bursts dropped


def test_a_setup_under_the_budget_is_left_alone_even_with_bursts():
    view = handle({"hash": "events=burst@60+30x3"})
    assert view["notices"] == [] and "burst@60+30x3" in view["hash"]


def test_a_huge_hash_is_not_read_at_all():
    text = "fleet.replicas=3&" + "x=1&" * MAX_HASH
    state = read_hash(text)
    assert state.scenario == Scenario() and len(state.notices) == 1 and "characters long" in state.notices[0]


def test_notices_are_capped_and_say_how_many_were_dropped():
    text = "&".join(f"nope{i}=1" for i in range(500))
    notices = read_hash(text).notices
    assert len(notices) == MAX_NOTICES
    assert "489 more notices" in notices[-1]


def test_a_key_given_many_times_counts_once_by_its_last_value():
    state = read_hash("&".join(["fleet.replicas=2"] * 400 + ["fleet.replicas=5"]))
    assert state.scenario.fleet.replicas == 5 and state.notices == ()


def test_only_the_first_events_of_a_long_list_are_tried():
    state = read_hash("events=" + ",".join(f"timestamp@{i % 170}" for i in range(500)))
    assert len(state.scenario.events) == 24
    assert any("500 events" in n for n in state.notices)


TAGS = re.compile(r"<(?!/?(p|li|span|button|ol|ul|div|h2|h3|strong|svg|rect|path|table|caption|thead|tbody|tr|th|td|code|details|summary|em|a)\b)", re.I)
PIECES = st.sampled_from([*KEYS, "mission", "unlock", "v", "<script>", "<img src=x onerror=alert(1)>", "%3Cb%3E",
                          "&", "=", "#", "%", "%00", "burst@0+179x20", "timestamp@1", "events", ",", "+", "x"])


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=24).map("".join))
def test_any_hash_gives_a_page_within_budget_and_no_markup_of_its_own(text):
    view = handle({"hash": text})
    assert view["summary"]["requests"] <= PAGE_BUDGET and len(view["notices"]) <= MAX_NOTICES
    for patch in view["patches"]["dom"].values():
        markup = patch.get("html", "")
        assert not TAGS.search(markup), markup[:200]  # only the page's own tags: whatever the link said is escaped


def test_an_unlimited_memory_in_a_link_is_refused_by_the_page_with_a_notice():
    import json

    view = handle({"hash": "fleet.memory_gb=none&fleet.replicas=3"})
    json.dumps(view, allow_nan=False)  # the worker's JSON.parse cannot read Infinity
    assert "fleet.memory_gb" not in view["hash"] and "fleet.replicas=3" in view["hash"]
    assert any("no unlimited setting" in n for n in view["notices"])


# Links a probe found that the page accepted and then could not show ("That change could not be simulated").
UNSHOWABLE = {
    "a split of 65 GPUs": "fleet.decode=true&fleet.prefill_replicas=33&fleet.decode_replicas=32",
    "serving mode with no memory": "fleet.decode=true&fleet.memory_gb=0",
    "serving mode with too little memory for any request": "fleet.decode=true&fleet.memory_gb=0.25",
    "a split with no memory": "fleet.decode=true&fleet.memory_gb=0&fleet.prefill_replicas=1&fleet.decode_replicas=2",
}


@pytest.mark.parametrize("name", sorted(UNSHOWABLE))
def test_a_link_the_page_accepts_is_one_it_can_show(name):
    import json

    view = handle({"hash": UNSHOWABLE[name]})
    json.dumps(view, allow_nan=False)
    if "33" in UNSHOWABLE[name]:  # more GPUs than the lab has: one of the two is dropped, with a notice
        assert any("64" in n for n in view["notices"]) and "decode_replicas=32" not in view["hash"]
    else:  # nothing could be served: the page says so in words
        assert view["summary"]["requests"] == 0
        assert any("No request" in p.get("text", "") + p.get("html", "") for p in view["patches"]["dom"].values())
