"""Co-located against split: the same traffic on the same number of GPUs, prefill and decode together or apart.

Serving mode's split (`fleet.prefill_replicas`, `fleet.decode_replicas`,
model/engines/serving_run.py) routes each request to a prefill replica by
`router.kind`; when its prompt is computed (its first token is out) the
prompt's KV crosses the `fleet.handoff` link (`transfer.*` speeds, priced by
`explainers.fetch_s`) to the decode replica with the fewest requests in
flight, which makes the rest of the answer (its tree keeps the prompts it
was sent, so sequences sharing a system prompt hold it once, as a
co-located replica's do). Decode replicas never prefill,
so nothing stalls their steps; prefill replicas never decode, so they free
a prompt's memory at its first token. What it costs: the handoff, and
prefill replicas do not hold the answers, so a conversation's next turn
recomputes the last answer.

`split_compare(scenario)` runs both on one scenario's traffic. A share of
requests `SLO_SHARE` or more within a target counts as meeting it.
"""

from collections.abc import Callable
from typing import Any

from model.config import Scenario
from model.metrics import Result
from model.run import simulate

__all__ = ["SLO_SHARE", "split_compare", "split_figures"]

SLO_SHARE = 0.99  # an SLO is met when at least this share of requests is within its target


def split_figures(result: Result) -> dict[str, Any]:
    """A serving run's figures for the side-by-side: SLO shares, whether each is met, latencies, per-bin tails.

    Keys: gpus, requests, ttft_slo_met, tbt_slo_met, meets_ttft, meets_tbt (bools), hit_rate,
    ttft_p50_ms, ttft_p99_ms, stall_p50_ms, stall_p99_ms, tpot_p50_ms, tokens_per_s, and series
    ({start_s, ttft_p99_ms, stall_p99_ms}: lists over the run's bins, None where a bin has no request).
    """
    return {
        "gpus": len(result.replicas), "requests": result.requests,
        "ttft_slo_met": result.ttft_slo_met, "tbt_slo_met": result.tbt_slo_met,
        "meets_ttft": (result.ttft_slo_met or 0.0) >= SLO_SHARE, "meets_tbt": (result.tbt_slo_met or 0.0) >= SLO_SHARE,
        "hit_rate": result.hit_rate, "ttft_p50_ms": result.ttft_p50_ms, "ttft_p99_ms": result.ttft_p99_ms,
        "stall_p50_ms": result.stall_p50_ms, "stall_p99_ms": result.stall_p99_ms, "tpot_p50_ms": result.tpot_p50_ms,
        "tokens_per_s": result.tokens_per_s,
        "series": {"start_s": list(result.series.start_s), "ttft_p99_ms": list(result.series.ttft_p99_ms),
                   "stall_p99_ms": list(result.series.stall_p99_ms)},
    }


def split_compare(scenario: Scenario, run: Callable[[Scenario], Result] = simulate) -> dict[str, Any]:
    """The scenario's traffic co-located and split, on as many GPUs.

    A split scenario is compared with `prefill + decode` co-located replicas; a co-located one of N
    replicas with a split of max(1, N // 4) prefill replicas and the rest decoding (N of 1: no split).
    Both run in serving mode. Keys: gpus, prefill_replicas, decode_replicas, slo ({ttft_ms, tbt_ms,
    share}), colocated and split (`split_figures`, split None if N is 1), notes ([str]). `run` simulates
    (the page passes one that remembers recent runs).
    """
    f, notes = scenario.fleet, []
    if not scenario.serving:
        notes.append("the split is a serving-mode setup: both runs decode (fleet.decode=true)")
    if f.prefill_replicas and f.decode_replicas:
        prefill, decode = f.prefill_replicas, f.decode_replicas
    else:
        prefill = max(1, f.replicas // 4)
        decode = f.replicas - prefill
    gpus = prefill + decode
    together = scenario.in_serving_mode({"fleet.replicas": gpus, "fleet.prefill_replicas": 0,
                                     "fleet.decode_replicas": 0})
    out: dict[str, Any] = {"gpus": gpus, "prefill_replicas": prefill, "decode_replicas": decode,
                           "slo": {"ttft_ms": scenario.slo.ttft_ms, "tbt_ms": scenario.slo.tbt_ms, "share": SLO_SHARE},
                           "colocated": split_figures(run(together)), "split": None}
    if decode:
        apart = together.with_values({"fleet.prefill_replicas": prefill, "fleet.decode_replicas": decode})
        out["split"] = split_figures(run(apart))
    else:
        notes.append("one GPU cannot be split into a prefill and a decode replica")
    out["notes"] = notes
    return out
