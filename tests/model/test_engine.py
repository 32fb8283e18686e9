"""Whole runs: every request served once, FCFS, determinism, and the lab's lessons."""

import hashlib
import json
from collections import defaultdict

import pytest
from helpers import canonical, everything, fleet, request, tree_nodes
from hypothesis import given, settings
from hypothesis import strategies as st

from model import ROUTERS, Scenario, generate, simulate
from model.engines.lab import Run
from model.engines.replica import Served
from model.metrics import percentile


def run(**text):
    return simulate(Scenario().with_text({k.replace("__", "."): str(v) for k, v in text.items()}))


# -- exact small cases -----------------------------------------------------

def test_one_replica_serves_in_arrival_order_and_ttft_is_wait_plus_prefill():
    result = run(fleet__replicas=1, duration_s=60, traffic__session_rate=3)
    clock = 0.0
    for rec in result.records:
        start = rec.arrival_s + rec.queue_ms / 1000
        assert start >= clock - 3e-6  # FCFS (figures are rounded to 1e-6 s): never before the previous request ended
        assert rec.ttft_ms == pytest.approx(rec.queue_ms + rec.prefill_ms, abs=0.002)
        expected = 15 + (rec.prompt_tokens - rec.cached_tokens) / 10_000 * 1000
        assert rec.prefill_ms == pytest.approx(expected, abs=0.001)
        clock = start + rec.prefill_ms / 1000


def test_cache_off_matches_nothing():
    result = run(fleet__cache="false")
    assert result.hit_rate == 0.0
    assert all(rec.cached_tokens == 0 for rec in result.records)


def test_second_turn_on_the_same_replica_reuses_the_first_turn_and_its_answer():
    result = run(fleet__replicas=1, duration_s=120, traffic__session_rate=0.05)
    by_session = defaultdict(list)
    for rec in result.records:
        by_session[rec.session].append(rec)
    pairs = [s[:2] for s in by_session.values() if len(s) >= 2]
    assert pairs
    for _, second in pairs:
        assert second.cached_tokens == second.prompt_tokens - second.user_tokens


def test_no_memory_means_no_hits():
    assert run(fleet__memory_gb=0).hit_rate == 0.0


def test_percentile_is_nearest_rank():
    values = list(range(1, 101))
    assert percentile(values, 50) == 50 and percentile(values, 99) == 99 and percentile(values, 100) == 100
    assert percentile([7.0], 99) == 7.0 and percentile([], 50) == 0.0


def test_summary_figures_agree_with_the_records():
    result = run(router__kind="cache_aware")
    recs = result.records
    assert result.requests == len(recs)
    assert result.hit_rate == pytest.approx(sum(r.cached_tokens for r in recs) / sum(r.prompt_tokens for r in recs),
                                            abs=1e-6)
    ttfts = sorted(r.ttft_ms for r in recs)
    assert result.ttft_p50_ms == ttfts[(len(ttfts) + 1) // 2 - 1]  # nearest rank: the ceil(n / 2)-th smallest
    assert result.ttft_p99_ms == percentile(ttfts, 99)
    assert sum(r.requests for r in result.replicas) == result.requests
    assert sum(result.series.requests) == result.requests
    assert result.prefill_gpu_s == pytest.approx(sum(r.prefill_ms for r in recs) / 1000, abs=1e-3)
    assert len(result.series.replica_load) == len(result.replicas)


# -- invariants over random scenarios -------------------------------------

SCENARIOS = st.fixed_dictionaries({
    "fleet.replicas": st.integers(1, 6).map(str),
    "router.kind": st.sampled_from(sorted(ROUTERS)),
    "fleet.cache": st.sampled_from(["true", "false"]),
    "fleet.memory_gb": st.sampled_from(["0", "0.2", "1", "8"]),
    "traffic.session_rate": st.sampled_from(["0.5", "2", "6"]),
    "dynamic_text": st.sampled_from(["none", "top", "bottom"]),
    "router.spill_threshold_s": st.sampled_from(["off", "0", "0.3"]),
    "seed": st.integers(0, 10**6).map(str),
    "duration_s": st.sampled_from(["20", "45"]),
    "events": st.sampled_from(["", "timestamp@10", "surge@5+10", "burst@3+10x4,timestamp@15"]),
})


@settings(max_examples=60, deadline=None)
@given(SCENARIOS)
def test_every_request_is_served_once_first_come_first_served(text):
    scenario = Scenario().with_text(text)
    requests = generate(scenario)
    result = simulate(scenario)
    assert [(r.arrival_s, r.session, r.turn) for r in result.records] == \
           [(round(r.arrival_s, 6), r.session, r.turn) for r in requests]
    by_replica = defaultdict(list)
    for rec in result.records:
        assert 0 <= rec.replica < scenario.fleet.replicas
        assert 0 <= rec.cached_tokens <= rec.prompt_tokens
        assert rec.queue_ms >= 0 and rec.prefill_ms >= scenario.fleet.overhead_ms - 1e-3
        by_replica[rec.replica].append(rec)
    for recs in by_replica.values():  # arrival order; each starts after the one before ends
        end = 0.0
        for rec in recs:
            start = rec.arrival_s + rec.queue_ms / 1000
            assert start >= end - 3e-6
            end = start + rec.prefill_ms / 1000


@settings(max_examples=25, deadline=None)
@given(SCENARIOS)
def test_trees_stay_within_capacity_and_end_unlocked(text):
    run = Run(Scenario().with_text(text))
    finished = 0
    while run.step():
        if len(run.served) > finished:  # a prefill just ended: check its replica's tree
            finished = len(run.served)
            tree = run.replicas[run.served[-1].replica].tree
            tree.check_invariants()  # capacity, totals, locks, LRU heap
    result = run.finish()
    assert finished == result.requests
    for replica in run.replicas:
        assert replica.tree.locked_tokens == 0 and not replica.queue and replica.running is None


# -- equal times ------------------------------------------------------------

def test_a_prefill_that_ends_as_a_request_arrives_is_cached_before_that_request_is_routed():
    # Request 0 prefills 10,000 tokens at 10,000 tokens/s with no overhead: it ends at exactly 1.0 s,
    # when request 1 arrives. Completions run before arrivals, so request 1 finds its prefix on
    # replica 0; were the arrival first, both trees would be empty and the tie would go to replica 1.
    scenario = Scenario().with_text({"fleet.replicas": "2", "router.kind": "cache_aware", "fleet.overhead_ms": "0",
                                     "fleet.memory_gb": "8"})
    first = request(0, ["s"], sizes=[10_000], arrival_s=0.0)
    second = request(1, ["s", "u"], sizes=[10_000, 50], arrival_s=1.0, session=0, turn=1)
    result = simulate(scenario, [first, second])
    assert [r.replica for r in result.records] == [0, 0]
    assert result.records[1].cached_tokens == 10_000 and result.records[1].queue_ms == 0.0


# -- determinism -----------------------------------------------------------

def test_same_scenario_same_bytes():
    s = Scenario().with_text({"router.kind": "cache_aware", "events": "burst@100+30x3,timestamp@150"})
    assert everything(simulate(s)) == everything(simulate(s))
    assert everything(simulate(s)) != everything(simulate(s.with_text({"seed": "2"})))


def traffic_digest(result):
    rows = [(r.arrival_s, r.session, r.turn, r.system_prompt, r.prompt_tokens, r.user_tokens, r.answer_tokens)
            for r in result.records]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def test_changing_router_or_fleet_leaves_the_request_stream_identical():
    base = traffic_digest(run())
    for change in ({"router__kind": "cache_aware"}, {"router__kind": "random"}, {"fleet__replicas": 7},
                   {"fleet__cache": "false"}, {"fleet__memory_gb": 0.5}, {"fleet__overhead_ms": 40}):
        assert traffic_digest(run(**change)) == base, change


PRESETS = {
    "default": {},
    "eight_cache_aware": {"fleet.replicas": "8", "router.kind": "cache_aware"},
    "timestamp_top": {"dynamic_text": "top", "router.kind": "consistent_hash"},
    "surge_and_burst": {"events": "surge@60+60,burst@150+30x3", "fleet.memory_gb": "1", "router.kind": "cache_aware"},
    "no_cache_round_robin": {"fleet.cache": "false", "router.kind": "round_robin"},
}

GOLDEN = {  # sha256 of each preset's lab-mode fields and records (helpers.canonical); change only on purpose
    "default": "65e9b9aac4b46505d7f60f1ddae4648686b7ca51d0df267350761599b1ce53d6",
    "eight_cache_aware": "f9e5ad708454f050dab82e6e49b5d5299748428629317ac6283268bbb3474f87",
    "no_cache_round_robin": "11b7ecbe82122da25be98de29fc02d2a74a9b06924a5ed3362a7c95c81af5cf4",
    "surge_and_burst": "516c74a86e8f114e90aa5ef2c5215cd623886c3d60a1c60da80ab09737a32140",
    "timestamp_top": "5125603ec78a6d094eccd9a568b165721292ee530a622619d7f56a364b48ec4a",
}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_golden_result_of_each_preset(name):
    digest = hashlib.sha256(canonical(simulate(Scenario().with_text(PRESETS[name]))).encode()).hexdigest()
    assert digest == GOLDEN[name], f"{name}: behaviour changed; new digest {digest}"


# -- the lessons of the lab ---------------------------------------------------

def test_moving_the_timestamp_from_top_to_bottom_raises_the_hit_rate_sharply():
    top = run(router__kind="cache_aware", dynamic_text="top")
    bottom = run(router__kind="cache_aware", dynamic_text="bottom")
    assert top.hit_rate < 0.15
    assert bottom.hit_rate > top.hit_rate + 0.5
    assert bottom.ttft_p50_ms < top.ttft_p50_ms / 3


def test_a_timestamp_injected_midway_drops_the_hit_rate_from_then_on():
    result = run(router__kind="cache_aware", events="timestamp@150", duration_s=300)
    hits = result.series.hit_rate
    assert min(hits[10:30]) > 0.7 and max(hits[31:]) < 0.2


def test_with_eight_replicas_cache_aware_beats_round_robin_by_a_wide_margin():
    rr = run(fleet__replicas=8, router__kind="round_robin")
    ca = run(fleet__replicas=8, router__kind="cache_aware")
    assert ca.hit_rate > rr.hit_rate + 0.2
    assert ca.recompute_gpu_s == 0 < rr.recompute_gpu_s
    assert ca.ttft_p50_ms < rr.ttft_p50_ms


def test_a_hot_prefix_without_spill_piles_up_and_a_threshold_brings_p99_down():
    hot = dict(fleet__replicas=8, router__kind="cache_aware", traffic__session_rate=8, duration_s=120)
    pinned = run(**hot, router__spill_threshold_s="off")
    spill = run(**hot, router__spill_threshold_s=0.5)
    busiest = max(pinned.replicas, key=lambda r: r.requests)
    assert busiest.requests > 2 * pinned.requests / 8  # more than twice its fair share
    assert max(max(b) for b in pinned.series.replica_backlog_s) > 1.0
    assert spill.ttft_p99_ms < pinned.ttft_p99_ms / 2


def test_more_memory_never_hurts_the_hit_rate_much_and_cache_beats_no_cache():
    on, off = run(), run(fleet__cache="false")
    assert on.ttft_p50_ms < off.ttft_p50_ms and on.prefill_gpu_s < off.prefill_gpu_s
    small, big = run(fleet__memory_gb=0.25, router__kind="cache_aware"), run(fleet__memory_gb=8, router__kind="cache_aware")
    assert big.hit_rate > small.hit_rate


@pytest.mark.parametrize("timed", [False, True])
def test_an_idle_replica_starting_at_once_is_enqueue_then_start_next(timed):
    """`Replica.start_now` (lab mode's path for a request routed to an idle replica) leaves the replica, its tree
    and the served request exactly as queueing it and starting the queue's head would."""
    def timing(uncached, before):
        return 0.02 + uncached * 1e-4 + before * 1e-7
    ways = []
    for fused in (False, True):
        [replica] = fleet(1)
        replica.timing = timing if timed else None
        first = request(0, ["sys", ("u", 0)], [3_000, 200])
        replica.enqueue(first)
        replica.start_next(0.0)
        replica.finish()
        later = request(1, ["sys", ("u", 0), ("answer", 0), ("u", 1)], [3_000, 200, 10, 150], arrival_s=1.0)
        if fused:
            served = replica.start_now(later, 1.0)
        else:
            replica.enqueue(later)
            served = replica.start_next(1.0)
        replica.tree.check_invariants()
        ways.append(({k: getattr(served, k) for k in Served.__slots__ if k != "lock"},
                     served.lock is not None, replica.busy_until, replica.busy_s, replica.queued_work_s,
                     len(replica.queue), replica.running is served, replica.last_routed, tree_nodes(replica.tree)))
    assert ways[0] == ways[1]
    assert ways[1][0]["cached_tokens"] == 3_210 and ways[1][0]["start_s"] == 1.0


def test_start_now_refuses_a_replica_that_is_not_idle():
    [replica] = fleet(1)
    replica.start_now(request(0, ["a"]), 0.0)
    with pytest.raises(RuntimeError, match="not idle"):
        replica.start_now(request(1, ["b"]), 0.0)
