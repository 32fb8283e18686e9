"""The stall: what a long prefill joining a continuous batch does to the requests already decoding.

Two figures, both JSON-ready:

- `stall_demo(scenario)`: one serving replica decoding `CO_RUNNERS`
  requests when a prompt of `roofline.prefill_tokens` tokens arrives at
  `JOIN_S`. It runs the real serving replica (model/engines/serving.py) on the
  scenario's hardware (the lab preset: the article's) and token budget,
  once chunked and once prefill-first, and reports every token step's gap
  as a co-runner sees it, with the same run without the long prompt.
- `stall_of(result)`: a serving run's requests, each with its mean time
  between tokens (tpot) and its longest gap (stall), against `slo.tbt_ms`
  (which the longest gap must meet); the mean hides what the gap shows.
"""

from typing import Any

from model.config import Scenario
from model.engines.serving_run import ServingRun
from model.run import start
from model.sources.traffic import Request
from model.studies.explainers import explainer_profile

__all__ = ["CO_RUNNERS", "JOIN_S", "stall_demo", "stall_of"]

CO_RUNNERS = 8  # requests decoding when the long prompt arrives
CO_PROMPT = 200  # tokens of each co-runner's prompt
CO_ANSWER = 400  # tokens of each co-runner's answer: long enough to still be decoding after the prefill
JOIN_S = 0.5  # when the long prompt arrives


def _request(rid: int, at: float, prompt: int, answer: int) -> Request:
    return Request(rid, at, rid, 0, 0, (("stall", rid),), (prompt,), prompt, answer, None, prompt, 0, f"stall/{rid}")


def _one(scenario: Scenario, long_tokens: int | None) -> dict[str, Any]:
    """Run the demo's replica; the long prompt (if any) arrives at JOIN_S."""
    requests = [_request(i, 0.0, CO_PROMPT, CO_ANSWER) for i in range(CO_RUNNERS)]
    if long_tokens is not None:
        requests.append(_request(CO_RUNNERS, JOIN_S, long_tokens, 2))
    run = start(scenario, requests)  # in serving mode (`stall_demo` made it so): a ServingRun
    assert isinstance(run, ServingRun)
    replica = run.replicas[0]
    replica.token_steps = []
    result = run.finish()
    co = [rec for rec in result.records if rec.prompt_tokens == CO_PROMPT]
    ends = [co[0].ttft_ms / 1000] + replica.token_steps  # the co-runners' first tokens come out together
    gaps = [round((b - a) * 1000, 3) for a, b in zip(ends, ends[1:])]
    longest = [rec for rec in result.records if rec.prompt_tokens != CO_PROMPT]
    return {"step_end_s": [round(t, 6) for t in ends[1:]], "gap_ms": gaps,
            "co_tpot_ms": max(rec.tpot_ms for rec in co), "co_stall_ms": max(rec.stall_ms for rec in co),  # type: ignore[type-var]
            "long_ttft_ms": longest[0].ttft_ms if longest else None}


def stall_demo(scenario: Scenario) -> dict[str, Any]:
    """A long prefill joining a batch of decodes, chunked and prefill-first, against the batch alone.

    Keys: hardware, join_s, co_runners, prefill_tokens, token_budget, tbt_slo_ms, and for each of
    `alone`, `chunked`, `prefill_first`: step_end_s and gap_ms (lists, one entry per token step of the
    replica after its first, and the gap since the step before), co_tpot_ms and co_stall_ms (the worst co-runner's mean and
    longest gap), long_ttft_ms (the long prompt's TTFT; None for `alone`). notes: [str].
    """
    profile, notes = explainer_profile(scenario)
    n = scenario.roofline.prefill_tokens
    base = scenario.in_serving_mode({"hardware.preset": profile.preset, "fleet.replicas": 1,
                                 "fleet.prefill_replicas": 0, "fleet.decode_replicas": 0, "fleet.cache": False,
                                 "fleet.memory_gb": None, "fleet.max_running": min(scenario.fleet.max_running,
                                                                                   scenario.fleet.token_budget)})
    out: dict[str, Any] = {"hardware": profile.preset, "join_s": JOIN_S, "co_runners": CO_RUNNERS, "prefill_tokens": n,
                           "token_budget": scenario.fleet.token_budget, "tbt_slo_ms": scenario.slo.tbt_ms}
    out["alone"] = _one(base, None)
    out["chunked"] = _one(base.with_values({"fleet.chunked_prefill": True}), n)
    out["prefill_first"] = _one(base.with_values({"fleet.chunked_prefill": False}), n)
    out["notes"] = list(notes)
    return out


def stall_of(result: Any) -> dict[str, Any]:
    """A serving run's requests: arrival, mean time between tokens and longest gap, against the TBT target.

    Keys: arrival_s, tpot_ms, stall_ms, replica, prompt_tokens (lists over requests with two tokens or
    more, in arrival order), tbt_slo_ms, tbt_slo_met (share whose longest gap is within the target: the
    result's figure), mean_within_slo (share whose mean is: what a mean-based target would report).
    Empty lists in lab mode.
    """
    recs = [rec for rec in result.records if rec.tpot_ms is not None]
    target = result.scenario.slo.tbt_ms
    within = sum(1 for rec in recs if rec.tpot_ms <= target)
    return {"arrival_s": [rec.arrival_s for rec in recs], "tpot_ms": [rec.tpot_ms for rec in recs],
            "stall_ms": [rec.stall_ms for rec in recs], "replica": [rec.replica for rec in recs],
            "prompt_tokens": [rec.prompt_tokens for rec in recs], "tbt_slo_ms": target,
            "tbt_slo_met": result.tbt_slo_met, "mean_within_slo": round(within / len(recs), 6) if recs else None}
