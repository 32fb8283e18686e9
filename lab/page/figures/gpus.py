"""The GPU's figures: prefill and decode on one roofline, and a prefill's time beside Vidur's measurements.

Standard library, `model` only: this runs in the browser too.
"""

from typing import Any

from lab.page.figures import measured
from lab.page.figures.base import Context, Figure, profile_note
from lab.page.figures.fleetview import PALETTE
from model import PRESETS, Scenario, explainer_profile, intensity, layer_flops, lm_head_s, roofline_of


def _roofline(c: Context) -> dict[str, Any]:
    return roofline_of(c.scenario)


def _measured_of(scenario: Scenario) -> tuple[Any, dict[str, Any] | None]:
    """The explainers' profile and the measured points of its preset (None: nothing measures it)."""
    profile, _ = explainer_profile(scenario)
    m = profile.measured
    if m is None or scenario.hardware.gpu_fit:  # a person's own GPU: the shared profiles do not measure it
        return profile, None
    return profile, measured.points_for(profile.preset, m.shape)


def _unmeasured(scenario: Scenario, gpu: str) -> str:
    """Why a measured preset's figure has no dots: a person's own fit, or no shared profile of this model."""
    if scenario.hardware.gpu_fit:
        return (f" It is priced by your GPU fit {gpu}, which no shared profile measures: check the fit against your "
                "own profiles with prefix-lab profile check FILE.csv --gpu FIT.json.")
    return f" No shared kernel profile measures this model on the {gpu}: its curve comes from other models."


def _roofline_measured(scenario: Scenario) -> dict[str, list]:
    """A measured preset's kernels as the roofline draws them: one layer's matmul FLOPs over its measured time."""
    profile, pts = _measured_of(scenario)
    if pts is None:
        return {"intensity": [], "tflops": [], "tokens": []}
    shape = profile.measured.shape
    return {"intensity": [round(intensity(profile, t), 6) for t in pts["tokens"]],
            "tflops": [round(layer_flops(shape, t) / (ms / 1000) / 1e12, 6) for t, ms in zip(pts["tokens"], pts["layer_ms"])],
            "tokens": pts["tokens"]}


def _roofline_data(c: Context) -> dict[str, dict]:
    """The roof (attainable TFLOP/s against FLOPs per byte read), the ridge, and the prefill and decode points;
    on a measured preset the fitted model's curve and the measured kernels too."""
    r = _roofline(c)
    points = [r["prefill"], r["decode"]]
    curve = r["model"] or {"flops_per_byte": [], "achieved_tflops": [], "tokens": []}
    seen = _roofline_measured(c.scenario)
    return {
        "src:roofline_model": {"data": {"intensity": curve["flops_per_byte"], "tflops": curve["achieved_tflops"],
                                        "tokens": curve["tokens"]}},
        "src:roofline_measured": {"data": seen},
        "li:roofline_model": {"visible": bool(curve["tokens"])},  # legend items only for what is drawn
        "li:roofline_measured": {"visible": bool(seen["tokens"])},
        "src:roofline": {"data": {"intensity": r["series"]["flops_per_byte"], "tflops": r["series"]["attainable_tflops"]}},
        "src:roofline_points": {"data": {
            "intensity": [p["flops_per_byte"] for p in points], "tflops": [p["attainable_tflops"] for p in points],
            "what": [f"prefill of {r['prefill']['tokens']:,} tokens", f"decode step, batch {r['decode']['tokens']}"],
            "share": [round(p["peak_share"] * 100, 2) for p in points], "color": [PALETTE[1], PALETTE[0]]}},
        "src:roofline_ridge": {"data": {"x": [r["ridge_flops_per_byte"]] * 2,
                                        "y": [min(r["series"]["attainable_tflops"]), r["peak_tflops"]]}},
    }


def _roofline_caption(c: Context) -> str:
    r = _roofline(c)
    return (f"The GPU's ridge is at {r['ridge_flops_per_byte']:,.0f} FLOPs per byte read ({r['peak_tflops']:,.0f} TFLOP/s "
            f"over {r['hbm_tb_s']:g} TB/s): below it the GPU waits on memory, above it on arithmetic. A prefill of "
            f"{r['prefill']['tokens']:,} tokens does {r['prefill']['flops_per_byte']:,.0f} FLOPs a byte and can use "
            f"{r['prefill_peak_share']:.0%} of the peak; a decode step at batch {r['decode']['tokens']} does "
            f"{r['decode']['flops_per_byte']:,.1f} and reaches {r['decode_peak_share']:.2%}. It takes a batch of "
            f"{r['tokens_to_ridge']:,} to reach the ridge.{_measured_note(c.scenario, r)}{profile_note(c.scenario)}")


def _measured_note(scenario: Scenario, r: dict[str, Any]) -> str:
    """What the roofline's caption adds on a measured preset: where the fit puts both passes, and what is measured."""
    if r["model"] is None:
        return ""
    profile, pts = _measured_of(scenario)
    gpu = profile.measured.fit.name.upper()
    said = (f" The {gpu} fitted to measured kernels (the solid curve) reaches {r['prefill']['model_peak_share']:.0%} "
            f"of the peak at this prefill and {r['decode']['model_peak_share']:.2%} at this decode step, attention "
            "aside.")
    if pts is None:
        return said + _unmeasured(scenario, gpu)
    return said + f" The dots are Vidur's measurements of this model's layers ({pts['file']})."


PREFILL_TOKENS = tuple(sorted({2**k for k in range(17)} | {3 * 2**k for k in range(16)}))  # 1 to 98,304 tokens


def _prefill_parts(profile: Any, tokens: int) -> tuple[float, float, float]:
    """(whole pass, attention aside, LM head) seconds of a lone prefill of `tokens`; spec-sheet: (pass, pass, 0)."""
    whole = profile.prefill_s(tokens)
    m = profile.measured
    if m is None:
        return whole, whole, 0.0
    return whole, m.non_attention_s(tokens), lm_head_s(m.fit, m.shape, 1, m.bytes_per_value)


def _prefill_data(c: Context) -> dict[str, dict]:
    """A lone prefill's seconds against its tokens: the model's whole pass, its non-attention part (measured
    presets), Vidur's measured non-attention passes for the same model, and the scenario's prompt."""
    profile, pts = _measured_of(c.scenario)
    n = c.scenario.roofline.prefill_tokens
    tokens = sorted(set(PREFILL_TOKENS) | {n})
    parts = [_prefill_parts(profile, t) for t in tokens]
    core = profile.measured is not None
    layers = profile.measured.layers if core else 0
    seen = {"tokens": [], "seconds": []} if pts is None else {
        "tokens": pts["tokens"],
        "seconds": [round((layers * ms + emb) / 1000, 9) for ms, emb in zip(pts["layer_ms"], pts["emb_ms"])]}
    whole = parts[tokens.index(n)][0]
    return {
        "src:prefill": {"data": {"tokens": tokens, "seconds": [round(p[0], 9) for p in parts]}},
        "src:prefill_core": {"data": {"tokens": tokens if core else [],
                                      "seconds": [round(p[1], 9) for p in parts] if core else []}},
        "src:prefill_measured": {"data": seen},
        "src:prefill_now": {"data": {"tokens": [n], "seconds": [round(whole, 9)]}},
        "li:prefill_core": {"visible": core},  # legend items only for what is drawn
        "li:prefill_measured": {"visible": bool(seen["tokens"])},
    }


def _prefill_caption(c: Context) -> str:
    profile, pts = _measured_of(c.scenario)
    n = c.scenario.roofline.prefill_tokens
    label = PRESETS[profile.preset].label
    whole, core, head = _prefill_parts(profile, n)
    m = profile.measured
    if m is None:
        return (f"A prompt of {n:,} tokens prefills in {whole:.2f} s on {label}: the article's arithmetic, two FLOPs "
                f"per parameter per token at {PRESETS[profile.preset].utilisation:.0%} of the GPU's peak, with no "
                "attention term and no floor, so the line is straight. No kernel profile measures it: the Llama, "
                f"CodeLlama and Qwen presets are priced by GPUs fitted to measured kernels.{profile_note(c.scenario)}")
    attention = whole - core - head
    said = (f"A prompt of {n:,} tokens prefills in {whole:.2f} s on {label}: {core:.2f} s for the layers' matrix "
            f"products and elementwise operations (the dashed line, attention aside: the {m.fit.name.upper()} fitted "
            f"to measured kernels), {attention:.2f} s of attention at FlashAttention-2's published speed, which grows with the "
            f"square of the prompt ({attention / core:.0%} of the rest here), and {head * 1000:.1f} ms for the LM head.")
    if pts is None:
        return said + _unmeasured(c.scenario, m.fit.name.upper()) + profile_note(c.scenario)
    errs = sorted(abs(m.non_attention_s(t) / ((m.layers * ms + emb) / 1000) - 1)
                  for t, ms, emb in zip(pts["tokens"], pts["layer_ms"], pts["emb_ms"]))
    return said + (f" The dots are Vidur's measurements of the same model's non-attention operations ({pts['file']}, "
                   f"{len(errs)} pass lengths): the dashed line is within {errs[len(errs) // 2]:.0%} of them at the "
                   f"median and {errs[-1]:.0%} at worst.{profile_note(c.scenario)}")


FIGURES = (
    Figure("roofline", "Prefill and decode on one roofline", _roofline_data, _roofline_caption,
           reads=("roofline.", "hardware."), fleet=False, controls=("roofline.prefill_tokens", "roofline.batch")),
    Figure("prefill", "How long a prefill takes, modelled and measured", _prefill_data, _prefill_caption,
           reads=("roofline.prefill_tokens", "hardware."), fleet=False, controls=("roofline.prefill_tokens",),
           example=(("hardware.preset", "llama8b_a100"), ("hardware.gpu_fit", "")),
           offer="Show a model and GPU Vidur measured"),
)
