"""What the router saw: one routing decision, replica by replica, and what another choice would have given.

`explain(scenario, request_id)` re-runs the scenario, stops to look at the
decision for that request (every replica's believed and actual matched
tokens (believed: by the router's own index, for a router that keeps one), backlog, requests in flight and the policy's own score), then runs
the scenario once more per other replica with only that one decision forced
there (the router still decides everything else, its state moving as it
did). The regret is how much sooner the request's first token would have
come on the best alternative: max(0, TTFT as chosen - best other TTFT).
"""

from typing import Any

from model.config import Scenario, ScenarioError
from model.routing.policies.sglang import SGLang
from model.routing.view import View
from model.run import simulate, start

__all__ = ["explain"]


_BRANCHES = {  # what a router with its own tree did at a decision, by the branch it took (cache: its CACHE_WHY)
    "balance": "Loads were lopsided past both imbalance thresholds, so it took the replica with the fewest requests "
               "in flight, ignoring its tree.",
    "low_match": "Its tree matched only {rate:.0%} of the prompt, not above its threshold, so it took the replica "
                 "with the fewest requests in flight (the first of equals).",
}


def explain(scenario: Scenario, request_id: int) -> dict[str, Any]:
    """The decision for `request_id` as the router saw it, with the TTFT every replica would have given."""
    run = start(scenario)
    policy = run.dispatch.policy
    own = policy if isinstance(policy, SGLang) else None  # a router with its own index: its beliefs are its own
    if own is not None:
        own.note_beliefs = True
    seen: dict[str, Any] = {}

    def look(view: View, chosen: int) -> None:  # at the moment of the decision, before the request is placed
        if view.request.id != request_id:
            return
        score = policy.scores(view) if hasattr(policy, "scores") else None  # blind policies compare nothing
        believed = own.beliefs if own is not None else [view.matched(i) for i in range(len(view))]
        if own is not None and own.last is not None:
            d = own.last
            rate = round(d.matched_chars / d.text_chars, 6) if d.text_chars else 0.0
            seen["decision"] = {"branch": d.branch, "named": d.tree_worker, "match_rate": rate,
                                "why": (own.CACHE_WHY if d.branch == "cache" else _BRANCHES[d.branch]).format(
                                    rate=rate, named=d.tree_worker)}
        seen.update(arrival_s=round(view.request.arrival_s, 6), prompt_tokens=view.request.prompt_tokens,
                    chosen=chosen, score=score[0] if score else None, replicas=[{
            "replica": i,
            "believed_tokens": believed[i],
            "actual_tokens": view.actual(i),
            "backlog_s": round(view.backlog(i), 6),
            "in_flight": view.in_flight(i),
            "score": score[1][i] if score else None,
        } for i in range(len(view))])

    run.dispatch.watch = look
    result = run.finish()
    if not seen:
        raise ScenarioError(f"request {request_id}: this scenario has requests 0 to {result.requests - 1}")
    if result.rejected:  # records are then not one per request id
        raise ScenarioError(f"this scenario rejects {result.rejected} request(s) too big for a replica; explain needs "
                            "every request served")
    chosen = seen["chosen"]
    for row in seen["replicas"]:
        i = row["replica"]
        forced = result if i == chosen else simulate(scenario, force={request_id: i})
        row["ttft_ms"] = forced.records[request_id].ttft_ms
    ttft = [row["ttft_ms"] for row in seen["replicas"]]
    others = [i for i in range(len(ttft)) if i != chosen]
    best = min(others, key=lambda i: (ttft[i], i)) if others else chosen
    return {
        "request": request_id,
        "router": scenario.router.kind,
        "view": "own" if own is not None else scenario.router.view,
        **seen,
        "best_alternative": best,
        "regret_ms": round(max(0.0, ttft[chosen] - ttft[best]), 3),
    }
