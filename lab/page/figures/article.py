"""The article's figures: warm or cold, moving KV or recomputing it, a fan-out's race, and what caching costs.

Standard library, `model` only: this runs in the browser too.
"""

from typing import Any

from lab.page.figures.base import Context, Figure, profile_note
from lab.page.figures.fleetview import PALETTE
from model import (
    RACE,
    TIERS,
    Scenario,
    api_calls,
    explainer_profile,
    fanout_figures,
    idle_ttft_s,
    money_of,
    prices_of,
    transfer_of,
    warm_ttft_s,
)
from model import crossover as crossing


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
            f"{even}{flips}.{profile_note(c.scenario)}")


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
            f"{profile_note(c.scenario)}")


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


FIGURES = (
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
)
