"""Each mission's grid, its sweep, the cache and the site file, "beats", hints and the prediction."""

import json
import re

import pytest
from helpers import ROOT
from test_missions import SOLUTIONS

from lab.cli.main import main
from lab.common.tracemission import TRACES_ENV, run_mission
from lab.page.controls import CONTROLS, control_of
from lab.page.figures import FIGURES as CHARTS
from lab.page.glossary import GLOSSARY, term
from lab.site import missionsweep
from missions import MISSIONS, find_mission
from missions.grid import Block, block, setups
from missions.scoring import BETTER, FIGURES
from missions.sweep import beats, measure, pareto, sweep, truth_of
from model import Scenario
from model.config import spec_of

SMALL = ("timestamp", "cache-on")  # the missions swept afresh here: 3 and 16 setups


def resolved(mission, settings):
    return tuple(mission.start.with_text(settings).to_text().items())


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_a_grid_sets_only_the_missions_controls_to_values_its_controls_can_reach(mission):
    assert mission.grid
    for b in mission.grid:
        for key, values in b.values:
            assert key in mission.controls, f"{mission.id}: {key} is not one of its controls"
            spec = spec_of(key)
            for value in values:
                Scenario().with_text({key: value})  # within the key's declared bounds, or refused
                if spec.choices:
                    assert value in spec.choices
                elif value == "off":
                    assert spec.off
                elif value not in ("true", "false"):
                    number = float(value)
                    assert spec.lo <= number <= spec.hi
                    if spec.page is not None:  # the page's slider can be set there
                        lo, hi, step = spec.page
                        assert lo <= number <= hi and abs((number - lo) / step - round((number - lo) / step)) < 1e-9


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_a_grid_holds_the_broken_start_and_the_tested_one_and_three_star_setups(mission):
    swept = {resolved(mission, s) for s in mission.setups()}
    one, three = SOLUTIONS[mission.id]
    assert resolved(mission, {}) in swept
    assert resolved(mission, one) in swept, f"{mission.id}: the one-star setup is off the grid"
    assert resolved(mission, three) in swept, f"{mission.id}: the three-star setup is off the grid"


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_no_two_setups_of_a_grid_run_the_same_scenario(mission):
    runs = [resolved(mission, s) for s in mission.setups()]
    assert len(set(runs)) == len(runs)


def test_blocks_multiply_out_and_a_setup_two_blocks_share_comes_once():
    a = block(fleet__replicas="1,2", router__kind="cache_aware,cost")
    assert a.size == 4 and a.setups()[1] == {"fleet.replicas": "1", "router.kind": "cost"}
    b = block(router__kind="cost", fleet__replicas="2,3")
    assert setups((a, b)) == [*a.setups(), {"router.kind": "cost", "fleet.replicas": "3"}]
    with pytest.raises(ValueError):
        Block((("fleet.replicas", ()),))


def row(x, y, stars=1):
    return {"settings": {}, "figures": {"replicas": x, "ttft_p99_ms": y}, "stars": stars}


def test_the_pareto_front_keeps_what_nothing_beats_on_both_figures():
    rows = [row(4, 100), row(2, 300), row(3, 300), row(2, 300), row(8, 50), row(8, 60), row(1, 900)]
    # (3, 300) loses to (2, 300); (8, 60) to (8, 50); the two (2, 300) tie and both stay.
    assert pareto(("replicas", "ttft_p99_ms"), rows) == [6, 1, 3, 0, 4]
    assert pareto(("ttft_p99_ms", "hit_rate"), [
        {"figures": {"ttft_p99_ms": 500, "hit_rate": 0.9}}, {"figures": {"ttft_p99_ms": 400, "hit_rate": 0.8}},
        {"figures": {"ttft_p99_ms": 600, "hit_rate": 0.85}}]) == [1, 0]


def test_beats_ranks_stars_then_the_first_figure_then_the_second_and_counts_ties_apart():
    dist = {"tradeoff": ["replicas", "ttft_p99_ms"],
            "setups": [row(2, 300, 3), row(3, 200, 3), row(3, 250, 3), row(1, 100, 0), row(8, 50, 1)]}
    assert beats(dist, row(3, 250, 3)) == {"beats": 0.4, "ties": 0.2, "swept": 5}  # the two with fewer stars
    assert beats(dist, row(2, 300, 3)) == {"beats": 0.8, "ties": 0.2, "swept": 5}  # fewest replicas of the 3 stars
    assert beats(dist, row(1, 10, 0)) == {"beats": 0.2, "ties": 0.0, "swept": 5}  # only the other zero-star one


def test_every_figure_says_which_way_is_better():
    assert set(BETTER) == set(FIGURES)
    assert all(set(m.tradeoff) <= set(m.scored()) for m in MISSIONS)


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """An empty cache, and no repository copy to fall back on: what is asked for is swept."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(missionsweep, "SHIPPED", tmp_path / "no-copy.json")
    return tmp_path / "cache"


def test_a_sweep_is_cached_by_digest_and_the_cached_copy_equals_a_fresh_sweep(own_cache):
    small = [find_mission(i) for i in SMALL]
    first = missionsweep.distributions(small)
    cached = sorted(own_cache.rglob("mission-sweep-*.json"))
    assert [p.name for p in cached] == sorted(f"mission-sweep-{missionsweep.stamp()}-{i}.json" for i in SMALL)
    again = missionsweep.distributions(small)
    fresh = {m.id: sweep(m) for m in small}
    assert again == first and {d["id"]: d for d in again["missions"]} == fresh


def test_worker_processes_give_what_one_process_gives():
    mission = find_mission("cache-on")
    assert missionsweep.sweep_points([mission], workers=2) == missionsweep.sweep_points([mission], workers=1)


def test_a_mission_whose_trace_is_missing_is_left_out_and_named(own_cache, monkeypatch, tmp_path):
    before = missionsweep.stamp()
    monkeypatch.setenv(TRACES_ENV, str(tmp_path / "nowhere"))
    assert missionsweep.stamp() != before  # the slice is part of the digest
    got = missionsweep.distributions([find_mission("real-traffic"), find_mission("timestamp")])
    assert [d["id"] for d in got["missions"]] == ["timestamp"]
    assert "conversation_trace.jsonl, which is not there" in got["missing"]["real-traffic"]


def test_the_site_file_holds_every_mission_and_its_small_ones_equal_a_fresh_sweep(tmp_path):
    assert missionsweep.write_distributions(tmp_path) == []
    stored = json.loads((tmp_path / missionsweep.SITE_FILE).read_text())
    assert [d["id"] for d in stored["missions"]] == [m.id for m in MISSIONS] and stored["missing"] == {}
    assert stored["stamp"] == missionsweep.stamp()
    by_id = {d["id"]: d for d in stored["missions"]}
    for mission_id in SMALL:
        assert by_id[mission_id] == sweep(find_mission(mission_id))
    for m in MISSIONS:
        d = by_id[m.id]
        assert len(d["setups"]) == len(m.setups()) and d["pareto"] and d["start"]["stars"] == 0
        assert {r["stars"] for r in d["setups"]} >= {0, 3}  # the grid holds a failing and a three-star setup


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_hints_point_at_a_control_or_a_chart_and_never_at_a_value(mission):
    names = {c.label.lower() for c in CONTROLS} | {c.words.lower() for c in CONTROLS}
    names |= {f.title.lower() for f in CHARTS.values()} | {e.term.lower() for e in GLOSSARY}
    values = set()
    for b in mission.grid:
        for key, texts in b.values:
            control = control_of(key)
            for text in texts:
                values |= {text, text.replace("_", " "), term(text)}
                if control is not None and control.labels:
                    values.add(control.labels[control.options.index(text)])
    values = {v.lower() for v in values if v and not v.replace(".", "").isdigit()}
    assert 2 <= len(mission.hints) <= 3
    for hint in mission.hints:
        low = hint.lower()
        assert not re.search(r"\d", hint), hint
        assert not [v for v in values if re.search(rf"(?<![\w-]){re.escape(v)}(?![\w-])", low)], hint
        assert any(name in low for name in names), f"{hint!r} names no control or chart of the page"


@pytest.mark.parametrize("mission", MISSIONS, ids=lambda m: m.id)
def test_the_prediction_asks_for_a_figure_of_the_broken_start_within_its_slider(mission):
    p = mission.predict
    assert p is not None and p.question.endswith("?")
    steps = (p.hi - p.lo) / p.step
    assert abs(steps - round(steps)) < 1e-9 and 10 <= round(steps) <= 400
    truth = truth_of(mission, run_mission(mission, mission.start))
    assert p.lo <= truth <= p.hi
    assert truth not in (p.lo, p.hi)  # a guess at either end is never simply right


def test_the_prediction_truth_is_the_broken_starts_figure():
    mission = find_mission("round-robin")
    result = run_mission(mission, mission.start)
    assert truth_of(mission, result) == pytest.approx(result.hit_rate, rel=1e-6) == pytest.approx(0.627, abs=1e-3)


def test_cli_missions_json_gives_each_grid_distribution_and_front(capsys):
    assert main(["missions", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    for m, item in zip(MISSIONS, listed, strict=True):
        d = item["distribution"]
        assert item["grid"] == [b.to_dict() for b in m.grid] and item["hints"] == list(m.hints)
        assert len(d["setups"]) == len(m.setups()) and d["tradeoff"] == list(m.tradeoff)
        assert all(set(r["figures"]) == set(m.scored()) for r in d["setups"])
        assert d["predict"]["truth"] is not None and item["predict"]["question"] == m.predict.question


def test_cli_score_says_the_share_of_swept_setups_it_beats(capsys):
    mission = find_mission("cache-on")
    shares = []
    for changes in ({}, SOLUTIONS["cache-on"][0], SOLUTIONS["cache-on"][1]):
        assert main(["score", "--mission", "cache-on", "--json",
                     *[a for k, v in changes.items() for a in ("--set", f"{k}={v}")]]) == 0
        out = json.loads(capsys.readouterr().out)
        scenario = mission.start.with_text(changes)
        dist = missionsweep.distributions([mission])["missions"][0]
        assert out["beats"] == beats(dist, measure(mission, scenario, run_mission(mission, scenario)))["beats"]
        assert out["swept"] == 16 and "more stars first" in out["beats_rule"]
        shares.append(out["beats"])
    assert shares == [4 / 16, 13 / 16, 15 / 16]  # as docs/missions.md says: 25%, 81%, 94%
    assert main(["score", "--mission", "cache-on", "--set", "fleet.replicas=2", "--set", "fleet.cache=true"]) == 0
    assert re.search(r"beats \d+% of the 16 setups swept", capsys.readouterr().out)


def test_cli_score_bad_flags_are_one_line(capsys):
    assert main(["score", "--mission", "cache-on", "--beats"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unrecognized arguments: --beats" in err


def test_the_sweep_runs_trace_missions_on_their_trace():
    mission = find_mission("real-traffic")
    stored = missionsweep.distributions([mission])["missions"][0]
    three = mission.start.with_text(SOLUTIONS["real-traffic"][1])
    expected = measure(mission, three, run_mission(mission, three))
    assert expected in stored["setups"] and expected["stars"] == 3


def test_the_docs_table_lists_every_mission_in_order_with_its_grid_size():
    page = (ROOT / "docs" / "missions.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| `([a-z-]+)` \| [^|]+ \| (lab|serving)[^|]* \| (\d+) \|", page, flags=re.M)
    assert [(int(n), i, int(size)) for n, i, _, size in rows] == [
        (n, m.id, len(m.setups())) for n, m in enumerate(MISSIONS, 1)]
    assert [mode for *_, mode, _ in rows] == ["serving" if m.start.fleet.decode else "lab" for m in MISSIONS]


def test_the_built_site_ships_the_sweeps_with_a_gzip_twin(server):
    site = server["site"]
    stored = json.loads((site / missionsweep.SITE_FILE).read_text(encoding="utf-8"))
    assert stored["stamp"] == missionsweep.stamp() and len(stored["missions"]) == len(MISSIONS)
    assert (site / (missionsweep.SITE_FILE + ".gz")).is_file()
    assert missionsweep.SITE_FILE in json.loads((site / "build.json").read_text(encoding="utf-8"))["files"]
