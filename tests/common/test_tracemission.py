"""The mission on replayed traffic: scored on its trace, from the command line, and on the page once the page has
fetched the trace's slice from the site."""

import json

import pytest

import lab.page.view as view
from lab.cli.main import main
from lab.common.tracemission import TRACES_ENV, mission_lines, mission_sources, run_mission, write_slices
from lab.page.tracepage import mission_file
from missions import find_mission, score

MISSION = find_mission("real-traffic")


@pytest.mark.parametrize("changes, stars", [
    ({}, 0),
    ({"router.kind": "cache_aware"}, 1),
    ({"router.kind": "cache_aware", "fleet.replicas": "6"}, 2),
    ({"router.kind": "cache_aware", "fleet.replicas": "4"}, 3),
    ({"router.kind": "cache_aware", "fleet.replicas": "3"}, 0),  # one replica too few
    ({"router.kind": "least_loaded", "fleet.replicas": "16"}, 0),  # balancing load alone never gets there
    ({"router.kind": "cache_aware", "fleet.memory_gb": "1024"}, 0),  # memory is fixed
])
def test_the_mission_scores_on_its_trace_as_designed(changes, stars):
    scenario = MISSION.start.with_text(changes)
    result = run_mission(MISSION, scenario)
    assert result.requests == MISSION.trace_requests == 1750
    assert score(MISSION, scenario, result).stars == stars


def test_the_command_line_scores_it_and_names_a_missing_trace(capsys, monkeypatch, tmp_path):
    assert main(["score", "--mission", "real-traffic", "--set", "router.kind=cache_aware", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stars"] == 1
    monkeypatch.setenv(TRACES_ENV, str(tmp_path))
    assert main(["score", "--mission", "real-traffic"]) == 2
    err = capsys.readouterr().err
    assert "conversation_trace.jsonl, which is not there" in err and TRACES_ENV in err and "Traceback" not in err


def test_the_build_ships_the_slice_and_says_when_it_cannot(tmp_path, monkeypatch):
    assert write_slices(tmp_path) == []
    shipped = (tmp_path / mission_file(MISSION)).read_bytes()
    assert shipped == b"".join(mission_lines(MISSION)()) and shipped.count(b"\n") == 1750
    monkeypatch.setenv(TRACES_ENV, str(tmp_path / "nowhere"))
    assert any("left out the traffic of mission real-traffic" in n for n in write_slices(tmp_path / "other"))


def test_the_page_fetches_the_slice_first_and_then_scores_on_it(tmp_path):
    hash_ = "router.kind=cache_aware&fleet.replicas=8&fleet.memory_gb=256&fleet.prefill_tokens_per_s=50000" \
            "&mission=real-traffic&unlock=all"
    waiting = view.handle({"hash": hash_})
    assert waiting["fetch"] == {"key": "mission:real-traffic", "url": "traces/real-traffic.jsonl",
                                "name": "conversation_trace.jsonl"}
    assert 'class="verdict' not in waiting["patches"]["dom"]["#missions"]["html"]  # nothing scored on stand-in traffic
    assert "Loading this mission's traffic" in waiting["patches"]["dom"]["#readout"]["text"]
    played = view.handle({"hash": hash_}, mission_sources())
    assert played["fetch"]["key"] == "sweeps"  # the traffic first, then the missions' sweep (lab.page.teach)
    assert played["summary"]["requests"] == 1750
    expected = run_mission(MISSION, MISSION.start.with_text({"router.kind": "cache_aware"}))
    assert played["summary"]["ttft_p99_ms"] == expected.ttft_p99_ms
    assert 'data-stars="1"' in played["patches"]["dom"]["#missions"]["html"]
    assert "its first 1,750 requests" in played["patches"]["dom"]["#trace-summary"]["html"]
