"""Queue order: the same serving run first come first served and longest cached prefix first.

`fleet.queue_order=longest_prefix_first` (model/engines/serving.py,
`ServingReplica._longest_prefix_first`) admits, at each step, the waiting
request whose prompt the replica's tree holds most of, so a prefix is used
while it is still cached, as SGLang's scheduler does. Its starvation guard:
a request that has waited `fleet.queue_guard_s` goes ahead of every request
that arrived after it. It only changes anything when requests queue: with
one waiting at a time both orders are the same.

`queue_compare(scenario)` runs the scenario both ways in serving mode.
"""

from collections.abc import Callable
from typing import Any

from model.config import Scenario
from model.metrics import Result
from model.run import simulate

__all__ = ["ORDERS", "queue_compare", "queue_figures"]

ORDERS = ("fcfs", "longest_prefix_first")


def queue_figures(result: Result) -> dict[str, Any]:
    """Keys: hit_rate, ttft_p50_ms, ttft_p99_ms, ttft_slo_met, max_queue_ms (the longest wait for admission),
    series ({start_s, hit_rate, ttft_p99_ms}: lists over the run's bins, None where a bin has no request)."""
    return {"hit_rate": result.hit_rate, "ttft_p50_ms": result.ttft_p50_ms, "ttft_p99_ms": result.ttft_p99_ms,
            "ttft_slo_met": result.ttft_slo_met, "max_queue_ms": max((r.queue_ms for r in result.records), default=0.0),
            "series": {"start_s": list(result.series.start_s), "hit_rate": list(result.series.hit_rate),
                       "ttft_p99_ms": list(result.series.ttft_p99_ms)}}


def queue_compare(scenario: Scenario, run: Callable[[Scenario], Result] = simulate) -> dict[str, Any]:
    """The scenario in serving mode under each queue order. Keys: guard_s, fcfs and longest_prefix_first
    (`queue_figures`), notes ([str]). `run` simulates (the page passes one that remembers recent runs)."""
    notes = [] if scenario.serving else ["queue order is modelled in serving mode: both runs decode"]
    out: dict[str, Any] = {"guard_s": scenario.fleet.queue_guard_s}
    for order in ORDERS:
        out[order] = queue_figures(run(scenario.in_serving_mode({"fleet.queue_order": order})))
    out["notes"] = notes
    return out
