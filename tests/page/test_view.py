"""The page's view code in CPython: URL state, controls, actions, missions panel."""

import ast
import copy
import dataclasses
import json
import re

import panel as pn
import pytest
from helpers import ROOT

from lab.page import missionview
from lab.page.controls import CONTROLS, control_patches
from lab.page.urlstate import read_hash, write_hash
from lab.page.view import PAGE_BUDGET, answer, derive, handle, handle_json, patches, read_state, render, settle, update
from missions import MISSIONS
from model import KEYS, ROUTERS, Scenario, simulate, spec_of


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
                                            "ctl:fleet.cache": False, "ctl:router.spill_threshold_s:off": True,
                                            "ctl:fleet.replicas": 6}})
    assert view["hash"] == ("dynamic_text=bottom&fleet.replicas=6&fleet.cache=false&router.kind=cache_aware"
                            "&router.spill_threshold_s=off")
    assert view["patches"]["bokeh"]["ctl:fleet.memory_gb"]["disabled"] is True  # no cache, no memory to set


def test_bad_control_values_are_refused_with_a_notice_and_the_rest_applies():
    view = handle({"hash": "", "controls": {"ctl:fleet.replicas": 900, "ctl:router.kind": "psychic",
                                            "ctl:dynamic_text": 7, "ctl:seed": 5}})
    assert view["hash"] == "seed=5"
    assert any(n.startswith("Replicas: 900") for n in view["notices"])  # the control's label, not its key


def test_event_actions_add_and_remove():
    view = handle({"hash": "", "action": {"type": "add_event", "kind": "burst",
                                          "inputs": {"evt:at": 30, "evt:duration": 20, "evt:factor": 4}}})
    assert view["hash"] == "events=burst@30+20x4"
    assert 'data-action="remove_event" data-index="0"' in view["patches"]["dom"]["#events-list"]["html"]
    view = handle({"hash": view["hash"], "action": {"type": "add_event", "kind": "timestamp",
                                                    "inputs": {"evt:at": 999}}})
    assert view["hash"] == "events=burst@30+20x4,timestamp@179"  # a start past the end: the last second, said
    assert view["notices"] == ["Start (s) 999 is too high (the run ends at 180 s); used 179."]
    view = handle({"hash": view["hash"], "action": {"type": "remove_event", "index": 1}})
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
    view = handle({"hash": view["hash"], "controls": {"ctl:fleet.cache": True}, "progress": view["progress"],
                   "memo": view["memo"]})  # played from the loaded start: the star counts
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
    view = handle({"hash": "unlock=all&mission=monday", "progress": {"monday": 7, "Bad Id": 2, "burst": True}})
    assert view["progress"] == {} and "mission=monday" in view["hash"]
    assert "locked" not in view["patches"]["dom"]["#missions"]["html"]
    view = handle({"hash": "", "action": {"type": "reset_progress"}, "progress": {"cache-on": 3}})
    assert view["progress"] == {}


def test_a_setup_too_big_for_the_page_falls_back_to_the_default_size():
    view = handle({"hash": "duration_s=7200&traffic.session_rate=50&fleet.replicas=8&events=burst@60+30x2,timestamp@4000"})
    assert "more than the page simulates per change" in view["notices"][0]
    assert view["hash"] == "fleet.replicas=8&events=burst@60+30x2"
    assert view["summary"]["requests"] < 2000



# -- the off switch: declared once, it can be ticked and unticked -------------------------------

OFF = "ctl:router.spill_threshold_s:off"
SLIDER = "ctl:router.spill_threshold_s"


def test_unticking_never_spill_gives_a_threshold_back():
    # The regression: once ticked, unticking sent {off: false}, which the view ignored.
    off = "router.kind=cache_aware&router.spill_threshold_s=off"
    view = handle({"hash": off, "controls": {OFF: False}})
    assert view["hash"] == "router.kind=cache_aware"  # the key's default, 1 s
    bokeh = view["patches"]["bokeh"]
    assert bokeh[OFF] == {"active": False, "disabled": False}
    assert bokeh[SLIDER]["value"] == 1.0 and bokeh[SLIDER]["disabled"] is False
    with_value = handle({"hash": off, "controls": {OFF: False, SLIDER: 0.4}})  # the slider's value, sent with it
    assert with_value["hash"] == "router.kind=cache_aware&router.spill_threshold_s=0.4"


def test_ticking_never_spill_disables_the_slider_and_wins_over_a_value_sent_with_it():
    view = handle({"hash": "router.kind=cache_aware", "controls": {SLIDER: 0.3, OFF: True}})
    assert view["hash"] == "router.kind=cache_aware&router.spill_threshold_s=off"
    bokeh = view["patches"]["bokeh"]
    assert bokeh[OFF] == {"active": True, "disabled": False} and bokeh[SLIDER]["disabled"] is True


def test_the_off_switch_and_its_slider_need_the_cache_aware_router():
    bokeh = handle({"hash": "router.spill_threshold_s=off"})["patches"]["bokeh"]
    assert bokeh[OFF] == {"active": True, "disabled": True} and bokeh[SLIDER]["disabled"] is True
    bokeh = handle({"hash": "router.kind=cache_aware&mission=cache-on"})["patches"]["bokeh"]
    assert bokeh[OFF]["disabled"] is True  # cache-on lets you change the cache and the replicas only


# -- a pure view layer: state -> derived -> patches ------------------------------------------------

REQUEST = {"hash": "fleet.cache=false&mission=cache-on", "progress": {"cache-on": 1, "x-later": 2},
           "controls": {"ctl:fleet.cache": True, "ctl:fleet.replicas": 2},
           "memo": {"played": ["fleet.cache=false&mission=cache-on"]}}  # the page loaded this mission's start


def test_the_steps_change_none_of_their_arguments_and_repeat_exactly():
    state = read_state(REQUEST)
    assert state == read_state(REQUEST)
    updated = update(state, REQUEST)
    assert state == read_state(REQUEST) and update(state, REQUEST) == updated  # the argument is untouched
    settled = settle(updated)
    assert settle(settled) == settled  # settling twice changes nothing more
    derived = derive(settled)
    before = copy.deepcopy((derived.summary, derived.progress))
    first = patches(settled, derived)
    assert patches(settled, derived) == first and answer(settled, derived)["patches"] == first
    assert (derived.summary, derived.progress) == before and derive(settled) == derived
    assert derived.progress == {"cache-on": 3, "x-later": 2} and settled.progress == {"cache-on": 1, "x-later": 2}


def test_the_steps_give_the_same_answers_in_any_order():
    a, b = settle(read_state({"hash": "mission=timestamp"})), settle(update(read_state(REQUEST), REQUEST))
    first = (derive(a), derive(b))
    again = tuple(reversed((derive(b), derive(a))))
    assert first == again
    assert answer(b, first[1]) == handle(REQUEST) and answer(a, first[0]) == handle({"hash": "mission=timestamp"})


def test_the_state_cannot_be_changed_in_place():
    state = read_state(REQUEST)
    with pytest.raises(TypeError):
        state.page["mission"] = "monday"  # type: ignore[index]
    with pytest.raises(TypeError):
        state.progress["monday"] = 3  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.notices = ()  # type: ignore[misc]


def test_a_locked_mission_is_dropped_once_with_one_notice():
    state = settle(read_state({"hash": "mission=round-robin", "progress": {"cache-on": 2}}))
    assert "mission" not in state.page and len(state.notices) == 1 and state.notices[0].startswith(
        "'Round robin spreads the memory thin' unlocks when you pass 'A timestamp at the top'.")
    assert derive(state).mission is None


def test_render_is_what_the_build_bakes_in():
    view = render(Scenario())
    assert view["hash"] == "" and view["notices"] == [] and view["progress"] == {}
    once = {"src:locality"}, {"#cap-locality"}  # a figure nothing changes: drawn at build time only
    assert set(view["patches"]["bokeh"]) - set(handle({})["patches"]["bokeh"]) == once[0]
    assert set(view["patches"]["dom"]) - set(handle({})["patches"]["dom"]) == once[1]
    for part, names in zip(("bokeh", "dom"), once):
        for name in names:
            del view["patches"][part][name]
    assert view == handle({})


# -- each control's range and behaviour is declared once ------------------------------------------

def test_control_ranges_are_the_keys_page_ranges():
    bokeh = control_patches(Scenario())
    for c in CONTROLS:
        if c.widget == "slider":
            start, end, _ = spec_of(c.key).page
            assert (bokeh[c.name]["start"], bokeh[c.name]["end"]) == (start, end), c.key
    wide = control_patches(Scenario().with_text({"fleet.memory_gb": "64"}))["ctl:fleet.memory_gb"]
    assert wide["end"] == 64 and wide["value"] == 64  # a link may go past the slider: it stretches to show it


def test_the_layout_builds_its_widgets_from_the_declarations():
    from lab.site.layout import controls

    widgets = {w.tags[0]: w for w in controls().select(pn.widgets.Widget)}
    for c in CONTROLS:
        w = widgets[c.name]
        if c.widget in ("slider", "number"):
            assert (w.start, w.end, w.step) == spec_of(c.key).page, c.key
        if c.widget in ("select", "buttons"):
            assert tuple(w.options.values()) == spec_of(c.key).choices
        if c.off_label:
            assert widgets[c.off_name].name == c.off_label
    assert tuple(widgets["ctl:router.kind"].options) == tuple(r.label for r in ROUTERS.values())


def numeric_keywords(path):
    tree = ast.parse(path.read_text())
    return [(node.arg, node.value.value, node.value.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.keyword) and node.arg in ("start", "end", "step", "low", "high")
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, (int, float))]


@pytest.mark.parametrize("name", ["page/view.py", "site/layout.py", "page/controls.py"])
def test_no_range_literal_is_left_in_the_page_code(name):
    assert numeric_keywords(ROOT / "lab" / name) == []


def test_the_bridge_names_no_control():
    bridge = (ROOT / "static" / "bridge.js").read_text()
    named = [k for k in KEYS if k in bridge] + re.findall(r"(?:ctl|evt|act):[a-z]", bridge)
    named += [word for word in ("spill", "cache_aware", "never") if word in bridge.lower()]
    assert named == []


# -- missions progress: by id, with explicit prerequisites ----------------------------------------

def test_progress_keeps_ids_it_does_not_know_but_shows_none_of_them():
    view = handle({"hash": "fleet.cache=false&mission=cache-on", "progress": {"cache-on": 1, "mission-of-2027": 2},
                   "memo": {"played": ["fleet.cache=false&mission=cache-on"]},
                   "controls": {"ctl:fleet.cache": True, "ctl:fleet.replicas": 2}})
    assert view["progress"] == {"cache-on": 3, "mission-of-2027": 2}
    assert "mission-of-2027" not in json.dumps(view["patches"])


def test_reordering_or_adding_missions_loses_no_stars_and_unlocks_by_prerequisite(monkeypatch):
    progress = {"cache-on": 3, "timestamp": 1}
    before = handle({"hash": "", "progress": progress})
    new = dataclasses.replace(MISSIONS[0], id="a-new-one", title="A new mission", requires=("timestamp",))
    monkeypatch.setattr(missionview, "MISSIONS", (*reversed(MISSIONS), new))
    after = handle({"hash": "", "progress": progress})
    assert after["progress"] == before["progress"] == progress
    html = after["patches"]["dom"]["#missions"]["html"]
    assert html.index('data-mission="monday"') < html.index('data-mission="cache-on"')  # shown in the new order
    open_ids = set(re.findall(r'data-action="select_mission" data-mission="([a-z-]+)"', html))
    assert open_ids == {"cache-on", "timestamp", "round-robin", "a-new-one"}
    assert 'data-stars="3">' in html.split('data-mission="cache-on"')[1].split("</li>")[0]
    assert handle({"hash": "mission=a-new-one", "progress": progress})["hash"] == "mission=a-new-one"
    assert "unlocks when" in handle({"hash": "mission=a-new-one", "progress": {"cache-on": 3}})["notices"][0]


@pytest.mark.parametrize("hash_", ["traffic.kind=agent&traffic.agent_rate=10&duration_s=3600",
                                   "traffic.kind=agent&traffic.agent_steps=200&traffic.agent_fanout=64"
                                   "&traffic.agent_fanout_every=1"])
def test_agent_traffic_past_the_budget_is_shown_at_the_labs_size_not_an_error(hash_):
    answer = handle({"hash": hash_})
    assert answer["summary"]["requests"] <= PAGE_BUDGET
    assert any("more than the page simulates per change" in n for n in answer["notices"])
