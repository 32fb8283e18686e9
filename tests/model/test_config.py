"""Scenario in and out: defaults, dotted keys, JSON round trips and clear errors."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model import KEYS, Event, Scenario, ScenarioError

CONTRACT = ["seed", "duration_s", "traffic.session_rate", "dynamic_text", "fleet.replicas", "fleet.cache",
            "fleet.memory_gb", "fleet.prefill_tokens_per_s", "fleet.overhead_ms", "router.kind",
            "router.spill_threshold_s", "events"]


def test_the_contract_keys_exist():
    assert set(CONTRACT) <= set(KEYS)


def test_default_scenario_has_the_seed_labs_figures():
    s = Scenario()
    assert s.traffic.system_prompts == 6 and s.traffic.surge_system_prompts == 40
    assert s.traffic.system_tokens == 1500 and s.traffic.dynamic_at == 200
    assert (s.traffic.user_min, s.traffic.user_max, s.traffic.answer_mean) == (40, 240, 220)
    assert (s.traffic.gap_min_s, s.traffic.gap_max_s, s.traffic.turns_mean) == (2.0, 10.0, 4.0)
    assert s.fleet.prefill_tokens_per_s == 10_000 and s.fleet.overhead_ms == 15
    assert s.fleet.cache is True and s.dynamic_text == "none" and s.events == ()


def test_json_round_trip():
    s = Scenario().with_text({"fleet.replicas": "8", "router.kind": "cache_aware",
                              "events": "burst@30+20x3,timestamp@100,surge@10+50"})
    assert Scenario.from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_text_round_trip_of_every_key():
    s = Scenario().with_text({"router.spill_threshold_s": "off", "fleet.memory_gb": "2.5",
                              "events": "timestamp@12.5", "fleet.cache": "false"})
    assert Scenario().with_text(s.to_text()) == s
    assert s.to_text()["router.spill_threshold_s"] == "off"
    assert s.to_text()["events"] == "timestamp@12.5"


def test_events_are_kept_in_time_order():
    s = Scenario().with_text({"events": "timestamp@150,burst@30+20x3"})
    assert [e.kind for e in s.events] == ["burst", "timestamp"]
    assert s.events[0] == Event("burst", 30.0, 20.0, 3.0)


@pytest.mark.parametrize("key, value, message", [
    ("fleet.replicas", "0", "fleet.replicas: 0 is out of range; use a whole number from 1 to 64"),
    ("fleet.replicas", "2.5", "fleet.replicas: 2.5 is not a whole number"),
    ("fleet.replicas", "many", "fleet.replicas: 'many' is not a number"),
    ("fleet.cache", "maybe", "fleet.cache: 'maybe' is not a switch; use true or false"),
    ("router.kind", "fastest", "router.kind: \"fastest\" is not allowed; use one of round_robin, random"),
    ("dynamic_text", "middle", "dynamic_text: \"middle\" is not allowed; use one of none, top, bottom"),
    ("fleet.replica", "2", "fleet.replica: unknown key; did you mean fleet.replicas?"),
    ("events", "burst@30", "burst@30+0x1"),
    ("events", "storm@3", "events: 'storm@3' is not an event"),
    ("events", "timestamp@900", "starts at 900 s; use a start from 0 to below duration_s (180)"),
    ("events", "burst@10+5x50", "factor 50; use a factor from 1 to 20"),
    ("traffic.gap_min_s", "20", "traffic.gap_min_s: 20 is above traffic.gap_max_s (10)"),
    ("router.spill_threshold_s", "-1", "router.spill_threshold_s: -1 is out of range; use a number from 0 to 3600 or off"),
])
def test_bad_text_values_name_the_key_the_value_and_the_fix(key, value, message):
    with pytest.raises(ScenarioError) as info:
        Scenario().with_text({key: value})
    assert message in str(info.value)


@pytest.mark.parametrize("data, message", [
    ({"fleet": {"replicas": "3"}}, 'fleet.replicas: "3" is not allowed; use a whole number from 1 to 64'),
    ({"fleet": {"cache": 1}}, "fleet.cache: 1 is not allowed; use true or false"),
    ({"fleet": {"gpus": 3}}, "fleet.gpus: unknown key; known here: replicas"),
    ({"colour": "red"}, "colour: unknown key"),
    ({"fleet": 3}, "fleet: expected an object of fields, got 3"),
    ([], "scenario: expected an object of fields"),
    ({"events": [{"kind": "burst"}]}, "events[0].at_s: missing"),
    ({"events": [{"kind": "burst", "at_s": 1, "power": 2}]}, "events[0].power: unknown key"),
    ({"events": "x"}, "events: 'x' is not an event"),
    ({"duration_s": float("nan")}, "duration_s: nan is not allowed"),
    ({"traffic": {"session_rate": True}}, "traffic.session_rate: True is not allowed"),
])
def test_bad_json_values_are_rejected_with_the_field_named(data, message):
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict(data)
    assert message in str(info.value)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), st.text(max_size=12), max_size=4))
def test_any_text_either_builds_a_scenario_or_raises_scenario_error(values):
    try:
        s = Scenario().with_text(values)
    except ScenarioError as exc:
        assert str(exc).split(":")[0].split("[")[0] in KEYS + ("events",)
    else:
        assert Scenario.from_dict(s.to_dict()) == s
