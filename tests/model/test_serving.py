"""Serving mode: batched decode, one KV budget, sessions that wait; checked against step-by-step arithmetic."""

import hashlib
from collections import defaultdict

import pytest
from helpers import everything
from hypothesis import given, settings
from hypothesis import strategies as st

from model import ROUTERS, Request, Scenario, simulate
from model.engines.serving_run import ServingRun
from model.gpus.hardware import build

ARTICLE = build("article_14b_h100")


def scenario(**text):
    """Serving mode on the article's preset, with dotted keys written as `fleet__replicas=2`."""
    base = {"fleet.decode": "true", "hardware.preset": "article_14b_h100"}
    return Scenario().with_text(base | {k.replace("__", "."): str(v) for k, v in text.items()})


def lone(rid, prompt, answer, at=0.0, session=None):
    """A request of one `prompt`-token segment nobody else shares."""
    return Request(rid, at, rid if session is None else session, 0, 0, (("p", rid),), (prompt,), prompt, answer,
                   ("answer", rid), prompt, 0, "prompt/0")


ONE = dict(fleet__replicas=1, fleet__cache="false", fleet__memory_gb=16)


# -- exact small cases, against the profile's arithmetic -----------------------------

@pytest.mark.parametrize("chunked", ["true", "false"])
def test_prefill_alone_takes_2_12_s_for_30000_tokens_and_64_ms_for_900(chunked):
    s = scenario(**ONE, fleet__chunked_prefill=chunked)
    long, short = simulate(s, [lone(0, 30_000, 1), lone(1, 900, 1, at=10.0)]).records
    assert long.prefill_ms == pytest.approx(2120, rel=0.01) and short.prefill_ms == pytest.approx(64, rel=0.01)
    assert long.prefill_ms == pytest.approx(ARTICLE.prefill_s(30_000) * 1000, abs=0.002)
    assert short.ttft_ms == short.e2e_ms == pytest.approx(ARTICLE.prefill_s(900) * 1000, abs=0.002)


def test_lab_mode_on_a_gpu_preset_prefills_at_its_speed_and_sizes_memory_by_its_kv():
    s = Scenario().with_text({"hardware.preset": "article_14b_h100", "fleet.replicas": "1", "fleet.cache": "false"})
    (rec,) = simulate(s, [lone(0, 30_000, 1)]).records
    assert rec.prefill_ms == pytest.approx(2120, rel=0.01) and rec.e2e_ms is None  # prefill only: no decode
    assert simulate(s.with_text({"duration_s": "10"})).kv_budget_tokens == ARTICLE.tokens_in(4) == 26_214


def test_a_lone_request_decodes_one_token_a_step_reading_weights_and_its_growing_context():
    prompt, answer = 1000, 200
    (rec,) = simulate(scenario(**ONE), [lone(0, prompt, answer)]).records
    first = ARTICLE.step_s(prompt, 0)
    decode = sum(ARTICLE.decode_step_s(prompt + k) for k in range(1, answer))  # context: prompt + tokens so far
    assert rec.ttft_ms == pytest.approx(first * 1000, abs=0.001)
    assert rec.e2e_ms == pytest.approx((first + decode) * 1000, abs=0.001)
    assert rec.tpot_ms == pytest.approx(decode / (answer - 1) * 1000, abs=0.001)


def steps_of(profile, plan):
    """Reference: run decode-only steps one by one. `plan` is [(sequences, context tokens at the first step, steps)]."""
    t, out = 0.0, []
    for batch, kv, n in plan:
        for k in range(n):
            t += profile.decode_step_s(kv + batch * k)
        out.append(t)
    return out


def test_two_requests_share_steps_until_the_shorter_answer_ends():
    a, b = lone(0, 1000, 10), lone(1, 1500, 30)
    ra, rb = simulate(scenario(**ONE, fleet__token_budget=4096), [a, b]).records
    first = ARTICLE.step_s(2500, 0)  # both prompts in one step: 2,500 tokens, nothing to read yet
    assert ra.ttft_ms == rb.ttft_ms == pytest.approx(first * 1000, abs=0.001)
    # then 9 steps of two sequences (contexts 1001 + 1501), then 20 of one (1500 + 11)
    end_a, end_b = steps_of(ARTICLE, [(2, 2502, 9), (1, 1511, 20)])
    assert ra.e2e_ms == pytest.approx((first + end_a) * 1000, abs=0.001)
    assert rb.e2e_ms == pytest.approx((first + end_b) * 1000, abs=0.001)


def test_a_prompt_over_the_token_budget_is_split_and_the_decodes_ride_along():
    a, b = lone(0, 1000, 10), lone(1, 1500, 30)
    ra, rb = simulate(scenario(**ONE, fleet__token_budget=2048), [a, b]).records
    first = ARTICLE.step_s(2048, 0)  # a's 1,000 tokens and 1,048 of b's
    second = ARTICLE.step_s(452, 1048 + 1001)  # b's last 452, reading its first 1,048; a decodes beside it
    assert ra.ttft_ms == pytest.approx(first * 1000, abs=0.001)
    assert rb.ttft_ms == pytest.approx((first + second) * 1000, abs=0.001)


def test_a_request_arriving_mid_step_is_admitted_at_the_next_step_boundary():
    boundaries = [ARTICLE.step_s(1000, 0)]  # the first token; then step k reads the prompt and k tokens
    for k in range(1, 60):
        boundaries.append(boundaries[-1] + ARTICLE.decode_step_s(1000 + k))
    arrival = (boundaries[20] + boundaries[21]) / 2  # halfway through a step
    _, late = simulate(scenario(**ONE), [lone(0, 1000, 200), lone(1, 500, 5, at=arrival)]).records
    assert late.arrival_s + late.queue_ms / 1000 == pytest.approx(boundaries[21], abs=2e-6)


def test_prefill_first_stalls_decoding_for_the_whole_prefill_and_chunking_bounds_the_stall():
    requests = [lone(0, 1000, 200), lone(1, 30_000, 2, at=0.5)]
    alone = simulate(scenario(**ONE), requests[:1]).records[0]
    first = simulate(scenario(**ONE, fleet__chunked_prefill="false"), requests).records[0]
    chunked = simulate(scenario(**ONE, fleet__token_budget=2048), requests).records[0]
    assert alone.stall_ms < 10
    assert first.stall_ms == pytest.approx(ARTICLE.prefill_s(30_000) * 1000, rel=0.01)  # frozen for 2.1 s
    assert chunked.stall_ms == pytest.approx(ARTICLE.prefill_s(2048 - 1) * 1000, rel=0.02)  # one chunk's step
    assert first.e2e_ms > alone.e2e_ms + 2000


def test_a_second_turn_finds_its_history_and_answer_in_the_tree():
    s = scenario(fleet__replicas=1, traffic__session_rate=0.05, duration_s=120)
    by_session = defaultdict(list)
    for rec in simulate(s).records:
        by_session[rec.session].append(rec)
    pairs = [recs[:2] for recs in by_session.values() if len(recs) >= 2]
    assert pairs
    for _, second in pairs:
        assert second.cached_tokens == second.prompt_tokens - second.user_tokens


def test_a_request_bigger_than_the_whole_budget_is_rejected_and_the_run_ends():
    result = simulate(scenario(fleet__memory_gb=0.25))  # 1,638 tokens: a 1,500-token system prompt and more won't fit
    assert result.requests == 0 and result.rejected > 0


def test_the_lab_preset_runs_on_the_articles_hardware_and_the_result_says_so():
    result = simulate(Scenario().with_text({"fleet.decode": "true", "duration_s": "30"}))
    assert result.mode == "serving" and result.hardware == "article_14b_h100"
    assert result.notes and "article_14b_h100" in result.notes[0]
    assert result.kv_budget_tokens == ARTICLE.tokens_in(4)


# -- sessions wait for their answers -------------------------------------------------

def test_no_turn_is_sent_before_its_predecessors_last_token_plus_the_shortest_gap():
    result = simulate(scenario(traffic__session_rate=4, fleet__replicas=2, fleet__memory_gb=2))
    by_session = defaultdict(list)
    for rec in result.records:
        by_session[rec.session].append(rec)
    checked = 0
    for recs in by_session.values():
        recs.sort(key=lambda r: r.turn)
        assert [r.turn for r in recs] == list(range(len(recs)))
        for before, after in zip(recs, recs[1:]):
            assert after.arrival_s >= before.arrival_s + before.e2e_ms / 1000 + 2.0 - 2e-6
            checked += 1
    assert checked > 100


def content(result):
    """What was said and how long each pause after an answer was, per session and turn: no times."""
    rows = {(r.session, r.turn): r for r in result.records}
    out = []
    for (session, turn), r in sorted(rows.items()):
        nxt = rows.get((session, turn + 1))
        gap = None if nxt is None else round(nxt.arrival_s - r.arrival_s - r.e2e_ms / 1000, 3)
        out.append((session, turn, r.system_prompt, r.prompt_tokens, r.user_tokens, r.answer_tokens, gap))
    return out


def test_every_fleet_sees_the_same_sessions_contents_and_gaps_and_all_their_turns():
    slow = simulate(scenario(fleet__replicas=1, fleet__memory_gb=2, router__kind="round_robin"))
    fast = simulate(scenario(fleet__replicas=8, router__kind="cache_aware", fleet__chunked_prefill="false"))
    assert content(slow) == content(fast)
    assert slow.requests == fast.requests > 0
    assert slow.e2e_p50_ms > fast.e2e_p50_ms  # the times differ, the conversation does not
    assert max(r.arrival_s for r in slow.records) > slow.scenario.duration_s  # turns after the window are sent
    assert max(r.arrival_s for r in slow.records) > max(r.arrival_s for r in fast.records)


def test_a_fleet_that_falls_behind_is_offered_less_than_configured():
    slow = simulate(scenario(fleet__replicas=1, traffic__session_rate=3))
    fast = simulate(scenario(fleet__replicas=8, traffic__session_rate=3))
    assert slow.configured_rps == fast.configured_rps
    assert slow.offered_rps < fast.offered_rps <= fast.configured_rps
    assert sum(slow.series.requests) < sum(slow.series.requests_configured)


# -- one KV budget ----------------------------------------------------------------------

def test_under_a_burst_running_sequences_push_cached_prefixes_out():
    result = simulate(scenario(events="burst@60+30x4", fleet__memory_gb=2))
    s, bin_s = result.series, result.series.bin_s
    running = [sum(row[k] for row in s.kv_running_tokens) for k in range(len(s.start_s))]
    cached = [sum(row[k] for row in s.kv_cached_tokens) for k in range(len(s.start_s))]
    before = range(int(30 / bin_s), int(60 / bin_s))
    during = range(int(70 / bin_s), int(90 / bin_s))

    def mean(xs, bins):
        return sum(xs[k] for k in bins) / len(bins)

    assert mean(running, during) > 1.5 * mean(running, before)
    assert mean(cached, during) < 0.5 * mean(cached, before)
    budget = result.kv_budget_tokens
    assert all(row[k] + c_row[k] <= budget for row, c_row in zip(s.kv_running_tokens, s.kv_cached_tokens)
               for k in range(len(s.start_s)))


SCENARIOS = st.fixed_dictionaries({
    "fleet.replicas": st.integers(1, 4).map(str),
    "router.kind": st.sampled_from(sorted(ROUTERS)),
    "fleet.cache": st.sampled_from(["true", "false"]),
    "fleet.memory_gb": st.sampled_from(["0.5", "1", "2", "8"]),
    "fleet.chunked_prefill": st.sampled_from(["true", "false"]),
    "fleet.token_budget": st.sampled_from(["256", "2048", "8192"]),
    "fleet.max_running": st.sampled_from(["4", "64", "256"]),
    "hardware.preset": st.sampled_from(["article_14b_h100", "llama8b_a100", "qwen14b_h100"]),
    "traffic.session_rate": st.sampled_from(["0.5", "2", "5"]),
    "dynamic_text": st.sampled_from(["none", "top", "bottom"]),
    "seed": st.integers(0, 10**6).map(str),
    "duration_s": st.sampled_from(["15", "30"]),
    "events": st.sampled_from(["", "timestamp@10", "surge@5+10", "burst@3+10x4"]),
})


@settings(max_examples=30, deadline=None)
@given(SCENARIOS)
def test_running_plus_cached_never_exceed_the_budget_and_checking_changes_nothing(text):
    s = Scenario().with_text(text | {"fleet.decode": "true"})
    run = ServingRun(s)
    while run.step():
        for replica in run.replicas:
            replica.check(run.loop.now)  # running + cached <= budget; locks and totals; evicts lazily if due
    checked = run.finish()
    assert everything(checked) == everything(simulate(s))  # lazy eviction reads as step-by-step eviction
    for replica in run.replicas:
        assert replica.tree.locked_tokens == 0 and replica.hold == 0 and replica.private_tokens(run.loop.now) == 0


@settings(max_examples=40, deadline=None)
@given(SCENARIOS)
def test_every_request_is_served_once_with_its_last_token_after_its_first(text):
    s = Scenario().with_text(text | {"fleet.decode": "true"})
    result = simulate(s)
    seen = set()
    for rec in result.records:
        assert (rec.session, rec.turn) not in seen
        seen.add((rec.session, rec.turn))
        assert rec.e2e_ms >= rec.ttft_ms >= rec.queue_ms >= 0
        assert rec.ttft_ms == pytest.approx(rec.queue_ms + rec.prefill_ms, abs=0.002)
        assert 0 <= rec.cached_tokens < rec.prompt_tokens
        assert (rec.tpot_ms is None) == (rec.answer_tokens == 1) == (rec.stall_ms is None)
        if rec.stall_ms is not None:
            assert rec.stall_ms >= rec.tpot_ms - 0.002
    assert result.requests + result.rejected == len(seen) + result.rejected
    assert result.requests == sum(r.requests for r in result.replicas)


# -- determinism and goldens ---------------------------------------------------------------

def test_same_scenario_same_bytes():
    s = scenario(router__kind="cache_aware", events="burst@100+30x3,timestamp@150")
    assert everything(simulate(s)) == everything(simulate(s))


PRESETS = {
    "default": {"fleet.decode": "true"},
    "prefill_first": {"fleet.decode": "true", "fleet.chunked_prefill": "false", "router.kind": "cache_aware"},
    "burst_tight_memory": {"fleet.decode": "true", "events": "burst@60+30x4", "fleet.memory_gb": "2"},
    "a100_surge": {"fleet.decode": "true", "hardware.preset": "llama8b_a100", "events": "surge@60+60",
                   "fleet.replicas": "6", "router.kind": "cache_aware"},
}

GOLDEN = {  # sha256 of each serving preset's whole result and records (helpers.everything); change only on purpose
    # issue 27 moved llama8b_a100 onto the measured A100: TTFT p50 22.2 -> 24.7 ms, p99 216 -> 127 ms, TPOT p50
    # 8.5 -> 12.4 ms, e2e p50 1.89 -> 2.74 s; the other three run the article's preset and did not move.
    # Re-pinned when the scenario gained hardware.gpu_fit (empty): only the scenario's dump moved, every other byte
    # of the results and records is as before (checked with the new key dropped from the dump).
    "a100_surge": "e00eec0fd7911982129cf6cf9753992b4a36793e32990454c5d55227c890aa27",
    "burst_tight_memory": "8615878f8cf2c99d885d58f05ff9b1437d38d1711a7f74df8088a09fe9070249",
    "default": "87e0b46a08dcf15968b35ff40aaf479a90b58c435893e038cad91d61957cfbdf",
    "prefill_first": "756e55bbbe9dc3ca4fa80ca27ed23e37128bc98786f717fd9910fa32a3cfbe8c",
}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_golden_result_of_each_serving_preset(name):
    digest = hashlib.sha256(everything(simulate(Scenario().with_text(PRESETS[name]))).encode()).hexdigest()
    assert digest == GOLDEN[name], f"{name}: behaviour changed; new digest {digest}"


# Lab mode's own figures stay pinned by test_engine.GOLDEN (helpers.canonical); the fields serving mode added to
# every result (kv series, offered and configured rates, notes...) get a golden of their own in lab mode too.
LAB_GOLDEN = {  # re-pinned with GOLDEN for hardware.gpu_fit in the scenario's dump; nothing else moved
    "default": "58e12a793366c1df5517bb4c111c70868f4319a64a86fe3a2a846affd7bcbde1",
    "surge_and_burst": "d8cabf0892326269ac1f54643410e2bc958008a8b08aee16360a099b8eacc10c",
}
LAB_PRESETS = {"default": {}, "surge_and_burst": {"events": "surge@60+60,burst@150+30x3", "fleet.memory_gb": "1",
                                                  "router.kind": "cache_aware"}}


@pytest.mark.parametrize("name", sorted(LAB_PRESETS))
def test_golden_of_lab_modes_whole_result(name):
    result = simulate(Scenario().with_text(LAB_PRESETS[name]))
    assert result.mode == "lab" and result.tpot_p50_ms is None and result.records[0].e2e_ms is None
    assert result.offered_rps == result.configured_rps == round(result.requests / result.scenario.duration_s, 6)
    digest = hashlib.sha256(everything(result).encode()).hexdigest()
    assert digest == LAB_GOLDEN[name], f"{name}: lab mode's whole result changed; new digest {digest}"
