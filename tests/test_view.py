"""The page's view code in CPython: URL state, controls, actions, missions panel."""

import json

from lab.urlstate import read_hash, write_hash
from lab.view import handle, handle_json
from model import Scenario, simulate


def test_hash_round_trip_writes_only_what_differs_from_the_defaults():
    s = Scenario().with_text({"fleet.replicas": "8", "events": "surge@60+30,timestamp@90"})
    text = write_hash(s, {"mission": "burst"})
    assert text == "fleet.replicas=8&events=surge@60+30,timestamp@90&mission=burst"
    state = read_hash("#" + text)
    assert state.scenario == s and state.page == {"mission": "burst"} and state.notices == ()
    assert write_hash(Scenario()) == ""


def test_bad_pairs_fall_back_one_by_one():
    state = read_hash("fleet.replicas=0&router.kind=cache_aware&nope=1&events=burst@10+5x2,storm@3&fleet.cache")
    assert state.scenario.fleet.replicas == 4 and state.scenario.router.kind == "cache_aware"
    assert [e.kind for e in state.scenario.events] == ["burst"]
    text = " ".join(state.notices)
    assert "fleet.replicas=0" in text and "Using 4" in text and "'nope'" in text and "storm@3" in text
    assert "Ignored 'fleet.cache'" in text


def test_percent_encoded_values_are_read():
    assert read_hash("events=burst%4010%2B5x2").scenario.events[0].at_s == 10.0


def test_view_headline_is_the_cli_result():
    view = handle({"hash": "fleet.replicas=3"})
    expected = simulate(Scenario().with_text({"fleet.replicas": "3"})).to_dict()
    for key in ("hit_rate", "ttft_p50_ms", "ttft_p99_ms", "throughput_rps"):
        assert view["patches"]["dom"][f'[data-metric="{key}"]']["attrs"]["data-value"] == json.dumps(expected[key])


def test_controls_map_widget_values_to_keys():
    view = handle({"hash": "", "controls": {"ctl:dynamic_text": 2, "ctl:router.kind": "cache_aware",
                                            "ctl:fleet.cache": False, "ctl:router.spill_off": True,
                                            "ctl:fleet.replicas": 6}})
    assert view["hash"] == ("dynamic_text=bottom&fleet.replicas=6&fleet.cache=false&router.kind=cache_aware"
                            "&router.spill_threshold_s=off")
    assert view["patches"]["bokeh"]["ctl:fleet.memory_gb"]["disabled"] is True  # no cache, no memory to set


def test_bad_control_values_are_refused_with_a_notice_and_the_rest_applies():
    view = handle({"hash": "", "controls": {"ctl:fleet.replicas": 900, "ctl:router.kind": "psychic",
                                            "ctl:dynamic_text": 7, "ctl:seed": 5}})
    assert view["hash"] == "seed=5"
    assert any("fleet.replicas" in n for n in view["notices"])


def test_event_actions_add_and_remove():
    view = handle({"hash": "", "action": {"type": "add_event", "kind": "burst",
                                          "inputs": {"evt:at": 30, "evt:duration": 20, "evt:factor": 4}}})
    assert view["hash"] == "events=burst@30+20x4"
    assert 'data-action="remove_event" data-index="0"' in view["patches"]["dom"]["#events-list"]["html"]
    view = handle({"hash": view["hash"], "action": {"type": "add_event", "kind": "timestamp",
                                                    "inputs": {"evt:at": 999}}})
    assert view["hash"] == "events=burst@30+20x4" and "Could not add that event" in view["notices"][0]
    view = handle({"hash": view["hash"], "action": {"type": "remove_event", "index": 0}})
    assert view["hash"] == ""


def test_json_entry_point_round_trips():
    out = json.loads(handle_json(json.dumps({"hash": "fleet.replicas=2"})))
    assert out["hash"] == "fleet.replicas=2" and out["summary"]["replica_count"] == 2


def test_missions_unlock_in_order_and_progress_counts_the_best_stars():
    view = handle({"hash": "mission=timestamp"})
    assert "mission" not in view["hash"] and "unlocks when" in view["notices"][0]
    view = handle({"hash": "mission=cache-on", "action": {"type": "load_mission"}})
    assert view["hash"] == "fleet.cache=false&mission=cache-on" and view["progress"] == {}
    view = handle({"hash": view["hash"], "controls": {"ctl:fleet.cache": True}, "progress": view["progress"]})
    assert view["progress"] == {"cache-on": 1}
    html = view["patches"]["dom"]["#missions"]["html"]
    assert 'data-mission="timestamp" aria-pressed="false"' in html  # now unlocked
    assert 'data-passed="true" data-stars="1"' in html
    worse = handle({"hash": "fleet.cache=false&mission=cache-on", "progress": {"cache-on": 3}})
    assert worse["progress"] == {"cache-on": 3}  # a worse setup never takes stars away


def test_a_mission_disables_the_controls_it_does_not_allow():
    view = handle({"hash": "mission=cache-on&fleet.cache=false"})
    bokeh = view["patches"]["bokeh"]
    assert bokeh["ctl:fleet.cache"]["disabled"] is False and bokeh["ctl:fleet.replicas"]["disabled"] is False
    assert bokeh["ctl:router.kind"]["disabled"] is True and bokeh["act:burst"]["disabled"] is True
    free = handle({"hash": "fleet.cache=false"})["patches"]["bokeh"]
    assert free["ctl:router.kind"]["disabled"] is False and free["act:burst"]["disabled"] is False


def test_facilitator_flag_unlocks_everything_and_bad_progress_is_dropped():
    view = handle({"hash": "unlock=all&mission=monday", "progress": {"monday": 7, "nope": 2, "burst": True}})
    assert view["progress"] == {} and "mission=monday" in view["hash"]
    assert "locked" not in view["patches"]["dom"]["#missions"]["html"]
    view = handle({"hash": "", "action": {"type": "reset_progress"}, "progress": {"cache-on": 3}})
    assert view["progress"] == {}


def test_a_setup_too_big_for_the_page_falls_back_to_the_default_size():
    view = handle({"hash": "duration_s=7200&traffic.session_rate=50&fleet.replicas=8&events=burst@60+30x2,timestamp@4000"})
    assert "more than the page runs" in view["notices"][0]
    assert view["hash"] == "fleet.replicas=8&events=burst@60+30x2"
    assert view["summary"]["requests"] < 2000
