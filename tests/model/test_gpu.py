"""The measured GPU model (issue 27): each formula on tiny hand-made cases, then the presets priced by it."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model import FITS, GpuFit, Scenario, Shape, gemm_ops, layer_flops, layer_s, lm_head_s
from model.gpus.gpu import (
    Measured,
    attention_flops_per_s,
    blend,
    decode_kv_s,
    elementwise_ops,
    elementwise_s,
    gemm_s,
    layer_ops_s,
    prefill_attention_s,
)
from model.gpus.hardware import build
from model.gpus.profile import profile_of

# a made-up GPU with round numbers: 1 TB/s, 100 TFLOP/s, a 1 us floor, tiles of 4 rows
EW = (("emb", 1e-6, 1e-12), ("input_layernorm", 2e-6, 2e-12), ("attn_rope", 3e-6, 3e-12),
      ("post_attention_layernorm", 4e-6, 4e-12), ("mlp_act", 5e-6, 5e-12), ("add", 6e-6, 6e-12))
TOY = GpuFit("toy", 4, 1e12, 1e14, 1e-6, 1, EW, ((100.0, 1e13), (300.0, 3e13)), "hand-made")
TINY = Shape(n_embd=8, n_expanded_embd=16, n_head=2, n_kv_head=1, use_gated_mlp=True, vocab_size=32)


def test_the_blend_is_the_sum_at_one_and_tends_to_the_larger_as_it_grows():
    assert blend(3.0, 4.0, 1) == 7.0
    assert blend(3.0, 4.0, 2) == 5.0  # a square root: exact in IEEE arithmetic
    assert blend(3.0, 4.0, 4) == pytest.approx((3**4 + 4**4) ** 0.25, rel=1e-15)
    assert blend(3.0, 4.0, 8) == pytest.approx((3**8 + 4**8) ** 0.125, rel=1e-15)
    assert 4.0 < blend(3.0, 4.0, 8) < blend(3.0, 4.0, 4) < blend(3.0, 4.0, 2)
    assert blend(0.0, 0.0, 4) == 0.0 and blend(2e-300, 0.0, 8) == 2e-300  # scaled: no underflow


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 1e3), st.floats(0, 1e3), st.sampled_from([2, 4, 8]))
def test_the_blend_is_between_the_larger_and_the_sum(a, b, p):
    assert max(a, b) * (1 - 1e-12) <= blend(a, b, p) <= (a + b) * (1 + 1e-12)


def test_a_matrix_product_pays_its_floor_its_bytes_and_its_flops_in_whole_tiles():
    # m=1 (below a tile): bytes 2 x (10x10 + 1 x 20) = 240 at 1 TB/s, FLOPs 2 x 1 x 100 at 100 TFLOP/s, summed
    assert gemm_s(TOY, 1, 10, 10) == pytest.approx(1e-6 + 240e-12 + 200 / 1e14, rel=1e-12)
    # m=5 (over one tile of 4): computed as 8 rows, read as 5
    assert gemm_s(TOY, 5, 10, 10) == pytest.approx(1e-6 + 2 * (100 + 5 * 20) * 1e-12 + 2 * 8 * 100 / 1e14, rel=1e-12)
    assert gemm_s(TOY, 8, 10, 10) - gemm_s(TOY, 5, 10, 10) == pytest.approx(2 * 3 * 20 * 1e-12, rel=1e-9)  # same tiles
    assert gemm_s(TOY, 5, 10, 10, bytes_per_value=1.0) < gemm_s(TOY, 5, 10, 10)
    assert gemm_s(TOY, 0, 10, 10) == 0.0


def test_an_elementwise_operation_is_its_floor_plus_a_price_per_value():
    assert elementwise_s(TOY, "mlp_act", 1000) == pytest.approx(5e-6 + 1000 * 5e-12)
    assert elementwise_s(TOY, "add", 0) == 0.0
    with pytest.raises(KeyError, match="toy has no coefficients for softmax"):
        elementwise_s(TOY, "softmax", 10)


def test_a_layer_is_its_four_matrix_products_and_its_elementwise_operations():
    assert gemm_ops(TINY) == (("attn_pre_proj", 8, 16), ("attn_post_proj", 8, 8), ("mlp_up_proj", 8, 32),
                              ("mlp_down_proj", 16, 8))  # QKV: (2 + 2 x 1) heads of 4; gated: two MLP matrices
    assert elementwise_ops(TINY) == (("input_layernorm", 8), ("attn_rope", 12), ("post_attention_layernorm", 8),
                                     ("mlp_act", 16), ("add", 8))
    ops = layer_ops_s(TOY, TINY, 6)
    assert layer_s(TOY, TINY, 6) == pytest.approx(sum(ops.values()), rel=1e-12) and "emb" not in ops
    parallel = TINY._replace(post_attention_norm=False, use_gated_mlp=False)  # phi-2's block
    assert "post_attention_layernorm" not in layer_ops_s(TOY, parallel, 6)
    assert gemm_ops(parallel)[2] == ("mlp_up_proj", 8, 16) and layer_s(TOY, parallel, 6) < layer_s(TOY, TINY, 6)
    assert layer_flops(TINY, 3) == 2 * 3 * (8 * 16 + 8 * 8 + 8 * 32 + 16 * 8)
    assert layer_s(TOY, TINY, 0) == 0.0


def test_attention_speed_is_interpolated_between_published_lengths_and_held_outside_them():
    assert attention_flops_per_s(TOY, 10) == 1e13 and attention_flops_per_s(TOY, 1e6) == 3e13
    assert attention_flops_per_s(TOY, 200) == pytest.approx(2e13)


def test_a_chunks_attention_is_the_slower_of_its_flops_and_its_bytes():
    # 2 new tokens after 1 cached: pairs 2 x 1 + 3 = 5; FLOPs 4 x 2 heads x 4 x 5 = 160 at 1e13 (L = sqrt(10))
    # bytes 2 x (2 x 1 x 4 x 3 + 2 x 2 x 4 x 2) = 112 at 1 TB/s: the bytes are slower
    assert prefill_attention_s(TOY, TINY, 2, 1) == pytest.approx(112e-12)
    long = prefill_attention_s(TOY, TINY, 300, 0)  # pairs 45,150, L = 300.5: 3e13
    assert long == pytest.approx(4 * 2 * 4 * 45_150 / 3e13)
    assert prefill_attention_s(TOY, TINY, 300, 300) > 2.9 * long  # after as many cached: three times the pairs
    assert prefill_attention_s(TOY, TINY, 0, 100) == 0.0
    assert decode_kv_s(TOY, TINY) == pytest.approx(2 * 2 * 1 * 4 / 1e12)  # K and V of one KV head of 4, bf16


def test_a_pass_is_the_embedding_the_layers_their_attention_and_the_lm_head():
    m = Measured(TOY, TINY, layers=3)
    one = m.pass_s(((5, 2),))
    layer = layer_s(TOY, TINY, 5) + 1e-6 + prefill_attention_s(TOY, TINY, 5, 2)  # a launch of attention a layer
    assert one == pytest.approx(elementwise_s(TOY, "emb", 5 * 8) + 3 * layer + lm_head_s(TOY, TINY, 1), rel=1e-12)
    # decodes: the pass of the batch, then each context token's KV in every layer
    assert m.pass_s((), decodes=4, decode_kv=100) == pytest.approx(m.decode_fixed_s(4) + 100 * m.kv_token_s(), rel=1e-12)
    assert m.kv_token_s() == pytest.approx(3 * decode_kv_s(TOY, TINY))
    assert m.pass_s(()) == 0.0 and m.decode_fixed_s(0) == 0.0


# -- the presets on it ---------------------------------------------------------------------------------------

def test_the_llama_codellama_and_qwen_presets_are_measured_and_the_articles_are_not():
    measured = {name: p.measured for name in ("llama8b_a100", "llama8b_h100", "codellama13b_a100", "qwen14b_h100")
                for p in [build(name)]}
    assert all(m is not None for m in measured.values())
    assert {name: m.fit.name for name, m in measured.items()} == {  # type: ignore[union-attr]
        "llama8b_a100": "a100", "llama8b_h100": "h100", "codellama13b_a100": "a100", "qwen14b_h100": "h100"}
    assert measured["codellama13b_a100"].shape.n_kv_head == 40 and measured["qwen14b_h100"].layers == 48  # type: ignore
    assert build("article_14b_h100").measured is None and build("article_14b_h200").measured is None
    assert build("lab").measured is None


def test_the_committed_fits_are_plain_numbers_within_what_the_gpus_can_do():
    a100, h100 = FITS["a100"], FITS["h100"]
    assert a100.gemm_flops_per_s < 312e12 and h100.gemm_flops_per_s < 989e12  # below the datasheets' dense peaks
    assert a100.gemm_bytes_per_s < 2.039e12 and h100.gemm_bytes_per_s < 3.35e12  # and their bandwidths
    assert all(rate < peak for fit, peak in ((a100, 312e12), (h100, 989e12)) for _, rate in fit.attention)
    assert a100.tile == h100.tile == 128 and {a100.blend, h100.blend} <= {2, 4}


def test_a_measured_prefill_has_a_floor_and_attention_that_grows_with_the_square_of_the_prompt():
    p = build("qwen14b_h100")
    m = p.measured
    assert p.prefill_s(1) > 0.005  # every weight read once, and a launch per operation: a floor the article lacks
    extra = [p.prefill_s(n) / m.non_attention_s(n) - 1 for n in (1_000, 10_000, 30_000)]  # type: ignore[union-attr]
    assert extra[0] < extra[1] < extra[2]
    # 30,000 tokens on a 14B model: attention does 56% as many FLOPs as the rest, at FlashAttention-2's 335 TFLOP/s
    # on an H100 (docs/gpus.md: FlashAttention-3's 616 would make it about 57%), about half the rate of the matmuls
    assert 0.9 < extra[2] < 1.2
    # a cached prefix is read by the new tokens' attention: the article's arithmetic has no such term
    assert p.prefill_s(900, 29_100) > p.prefill_s(900)
    article = build("article_14b_h100")
    assert article.prefill_s(900, 29_100) == article.prefill_s(900)


def test_a_measured_step_is_one_pass_of_its_chunks_and_decodes():
    p = build("llama8b_a100")
    m = p.measured
    chunks = ((2_000, 500), (48, 0))
    assert p.step_s(2_048, 500 + 30_000, chunks, 8) == m.pass_s(chunks, 8, 30_000)  # type: ignore[union-attr]
    assert p.step_s(1_000, 0) == p.prefill_s(1_000)
    assert p.decode_step_s(5_000, 16) == m.decode_fixed_s(16) + 5_000 * m.kv_token_s()  # type: ignore[union-attr]
    assert p.decode_step_s(0, 64) > p.decode_step_s(0, 1)  # a bigger batch does more arithmetic per step


def test_the_article_presets_keep_the_articles_arithmetic_to_the_bit():
    p = build("article_14b_h100")
    assert p.prefill_s(30_000) == 30_000 * 2 * 14e9 / (989e12 * 0.4)
    assert p.step_s(20, 1_000, ((20, 980),), 4) == p.step_s(20, 1_000)  # chunks and decodes are the measured model's
    assert p.decode_step_s(1_000, 64) == p.decode_step_s(1_000) == (14e9 * 2 + 1_000 * 160 * 1024) / 3.35e12


def test_serving_mode_on_a_measured_preset_is_deterministic_and_every_step_takes_time():
    s = Scenario().with_text({"fleet.decode": "true", "hardware.preset": "codellama13b_a100", "duration_s": "40",
                              "fleet.replicas": "2"})
    profile, notes = profile_of(s)
    assert profile.measured is not None and notes == ()
    from model import simulate
    a, b = simulate(s), simulate(s)
    assert a.to_dict() == b.to_dict() and a.requests > 0
    assert all(r.ttft_ms > 0 and (r.tpot_ms is None or r.tpot_ms > 10) for r in a.records)  # 13B: > 10 ms a token


def test_lab_mode_on_a_measured_preset_prices_each_prefill_by_the_measured_pass():
    from model import simulate
    s = Scenario().with_text({"hardware.preset": "llama8b_h100", "duration_s": "30"})
    profile, _ = profile_of(s)
    result = simulate(s)
    for rec in result.records[:20]:
        expected = profile.prefill_s(rec.prompt_tokens - rec.cached_tokens, rec.cached_tokens)
        assert rec.prefill_ms == pytest.approx(expected * 1000, abs=0.001)
    assert math.isfinite(result.ttft_p99_ms)
