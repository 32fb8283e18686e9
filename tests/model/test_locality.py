"""Presets and the KV-locality note's comparison: named scenarios, their links, and the shape of the note's result."""

import json

import pytest

from lab.cli.main import main
from lab.page.presets import preset_hash, preset_rows
from lab.page.urlstate import read_hash
from model import Scenario, ScenarioError, simulate
from model.presets import NAMED, scenario_of
from model.studies.locality import NOTE, locality_comparison

NOTE_RR = NOTE["round_robin"]["request_hit_rate"]  # 12.5%


@pytest.fixture(scope="module")
def table():
    return locality_comparison()


def rows(table):
    return {row["key"]: row for row in table["rows"]}


# -- presets ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(NAMED))
def test_every_preset_builds_and_its_link_opens_the_same_scenario(name):
    preset = NAMED[name]
    assert preset.source and preset.description
    scenario = scenario_of(name)
    for key, value in preset.settings:
        assert scenario.get(key) == Scenario().with_text({key: value}).get(key), key
    opened = read_hash("#" + preset_hash(name))
    assert opened.scenario == scenario and opened.notices == ()


def test_the_locality_preset_is_the_notes_setup_on_the_memory_a_card_leaves():
    from model.gpus.hardware import kv_room_gb
    s = scenario_of("kv-locality-note")
    assert (s.traffic.kind, s.traffic.users, s.traffic.prefix_tokens, s.traffic.sharing_ratio) == ("closed", 30, 4000, 0.9)
    assert (s.fleet.replicas, s.fleet.decode, s.hardware.preset) == (8, True, "codellama13b_a100")
    assert kv_room_gb("codellama13b_a100") - 0.01 < s.fleet.memory_gb <= kv_room_gb("codellama13b_a100")
    with pytest.raises(ScenarioError, match="known: kv-locality-note"):
        scenario_of("kv-locality")


def test_run_with_a_preset_is_the_preset_and_flags_after_it_change_it(capsys):
    assert main(["run", "--preset", "kv-locality-note", "--set", "duration_s=60", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = simulate(scenario_of("kv-locality-note").with_text({"duration_s": "60"}))
    assert data == json.loads(json.dumps(expected.to_dict()))
    assert data["scenario"]["router"]["kind"] == "cache_aware" and data["request_hit_rate"] is not None


@pytest.mark.parametrize("argv, words", [
    (["run", "--preset", "nope"], "'nope': no such preset; known: kv-locality-note"),
    (["run", "s.json", "--preset", "kv-locality-note"], "a scenario file or a preset, not both"),
    (["run", "--preset", "kv-locality-note", "--set", "traffic.users=0"], "traffic.users"),
])
def test_a_bad_preset_gets_one_line(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_presets_lists_each_with_its_source_and_the_link_that_opens_it(capsys):
    assert main(["presets", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed == preset_rows() and [p["name"] for p in listed] == list(NAMED)
    assert "seeds/kv-locality-note.txt" in listed[0]["source"] and "traffic.kind=closed" in listed[0]["hash"]
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert "kv-locality-note" in out and "source: " in out and "#" + preset_hash("kv-locality-note") in out


# -- the note's comparison: the shape it reports ---------------------------------------------------------------------

def test_round_robin_finds_a_conversation_about_as_rarely_as_the_note_says(table):
    rr = rows(table)["round_robin"]["request_hit_rate"]
    # one replica of 8 holds a conversation: 1 in 8 if round robin landed at random. With no think time the
    # closed loop lands users back 19.5% of the time (docs/reproductions.md says why): within 1.6x of the note's 12.5%;
    assert NOTE_RR / 1.5 <= rr <= NOTE_RR * 1.6
    # users who think for a second land back as chance would, and the note's factor 1.5 holds
    thinking = simulate(scenario_of("kv-locality-note").with_text({"router.kind": "round_robin", "traffic.think_s": "1"}))
    assert NOTE_RR / 1.5 <= thinking.request_hit_rate <= NOTE_RR * 1.5
    # tokens tell another story: every replica holds the shared system prompt
    assert rows(table)["round_robin"]["hit_rate"] > 2 * rr


def test_cache_aware_routing_finds_most_prefixes_and_answers_sooner_but_the_fallback_serves_the_most(table):
    r = rows(table)
    # On the measured A100 (issue 27) prefill is cheap beside decode, so the seed's router, which weighs only
    # queued prefill, seldom spills: it finds far more than round robin and answers sooner at the median, but
    # two replicas take most conversations and it serves fewer a second (docs/reproductions.md: where and why the figures differ)
    assert r["cache_aware"]["request_hit_rate"] > 0.7 > 3 * r["round_robin"]["request_hit_rate"]
    assert r["cache_aware"]["ttft_p50_ms"] < r["round_robin"]["ttft_p50_ms"]
    assert r["prefix_load_aware"]["throughput_rps"] > max(r["cache_aware"]["throughput_rps"],
                                                          r["round_robin"]["throughput_rps"])


def test_the_load_aware_fallback_lowers_the_tail_of_plain_prefix_aware_routing(table):
    r = rows(table)
    plain, fallback = r["prefix_only"], r["prefix_load_aware"]
    assert fallback["ttft_p99_ms"] < plain["ttft_p99_ms"] and fallback["ttft_p95_ms"] < plain["ttft_p95_ms"]
    assert table["fallback"]["ttft_p99_change"] == round(fallback["ttft_p99_ms"] / plain["ttft_p99_ms"] - 1, 4) < 0
    # plain prefix routing piles every conversation onto the replicas that cached the system prompt first
    assert plain["replicas_used"] < 8 == fallback["replicas_used"]


def test_a_found_prefix_answers_faster_than_a_missed_one(table):
    for row in table["rows"]:
        if row["found_ttft_p50_ms"] is not None and row["missed_ttft_p50_ms"] is not None:
            assert row["found_ttft_p50_ms"] < row["missed_ttft_p50_ms"]


def test_the_comparison_is_json_beside_the_notes_figures_and_the_command_prints_it(table, capsys):
    assert json.loads(json.dumps(table)) == table
    assert [row["key"] for row in table["rows"]] == ["round_robin", "cache_aware", "prefix_only", "prefix_load_aware"]
    assert rows(table)["round_robin"]["note"]["ttft_p99_ms"] == 6800.0
    assert rows(table)["cache_aware"]["note"]["throughput_rps"] == 44.4
    assert main(["locality", "--set", "duration_s=60", "--json"]) == 0
    short = json.loads(capsys.readouterr().out)
    assert short == locality_comparison(scenario_of("kv-locality-note").with_text({"duration_s": "60"}))
    assert main(["locality", "--set", "duration_s=60"]) == 0
    out = capsys.readouterr().out
    assert "Round robin" in out and "12.5%" in out and "the fallback against prefix-aware" in out
