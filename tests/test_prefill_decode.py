"""Prefill and decode (issue 13): the roofline, the stall, the split and the order of the queue."""

import json
import subprocess
import sys

import pytest

from model import Scenario, build, roofline_of
from model.roofline import intensity, ridge, tokens_to_ridge

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
