"""Missions that teach, through the view as the page drives it: a guess before the first run (held numbers, the
guess beside the truth), hints one at a time and offered after two minutes, and where the setup lands among
the swept ones (beats N%, computed against the build's distributions)."""

import json
import re

import pytest

from lab.common.tracemission import BytesSource
from lab.page import missionview
from lab.page.teach import SWEEPS_KEY
from lab.page.view import handle, run
from lab.site import missionsweep
from missions import MISSIONS, beats, figures, find_mission, measure
from missions.sweep import sweep


def play(view, files=None, **request):
    return handle({"hash": view["hash"], "progress": view["progress"], "memo": view["memo"], **request}, files)


def choose(mission_id, progress=None, hash_="unlock=all", files=None):
    return handle({"hash": hash_, "progress": progress or {},
                   "action": {"type": "select_mission", "mission": mission_id}}, files)


def panel(view):
    return view["patches"]["dom"]["#missions"]["html"]


def test_a_missions_first_run_asks_for_a_guess_and_holds_back_the_figure_until_it_is_made():
    view = choose("round-robin")
    dom, bokeh = view["patches"]["dom"], view["patches"]["bokeh"]
    assert "guess=ask" in view["hash"] and not dom["#predict"]["hidden"]
    assert dom["#predict-question"]["html"] == find_mission("round-robin").predict.question
    assert dom['[data-metric="hit_rate"]'] == {"text": "?", "attrs": {"data-value": ""}}
    assert dom["#verdict-chip"]["hidden"] and dom["main.charts"]["attrs"]["data-veiled"] == "true"
    # the question above names the figure; the slider's title stays short, so its value shows (issue 29, 2)
    assert bokeh[missionview.GUESS_INPUT]["format"] == "0%" and bokeh[missionview.GUESS_INPUT]["title"] == "Your guess"
    guessed = play(view, action={"type": "predict", "inputs": {missionview.GUESS_INPUT: 0.404}})
    assert "guess=0.4" in guessed["hash"] and guessed["patches"]["dom"]["#predict"]["hidden"]
    truth = figures(find_mission("round-robin").start, run(find_mission("round-robin").start))["hit_rate"]
    said = re.search(r'data-guess="([\d.]+)" data-truth="([\d.]+)">(.*?)</p>', panel(guessed))
    assert float(said.group(1)) == 0.4 and float(said.group(2)) == pytest.approx(truth, abs=1e-6)
    assert f"{abs(0.4 - truth) * 100:.1f} points low" in said.group(3)
    assert guessed["patches"]["dom"]['[data-metric="hit_rate"]']["text"] == f"{truth:.1%}"
    moved = play(guessed, controls={"ctl:fleet.replicas": 4})  # the truth stays the broken start's
    assert f'data-truth="{said.group(2)}"' in panel(moved)


def test_a_guess_is_asked_once_skipped_by_playing_and_switched_by_the_facilitator():
    assert "guess" not in choose("round-robin", {"round-robin": 1})["hash"]  # played before: not asked again
    assert "guess=ask" in choose("round-robin", {"round-robin": 1}, "unlock=all&predict=on")["hash"]
    assert "guess" not in choose("round-robin", {}, "unlock=all&predict=off")["hash"]
    asked = choose("round-robin")
    assert "guess" not in play(asked, action={"type": "skip_predict"})["hash"]
    changed = play(asked, controls={"ctl:fleet.replicas": 4})  # changing the setup instead is skipping it
    assert "guess" not in changed["hash"] and "Not passed yet" in panel(changed)
    nothing = play(asked, action={"type": "predict", "inputs": {}})
    assert "guess=ask" in nothing["hash"] and nothing["notices"] == ["Set your guess on the slider, then check it."]
    wild = play(asked, action={"type": "predict", "inputs": {missionview.GUESS_INPUT: 7}})
    assert "guess=1" in wild["hash"]  # kept within the slider's range


def test_hints_come_one_at_a_time_in_order_and_are_offered_after_two_minutes(monkeypatch):
    mission = find_mission("round-robin")
    now = [1_000_000.0]
    monkeypatch.setattr(missionview, "clock", lambda: now[0])
    view = play(choose("round-robin"), action={"type": "skip_predict"})
    assert "A hint" in panel(view) and "<ol class=\"hints\"" not in panel(view) and "Two minutes" not in panel(view)
    now[0] += missionview.HINT_AFTER_S
    later = play(view, controls={"ctl:fleet.replicas": 7})
    assert "Two minutes and not passed yet" in panel(later)
    for n in range(1, len(mission.hints) + 2):
        later = play(later, action={"type": "hint"})
        shown = re.findall(r"<li>(.*?)</li>", panel(later).split('class="hints"')[1].split("</ol>")[0])
        assert [h.replace("&#x27;", "'") for h in shown] == list(mission.hints[:n])
    assert "Another hint" not in panel(later) and f"hint={len(mission.hints)}" in later["hash"]


@pytest.fixture(scope="module")
def swept():
    """The distributions as the build ships them, for two small missions."""
    missions = missionsweep.distributions([find_mission(i) for i in ("cache-on", "round-robin")])["missions"]
    blob = json.dumps({"stamp": "test", "missions": missions}).encode()
    return {SWEEPS_KEY: BytesSource("mission-sweeps.json", blob)}, {d["id"]: d for d in missions}


def test_the_repository_carries_the_current_sweep_so_a_clean_checkout_builds_without_sweeping(tmp_path, monkeypatch):
    shipped = json.loads(missionsweep.SHIPPED.read_text(encoding="utf-8"))
    assert shipped["stamp"] == missionsweep.stamp(), \
        "lab/data/mission-sweeps.json is behind the model: run `.venv/bin/python -m lab.site.missionsweep` and commit it"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))  # a machine that never swept

    def no_sweeping(*args, **kwargs):
        raise AssertionError("swept although the repository's copy is current")

    monkeypatch.setattr(missionsweep, "sweep_points", no_sweeping)
    got = missionsweep.distributions()
    assert got["missions"] == shipped["missions"] and len(got["missions"]) == len(MISSIONS)
    assert {d["id"]: d for d in got["missions"]}["cache-on"] == sweep(find_mission("cache-on"))  # and it is right


def test_a_mission_asks_for_the_distributions_then_places_the_setup_among_them(swept):
    files, by_id = swept
    asked = play(choose("round-robin"), action={"type": "skip_predict"})
    assert asked["fetch"]["key"] == SWEEPS_KEY and asked["patches"]["dom"]["#landscape"]["hidden"]
    view = play(asked, files, controls={"ctl:fleet.replicas": 4})
    assert view["fetch"] is None and not view["patches"]["dom"]["#landscape"]["hidden"]
    mission = find_mission("round-robin")
    scenario = mission.start.with_text({"fleet.replicas": "4"})
    mine = figures(scenario, run(scenario))
    expected = beats(by_id["round-robin"], measure(mission, scenario, run(scenario)))
    assert f'data-beats="{expected["beats"]:.6g}"' in panel(view)
    assert f"of the {expected['swept']:,} setups" in panel(view)
    bokeh = view["patches"]["bokeh"]
    x, y = by_id["round-robin"]["tradeoff"]
    assert bokeh["src:land_you"]["data"] == {"x": [mine[x]], "y": [mine[y]]}
    assert len(bokeh["src:land"]["data"]["x"]) == len(by_id["round-robin"]["setups"])
    assert len(bokeh["src:land_front"]["data"]["x"]) == len(by_id["round-robin"]["pareto"])
    free = play(view, files, action={"type": "select_mission", "mission": ""})
    assert free["patches"]["dom"]["#landscape"]["hidden"] and free["patches"]["bokeh"]["src:land"]["data"]["x"] == []


def test_a_file_that_is_not_the_distributions_draws_no_landscape():
    broken = {SWEEPS_KEY: BytesSource("mission-sweeps.json", b"<html>not found</html>")}
    view = play(choose("cache-on"), broken, action={"type": "skip_predict"})
    assert view["patches"]["dom"]["#landscape"]["hidden"] and "Not passed yet" in panel(view)


def test_in_free_play_any_headline_figure_can_be_guessed_and_the_next_change_checks_it():
    view = handle({"hash": ""})
    assert "Guess the next change first" in view["patches"]["dom"]["#compare-tools"]["html"]
    view = play(view, action={"type": "guess_next"})
    assert not view["patches"]["dom"]["#predict"]["hidden"] and view["patches"]["dom"]["main.charts"]["attrs"] == \
        {"data-veiled": "false"}  # the run on screen is not the one guessed: nothing to hide
    view = play(view, action={"type": "guess_figure", "figure": "ttft_p99_ms"})
    assert view["patches"]["bokeh"][missionview.GUESS_INPUT]["end"] == missionview.FREE_GUESSES["ttft_p99_ms"].hi
    view = play(view, action={"type": "predict", "inputs": {missionview.GUESS_INPUT: 300}})
    assert "Now change something" in panel(view) and 'data-truth' not in panel(view)
    checked = play(view, controls={"ctl:router.kind": "cache_aware"})
    truth = checked["summary"]["ttft_p99_ms"]
    assert f'data-guess="300" data-truth="{truth:g}"' in panel(checked) and f"{300 - truth:,.0f} ms high" in panel(checked)
    assert 'class="prediction"' not in panel(play(checked, controls={"ctl:fleet.replicas": 5}))  # shown once
    unknown = play(handle({"hash": ""}), action={"type": "guess_figure", "figure": "nonsense"})
    assert "guess_figure=hit_rate" in unknown["hash"]
