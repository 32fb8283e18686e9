"""The article's figures that need a run: what a run's GPU time and API calls cost, and the fan-out race.

`run_money(scenario)` runs the scenario and prices it with `money.*`
(`explainers.money_of`): its prefill and recompute GPU-seconds as dollars a
month, and its calls as an API client would pay for them, with and without
prompt caching. `fanout_race(scenario)` runs agent traffic twice, its
fan-outs sent all at once and then the first sub-call alone (the rest at
its first token), and sets the two side by side.
"""

from typing import Any

from model.config import Scenario
from model.engines.lab import Run
from model.run import AnyRun, start
from model.sources.agents import fanout_figures
from model.sources.traffic import Request
from model.studies.explainers import money_of

__all__ = ["RACE", "calls_of", "fanout_race", "run_money"]

# The fan-out race on the lab's fleet: agent runs whose every fifth call fans out to eight sub-calls,
# a cache big enough to hold the runs (16 GB a replica) and the seed's cache-aware router.
RACE = {"traffic.kind": "agent", "traffic.agent_fanout": "8", "fleet.memory_gb": "16", "router.kind": "cache_aware"}


def calls_of(run: AnyRun) -> list[tuple[Request, float]]:
    """A finished run's served requests with the time of each one's first token, in send order."""
    if isinstance(run, Run):
        return sorted(((s.request, s.start_s + s.prefill_s) for s in run.served), key=lambda c: c[0].id)
    return sorted(((s.request, s.first_token_s) for s in run.served), key=lambda c: c[0].id)


def _finished(scenario: Scenario) -> tuple[AnyRun, Any]:
    run: AnyRun = start(scenario)
    return run, run.finish()


def run_money(scenario: Scenario) -> dict[str, Any]:
    """Run `scenario`, then price it: `explainers.money_of` with the run's GPU-seconds and calls."""
    run, result = _finished(scenario)
    out = money_of(scenario, result.prefill_gpu_s, result.recompute_gpu_s, calls_of(run))
    out["run"] = {"requests": result.requests, "duration_s": scenario.duration_s, "prefill_gpu_s": result.prefill_gpu_s,
                  "recompute_gpu_s": result.recompute_gpu_s, "hit_rate": result.hit_rate}
    return out


def fanout_race(scenario: Scenario) -> dict[str, Any]:
    """The same agent traffic with its fan-outs racing (`traffic.agent_warm_first=false`) and warmed first (true).

    For each: the sub-calls that read the shared prefix and those that computed it again
    (`agents.fanout_figures`), the run's hit rate, TTFT and prefill GPU-seconds, and its API bill.
    """
    out: dict[str, Any] = {}
    for name, warm_first in (("race", False), ("warm_first", True)):
        s = scenario.with_values({"traffic.agent_warm_first": warm_first})
        run, result = _finished(s)
        bill = money_of(s, calls=calls_of(run))["api_bill"]
        out[name] = {**fanout_figures(result.records), "hit_rate": result.hit_rate, "ttft_p50_ms": result.ttft_p50_ms,
                     "ttft_p99_ms": result.ttft_p99_ms, "prefill_gpu_s": result.prefill_gpu_s,
                     "api_cached_usd": bill["cached_usd"], "api_uncached_usd": bill["uncached_usd"]}
    if scenario.traffic.kind != "agent" or not scenario.traffic.agent_fanout:
        out["notes"] = ["this traffic has no fan-outs: set traffic.kind=agent and traffic.agent_fanout above 1"]
    return out
