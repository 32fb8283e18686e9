"""Prefill and decode (issue 13): the roofline, the stall, the split and the order of the queue."""

import bisect
import json
import subprocess
import sys

import pytest
from helpers import everything
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.page.controls import CONTROLS
from missions import find_mission, score
from missions.scoring import figures
from model import SLO_SHARE, Request, Scenario, queue_compare, roofline_of, simulate, split_compare, stall_of
from model.engines.serving_run import ServingRun
from model.gpus.hardware import build
from model.studies.queueorder import queue_figures
from model.studies.roofline import intensity, ridge, roofline, tokens_to_ridge
from model.studies.split import split_figures
from model.studies.stall import CO_ANSWER, stall_demo

ARTICLE = build("article_14b_h100")


# -- the roofline --------------------------------------------------------------------------------

def test_the_articles_preset_has_its_ridge_at_295_and_a_decode_step_at_a_third_of_a_percent():
    r = roofline_of(Scenario())
    assert r["hardware"] == "article_14b_h100" and r["notes"]  # the lab preset prices the article's
    assert r["ridge_flops_per_byte"] == pytest.approx(989 / 3.35, rel=1e-5)
    assert round(r["ridge_flops_per_byte"]) == 295
    assert round(r["decode_peak_share"] * 100, 1) == 0.3
    assert r["prefill_peak_share"] == 1.0 and r["prefill"]["flops_per_byte"] > 25 * r["ridge_flops_per_byte"]
    assert r["inputs"] == {"batch": 1, "prefill_tokens": 30_000}


def test_the_roofline_moves_with_the_preset_and_its_inputs():
    h100 = roofline_of(Scenario())
    a100 = roofline_of(Scenario().with_text({"hardware.preset": "llama8b_a100"}))
    assert a100["hardware"] == "llama8b_a100" and not a100["notes"]
    assert round(a100["ridge_flops_per_byte"]) == 153  # 312 TFLOP/s over 2.039 TB/s
    assert a100["decode_peak_share"] > 1.9 * h100["decode_peak_share"]  # a lower ridge: decode sits nearer it
    h200 = roofline_of(Scenario().with_text({"hardware.preset": "article_14b_h200"}))
    assert round(h200["ridge_flops_per_byte"]) == 206
    batch = roofline_of(Scenario().with_text({"roofline.batch": "64"}))
    assert batch["decode_peak_share"] == pytest.approx(64 * h100["decode_peak_share"], rel=1e-3)
    short = roofline_of(Scenario().with_text({"roofline.prefill_tokens": "100"}))
    assert short["prefill_peak_share"] < 0.35  # a 100-token prefill is still left of the ridge
    faster = roofline_of(Scenario().with_text({"hardware.hbm_tb_s": "6.7"}))
    assert faster["ridge_flops_per_byte"] == pytest.approx(h100["ridge_flops_per_byte"] / 2, rel=1e-5)


def test_the_roof_is_flat_past_the_ridge_and_a_slope_before_it():
    r = roofline_of(Scenario())
    xs, ys = r["series"]["flops_per_byte"], r["series"]["attainable_tflops"]
    assert len(xs) == len(ys) and xs == sorted(xs) and xs[0] <= 0.01 and xs[-1] >= 5e6
    for x, y in zip(xs, ys):
        assert y == pytest.approx(min(989.0, x * 3.35), rel=1e-5)
    assert r["ridge_flops_per_byte"] in xs and r["decode"]["flops_per_byte"] in xs


def test_tokens_to_ridge_is_the_fewest_tokens_past_the_ridge():
    t = tokens_to_ridge(ARTICLE)
    assert intensity(ARTICLE, t) >= ridge(ARTICLE) > intensity(ARTICLE, t - 1)
    assert t == 296
    bare = roofline(build("llama8b_a100"), 4, 100)  # the pure function, on any profile
    assert bare["decode"]["tokens"] == 4 and bare["ridge_flops_per_byte"] == 312 / 2.039


def test_the_roofline_verb_prints_json():
    out = subprocess.run([sys.executable, "-m", "lab", "roofline", "--json", "--set", "roofline.batch=8"],
                         capture_output=True, text=True, check=True).stdout
    data = json.loads(out)
    assert data["inputs"]["batch"] == 8 and round(data["ridge_flops_per_byte"]) == 295


# -- the stall -----------------------------------------------------------------------------------

def serving(**text):
    base = {"fleet.decode": "true", "hardware.preset": "article_14b_h100"}
    return Scenario().with_text(base | {k.replace("__", "."): str(v) for k, v in text.items()})


def lone(rid, prompt, answer, at=0.0):
    return Request(rid, at, rid, 0, 0, (("p", rid),), (prompt,), prompt, answer, None, prompt, 0, "prompt/0")


@pytest.mark.parametrize("chunked", ["true", "false"])
def test_a_30000_token_prefill_joining_a_batch_raises_the_co_runners_time_between_tokens(chunked):
    s = serving(fleet__replicas=1, fleet__cache="false", fleet__memory_gb=32, fleet__chunked_prefill=chunked)
    batch = [lone(i, 200, 300) for i in range(6)]
    alone = ServingRun(s, batch).finish()
    joined = ServingRun(s, batch + [lone(6, 30_000, 2, at=0.5)]).finish()
    before = {r.session: r for r in alone.records}
    after = {r.session: r for r in joined.records}
    step = ARTICLE.decode_step_s(6 * 500) * 1000  # a decode step of the whole batch, at its longest
    for i in range(6):
        assert before[i].stall_ms < step * 1.01  # alone: every gap is one decode step
        assert after[i].tpot_ms > before[i].tpot_ms * 1.4  # the mean rises...
        assert after[i].stall_ms > 10 * before[i].stall_ms  # ...and one gap spikes
    if chunked == "false":  # prefill-first: the decodes wait out the whole 30,000-token prefill
        assert after[0].stall_ms >= ARTICLE.prefill_s(30_000) * 1000
    else:  # chunked: each gap is one step carrying a chunk of the token budget
        assert after[0].stall_ms < ARTICLE.step_s(2048, 30_000 + 6 * 500) * 1000 * 1.01


def test_the_stall_demo_shows_the_spike_and_chunking_bounds_it():
    d = stall_demo(Scenario())
    assert d["hardware"] == "article_14b_h100" and d["prefill_tokens"] == 30_000
    alone, chunked, first = d["alone"], d["chunked"], d["prefill_first"]
    assert len(alone["gap_ms"]) == len(alone["step_end_s"]) == CO_ANSWER - 1  # one gap between each two tokens
    assert max(alone["gap_ms"]) < 10 and alone["long_ttft_ms"] is None
    assert max(chunked["gap_ms"]) > 100 > max(alone["gap_ms"])  # over the article's 100 ms per token
    assert max(first["gap_ms"]) > 2000 and first["co_stall_ms"] == max(first["gap_ms"])
    assert first["co_tpot_ms"] < d["tbt_slo_ms"]  # the mean stays under the target: only the longest gap shows it


def test_slo_shares_count_requests_within_each_target():
    light = simulate(serving(fleet__token_budget=512))  # chunks of 512 tokens: every step well under 100 ms
    assert light.ttft_slo_met == 1.0 and light.tbt_slo_met == 1.0
    default = simulate(serving())  # chunks of 2,048 tokens take 145 ms: whoever shares a step with one stalls
    stalls = [r.stall_ms for r in default.records if r.stall_ms is not None]
    assert 0.2 < default.tbt_slo_met == round(sum(s <= 100 for s in stalls) / len(stalls), 6) < 0.8
    one = simulate(serving(fleet__replicas=1))  # one replica cannot keep up: first tokens come late
    assert one.ttft_slo_met < 0.5
    ttfts = [r.ttft_ms for r in one.records]
    assert one.ttft_slo_met == round(sum(t <= 1000 for t in ttfts) / len(ttfts), 6)
    lab = simulate(Scenario())
    assert lab.ttft_slo_met is None and lab.tbt_slo_met is None


def test_stall_of_lists_each_requests_mean_and_longest_gap():
    result = simulate(serving())
    f = stall_of(result)
    n = sum(1 for r in result.records if r.tpot_ms is not None)
    assert len(f["arrival_s"]) == len(f["tpot_ms"]) == len(f["stall_ms"]) == n
    assert all(s >= t for s, t in zip(f["stall_ms"], f["tpot_ms"]))
    assert f["tbt_slo_met"] == result.tbt_slo_met < 0.8 and f["mean_within_slo"] == 1.0  # the mean hides the stalls


# -- the split -----------------------------------------------------------------------------------

def test_a_split_request_gets_its_first_token_from_prefill_and_the_rest_after_the_handoff():
    s = serving(fleet__prefill_replicas=1, fleet__decode_replicas=1, fleet__cache="false", fleet__memory_gb=16)
    run = ServingRun(s, [lone(0, 2000, 3)])
    result = run.finish()
    rec = result.records[0]
    first = ARTICLE.prefill_s(2000)
    handoff = 2000 * ARTICLE.kv_bytes_per_token / (800e9 / 8)  # transfer.rdma_gbps over fleet.handoff=rdma
    done = first + handoff + ARTICLE.decode_steps_s(2, 1, 2001)
    assert rec.replica == 0 and rec.ttft_ms == pytest.approx(first * 1000, abs=0.001)
    assert rec.e2e_ms == pytest.approx(done * 1000, abs=0.001)
    assert rec.stall_ms == pytest.approx((handoff + ARTICLE.decode_step_s(2001)) * 1000, abs=0.001)
    assert run.handoff_s == pytest.approx(handoff)
    assert [r.requests for r in result.replicas] == [1, 0] and result.replicas[1].utilisation > 0
    assert any("split: 1 prefill and 1 decode" in note for note in result.notes)


def test_a_slower_handoff_link_delays_the_second_token():
    base = dict(fleet__prefill_replicas=1, fleet__decode_replicas=1, fleet__cache="false", fleet__memory_gb=16)
    rdma = ServingRun(serving(**base), [lone(0, 20_000, 3)]).finish().records[0]
    nvme = ServingRun(serving(**base, fleet__handoff="nvme"), [lone(0, 20_000, 3)]).finish().records[0]
    extra = 20_000 * ARTICLE.kv_bytes_per_token * (1 / 7e9 - 1 / 1e11) * 1000
    assert nvme.ttft_ms == rdma.ttft_ms and nvme.stall_ms == pytest.approx(rdma.stall_ms + extra, abs=0.002)


SPLIT_SCENARIOS = st.fixed_dictionaries({
    "fleet.prefill_replicas": st.sampled_from(["1", "2", "3"]),
    "fleet.decode_replicas": st.sampled_from(["1", "2"]),
    "fleet.cache": st.sampled_from(["true", "false"]),
    "fleet.memory_gb": st.sampled_from(["1", "4"]),
    "fleet.chunked_prefill": st.sampled_from(["true", "false"]),
    "fleet.queue_order": st.sampled_from(["fcfs", "longest_prefix_first"]),
    "router.kind": st.sampled_from(["least_loaded", "cache_aware", "round_robin"]),
    "traffic.session_rate": st.sampled_from(["0.5", "2", "5"]),
    "seed": st.integers(0, 10**6).map(str),
    "duration_s": st.sampled_from(["15", "30"]),
    "events": st.sampled_from(["", "burst@3+10x4"]),
})


@settings(max_examples=25, deadline=None)
@given(SPLIT_SCENARIOS)
def test_a_split_fleet_keeps_every_budget_and_serves_every_request_once(text):
    s = Scenario().with_text(text | {"fleet.decode": "true"})
    run = ServingRun(s)
    while run.step():
        for replica in run.fleet:
            replica.check(run.loop.now)
    result = run.finish()
    assert everything(result) == everything(simulate(s))
    for replica in run.fleet:
        assert replica.tree.locked_tokens == 0 and replica.hold == 0 and replica.private_tokens(run.loop.now) == 0
    assert len(result.replicas) == s.fleet.prefill_replicas + s.fleet.decode_replicas
    seen = set()
    for rec in result.records:
        assert (rec.session, rec.turn) not in seen and rec.replica < s.fleet.prefill_replicas
        seen.add((rec.session, rec.turn))
        assert rec.e2e_ms >= rec.ttft_ms >= rec.queue_ms >= 0
        if rec.stall_ms is not None:
            assert rec.stall_ms >= rec.tpot_ms - 0.002


# every turn brings 1,000 to 4,000 new tokens: most steps of a co-located replica carry a prefill chunk
PREFILL_HEAVY = dict(traffic__user_min=1000, traffic__user_max=4000, traffic__session_rate=1,
                     router__kind="cache_aware", fleet__memory_gb=8, duration_s=120)


def test_at_equal_gpus_on_prefill_heavy_traffic_the_split_meets_the_tbt_target_for_more_requests():
    together = simulate(serving(**PREFILL_HEAVY, fleet__replicas=4))
    apart = simulate(serving(**PREFILL_HEAVY, fleet__prefill_replicas=1, fleet__decode_replicas=3))
    assert len(together.replicas) == len(apart.replicas) == 4
    assert apart.requests == together.requests  # the same sessions, all served
    assert together.tbt_slo_met < 0.5 and apart.tbt_slo_met > 0.95
    assert apart.stall_p99_ms < 100 < together.stall_p50_ms
    assert apart.ttft_p50_ms > together.ttft_p50_ms  # the price here: one GPU prefills for four


def test_split_compare_runs_both_on_the_same_traffic_and_gpus():
    c = split_compare(Scenario())
    assert (c["gpus"], c["prefill_replicas"], c["decode_replicas"]) == (4, 1, 3) and c["notes"]
    assert c["slo"] == {"ttft_ms": 1000, "tbt_ms": 100, "share": SLO_SHARE}
    co, sp = c["colocated"], c["split"]
    assert co["gpus"] == sp["gpus"] == 4 and co["requests"] == sp["requests"]
    assert co["meets_ttft"] and not co["meets_tbt"] and sp["meets_tbt"]
    assert co["tbt_slo_met"] < 0.6 < 0.99 <= sp["tbt_slo_met"]
    assert len(co["series"]["start_s"]) == len(sp["series"]["stall_p99_ms"]) == 60
    chosen = split_compare(serving(fleet__prefill_replicas=2, fleet__decode_replicas=3))
    assert (chosen["gpus"], chosen["prefill_replicas"]) == (5, 2) and not chosen["notes"]
    assert split_compare(serving(fleet__replicas=1))["split"] is None
    f = split_figures(simulate(serving(fleet__prefill_replicas=1, fleet__decode_replicas=2)))
    assert f["gpus"] == 3 and f["meets_ttft"] == (f["ttft_slo_met"] >= SLO_SHARE)


def test_half_a_split_or_a_split_in_lab_mode_runs_co_located_and_says_so():
    # the page sets one key at a time: on the way to a split, one of the two alone must not be an error
    half = serving(fleet__prefill_replicas=2)
    assert not half.split and half.gpus == 4
    result = simulate(half)
    assert len(result.replicas) == 4 and "a split needs both above 0" in " ".join(result.notes)
    assert result.records == simulate(serving()).records  # ...exactly as co-located
    lab = Scenario().with_text({"fleet.prefill_replicas": "1", "fleet.decode_replicas": "1"})
    assert not lab.split and lab.gpus == 4 and "lab mode has no decode" in " ".join(simulate(lab).notes)
    full = serving(fleet__prefill_replicas=1, fleet__decode_replicas=2)
    assert full.split and full.gpus == 3


def test_the_split_verb_prints_both_setups():
    out = subprocess.run([sys.executable, "-m", "lab", "split", "--json"], capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out)["split"]["meets_tbt"] is True
    text = subprocess.run([sys.executable, "-m", "lab", "split"], capture_output=True, text=True, check=True).stdout
    assert "co-located" in text and "split 1 + 3" in text


# -- queue order ---------------------------------------------------------------------------------

def shared(rid, at, head, new=200, answer=5):
    """A request whose prompt is segment `head` (1,000 tokens, shared by name) and a new part of its own."""
    return Request(rid, at, rid, 0, 0, (head, ("own", rid)), (1000, new), new, answer, None, 1000 + new, 1000,
                   "prompt/0")


def test_longest_prefix_first_admits_the_request_whose_prefix_is_cached_ahead_of_an_earlier_one():
    # "warm" is cached by the first request; while that one prefills, "cold" arrives, then another "warm"
    requests = [shared(0, 0.0, "warm"), shared(1, 0.01, "cold"), shared(2, 0.02, "warm")]
    one = dict(fleet__replicas=1, fleet__memory_gb=16, fleet__max_running=1, fleet__token_budget=2048)
    fcfs = {r.session: r for r in ServingRun(serving(**one), requests).finish().records}
    lpf_result = ServingRun(serving(**one, fleet__queue_order="longest_prefix_first"), requests).finish()
    lpf = {r.session: r for r in lpf_result.records}
    assert overtakings(lpf_result, 0.0) == [(0.01, lpf[2].arrival_s + lpf[2].queue_ms / 1000)]  # the check sees it
    assert fcfs[1].queue_ms < fcfs[2].queue_ms + 10  # first come first served: cold, then warm
    assert lpf[2].arrival_s + lpf[2].queue_ms / 1000 < lpf[1].arrival_s + lpf[1].queue_ms / 1000  # warm jumps ahead
    assert lpf[2].cached_tokens == 1000 and lpf[1].cached_tokens == 0
    guarded = {r.session: r for r in ServingRun(serving(**one, fleet__queue_order="longest_prefix_first",
                                                        fleet__queue_guard_s=0), requests).finish().records}
    assert [guarded[i].queue_ms for i in (1, 2)] == [fcfs[i].queue_ms for i in (1, 2)]  # guard 0: every wait is overdue


def overtakings(result, guard_s):
    """(arrival, admission of a later arrival) for each request on a replica that a later arrival was admitted
    before, at a moment when it had waited `guard_s` or more; [] if there is none."""
    by_replica = {}
    for r in result.records:
        by_replica.setdefault(r.replica, []).append((r.arrival_s, r.arrival_s + r.queue_ms / 1000))
    found = []
    for rows in by_replica.values():
        rows.sort()
        later: list[float] = []  # admission times of the requests that arrived after the one at hand, sorted
        for arrive, admit in reversed(rows):
            i = bisect.bisect_left(later, arrive + guard_s + 2e-6)  # 2e-6: records round to the microsecond
            if i < len(later) and later[i] < admit - 2e-6:
                found.append((arrive, later[i]))
            bisect.insort(later, admit)
    return found


QUEUED = st.fixed_dictionaries({
    "fleet.queue_guard_s": st.sampled_from(["0.5", "2", "5"]),
    "fleet.memory_gb": st.sampled_from(["1", "2", "4"]),
    "router.kind": st.sampled_from(["round_robin", "cache_aware", "least_loaded"]),
    "traffic.session_rate": st.sampled_from(["3", "6"]),
    "seed": st.integers(0, 10**6).map(str),
    "duration_s": st.sampled_from(["20", "40"]),
    "events": st.sampled_from(["", "burst@5+10x4"]),
})


@settings(max_examples=25, deadline=None)
@given(QUEUED)
def test_longest_prefix_first_never_lets_a_later_request_past_one_that_waited_out_its_guard(text):
    s = serving(**{k.replace(".", "__"): v for k, v in text.items()}, fleet__queue_order="longest_prefix_first")
    result = simulate(s)
    assert overtakings(result, s.fleet.queue_guard_s) == []  # overtaken only while it had waited less than the guard
    assert overtakings(simulate(s.with_values({"fleet.queue_order": "fcfs"})), 0.0) == []  # fcfs: never overtaken


def test_queue_order_changes_nothing_while_nobody_waits_and_trades_the_tail_under_a_burst():
    q = queue_compare(Scenario())
    assert q["fcfs"] == q["longest_prefix_first"] and q["notes"]  # default traffic: no queue to reorder
    assert q["fcfs"] == queue_figures(simulate(serving()))
    burst = queue_compare(serving(events="burst@60+30x4", router__kind="round_robin", fleet__memory_gb=2,
                                  fleet__queue_guard_s=30))
    fcfs, lpf = burst["fcfs"], burst["longest_prefix_first"]
    assert lpf["hit_rate"] > fcfs["hit_rate"] + 0.03 and lpf["ttft_p50_ms"] < fcfs["ttft_p50_ms"] / 2
    assert lpf["ttft_p99_ms"] > fcfs["ttft_p99_ms"] and lpf["max_queue_ms"] > fcfs["max_queue_ms"]  # the price


# -- the mission ---------------------------------------------------------------------------------

def test_the_split_mission_cannot_be_won_co_located_and_counts_a_splits_gpus():
    m = find_mission("split-decode")
    start = score(m, m.start, simulate(m.start))
    assert start.stars == 0 and "42.8%, not yet" in " ".join(start.reasons)
    eight = m.start.with_text({"fleet.replicas": "8"})  # more co-located replicas: still every chunk stalls
    assert score(m, eight, simulate(eight)).stars == 0
    three = m.start.with_text({"fleet.prefill_replicas": "1", "fleet.decode_replicas": "2", "fleet.replicas": "16"})
    assert figures(three, simulate(three))["gpus"] == 3  # fleet.replicas is not used by a split
    assert score(m, three, simulate(three)).stars == 3
    assert set(m.controls) <= {c.key for c in CONTROLS}  # each one a control on the page


def test_the_stall_and_queue_verbs_print_their_figures():
    stall = json.loads(subprocess.run([sys.executable, "-m", "lab", "stall", "--json", "--set",
                                       "roofline.prefill_tokens=10000"], capture_output=True, text=True,
                                      check=True).stdout)
    assert stall["prefill_tokens"] == 10_000 and stall["prefill_first"]["co_stall_ms"] > 600
    queue = subprocess.run([sys.executable, "-m", "lab", "queue"], capture_output=True, text=True, check=True).stdout
    assert "longest_prefix_first" in queue and "guard 5 s" in queue
    bad = subprocess.run([sys.executable, "-m", "lab", "queue", "--set", "fleet.queue_order=lifo"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "use one of fcfs, longest_prefix_first" in bad.stderr
    assert "Traceback" not in bad.stderr
