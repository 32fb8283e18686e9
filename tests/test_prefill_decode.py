"""Prefill and decode (issue 13): the roofline, the stall, the split and the order of the queue."""

import json
import subprocess
import sys

import pytest

from model import Request, Scenario, ServingRun, build, roofline_of, simulate
from model.roofline import intensity, ridge, tokens_to_ridge
from model.stall import CO_ANSWER, stall_demo, stall_of

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
    assert first["co_tpot_ms"] < d["tbt_slo_ms"]  # the mean stays under the target: the longest gap shows it


def test_slo_shares_count_requests_within_each_target():
    light = simulate(serving(slo__ttft_ms=1000))
    assert light.ttft_slo_met == 1.0 and light.tbt_slo_met == 1.0
    one = simulate(serving(fleet__replicas=1))  # one replica cannot keep up: first tokens come late
    assert one.ttft_slo_met < 0.5
    ttfts = [r.ttft_ms for r in one.records]
    assert one.ttft_slo_met == round(sum(t <= 1000 for t in ttfts) / len(ttfts), 6)
    tight = simulate(serving(fleet__replicas=1, slo__tbt_ms=12))
    tpots = [r.tpot_ms for r in tight.records if r.tpot_ms is not None]
    assert 0 < tight.tbt_slo_met < 1 and tight.tbt_slo_met == round(sum(t <= 12 for t in tpots) / len(tpots), 6)
    lab = simulate(Scenario())
    assert lab.ttft_slo_met is None and lab.tbt_slo_met is None


def test_stall_of_lists_each_requests_mean_and_longest_gap():
    result = simulate(serving())
    f = stall_of(result)
    n = sum(1 for r in result.records if r.tpot_ms is not None)
    assert len(f["arrival_s"]) == len(f["tpot_ms"]) == len(f["stall_ms"]) == n
    assert all(s >= t for s, t in zip(f["stall_ms"], f["tpot_ms"]))
    assert f["tbt_slo_met"] == result.tbt_slo_met == 1.0 and f["stall_within_slo"] < 0.5  # chunks of 2,048 tokens
