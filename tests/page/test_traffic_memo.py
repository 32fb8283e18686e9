"""The page remembers the synthetic traffic by `model.traffic_key`: a fleet or router change reuses it, and a
run from remembered traffic is the run `simulate` makes."""

import pytest
from helpers import another_value

import lab.page.view as view
from lab.page.store import STORE
from model import KEYS, Scenario, TooManyRequests, generate, simulate, traffic_key

LIMIT = view.PAGE_BUDGET


@pytest.mark.parametrize("text", [{}, {"dynamic_text": "top", "events": "burst@30+20x2,timestamp@90"}],
                         ids=["default", "events"])
def test_a_key_left_out_of_the_traffic_key_never_changes_the_traffic(text):
    base = Scenario().with_text(text)
    traffic = generate(base, LIMIT)
    moved, kept = set(), 0
    for key in KEYS:
        changed = another_value(base, key)
        if changed is None:
            continue
        if traffic_key(changed) != traffic_key(base):
            moved.add(key)
            continue
        try:
            assert generate(changed, LIMIT) == traffic, f"the traffic reads {key}, which traffic_key leaves out"
        except TooManyRequests:
            pytest.fail(f"the traffic's size reads {key}, which traffic_key leaves out")
        kept += 1
    assert {"seed", "duration_s", "traffic.session_rate", "events"} <= moved
    assert not any(key.startswith(("fleet.", "router.", "hardware.")) for key in moved)
    assert kept > 50  # the fleet, router, hardware and explainer keys


def test_remembered_traffic_is_generated_traffic_and_any_other_key_or_limit_misses_it():
    STORE.traffic.clear()
    four = Scenario()
    first = view.traffic(four, LIMIT)
    assert first == tuple(generate(four, LIMIT))
    assert view.traffic(four.with_text({"fleet.replicas": "6", "router.kind": "cache_aware"}), LIMIT) is first
    other = four.with_text({"seed": "2"})
    second = view.traffic(other, LIMIT)
    assert second == tuple(generate(other, LIMIT)) and second != first
    with pytest.raises(TooManyRequests):  # the same traffic under a smaller limit is not the remembered one
        view.traffic(four, 100)
    assert view.traffic(four, LIMIT) is first
    assert len(STORE.traffic) == STORE.TRAFFIC_KEPT


def test_a_run_from_remembered_traffic_is_the_run_simulate_makes_and_leaves_the_traffic_as_it_was():
    STORE.traffic.clear()
    STORE.runs.clear()
    evicting = {"fleet.memory_gb": "2", "router.kind": "cache_aware"}
    for text in ({}, {"fleet.replicas": "6"}, {**evicting, "fleet.replicas": "3"}, {**evicting, "fleet.fetch": "rdma"}):
        scenario = Scenario().with_text(text)
        assert view.run(scenario) == simulate(scenario, limit=LIMIT)
    assert len(STORE.traffic) == 1  # one traffic served all four runs
    [kept] = STORE.traffic.values()
    assert kept == tuple(generate(Scenario(), LIMIT))


def test_serving_mode_and_looped_sources_make_their_own_requests():
    STORE.traffic.clear()
    STORE.runs.clear()
    for text in ({"fleet.decode": "true"}, {"traffic.kind": "agent"}, {"traffic.kind": "closed"}):
        scenario = Scenario().with_text(text)
        assert view.run(scenario) == simulate(scenario, limit=view.budget(scenario))
    assert not STORE.traffic
