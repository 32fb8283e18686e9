"""The roofline: how much of a GPU's arithmetic a pass can use, given how many bytes it reads per FLOP.

A pass of `tokens` tokens through the model does `tokens × 2 × parameters`
FLOPs and moves the weights once plus the KV of those tokens once:

    intensity (FLOPs per byte) = tokens × FLOPs per token / (weight bytes + tokens × KV bytes per token)
    ridge                      = peak FLOP/s / HBM bytes per second
    attainable FLOP/s          = min(peak FLOP/s, intensity × HBM bytes per second)
    share of peak              = attainable / peak = min(1, intensity / ridge)

A decode step of batch B is a pass of B tokens (one per sequence); a
prefill of N tokens is a pass of N. Left of the ridge a pass waits on
memory, right of it on arithmetic. The context a decode step also reads
(each sequence's earlier KV) is left out, as the article leaves it out: it
only moves a decode step further left. The peak is the datasheet's dense
figure, not the share of it prefill reaches in the simulation (`utilisation`),
so the ridge is the article's 989 / 3.35 = 295 FLOPs per byte.

A measured preset (`model/gpus/gpu.py`) adds the fitted model's own curve: for
a pass of t tokens, the FLOPs of one layer's matrix products over the
seconds the fit gives that layer's non-attention operations, drawn at the
same intensity as the roof's point for t (`model_curve`). It sits below
the roof, and the kernel profiles the fit came from are measured points
beside it (the page reads those; the model reads no files).

`roofline_of(scenario)` reads `roofline.batch` and `roofline.prefill_tokens`
and prices the scenario's hardware (the lab preset: the article's, as the
other explainers do). Floats come from `+ - * /` only, so the figures are
the same in CPython and Pyodide.
"""

from typing import TYPE_CHECKING, Any

from model.gpus.gpu import layer_flops, layer_s
from model.gpus.hardware import Profile
from model.studies.explainers import explainer_profile

if TYPE_CHECKING:
    from model.config import Scenario

__all__ = ["CURVE_TOKENS", "attainable_flops_per_s", "intensity", "model_curve", "model_tflops", "ridge", "roofline",
           "roofline_of", "tokens_to_ridge"]

MANTISSAS = (1, 2, 5)  # the curve's grid: 1, 2 and 5 times each power of ten
DECADES = range(-2, 7)  # 0.01 to 5,000,000 FLOPs per byte
CURVE_TOKENS = tuple(sorted({2**k for k in range(16)} | {3 * 2**k for k in range(15)}))  # 1 to 49,152 tokens


def ridge(profile: Profile) -> float:
    """FLOPs per byte at which memory and arithmetic take equally long: peak FLOP/s / HBM bytes per second."""
    return profile.peak_flops_per_s / profile.hbm_bytes_per_s


def intensity(profile: Profile, tokens: int) -> float:
    """FLOPs per byte of a pass of `tokens`: tokens × FLOPs per token / (weights + tokens × KV bytes per token)."""
    return tokens * profile.flops_per_token / (profile.weight_bytes + tokens * profile.kv_bytes_per_token)


def attainable_flops_per_s(profile: Profile, flops_per_byte: float) -> float:
    """The roof: min(peak FLOP/s, intensity × HBM bytes per second)."""
    return min(profile.peak_flops_per_s, flops_per_byte * profile.hbm_bytes_per_s)


def tokens_to_ridge(profile: Profile) -> int | None:
    """The fewest tokens in one pass for arithmetic to be the limit (None: no pass gets there).

    Solves t × F / (w + t × k) >= ridge: t >= ridge × w / (F - ridge × k), then corrects the float estimate.
    """
    r = ridge(profile)
    room = profile.flops_per_token - r * profile.kv_bytes_per_token
    if room <= 0:
        return None
    t = max(1, int(r * profile.weight_bytes / room))
    while t > 1 and intensity(profile, t - 1) >= r:
        t -= 1
    while intensity(profile, t) < r:
        t += 1
    return t


def model_tflops(profile: Profile, tokens: int) -> float | None:
    """A measured preset's achieved TFLOP/s for a pass of `tokens`: one layer's matmul FLOPs over its modelled
    non-attention seconds (None for a spec-sheet preset)."""
    m = profile.measured
    if m is None:
        return None
    return layer_flops(m.shape, tokens) / layer_s(m.fit, m.shape, tokens, m.bytes_per_value) / 1e12


def model_curve(profile: Profile, tokens: tuple[int, ...] = CURVE_TOKENS) -> dict[str, list[float]] | None:
    """The measured preset's achieved TFLOP/s at each pass length, with its intensity (None: not measured)."""
    if profile.measured is None:
        return None
    return {"tokens": list(tokens), "flops_per_byte": [intensity(profile, t) for t in tokens],
            "achieved_tflops": [model_tflops(profile, t) for t in tokens]}  # type: ignore[misc]


def _point(profile: Profile, tokens: int) -> dict[str, float]:
    i = intensity(profile, tokens)
    reached = attainable_flops_per_s(profile, i)
    point = {"tokens": tokens, "flops_per_byte": i, "attainable_tflops": reached / 1e12,
             "peak_share": reached / profile.peak_flops_per_s}
    achieved = model_tflops(profile, tokens)
    if achieved is not None:
        point["model_tflops"] = achieved
        point["model_peak_share"] = achieved * 1e12 / profile.peak_flops_per_s
    return point


def roofline(profile: Profile, batch: int, prefill_tokens: int) -> dict[str, Any]:
    """The ridge, a decode step of `batch` sequences and a prefill of `prefill_tokens`, with the roof to draw.

    `series` is the roof at 1, 2 and 5 times each power of ten from 0.01 to 5,000,000 FLOPs per byte, plus
    the ridge and both points, in ascending order: drawn on log axes it is the exact roof (two straight lines).
    """
    r = ridge(profile)
    decode, prefill = _point(profile, batch), _point(profile, prefill_tokens)
    grid = {m * 10**k if k >= 0 else m / 10**-k for k in DECADES for m in MANTISSAS}
    grid |= {r, decode["flops_per_byte"], prefill["flops_per_byte"]}
    xs = sorted(grid)
    return {"peak_tflops": profile.peak_flops_per_s / 1e12, "hbm_tb_s": profile.hbm_bytes_per_s / 1e12,
            "ridge_flops_per_byte": r, "tokens_to_ridge": tokens_to_ridge(profile),
            "decode_peak_share": decode["peak_share"], "prefill_peak_share": prefill["peak_share"],
            "decode": decode, "prefill": prefill,
            "series": {"flops_per_byte": xs, "attainable_tflops": [attainable_flops_per_s(profile, x) / 1e12
                                                                   for x in xs]},
            "model": model_curve(profile)}


def roofline_of(scenario: "Scenario") -> dict[str, Any]:
    """`roofline` on the scenario's `roofline.*` inputs and hardware, as JSON-ready figures.

    Keys: hardware, peak_tflops, hbm_tb_s, ridge_flops_per_byte, tokens_to_ridge (int or None),
    decode_peak_share, prefill_peak_share, decode and prefill ({tokens, flops_per_byte, attainable_tflops,
    peak_share}, and on a measured preset model_tflops and model_peak_share), series ({flops_per_byte: [x...],
    attainable_tflops: [y...]}, same length, x ascending), model (a measured preset's {tokens, flops_per_byte,
    achieved_tflops}; None otherwise), inputs ({batch, prefill_tokens}), notes ([str]). Floats are rounded to
    6 significant digits.
    """
    profile, notes = explainer_profile(scenario)
    r = scenario.roofline
    out = roofline(profile, r.batch, r.prefill_tokens)
    return {"hardware": profile.preset, **_rounded(out), "inputs": {"batch": r.batch, "prefill_tokens": r.prefill_tokens},
            "notes": list(notes)}


def _rounded(value: Any) -> Any:
    """Floats to 6 significant digits (shares near 0 keep their digits), through dicts and lists."""
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.6g}")
    return value
