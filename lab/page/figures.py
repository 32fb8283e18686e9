"""The page's figures, each declared once: what it reads, what it draws, what it says in words.

A `Figure` is a unit the full page and every embed are lists of. It names
the scenario keys it reads beyond a fleet's run (`reads`, dotted prefixes),
whether it is drawn from the fleet's run at all (`fleet`), the controls its
paragraph needs (`controls`: shown beside it on the page, and an embed's
default), and two pure functions of a `Context`: `data`, the columns of its
Bokeh sources (`src:<name>...`), and `caption`, the figure in words, the text
a screen reader gets in place of the picture (`#cap-<name>`).

`lab.site.layout` draws each figure with Bokeh at build time (the one place that
knows glyphs and colours of the new figures' sources); `lab.page.view` fills them
on every change. The article's figures (crossover, transfer) read only their
own keys and the hardware: moving one of their sliders recomputes them from
the hardware profile and reuses the fleet's run, which the view keeps while
no key the simulation reads changed (`Context.run`).

Standard library, `model` only: this runs in the browser too.
"""

import functools
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from lab.page import measured
from lab.page.fleetview import PALETTE, memory_data, per_result, replica_colour
from lab.page.store import STORE
from model import (
    PRESETS,
    RACE,
    TIERS,
    Result,
    Scenario,
    TreeSnapshot,
    api_calls,
    explainer_profile,
    fanout_figures,
    idle_ttft_s,
    intensity,
    layer_flops,
    lm_head_s,
    locality_comparison,
    money_of,
    prices_of,
    queue_compare,
    roofline_of,
    run_key,
    split_compare,
    stall_demo,
    stall_of,
    transfer_of,
    tree_at,
    warm_ttft_s,
)
from model import crossover as crossing

__all__ = ["ARTICLE_FIGURES", "Context", "EMBED_CONTROLS", "EMBED_FIGURES", "FIGURES", "FLEET_CHARTS", "Figure",
           "PALETTE", "embed_figures", "forget", "replica_colour", "fleet_key", "histogram", "hit_columns",
           "ttft_histogram",
           "ttft_columns"]

class Context(NamedTuple):
    """What a figure is drawn from: the scenario, its fleet's run, and a way to run a variant of it."""

    scenario: Scenario
    result: Result
    run: Callable[[Scenario], Result]  # simulate, remembering recent runs (the view's)
    page: Mapping[str, str] = {}  # the page keys (the tree's replica and moment); never changed


@dataclass(frozen=True, slots=True)
class Figure:
    """One figure of the page: its sources' columns and its caption, from a `Context`."""

    name: str  # figure `fig:<name>`, sources `src:<name>...`, caption `#cap-<name>`, embed `?figure=<name>`
    title: str
    data: Callable[[Context], dict[str, dict]]  # source name -> {"data": columns}
    caption: Callable[[Context], str]
    reads: tuple[str, ...] = ()  # key prefixes read besides the fleet's run
    controls: tuple[str, ...] = ()  # the controls its paragraph needs
    fleet: bool = True  # drawn from the fleet's run
    example: tuple[tuple[str, str], ...] = ()  # keys and values of a setup that shows it, offered when it is empty
    constant: bool = False  # reads nothing that changes: drawn once, at build time, and never sent again
    offer: str = "Load the article's setup"  # the button that loads `example`
    costly: bool = False  # runs the fleet in other setups besides the page's: not redrawn while a slider moves


@functools.lru_cache(maxsize=32)  # asked by every fleet figure of every answer: remembered by the scenario
def fleet_key(scenario: Scenario) -> tuple[tuple[str, str], ...]:
    """The scenario as the simulation sees it (`model.run_key`, from each key's own declaration)."""
    return run_key(scenario)


# -- the fleet's charts ---------------------------------------------------------------

def _mids(result: Result) -> list[float]:
    return _mid_times(result.series.start_s, result.series.bin_s)


def _mid_times(starts: Sequence[float], bin_s: float) -> list[float]:
    """The middle of each bin starting at `starts`: where a per-bin figure is drawn."""
    return [round(t + bin_s / 2, 3) for t in starts]


def _shaded(scenario: Scenario) -> str:
    from lab.page.controls import describe_event
    return "; shaded: " + ", ".join(describe_event(e) for e in scenario.events) if scenario.events else ""


def ttft_columns(result: Result) -> dict[str, list]:
    """TTFT p50 and p99 per bin, at each bin's middle (a baseline's too, `lab.page.compare`)."""
    s = result.series  # empty bins are None (null in JSON): the bridge draws them as gaps
    return {"t": _mids(result), "p50": list(s.ttft_p50_ms), "p99": list(s.ttft_p99_ms)}


def hit_columns(result: Result) -> dict[str, list]:
    """The hit rate per bin in percent, at each bin's middle."""
    return {"t": _mids(result), "hit": [None if h is None else round(h * 100, 3) for h in result.series.hit_rate]}


def _ttft_data(c: Context) -> dict[str, dict]:
    return {"src:ttft": {"data": ttft_columns(c.result)}}


def _ttft_caption(c: Context) -> str:
    s = c.result.series
    p50 = [v for v in s.ttft_p50_ms if v is not None]
    p99 = [(v, t) for v, t in zip(s.ttft_p99_ms, _mids(c.result)) if v is not None]
    if not (p50 and p99):
        return ""
    worst, when = max(p99)
    return (f"Per {s.bin_s:g}-second bin, TTFT p50 ran from {min(p50):,.0f} to {max(p50):,.0f} ms and "
            f"p99 from {min(v for v, _ in p99):,.0f} to {worst:,.0f} ms (highest around {when:,.0f} s)"
            f"{_shaded(c.scenario)}.")


def _hit_data(c: Context) -> dict[str, dict]:
    return {"src:hit": {"data": hit_columns(c.result)}}


def _hit_caption(c: Context) -> str:
    hits = [h for h in c.result.series.hit_rate if h is not None]
    if not hits:
        return ""
    return (f"Per bin, the hit rate ran from {min(hits):.0%} to {max(hits):.0%}; over the whole run it was "
            f"{c.result.hit_rate:.1%}{_shaded(c.scenario)}.")


def replica_name(i: int) -> str:
    return f"replica {i}"


def _load_data(c: Context) -> dict[str, dict]:
    """One cell per replica and bin: how busy the replica was (colour) and the work queued at the bin's end."""
    s = c.result.series
    t, replica, busy, backlog = [], [], [], []
    mids = _mids(c.result)
    for i, (loads, queued) in enumerate(zip(s.replica_load, s.replica_backlog_s)):  # a row at a time
        n = min(len(mids), len(loads), len(queued))
        t += mids[:n]
        replica += [replica_name(i)] * n
        busy += [round((1.0 if 1.0 < load else load) * 100, 1) for load in loads[:n]]  # min(load, 1.0)
        backlog += [round(q, 3) for q in queued[:n]]
    names = [replica_name(i) for i in range(len(s.replica_load))]
    return {"src:load": {"data": {"t": t, "replica": replica, "busy": busy, "backlog": backlog,
                                  "width": [s.bin_s] * len(t)}},
            "src:load_key": {"data": {"replica": names, "color": [replica_colour(i) for i in range(len(names))],
                                      "x": [-s.bin_s * 0.5] * len(names), "width": [s.bin_s * 0.6] * len(names)}},
            "yr:load": {"factors": list(reversed(names))}}


def _load_caption(c: Context) -> str:
    s = c.result.series
    if not s.replica_load or not s.replica_load[0]:
        return ""
    mids = _mids(c.result)
    mean = [sum(row) / len(row) for row in s.replica_load]
    hot = max(range(len(mean)), key=mean.__getitem__)
    cold = min(range(len(mean)), key=mean.__getitem__)
    peaks = [(max(row), i, mids[row.index(max(row))]) for i, row in enumerate(s.replica_backlog_s) if row]
    most, replica, when = max(peaks)
    queue = (f" The longest queue was {most:,.1f} s of work, on replica {replica} around {when:,.0f} s."
             if most >= 0.05 else " No replica ever had more than a few milliseconds of work queued.")
    return (f"Over the run, replica {hot} was busy {mean[hot]:.0%} of the time and replica {cold} "
            f"{mean[cold]:.0%}; darker cells are busier, and the swatch left of each row is the replica's colour in "
            f"the tree and the table.{queue}")


def _memory_caption(c: Context) -> str:
    s = c.result.series
    running = [sum(col) for col in zip(*s.kv_running_tokens)]
    cached = [sum(col) for col in zip(*s.kv_cached_tokens)]
    pinned = [sum(col) for col in zip(*s.kv_pinned_tokens)]
    evicted = [sum(col) for col in zip(*s.evicted_tokens)]
    if not running:
        return ""
    busiest = max(range(len(evicted)), key=evicted.__getitem__)
    gone = (f" The caches evicted {sum(evicted):,} tokens in all, most in the bin ending at "
            f"{s.start_s[busiest] + s.bin_s:,.0f} s ({evicted[busiest]:,})." if sum(evicted)
            else " Nothing was evicted.")
    return (f"At most {max(running):,} tokens of KV were held by running requests ({max(pinned):,} of them cached "
            f"prefixes pinned by queued and running requests) and {max(cached):,} by the prefix cache besides, "
            f"across the fleet.{gone}")


def histogram(ttfts: Sequence[float]) -> dict:
    """Counts of TTFT in log-spaced bins (ten per decade), from the fastest to the slowest.

    Remembered for the last few lists of values (the chart and the axes' fit each ask for the same run's):
    the dict returned may be shared, so it is never changed.
    """
    return _histogram(tuple(ttfts))


@per_result
def ttft_histogram(result: Result) -> dict:
    """`histogram` of the result's TTFTs, remembered per result (the chart and the axes' fit both ask for it)."""
    return histogram([rec.ttft_ms for rec in result.records])


@functools.lru_cache(maxsize=8)
def _histogram(ttfts: tuple[float, ...]) -> dict:
    if not ttfts:
        return {"left": [], "right": [], "count": [], "share": []}
    lo = math.floor(math.log10(max(min(ttfts), 1.0)) * 10)
    hi = math.floor(math.log10(max(max(ttfts), 1.0)) * 10) + 1
    counts = [0] * (hi - lo)
    floor, log10 = math.floor, math.log10
    # Each value's bin counted first, then clamped once per bin (a few dozen) rather than once per value.
    for b, n in Counter([floor(log10(t if t > 1.0 else 1.0) * 10) for t in ttfts]).items():
        counts[min(hi - lo - 1, max(0, b - lo))] += n
    edges = [round(10 ** ((lo + k) / 10), 3) for k in range(hi - lo + 1)]
    return {"left": edges[:-1], "right": edges[1:], "count": counts,
            "share": [round(n / len(ttfts) * 100, 3) for n in counts]}


def _dist_caption(c: Context) -> str:
    r = c.result
    if not r.records:
        return ""
    slowest = max(rec.ttft_ms for rec in r.records)
    return (f"Half of the {r.requests:,} requests got a first token within {r.ttft_p50_ms:,.0f} "
            f"ms, 99 in 100 within {r.ttft_p99_ms:,.0f} ms; the slowest waited {slowest:,.0f} ms.")


# -- the article's figures ----------------------------------------------------------------

def _profile_note(scenario: Scenario) -> str:
    profile, notes = explainer_profile(scenario)
    label = PRESETS[profile.preset].label
    return f" Computed for {label}" + ("; the lab's own preset has no FLOP figures." if notes else ".")


def _crossover_data(c: Context) -> dict[str, dict]:
    """Both TTFTs against the share of the prompt the warm GPU holds, the scenario's point on them, the breakeven."""
    profile, _ = explainer_profile(c.scenario)
    x = c.scenario.crossover
    shares = [k / 100 for k in range(101)]
    idle = idle_ttft_s(profile, x.prompt_tokens)
    new = [round((1 - f) * x.prompt_tokens) for f in shares]
    warm = [warm_ttft_s(profile, n, x.queued, x.queued_tokens, x.prompt_tokens - n) for n in new]
    now = crossing(profile, x.prompt_tokens, x.new_tokens, x.queued, x.queued_tokens)
    top = max(max(warm), idle) * 1.05
    even = now.breakeven_cached_fraction
    return {
        "src:crossover": {"data": {"cached": [round(f * 100, 3) for f in shares], "idle": [round(idle, 6)] * len(shares),
                                   "warm": [round(w, 6) for w in warm]}},
        "src:crossover_now": {"data": {"cached": [round(now.cached_fraction * 100, 3)] * 2,
                                       "ttft": [round(now.idle_ttft_s, 6), round(now.warm_ttft_s, 6)],
                                       "gpu": ["idle GPU", "warm GPU"], "color": [PALETTE[1], PALETTE[0]]}},
        "src:crossover_even": {"data": {"x": [round(even * 100, 3)] if even <= 1 else [], "y0": [0.0] if even <= 1 else [],
                                        "y1": [round(top, 6)] if even <= 1 else []}},
    }


def _crossover_caption(c: Context) -> str:
    profile, _ = explainer_profile(c.scenario)
    x = c.scenario.crossover
    now = crossing(profile, x.prompt_tokens, x.new_tokens, x.queued, x.queued_tokens)
    even = (f"the warm GPU wins only while it holds more than {now.breakeven_cached_fraction:.0%} of the prompt"
            if now.breakeven_cached_fraction <= 1 else "the idle GPU wins whatever the warm one holds")
    flips = ("" if now.flips_at_queued is None else
             f"; with this prompt the idle GPU wins from {now.flips_at_queued} queued requests on")
    return (f"An idle GPU recomputes all {x.prompt_tokens:,} tokens: first token in {now.idle_ttft_s:.2f} s. "
            f"A warm GPU lacking {x.new_tokens:,} of them, behind {x.queued} queued requests of "
            f"{x.queued_tokens:,} tokens, answers in {now.warm_ttft_s:.2f} s ({now.queue_s:.2f} s of queue, "
            f"{now.warm_prefill_s * 1000:,.0f} ms of its own): the {now.winner} GPU is faster. At this queue, "
            f"{even}{flips}.{_profile_note(c.scenario)}")


TIER_NAMES = {"rdma": "RDMA", "nvme": "NVMe", "host": "host memory"}
TIER_UNITS = {"rdma": "Gbps", "nvme": "GB/s", "host": "GB/s"}


def _transfer_rows(scenario: Scenario) -> tuple[dict[str, Any], list[tuple[str, float, float]]]:
    """The transfer figures, and per route (recompute, then each tier fastest first): its name, seconds moving
    KV and seconds until the first token."""
    t = transfer_of(scenario)
    rows = [("recompute the prompt", 0.0, t["prompt_recompute_s"])]
    tiers = sorted(TIERS, key=lambda tier: t[f"{tier}_s"])
    for tier in tiers:
        speed = getattr(scenario.transfer, TIERS[tier][0])
        rows.append((f"{TIER_NAMES[tier]} {speed:g} {TIER_UNITS[tier]}", t[f"{tier}_s"], t[f"{tier}_ttft_s"]))
    return t, rows


def _transfer_data(c: Context) -> dict[str, dict]:
    _, rows = _transfer_rows(c.scenario)
    names = [name for name, _, _ in rows]
    return {"src:transfer": {"data": {
        "route": names, "moved": [round(m, 6) for _, m, _ in rows], "ttft": [round(t, 6) for _, _, t in rows],
        "computed": [round(t - m, 6) for _, m, t in rows], "zero": [0.0] * len(rows)}}}


def _transfer_caption(c: Context) -> str:
    t, rows = _transfer_rows(c.scenario)
    x = c.scenario.transfer
    moves = "; ".join(f"{name}: {m * 1000:,.0f} ms to move, first token at {total:.2f} s" for name, m, total in rows[1:])
    return (f"The KV of the {x.cached_tokens:,} tokens a peer holds is {t['kv_bytes'] / 1e9:.1f} GB "
            f"({t['kv_bytes_per_token'] / 1e3:,.0f} kB a token). Recomputing those tokens takes "
            f"{t['recompute_s']:.2f} s, and the whole {x.prompt_tokens:,}-token prompt {t['prompt_recompute_s']:.2f} s. "
            f"{moves}. Any link faster than {t['breakeven_link_bytes_per_s'] / 1e9:.1f} GB/s beats recomputing."
            f"{_profile_note(c.scenario)}")


def _fanout_runs(c: Context) -> tuple[dict, dict] | None:
    t = c.scenario.traffic
    if t.kind != "agent" or t.agent_fanout < 2:
        return None
    race = c.run(c.scenario.with_values({"traffic.agent_warm_first": False}))
    warm = c.run(c.scenario.with_values({"traffic.agent_warm_first": True}))
    return fanout_figures(race.records), fanout_figures(warm.records)


def _fanout_data(c: Context) -> dict[str, dict]:
    runs = _fanout_runs(c)
    if runs is None:
        return {"src:fanout": {"data": {"way": [], "read": [], "computed": [], "zero": [], "total": [], "span": []}}}
    ways = ["all at once", "first call first"]
    return {"src:fanout": {"data": {"way": ways, "read": [r["read"] for r in runs],
                                    "computed": [r["computed"] for r in runs], "zero": [0, 0],
                                    "total": [r["read"] + r["computed"] for r in runs],
                                    "span": [r["span_p50_ms"] for r in runs]}}}


def _fanout_caption(c: Context) -> str:
    runs = _fanout_runs(c)
    if runs is None:
        return ("This traffic sends no fan-outs. Choose agent traffic with a fan-out of 2 or more sub-calls to see "
                "them race for the cache.")
    race, warm = runs
    return (f"Sent all at once, {race['computed']:,} of {race['subcalls']:,} sub-calls computed their shared prefix "
            f"again (a fan-out took {race['span_p50_ms']:,.0f} ms to its last first token, median). With one "
            f"sub-call sent first and the rest at its first token, {warm['computed']:,} did, and a fan-out took "
            f"{warm['span_p50_ms']:,.0f} ms.")


def _api_data(c: Context) -> dict[str, dict]:
    m = c.scenario.money
    bill = api_calls(prices_of(m), m.calls, m.prompt_tokens, m.new_tokens, m.gap_s)
    calls = list(range(1, m.calls + 1))
    return {"src:api": {"data": {
        "call": calls, "plain": [round(k * bill["plain_call_usd"], 6) for k in calls],
        "cached": [round(bill["first_call_usd"] + (k - 1) * bill["later_call_usd"], 6) for k in calls]}}}


def _api_caption(c: Context) -> str:
    m = c.scenario.money
    bill = api_calls(prices_of(m), m.calls, m.prompt_tokens, m.new_tokens, m.gap_s)
    head = (f"{m.calls} calls of {m.prompt_tokens:,} tokens, {m.gap_s:g} s apart, each adding {m.new_tokens:,}: "
            f"${bill['uncached_usd']:,.2f} without prompt caching, ${bill['cached_usd']:,.2f} with it. ")
    if not bill["entry_alive"]:
        return head + (f"The gap outlives the cache's {m.lifetime_s:g} s, so every call writes its whole prompt again "
                       f"at {m.write_multiple:g}x the input price: caching costs more.")
    if bill["pays_from_call"] is None:
        return head + "Reads save nothing at these prices, so caching never pays."
    return head + (f"Caching pays from call {bill['pays_from_call']} on and saves {bill['saving']:.0%} "
                   f"(reads at {m.read_multiple:g}x, writes at {m.write_multiple:g}x the input price).")


def _gpu_rows(c: Context) -> list[tuple[str, float]]:
    gpu = money_of(c.scenario, c.result.prefill_gpu_s, c.result.recompute_gpu_s)["gpu"]
    return [("the fleet, kept up", gpu["fleet_usd_per_month"]), ("its prefill work", gpu["prefill_usd_per_month"]),
            ("of which recomputing", gpu["recompute_usd_per_month"])]


def _gpu_data(c: Context) -> dict[str, dict]:
    rows = _gpu_rows(c)
    return {"src:gpu": {"data": {"what": [w for w, _ in rows], "usd": [round(v, 2) for _, v in rows],
                                 "zero": [0.0] * len(rows), "color": [PALETTE[5], PALETTE[0], PALETTE[3]]}}}


def _gpu_caption(c: Context) -> str:
    (_, fleet), (_, prefill), (_, recompute) = _gpu_rows(c)
    price = c.scenario.money.gpu_usd_per_hour
    return (f"At ${price:g} a GPU-hour, {c.scenario.fleet.replicas} replicas kept up cost ${fleet:,.0f} a month. "
            f"This run's prefill, at the same rate around the clock, is ${prefill:,.0f} a month of GPU time, "
            f"${recompute:,.0f} of it recomputing prefixes another replica held.")


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
            f"{r['tokens_to_ridge']:,} to reach the ridge.{_measured_note(c.scenario, r)}{_profile_note(c.scenario)}")


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


# -- how long a prefill takes: the model's curve and the measured kernels ----------------------------------

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
                f"CodeLlama and Qwen presets are priced by GPUs fitted to measured kernels.{_profile_note(c.scenario)}")
    attention = whole - core - head
    said = (f"A prompt of {n:,} tokens prefills in {whole:.2f} s on {label}: {core:.2f} s for the layers' matrix "
            f"products and elementwise operations (the dashed line, attention aside: the {m.fit.name.upper()} fitted "
            f"to measured kernels), {attention:.2f} s of attention at FlashAttention-2's published speed, which grows with the "
            f"square of the prompt ({attention / core:.0%} of the rest here), and {head * 1000:.1f} ms for the LM head.")
    if pts is None:
        return said + _unmeasured(c.scenario, m.fit.name.upper()) + _profile_note(c.scenario)
    errs = sorted(abs(m.non_attention_s(t) / ((m.layers * ms + emb) / 1000) - 1)
                  for t, ms, emb in zip(pts["tokens"], pts["layer_ms"], pts["emb_ms"]))
    return said + (f" The dots are Vidur's measurements of the same model's non-attention operations ({pts['file']}, "
                   f"{len(errs)} pass lengths): the dashed line is within {errs[len(errs) // 2]:.0%} of them at the "
                   f"median and {errs[-1]:.0%} at worst.{_profile_note(c.scenario)}")


# -- prefill and decode (serving mode) --------------------------------------------------------

SERVING = (("fleet.decode", "true"),)  # the example the serving-mode figures offer in lab mode
QUEUED = SERVING + (("events", "burst@60+30x4"),)  # ...and one where requests wait, so the order matters
JOIN_READS = ("roofline.prefill_tokens", "fleet.token_budget", "fleet.max_running", "slo.tbt_ms", "hardware.")
JOIN_WAYS = (("alone", "the batch alone"), ("chunked", "chunked"), ("prefill_first", "prefill first"))


def _join(c: Context) -> dict[str, Any]:
    """`stall_demo` for the keys it reads, remembered: the other sliders of the page never recompute it."""
    key = tuple((k, v) for k, v in c.scenario.to_text().items() if k.startswith(JOIN_READS))
    return STORE.joins.remember(key, lambda: stall_demo(c.scenario))


def _join_data(c: Context) -> dict[str, dict]:
    d = _join(c)
    out: dict[str, dict] = {}
    for way, _ in JOIN_WAYS:
        t = [round(x - d["join_s"], 6) for x in d[way]["step_end_s"]]
        out[f"src:join_{way}"] = {"data": {"t": t, "gap": d[way]["gap_ms"]}}
    ends = [t for way, _ in JOIN_WAYS for t in out[f"src:join_{way}"]["data"]["t"]]
    out["src:join_slo"] = {"data": {"t": [min(ends, default=0.0), max(ends, default=1.0)],
                                    "gap": [d["tbt_slo_ms"]] * 2}}
    return out


def _join_caption(c: Context) -> str:
    d = _join(c)
    alone, chunked, first = d["alone"], d["chunked"], d["prefill_first"]
    return (f"{d['co_runners']} answers are decoding when a {d['prefill_tokens']:,}-token prompt arrives. Alone, no gap "
            f"between their tokens exceeds {alone['co_stall_ms']:,.1f} ms. Chunked into steps of {d['token_budget']:,} "
            f"tokens beside the decodes, every step of the prompt takes up to {chunked['co_stall_ms']:,.0f} ms; computed "
            f"first, the answers stop for {first['co_stall_ms']:,.0f} ms. Their mean gap barely moves "
            f"({alone['co_tpot_ms']:,.1f}, {chunked['co_tpot_ms']:,.1f} and {first['co_tpot_ms']:,.1f} ms): only the "
            f"longest gap shows the stall. The dashed line is the {d['tbt_slo_ms']:,.0f} ms target."
            f"{_profile_note(c.scenario)}")


def _stall_data(c: Context) -> dict[str, dict]:
    s = stall_of(c.result)
    return {"src:stall": {"data": {"t": [round(t, 2) for t in s["arrival_s"]],
                                   "stall": [round(v, 2) for v in s["stall_ms"]],
                                   "tpot": [round(v, 2) for v in s["tpot_ms"]], "replica": s["replica"]}},
            "src:stall_slo": {"data": {"t": [0.0, float(c.scenario.duration_s)], "gap": [s["tbt_slo_ms"]] * 2}}}


def _stall_caption(c: Context) -> str:
    if not c.scenario.fleet.decode:
        return "Lab mode computes prompts but makes no answers, so nothing here pauses. Turn on serving mode to see them."
    s = stall_of(c.result)
    if not s["tpot_ms"]:
        return "No answer of two tokens or more finished in this run."
    return (f"Each dot is an answer, at the time its request arrived: its longest gap between tokens (dark) and its "
            f"mean gap (light). {s['tbt_slo_met']:.1%} of answers never paused longer than {s['tbt_slo_ms']:,.0f} ms; "
            f"judged by their mean gap, {s['mean_within_slo']:.1%} would have passed. The longest pause was "
            f"{max(s['stall_ms']):,.0f} ms.")


def _split(c: Context) -> dict[str, Any] | None:
    return split_compare(c.scenario, c.run) if c.scenario.fleet.decode else None


def _setup_names(d: dict[str, Any]) -> list[str]:
    return [f"{d['gpus']} co-located", f"split {d['prefill_replicas']} + {d['decode_replicas']}"]


def _split_data(c: Context) -> dict[str, dict]:
    d = _split(c)
    rows = [] if d is None else [(name, f) for name, f in zip(_setup_names(d), (d["colocated"], d["split"])) if f]
    pct = [lambda f: _pct(f["ttft_slo_met"]), lambda f: _pct(f["tbt_slo_met"])]
    return {"src:split": {"data": {"setup": [n for n, _ in rows], "zero": [0] * len(rows),
                                   "ttft": [pct[0](f) for _, f in rows], "tbt": [pct[1](f) for _, f in rows],
                                   "ttft_p99": [f["ttft_p99_ms"] for _, f in rows],
                                   "stall_p99": [f["stall_p99_ms"] for _, f in rows],
                                   "hit": [_pct(f["hit_rate"]) for _, f in rows]}},
            "yr:split": {"factors": list(reversed(_setup_names(d))) if d else ["co-located", "split"]}}


def _meets(f: dict[str, Any]) -> str:
    met = [what for what, ok in (("the TTFT target", f["meets_ttft"]), ("the gap target", f["meets_tbt"])) if ok]
    return " and ".join(met) if met else "neither target"


def _split_caption(c: Context) -> str:
    d = _split(c)
    if d is None:
        return ("The split is a serving-mode setup: turn on serving mode to run this traffic co-located and split "
                "on as many GPUs.")
    together, apart = d["colocated"], d["split"]
    slo = d["slo"]
    if not together["requests"] and (apart is None or not apart["requests"]):
        return ("No request was served, co-located or split: not one prompt and its answer fit in a replica's "
                f"memory ({c.scenario.fleet.memory_gb:g} GB, fleet.memory_gb). Give the replicas more memory.")
    head = (f"On {d['gpus']} GPUs, a target counts as met when {slo['share']:.0%} of requests are within it (first "
            f"token within {slo['ttft_ms']:,.0f} ms, no gap between tokens over {slo['tbt_ms']:,.0f} ms). Co-located: "
            f"{_split_shares(together)}.")
    if apart is None:
        return head + " " + " ".join(n[0].upper() + n[1:] + "." for n in d["notes"])
    tail = f" Split {d['prefill_replicas']} + {d['decode_replicas']}: {_split_shares(apart)}"
    if together["stall_p99_ms"] is None or apart["stall_p99_ms"] is None:  # one of them served no answer to compare
        return head + tail + "."
    return (head + tail + f"; its TTFT p99 is {apart['ttft_p99_ms']:,.0f} ms against {together['ttft_p99_ms']:,.0f}, "
            f"and its longest gaps (p99) {apart['stall_p99_ms']:,.0f} ms against {together['stall_p99_ms']:,.0f}.")


def _split_shares(f: dict[str, Any]) -> str:
    """One setup's two SLO shares and what they meet, in words (a setup may have served nothing)."""
    if not f["requests"]:
        return "no request served, as none fits in a replica's memory"
    if f["tbt_slo_met"] is None:
        return f"{f['ttft_slo_met']:.1%} and no answer of two tokens, meeting {_meets(f)}"
    return f"{f['ttft_slo_met']:.1%} and {f['tbt_slo_met']:.1%}, meeting {_meets(f)}"


def _queue(c: Context) -> dict[str, Any] | None:
    return queue_compare(c.scenario, c.run) if c.scenario.fleet.decode else None


def _queue_data(c: Context) -> dict[str, dict]:
    d = _queue(c)
    out = {}
    for order in ("fcfs", "longest_prefix_first"):
        series = d[order]["series"] if d else {"start_s": [], "ttft_p99_ms": []}
        out[f"src:queue_{order}"] = {"data": {"t": _mid_times(series["start_s"], c.result.series.bin_s),
                                              "p99": series["ttft_p99_ms"]}}
    return out


def _queue_caption(c: Context) -> str:
    d = _queue(c)
    if d is None:
        return ("Queue order is a serving-mode setting: turn on serving mode to run this traffic first come first "
                "served and longest prefix first.")
    a, b = d["fcfs"], d["longest_prefix_first"]
    text = (f"First come first served: hit rate {a['hit_rate']:.1%}, TTFT p50 {a['ttft_p50_ms']:,.0f} ms, p99 "
            f"{a['ttft_p99_ms']:,.0f} ms, longest wait {a['max_queue_ms']:,.0f} ms. Longest prefix first (a request "
            f"that has waited {d['guard_s']:g} s goes ahead of later ones): {b['hit_rate']:.1%}, "
            f"{b['ttft_p50_ms']:,.0f} ms, {b['ttft_p99_ms']:,.0f} ms, {b['max_queue_ms']:,.0f} ms.")
    if a["max_queue_ms"] == b["max_queue_ms"] and a["ttft_p99_ms"] == b["ttft_p99_ms"]:
        text += " Nothing changed: requests rarely wait behind one another here, so there is nothing to reorder."
    return text


@functools.cache
def _locality() -> dict[str, Any]:
    return locality_comparison()


def _pct(value: float | None) -> float | None:
    return None if value is None else round(value * 100, 2)


def _locality_data(c: Context) -> dict[str, dict]:
    """Each router's share of requests that found their prefix, the lab's beside the note's (where it gives one)."""
    rows = _locality()["rows"]
    return {"src:locality": {"data": {
        "router": [r["label"] for r in rows], "lab": [_pct(r["request_hit_rate"]) for r in rows],
        "note": [_pct((r["note"] or {}).get("request_hit_rate")) for r in rows], "zero": [0.0] * len(rows),
        "tokens": [_pct(r["hit_rate"]) for r in rows],
        "p99": [r["ttft_p99_ms"] for r in rows], "rps": [r["throughput_rps"] for r in rows]}}}


def _locality_caption(c: Context) -> str:
    table = _locality()
    rows = {r["key"]: r for r in table["rows"]}
    parts = []
    for key in ("round_robin", "cache_aware"):
        r, note = rows[key], rows[key]["note"]
        parts.append(f"{r['label']}: {r['request_hit_rate']:.1%} of requests found their prefix (the note: "
                     f"{note['request_hit_rate']:.1%}) and {r['hit_rate']:.1%} of prompt tokens were cached, p99 "
                     f"{r['ttft_p99_ms']:,.0f} ms ({note['ttft_p99_ms']:,.0f}), {r['throughput_rps']:.1f} requests a "
                     f"second ({note['throughput_rps']:g})")
    fallback = table["fallback"]
    return ("The KV-locality note's stress test replayed here (30 users, CodeLlama 13B on 8 A100s). "
            + "; ".join(parts) + f". The load-aware fallback changes p99 by {fallback['ttft_p99_change']:+.0%} "
            f"against prefix-aware routing without one (the note: {fallback['note']['ttft_p99_change']:+.0%}). "
            "Throughput is about a tenth of the note's: the lab's answers are longer and every user waits for one.")


FLEET_CHARTS = (
    Figure("ttft", "Time to first token over time", _ttft_data, _ttft_caption),
    Figure("hit", "Prefix cache hit rate over time", _hit_data, _hit_caption),
    Figure("load", "How busy each replica was over time", _load_data, _load_caption),
    Figure("memory", "KV memory of the fleet over time",
           lambda c: {"src:memory": {"data": memory_data(c.result)}}, _memory_caption),
    Figure("dist", "Distribution of time to first token",
           lambda c: {"src:dist": {"data": ttft_histogram(c.result)}}, _dist_caption),
)
ARTICLE_FIGURES: tuple[Figure, ...] = (
    Figure("crossover", "Warm but busy, or idle and cold?", _crossover_data, _crossover_caption,
           reads=("crossover.", "hardware."), fleet=False,
           controls=("crossover.prompt_tokens", "crossover.new_tokens", "crossover.queued", "crossover.queued_tokens")),
    Figure("transfer", "Move the KV, or recompute it?", _transfer_data, _transfer_caption,
           reads=("transfer.", "hardware."), fleet=False,
           controls=("transfer.prompt_tokens", "transfer.cached_tokens", "transfer.rdma_gbps", "transfer.host_gb_s",
                     "transfer.nvme_gb_s")),
    Figure("fanout", "A fan-out racing for the cache", _fanout_data, _fanout_caption,
           controls=("traffic.kind", "traffic.agent_fanout", "traffic.agent_warm_first"), example=tuple(RACE.items()),
           costly=True),
    Figure("api", "When prompt caching pays", _api_data, _api_caption, reads=("money.",), fleet=False,
           controls=("money.calls", "money.gap_s", "money.lifetime_s")),
    Figure("gpu", "What the fleet's GPU time costs", _gpu_data, _gpu_caption, reads=("money.",),
           controls=("money.gpu_usd_per_hour",)),
    Figure("roofline", "Prefill and decode on one roofline", _roofline_data, _roofline_caption,
           reads=("roofline.", "hardware."), fleet=False, controls=("roofline.prefill_tokens", "roofline.batch")),
    Figure("prefill", "How long a prefill takes, modelled and measured", _prefill_data, _prefill_caption,
           reads=("roofline.prefill_tokens", "hardware."), fleet=False, controls=("roofline.prefill_tokens",),
           example=(("hardware.preset", "llama8b_a100"), ("hardware.gpu_fit", "")),
           offer="Show a model and GPU Vidur measured"),
    Figure("join", "A long prompt joins the batch", _join_data, _join_caption, reads=JOIN_READS, fleet=False,
           controls=("roofline.prefill_tokens", "fleet.token_budget")),
    Figure("stall", "Answers that pause", _stall_data, _stall_caption, controls=("fleet.decode", "slo.tbt_ms"),
           example=SERVING, offer="Turn on serving mode"),
    Figure("split", "Co-located or split, on as many GPUs", _split_data, _split_caption,
           controls=("fleet.decode", "fleet.prefill_replicas", "fleet.decode_replicas", "fleet.handoff", "slo.ttft_ms",
                     "slo.tbt_ms"), example=SERVING, offer="Turn on serving mode", costly=True),
    Figure("queue", "Which waiting request goes first", _queue_data, _queue_caption,
           controls=("fleet.decode", "fleet.queue_order", "fleet.queue_guard_s"), example=QUEUED,
           offer="Serving mode, with a burst", costly=True),
    Figure("locality", "A published measurement, reproduced", _locality_data, _locality_caption, fleet=False,
           constant=True),
)
FIGURES = {f.name: f for f in FLEET_CHARTS + ARTICLE_FIGURES}
EMBED_FIGURES = ("headline", "ttft", "hit")  # an embed that names no figure
EMBED_CONTROLS = ("fleet.cache", "fleet.replicas", "router.kind", "dynamic_text")  # ...and no controls


def embed_figures() -> tuple[str, ...]:
    """What `?figure=` may name: `headline` (the numbers) and every figure."""
    return ("headline", *FIGURES)


# -- the radix tree, drawn ------------------------------------------------------------------

TREE_DEPTH = 12  # levels drawn; a deeper subtree is one block at the last level
TREE_SHARE = 0.01  # a branch under this share of the tree's tokens is merged with its small siblings
TREE_LABEL_SHARE = 0.016  # a block carries its name if at least this share of the axis per character
TREE_COLOURS = {"pinned": PALETTE[3], "hit": PALETTE[0], "cold": "#c8ccd0", "evicted": "#ffffff"}
TREE_STATES = {"pinned": "pinned by a queued or running request", "hit": "hit recently", "cold": "cold"}
TREE_WIDGETS = ("tree:replica", "tree:at")  # the tree's widgets: they set page keys, not scenario keys


def forget() -> None:
    """Drop the run keys and histograms the figures remember besides the store (see `lab.page.view.keep_first_answer`)."""
    fleet_key.cache_clear()
    _histogram.cache_clear()


def tree_key(scenario: Scenario, at: float | None) -> tuple:
    """The store's key of a run's trees at a moment (None: the run's end)."""
    return (fleet_key(scenario), at)


def tree_page(page: Mapping[str, str], controls: Mapping[str, Any]) -> dict[str, str]:
    """The page keys after the tree's widgets changed (`tree:replica` "replica 2", `tree:at` seconds)."""
    out = dict(page)
    chosen = controls.get("tree:replica")
    if isinstance(chosen, str) and chosen.rsplit(" ", 1)[-1].isdigit():
        out["tree_replica"] = chosen.rsplit(" ", 1)[-1]
    at = controls.get("tree:at")
    if isinstance(at, (int, float)) and not isinstance(at, bool) and math.isfinite(at) and at >= 0:
        out["tree_at"] = f"{round(at, 3):g}"
    return out


def tree_choice(c: Context) -> tuple[int, float | None, float]:
    """The replica and moment the page asks for (clamped to this run), and the slider's end."""
    r = c.result
    end = max(c.scenario.duration_s, r.makespan_s)
    step = r.series.bin_s
    end = math.ceil(end / step - 1e-9) * step
    replicas = max(1, c.scenario.fleet.replicas)
    text = c.page.get("tree_replica", "")
    replica = min(int(text), replicas - 1) if text.isdigit() else 0
    at: float | None = None
    try:
        at = min(float(c.page["tree_at"]), end) if "tree_at" in c.page else None
    except ValueError:
        at = None
    if at is not None and (not math.isfinite(at) or at < 0):
        at = None
    return replica, at, round(end, 6)


def tree_snapshot(c: Context) -> TreeSnapshot | None:
    """The chosen replica's tree at the chosen moment; None when the page replays a trace."""
    if "trace" in c.page:
        return None
    replica, at, _ = tree_choice(c)
    snaps = STORE.trees.remember(tree_key(c.scenario, at), lambda: tree_at(c.scenario, at))
    return snaps[replica] if replica < len(snaps) else None


def tree_name(key: Any) -> str:
    """What a node's first key stands for, in words."""
    if isinstance(key, tuple) and len(key) >= 2:
        kind = key[0]
        if kind == "sys":
            return f"system prompt {key[1]}" + (" (after the cut)" if len(key) > 2 and key[2] else "")
        if kind == "user" and len(key) > 2:
            return f"session {key[1]}, turn {key[2] + 1}"
        if kind == "answer" and len(key) > 2:
            return f"session {key[1]}, answer {key[2] + 1}"
        if kind == "dyn":
            return "dynamic text"
    text = str(key)
    return text if len(text) <= 24 else text[:23] + "…"


class _Block(NamedTuple):
    depth: int
    x0: float
    tokens: int  # the subtree's
    name: str
    state: str
    new: bool
    branches: int  # nodes it stands for


def tree_blocks(snap: TreeSnapshot) -> list[_Block]:
    """The icicle: each drawn block's level, left edge and width in tokens (its whole subtree's)."""
    nodes = snap.nodes
    below = [n.tokens for n in nodes]
    for i in range(len(nodes) - 1, -1, -1):  # parents come first: sum children into parents going back
        if nodes[i].parent >= 0:
            below[nodes[i].parent] += below[i]
    children: dict[int, list[int]] = {}
    for i, n in enumerate(nodes):
        children.setdefault(n.parent, []).append(i)
    recent = snap.at_s - snap.recent_s

    def state(i: int) -> str:
        n = nodes[i]
        return "pinned" if n.pinned else "hit" if n.last_hit_s >= recent else "cold"

    def subtree(i: int) -> list[int]:
        out, stack = [], [i]
        while stack:
            j = stack.pop()
            out.append(j)
            stack.extend(children.get(j, ()))
        return out

    def merged(ids: list[int], depth: int, x0: float, name: str) -> _Block:
        every = [j for i in ids for j in subtree(i)]
        weight: dict[str, int] = {}
        for j in every:
            weight[state(j)] = weight.get(state(j), 0) + nodes[j].tokens
        top = "pinned" if weight.get("pinned") else max(weight, key=lambda s: (weight[s], s))
        return _Block(depth, x0, sum(below[i] for i in ids), name, top,
                      all(nodes[j].new for j in every), len(every))

    blocks: list[_Block] = []
    small = TREE_SHARE * max(1, snap.total_tokens)
    stack: list[tuple[int, int, float]] = [(-1, -1, 0.0)]
    while stack:
        parent, depth, x0 = stack.pop()
        kids = sorted(children.get(parent, ()), key=lambda i: (-below[i], i))
        big = [i for i in kids if below[i] >= small]
        rest = [i for i in kids if below[i] < small]
        level = depth + 1
        for i in big:
            if level >= TREE_DEPTH - 1 and children.get(i):
                blocks.append(merged([i], level, x0, f"{tree_name(nodes[i].first_key)} and what follows"))
            else:
                n = nodes[i]
                blocks.append(_Block(level, x0, below[i], tree_name(n.first_key), state(i), n.new, 1))
                stack.append((i, level, x0))
            x0 += below[i]
        if len(rest) == 1 and not children.get(rest[0]):
            n = nodes[rest[0]]
            blocks.append(_Block(level, x0, below[rest[0]], tree_name(n.first_key), state(rest[0]), n.new, 1))
        elif rest:
            blocks.append(merged(rest, level, x0, f"{len(rest)} smaller branches"))
    return blocks


def _tree_data(c: Context) -> dict[str, dict]:
    snap = tree_snapshot(c)
    replica, at, end = tree_choice(c)
    names = [replica_name(i) for i in range(max(1, c.scenario.fleet.replicas))]
    step = c.result.series.bin_s
    widgets: dict[str, dict] = {"tree:replica": {"options": names, "value": names[replica]},
               "tree:at": {"start": 0.0, "end": end, "step": step, "value": end if at is None else at},
               "fig:tree": {"outline_line_color": replica_colour(replica)}}  # framed in its replica's colour
    cols: dict[str, list] = {k: [] for k in ("x", "y", "width", "color", "line", "name", "tokens", "state", "label")}
    gone: dict[str, list] = {"x": [], "width": [], "name": [], "tokens": []}
    if snap is None:
        return {**widgets, "src:tree": {"data": cols}, "src:tree_gone": {"data": gone},
                "src:tree_frame": {"data": {"x_end": [1], "y_start": [1.5]}},
                "xr:tree": {"start": 0, "end": 1}, "yr:tree": {"start": 1.5, "end": -1.6}}
    blocks = tree_blocks(snap)
    for b in blocks:
        cols["x"].append(round(b.x0 + b.tokens / 2, 3))
        cols["y"].append(b.depth)
        cols["width"].append(b.tokens)
        cols["color"].append(TREE_COLOURS[b.state])
        cols["line"].append(PALETTE[2] if b.new else "#ffffff")
        cols["name"].append(b.name)
        cols["tokens"].append(b.tokens)
        cols["state"].append(TREE_STATES[b.state] + ("; new" if b.new else ""))
        short = b.name.replace("system prompt", "prompt")
        cols["label"].append(short if b.tokens >= TREE_LABEL_SHARE * len(short) * max(1, snap.capacity) else "")
    x = 0
    for key, tokens in snap.evicted_by_branch:
        gone["x"].append(round(x + tokens / 2, 3))
        gone["width"].append(tokens)
        gone["name"].append(tree_name(key))
        gone["tokens"].append(tokens)
        x += tokens
    x_end, y_start = max(snap.capacity, x, snap.total_tokens, 1), max(cols["y"], default=0) + 0.6
    return {**widgets, "src:tree": {"data": cols}, "src:tree_gone": {"data": gone},
            "src:tree_frame": {"data": {"x_end": [x_end], "y_start": [y_start]}},  # the ranges, for the first paint
            "xr:tree": {"start": 0, "end": x_end}, "yr:tree": {"start": y_start, "end": -1.6}}


def _tree_caption(c: Context) -> str:
    snap = tree_snapshot(c)
    if snap is None:
        return "The tree is drawn for the lab's own traffic; a replayed trace's tree is not shown."
    if not snap.nodes:
        return (f"At {snap.at_s:,.0f} s replica {snap.replica}'s cache holds nothing"
                + (" (the cache is off)." if not snap.capacity else "."))
    top = sorted((b for b in tree_blocks(snap) if b.depth == 0), key=lambda b: -b.tokens)[:3]
    branches = sum(1 for n in snap.nodes if n.parent < 0)
    biggest = "; ".join(f"{b.name}, {b.tokens:,} tokens" for b in top)
    new = sum(n.tokens for n in snap.nodes if n.new)
    gone = (f" In the {snap.recent_s:g} s before, {new:,} tokens were cached anew and {snap.evicted_tokens:,} evicted"
            + (f", most from {tree_name(snap.evicted_by_branch[0][0])}" if snap.evicted_by_branch else "") + ".")
    return (f"At {snap.at_s:,.0f} s replica {snap.replica}'s radix tree holds {snap.total_tokens:,} of "
            f"{snap.capacity:,} tokens in {len(snap.nodes):,} nodes under {branches:,} branches; "
            f"{snap.pinned_tokens:,} are pinned by queued or running requests. The biggest branches: {biggest}.{gone} "
            "The frame is the replica's colour in the load strip and the table.")


TREE = Figure("tree", "The radix tree of one replica", _tree_data, _tree_caption,
              controls=("fleet.memory_gb", "fleet.replicas", "router.kind", "traffic.session_rate"))

ARTICLE_FIGURES += (TREE,)  # appended here, below the functions it is drawn with
FIGURES["tree"] = TREE
