"""The page's roofline and prefill figures on measured GPUs (issue 27): the model's curve beside measured points
for the chosen preset, and words for a preset nothing measures. The points are handed in by hand here, so
these tests hold with or without the shared profiles."""

import pytest

import lab.page.figures.measured as measured
import lab.page.view as view
from lab.page.figures import FIGURES, Context
from model import Scenario, intensity, layer_flops, roofline_of
from model.gpus.hardware import build

LLAMA = Scenario().with_text({"hardware.preset": "llama8b_a100"})
TOKENS = [1, 64, 512, 4096]


def fake_points(scale: float = 1.1) -> dict:
    """Llama 8B on the A100 'measured' at `scale` times what the fit gives, one layer and the embedding."""
    m = build("llama8b_a100").measured
    emb = [m.non_attention_s(t) - m.layers * m_layer(m, t) for t in TOKENS]
    return {"llama8b_a100": {"file": "a100_made_up_mlp.csv", "gpu": "a100", "shape": [4096, 14336, 32, 8, True],
                             "tokens": TOKENS, "layer_ms": [m_layer(m, t) * 1000 * scale for t in TOKENS],
                             "emb_ms": [e * 1000 * scale for e in emb]}}


def m_layer(m, tokens):
    from model import layer_s
    return layer_s(m.fit, m.shape, tokens)


def drawn(name: str, scenario: Scenario) -> tuple[dict, str]:
    c = Context(scenario, view.run(scenario), view.run)
    return FIGURES[name].data(c), FIGURES[name].caption(c)


@pytest.fixture
def points(monkeypatch):
    monkeypatch.setattr(measured, "points", lambda: fake_points())


def test_the_prefill_figure_draws_the_models_pass_its_non_attention_part_and_the_measured_points(points):
    data, said = drawn("prefill", LLAMA)
    p = build("llama8b_a100")
    whole, core, seen = (data[k]["data"] for k in ("src:prefill", "src:prefill_core", "src:prefill_measured"))
    assert whole["tokens"] == core["tokens"] and 30_000 in whole["tokens"] and whole["tokens"][0] == 1
    for t, s, c in zip(whole["tokens"], whole["seconds"], core["seconds"]):
        assert s == pytest.approx(p.prefill_s(t), abs=1e-8) and c == pytest.approx(p.measured.non_attention_s(t), abs=1e-8)
        assert c < s  # attention and the LM head come on top of what the profiles measure
    assert seen["tokens"] == TOKENS and data["li:prefill_measured"] == data["li:prefill_core"] == {"visible": True}
    assert seen["seconds"] == [pytest.approx(1.1 * p.measured.non_attention_s(t), rel=1e-6) for t in TOKENS]
    assert data["src:prefill_now"]["data"] == {"tokens": [30_000], "seconds": [pytest.approx(p.prefill_s(30_000), abs=1e-8)]}
    assert "a100_made_up_mlp.csv, 4 pass lengths" in said and "within 9% of them at the median and 9% at worst" in said
    assert "of attention at FlashAttention-2's published speed" in said


def test_the_roofline_draws_the_fitted_curve_and_the_measured_kernels_at_their_intensity(points):
    data, said = drawn("roofline", LLAMA)
    p, r = build("llama8b_a100"), roofline_of(LLAMA)
    curve, seen = data["src:roofline_model"]["data"], data["src:roofline_measured"]["data"]
    assert curve["intensity"] == r["model"]["flops_per_byte"] and curve["tflops"] == r["model"]["achieved_tflops"]
    assert all(y < 312 for y in curve["tflops"]) and curve["tflops"][-1] > 100 * curve["tflops"][0]  # under the roof
    dips = [t for t, a, b in zip(curve["tokens"][1:], curve["tflops"], curve["tflops"][1:]) if b < a]
    assert dips == [192]  # 192 tokens compute as two tiles of 128: the curve is not smooth, and neither are kernels
    assert seen["tokens"] == TOKENS
    assert seen["intensity"] == [pytest.approx(intensity(p, t), rel=1e-5) for t in TOKENS]
    layer = fake_points()["llama8b_a100"]["layer_ms"]
    assert seen["tflops"] == [pytest.approx(layer_flops(p.measured.shape, t) / (ms / 1000) / 1e12, rel=1e-5)
                              for t, ms in zip(TOKENS, layer)]
    assert "fitted to measured kernels (the solid curve) reaches 67% of the peak at this prefill" in said
    assert "Vidur's measurements of this model's layers (a100_made_up_mlp.csv)" in said


def test_a_preset_no_profile_measures_draws_its_curve_alone_and_says_so(monkeypatch):
    monkeypatch.setattr(measured, "points", lambda: {})  # as when ../shared/profiles is not there
    data, said = drawn("prefill", LLAMA)
    assert data["src:prefill_measured"]["data"] == {"tokens": [], "seconds": []} and data["src:prefill_core"]["data"]["tokens"]
    assert "No shared kernel profile measures this model on the A100" in said
    data, said = drawn("roofline", LLAMA)
    assert data["src:roofline_measured"]["data"]["tokens"] == [] and data["src:roofline_model"]["data"]["tokens"]
    assert "No shared kernel profile measures this model on the A100: its curve comes from other models" in said


def test_a_model_changed_by_a_hardware_key_is_no_longer_the_one_measured(points):
    changed = LLAMA.with_text({"hardware.kv_heads": "32"})
    data, said = drawn("prefill", changed)
    assert data["src:prefill_measured"]["data"]["tokens"] == [] and "No shared kernel profile" in said
    data, _ = drawn("prefill", LLAMA.with_text({"hardware.layers": "16"}))  # fewer layers: the same layer measured
    assert data["src:prefill_measured"]["data"]["seconds"][-1] < drawn("prefill", LLAMA)[0][
        "src:prefill_measured"]["data"]["seconds"][-1]


def test_the_articles_preset_draws_its_straight_line_and_nothing_measured(points):
    data, said = drawn("prefill", Scenario())
    whole = data["src:prefill"]["data"]
    article = build("article_14b_h100")
    assert whole["seconds"] == [pytest.approx(article.prefill_s(t), abs=1e-9) for t in whole["tokens"]]
    assert data["src:prefill_core"]["data"]["tokens"] == [] and data["src:prefill_measured"]["data"]["tokens"] == []
    assert data["li:prefill_core"] == data["li:prefill_measured"] == {"visible": False}  # no legend for nothing
    assert said.startswith("A prompt of 30,000 tokens prefills in 2.12 s on 14B on H100 (the article's example)")
    assert "No kernel profile measures it" in said
    data, said = drawn("roofline", Scenario())
    assert data["src:roofline_model"]["data"]["tokens"] == [] and "fitted to measured kernels" not in said


def test_the_prefill_figure_follows_the_prompt_slider_and_offers_a_measured_preset(points):
    first = view.handle({"hash": "", "controls": None})
    moved = view.handle({"hash": first["hash"], "controls": {"ctl:roofline.prefill_tokens": 8000}})
    assert moved["patches"]["bokeh"]["src:prefill_now"]["data"]["tokens"] == [8000]
    assert first["patches"]["dom"]["#try-prefill"]["hidden"] is False  # the article's preset: offer a measured one
    loaded = view.handle({"hash": first["hash"], "controls": None, "action": {"type": "example", "figure": "prefill"}})
    assert "hardware.preset=llama8b_a100" in loaded["hash"]
    assert loaded["patches"]["dom"]["#try-prefill"]["hidden"] is True
