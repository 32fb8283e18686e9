"""Every mission: the broken start scores nothing, a known fix earns a star, the best known earns three."""

import dataclasses
import json

import pytest

from lab.cli.main import main
from lab.common.tracemission import run_mission
from missions import MISSIONS, find_mission, score, unlocked
from missions.catalog import check_catalog
from missions.scoring import Threshold

# (one-star setup, three-star setup) as dotted keys applied to the mission's start.
SOLUTIONS = {
    "cache-on": ({"fleet.cache": "true"}, {"fleet.cache": "true", "fleet.replicas": "2"}),
    "timestamp": ({"dynamic_text": "bottom"}, {"dynamic_text": "none"}),
    "round-robin": ({"router.kind": "cache_aware"}, {"router.kind": "cache_aware", "fleet.replicas": "3"}),
    "hot-tenant": ({"router.spill_threshold_s": "1"}, {"router.spill_threshold_s": "0.5"}),
    "surge-memory": ({"fleet.memory_gb": "4"}, {"fleet.memory_gb": "3"}),
    "burst": ({"fleet.replicas": "4"}, {"fleet.replicas": "3", "router.kind": "cache_aware",
                                        "router.spill_threshold_s": "0.2"}),
    "consistent-hash": ({"router.kind": "least_loaded"}, {"router.kind": "cache_aware",
                                                          "router.spill_threshold_s": "0.2"}),
    "bounded-hash": ({"router.load_factor": "1.5"}, {"router.load_factor": "1.05"}),
    "stale-router": ({"router.view_ttl_s": "2"}, {"router.view_ttl_s": "3"}),
    "pile-up": ({"router.balance_abs_threshold": "4"}, {"router.balance_abs_threshold": "1"}),
    "monday": ({"router.kind": "cache_aware", "dynamic_text": "none", "fleet.memory_gb": "4"},
               {"router.kind": "cache_aware", "dynamic_text": "none", "fleet.memory_gb": "4", "fleet.replicas": "4"}),
    "warm-or-idle": ({"router.kind": "cost"}, {"router.kind": "cost", "fleet.fetch": "rdma", "fleet.replicas": "5"}),
    "fan-out": ({"router.kind": "cost"}, {"traffic.agent_warm_first": "true", "fleet.replicas": "3"}),
    "real-traffic": ({"router.kind": "cache_aware"}, {"router.kind": "cache_aware", "fleet.replicas": "4"}),
    "split-decode": ({"fleet.prefill_replicas": "3", "fleet.decode_replicas": "3"},
                     {"fleet.prefill_replicas": "1", "fleet.decode_replicas": "2"}),
}


def verdict(mission, changes):
    scenario = mission.start.with_text(changes)
    return score(mission, scenario, run_mission(mission, scenario))


def test_there_are_at_least_eight_missions_with_unique_ids():
    assert len(MISSIONS) >= 8
    assert len({m.id for m in MISSIONS}) == len(MISSIONS)
    assert set(SOLUTIONS) == {m.id for m in MISSIONS}


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_the_broken_start_scores_no_star(mission):
    v = verdict(mission, {})
    assert v.stars == 0 and not v.passed
    assert any("not yet" in r for r in v.reasons)


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_a_known_fix_earns_exactly_one_star(mission):
    v = verdict(mission, SOLUTIONS[mission.id][0])
    assert v.passed and v.stars == 1, v.reasons


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_the_best_known_setup_earns_three_stars(mission):
    v = verdict(mission, SOLUTIONS[mission.id][1])
    assert v.passed and v.stars == 3, v.reasons


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_solutions_only_touch_the_controls_the_mission_allows(mission):
    for changes in SOLUTIONS[mission.id]:
        assert set(changes) <= set(mission.controls)


def test_changing_a_fixed_key_scores_nothing():
    mission = find_mission("cache-on")
    v = verdict(mission, {"fleet.cache": "true", "traffic.session_rate": "0.5"})
    assert v.stars == 0 and not v.passed and "traffic.session_rate" in v.reasons[0]


def test_stars_are_earned_in_order():
    mission = find_mission("round-robin")
    # Three replicas but a router that ignores the cache: no pass, so no stars for being small.
    v = verdict(mission, {"fleet.replicas": "3"})
    assert v.stars == 0
    v = verdict(mission, {"router.kind": "cache_aware", "fleet.replicas": "4"})
    assert v.stars == 2


def test_threshold_checks_read_as_sentences():
    t = Threshold("ttft_p99_ms", "<=", 300)
    assert t.text() == "TTFT p99 at most 300 ms"
    assert t.check({"ttft_p99_ms": 289.0}) == "TTFT p99 at most 300 ms: 289 ms, met"
    assert Threshold("hit_rate", ">=", 0.85).check({"hit_rate": 0.6}) == "hit rate at least 85.0%: 60.0%, not yet"
    with pytest.raises(ValueError):
        Threshold("happiness", ">=", 1)


def test_cli_lists_missions(capsys):
    assert main(["missions", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [m["id"] for m in listed] == [m.id for m in MISSIONS]
    assert all(m["goal"] and m["title"] for m in listed)
    assert main(["missions"]) == 0
    assert "cache-on" in capsys.readouterr().out


def test_cli_scores_the_broken_start_by_default(capsys):
    assert main(["score", "--mission", "cache-on", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stars"] == 0


def test_cli_scores_a_setup(capsys, tmp_path):
    assert main(["score", "--mission", "cache-on", "--set", "fleet.cache=true", "--set", "fleet.replicas=2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cache-on: passed, 3 star(s)")
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"fleet": {"cache": True}}))
    assert main(["score", "--mission", "cache-on", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stars"] == 1


def test_cli_names_an_unknown_mission(capsys):
    assert main(["score", "--mission", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such mission" in err and "cache-on" in err


def test_prerequisites_are_declared_on_each_mission_as_todays_chain():
    assert [(m.id, m.requires) for m in MISSIONS] == [
        ("cache-on", ()), ("timestamp", ("cache-on",)), ("round-robin", ("timestamp",)),
        ("hot-tenant", ("round-robin",)), ("surge-memory", ("hot-tenant",)), ("burst", ("surge-memory",)),
        ("consistent-hash", ("burst",)), ("monday", ("consistent-hash",)),
        ("bounded-hash", ("consistent-hash",)), ("stale-router", ("bounded-hash",)),
        ("warm-or-idle", ("stale-router",)), ("fan-out", ("warm-or-idle",)), ("real-traffic", ("round-robin",)),
        ("split-decode", ("fan-out",)), ("pile-up", ("stale-router",))]
    check_catalog()


def test_a_mission_opens_when_every_prerequisite_has_a_star():
    assert unlocked({}) == {"cache-on"}
    assert unlocked({"cache-on": 1, "timestamp": 0}) == {"cache-on", "timestamp"}
    both = dataclasses.replace(MISSIONS[-1], id="finale", requires=("burst", "monday"))
    assert "finale" not in unlocked({"burst": 3}, (*MISSIONS, both))
    assert "finale" in unlocked({"burst": 3, "monday": 1}, (*MISSIONS, both))


def test_reordering_or_adding_missions_changes_no_unlock():
    progress = {"cache-on": 2, "timestamp": 3, "round-robin": 1, "gone-mission": 3}
    added = dataclasses.replace(MISSIONS[0], id="new", requires=("cache-on",))
    assert unlocked(progress, tuple(reversed(MISSIONS))) == unlocked(progress) == {
        "cache-on", "timestamp", "round-robin", "hot-tenant", "real-traffic"}
    assert unlocked(progress, (added, *MISSIONS)) == unlocked(progress) | {"new"}


def test_a_broken_catalog_is_refused():
    first = MISSIONS[0]
    with pytest.raises(ValueError, match="used twice"):
        check_catalog((first, first))
    with pytest.raises(ValueError, match="unknown"):
        check_catalog((dataclasses.replace(first, requires=("nope",)),))
    loop = (dataclasses.replace(first, id="a", requires=("b",)), dataclasses.replace(first, id="b", requires=("a",)))
    with pytest.raises(ValueError, match="cycle"):
        check_catalog((first, *loop))
