"""Agent traffic: calls that repeat the previous prompt, sent when answered, and fan-outs that race or wait."""

import statistics

import pytest
from helpers import everything
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.cli.main import main
from model import RACE, Scenario, TooManyRequests, fanout_race, simulate
from model.engines.lab import Run
from model.engines.serving_run import ServingRun

AGENT = Scenario().with_text({"traffic.kind": "agent", "fleet.memory_gb": "16"})
FANOUT = Scenario().with_text(RACE)


def finished(scenario):
    run = ServingRun(scenario) if scenario.fleet.decode else Run(scenario)
    return run, run.finish()


def late_repeat_share(requests):
    """Mean share of each call's prompt that is the run's previous prompt, over calls 10 and later."""
    previous, shares = {}, []
    for r in requests:
        if r.session in previous and r.turn >= 10:
            shares.append(previous[r.session] / r.prompt_tokens)
        previous[r.session] = r.prompt_tokens
    return statistics.mean(shares)


def test_a_late_agent_call_repeats_96_to_97_percent_of_the_one_before():
    run, _ = finished(AGENT)
    assert 0.955 < late_repeat_share(run.requests) < 0.975  # "the first 96 or 97 per cent of the tokens"
    tools, _ = finished(AGENT.with_text({"traffic.agent_tools_tokens": "40000", "fleet.memory_gb": "64"}))
    assert late_repeat_share(tools.requests) > 0.98  # more shared head: more repetition
    short, _ = finished(AGENT.with_text({"traffic.agent_tools_tokens": "0", "traffic.system_tokens": "300",
                                         "traffic.dynamic_at": "100"}))
    assert late_repeat_share(short.requests) < 0.95


def test_each_call_is_the_previous_prompt_its_answer_and_one_tool_result():
    run, _ = finished(AGENT)
    by_run = {}
    for r in run.requests:
        by_run.setdefault(r.session, []).append(r)
    checked = 0
    for calls in by_run.values():
        assert [c.turn for c in calls] == list(range(len(calls)))
        assert calls[0].keys[-1] == ("task", calls[0].session)
        for before, call in zip(calls, calls[1:]):
            assert call.keys == before.keys + (before.answer_key, ("result", call.session, call.turn))
            assert call.sizes[-2] == before.answer_tokens
            assert call.cacheable_tokens == call.prompt_tokens - call.user_tokens  # all but the tool result
            checked += 1
    assert checked > 200
    heads = {r.keys[:3] for r in run.requests}  # system prompt (two pieces) and its tools: shared by runs
    assert len(heads) <= AGENT.traffic.system_prompts and all(h[2][0] == "tools" for h in heads)


def test_each_call_is_sent_a_tools_time_after_the_answer_before_it():
    run, result = finished(AGENT)
    first_token = {s.request.id: s.start_s + s.prefill_s for s in run.served}  # lab mode: the answer is out then
    drawn = run.agents.runs
    last = {}
    for r in run.requests:
        if r.session in last:
            prev = last[r.session]
            assert r.arrival_s == pytest.approx(first_token[prev.id] + drawn[r.session].calls[prev.turn][2], abs=1e-9)
        last[r.session] = r
    assert result.requests == len(run.requests) == sum(len(d.calls) for d in drawn)


def test_agent_runs_are_closed_loop_in_serving_mode_too():
    s = AGENT.with_text({"fleet.decode": "true", "hardware.preset": "article_14b_h100", "duration_s": "60"})
    run, result = finished(s)
    done = {seq.request.id: seq.done_s for seq in run.served}
    last = {}
    for r in sorted((seq.request for seq in run.served), key=lambda r: r.id):
        if r.session in last:
            prev = last[r.session]
            assert r.arrival_s == pytest.approx(done[prev.id] + run.agents.runs[r.session].calls[prev.turn][2], abs=1e-9)
        last[r.session] = r
    assert result.requests == len(run.agents.sent) and result.rejected == 0
    assert result.configured_rps >= result.offered_rps  # waiting for answers only ever delays calls


def test_chat_traffic_ignores_the_agent_keys():
    agent_keys = {"traffic.agent_rate": "0.5", "traffic.agent_fanout": "4", "traffic.agent_warm_first": "true"}
    plain, tuned = simulate(Scenario()), simulate(Scenario().with_text(agent_keys))
    assert plain.records == tuned.records and plain.summary() == tuned.summary()


def test_the_fleet_never_changes_what_an_agent_says():
    contents = []
    for router in ("least_loaded", "cache_aware"):
        run, _ = finished(FANOUT.with_text({"router.kind": router}))
        contents.append(sorted((r.session, r.turn, r.keys, r.sizes, r.answer_tokens) for r in run.requests))
    assert contents[0] == contents[1]
    assert everything(simulate(FANOUT)) == everything(simulate(FANOUT))
    assert simulate(FANOUT).records != simulate(FANOUT.with_text({"seed": "2"})).records


def fanouts(requests):
    groups = {}
    for r in requests:
        groups.setdefault((r.session, r.turn), []).append(r)
    return [g for g in groups.values() if len(g) > 1]


def test_a_racing_fan_out_sends_every_sub_call_at_once_on_one_shared_prefix():
    run, _ = finished(FANOUT)
    groups = fanouts(run.requests)
    assert groups and all(len(g) == 8 for g in groups)
    for g in groups:
        assert len({r.arrival_s for r in g}) == 1
        shared = g[0].keys[:-1]
        assert all(r.keys[:-1] == shared and r.keys[-1] == ("branch", r.session, r.turn, i) for i, r in enumerate(g))
        assert shared[-1] == ("result", g[0].session, g[0].turn) and g[0].sizes[-2] == 4000
        assert g[0].cacheable_tokens == g[0].prompt_tokens - 200 - 4000  # nothing cached yet has the shared result


def test_warm_first_sends_the_rest_at_the_first_sub_calls_first_token():
    run, _ = finished(FANOUT.with_text({"traffic.agent_warm_first": "true"}))
    first_token = {s.request.id: s.start_s + s.prefill_s for s in run.served}
    for g in fanouts(run.requests):
        rest = {r.arrival_s for r in g[1:]}
        assert rest == {first_token[g[0].id]}
        assert all(r.cacheable_tokens == r.prompt_tokens - 200 for r in g[1:])


def test_the_race_computes_the_shared_prefix_again_and_the_fix_computes_it_once():
    race = fanout_race(FANOUT)
    slow, fix = race["race"], race["warm_first"]
    assert slow["fanouts"] == fix["fanouts"] > 0 and slow["subcalls"] == fix["subcalls"] == 8 * fix["fanouts"]
    assert fix["computed"] == fix["fanouts"]  # one write per fan-out, every other sub-call reads
    assert slow["computed"] > 3 * fix["computed"]
    assert fix["span_p50_ms"] < slow["span_p50_ms"] and fix["ttft_p99_ms"] < slow["ttft_p99_ms"]
    assert fix["hit_rate"] > slow["hit_rate"] and fix["api_cached_usd"] < slow["api_cached_usd"]
    assert fix["api_uncached_usd"] == slow["api_uncached_usd"]  # the same calls, paid in full


def test_the_race_is_there_when_a_batch_admits_the_sub_calls_together():
    s = FANOUT.with_text({"fleet.decode": "true", "hardware.preset": "article_14b_h100", "fleet.token_budget": "8192",
                          "duration_s": "60"})
    race = fanout_race(s)
    assert race["warm_first"]["computed"] == race["warm_first"]["fanouts"] > 0
    assert race["race"]["computed"] > 2 * race["warm_first"]["computed"]


def test_fanout_command_sets_race_and_fix_side_by_side(capsys):
    assert main(["fanout", "--set", "duration_s=60"]) == 0
    out = capsys.readouterr().out
    assert "race" in out and "warm_first" in out
    assert main(["fanout", "--set", "traffic.kind=chat", "--set", "duration_s=20"]) == 0
    assert "no fan-outs" in capsys.readouterr().out


def test_agent_traffic_stops_past_the_limit_and_takes_timestamps_and_surges():
    with pytest.raises(TooManyRequests):
        simulate(AGENT, limit=50)
    run, _ = finished(AGENT.with_text({"events": "timestamp@60"}))
    late = [r for r in run.requests if r.arrival_s >= 60]
    assert late and all(r.keys[1][0] == "dyn" and r.cacheable_tokens == 200 for r in late)
    surge, _ = finished(AGENT.with_text({"events": "surge@0+179", "traffic.agent_rate": "0.5"}))
    assert max(r.system_prompt for r in surge.requests) >= AGENT.traffic.system_prompts


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10**6), replicas=st.integers(1, 4), memory=st.sampled_from(["0.25", "1", "4"]),
       fetch=st.sampled_from(["off", "rdma", "nvme", "host"]), kind=st.sampled_from(["chat", "agent"]),
       router=st.sampled_from(["least_loaded", "cache_aware", "cost"]), fanout=st.integers(0, 4),
       warm_first=st.booleans())
def test_every_call_is_served_once_and_trees_stay_sound_with_fetching_and_agents(seed, replicas, memory, fetch, kind,
                                                                                 router, fanout, warm_first):
    s = Scenario().with_text({"seed": str(seed), "fleet.replicas": str(replicas), "fleet.memory_gb": memory,
                              "fleet.fetch": fetch, "traffic.kind": kind, "router.kind": router, "duration_s": "20",
                              "traffic.agent_rate": "0.5", "traffic.agent_steps": "6", "traffic.agent_fanout": str(fanout),
                              "traffic.agent_fanout_every": "2", "traffic.agent_warm_first": str(warm_first).lower()})
    run = Run(s)
    while run.step():
        for r in run.replicas:
            assert r.tree.total_tokens <= r.tree.capacity
    for r in run.replicas:
        r.tree.check_invariants()
        assert r.tree.locked_tokens == 0
    result = run.finish()
    assert sorted(s.request.id for s in run.served) == list(range(len(run.requests))) == list(range(result.requests))
    assert all(0 <= s.fetched_tokens <= s.request.prompt_tokens - s.cached_tokens for s in run.served)
    assert result.fetched_tokens == sum(s.fetched_tokens for s in run.served)
    assert (fetch == "off") <= (result.fetched_tokens == 0)
    assert everything(result) == everything(simulate(s))
