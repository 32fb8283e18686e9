"""Serving mode's figures: a long prompt joining the batch, answers that pause, the split, the queue's order.

Standard library, `model` only: this runs in the browser too.
"""

from typing import Any

from lab.page.figures.base import Context, Figure, mid_times, percent, profile_note
from lab.page.store import STORE
from model import queue_compare, split_compare, stall_demo, stall_of

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
            f"{profile_note(c.scenario)}")


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
    pct = [lambda f: percent(f["ttft_slo_met"]), lambda f: percent(f["tbt_slo_met"])]
    return {"src:split": {"data": {"setup": [n for n, _ in rows], "zero": [0] * len(rows),
                                   "ttft": [pct[0](f) for _, f in rows], "tbt": [pct[1](f) for _, f in rows],
                                   "ttft_p99": [f["ttft_p99_ms"] for _, f in rows],
                                   "stall_p99": [f["stall_p99_ms"] for _, f in rows],
                                   "hit": [percent(f["hit_rate"]) for _, f in rows]}},
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
        out[f"src:queue_{order}"] = {"data": {"t": mid_times(series["start_s"], c.result.series.bin_s),
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


FIGURES = (
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
)
