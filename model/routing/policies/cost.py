"""Lowest estimated time to first token: queue wait plus prefill of what is not cached there."""

from __future__ import annotations

from model.config import Scenario
from model.gpus.profile import profile_of
from model.routing.view import Policy, View, _top_two
from model.studies.explainers import fetch_plan, fleet_link


class Cost(Policy, key='cost', label='Lowest estimated TTFT',
           rule='picks the replica whose queue plus uncached prefill is shortest',
           help="Estimates each replica's wait plus the prefill of what it lacks, and picks the lowest.",
           brief='the lowest estimated wait plus prefill.'):
    """Lowest estimated time to first token: queue wait plus prefill of what is not cached there.

    For each replica: its backlog plus the prefill time of the prompt tokens
    it is believed not to hold; the smallest sum wins (ties as everywhere).
    With fetching on (`fleet.fetch`, lab mode), a replica may move what the
    best other replica is believed to hold beyond its own match, at the
    tier's speed, when that beats computing it (`explainers.fetch_plan`, the
    replicas' own rule): its estimate is then backlog + transfer + prefill of
    the rest. Source: Mooncake's Conductor (transfer + queue + prefill per
    candidate, Qin et al. 2024) and NVIDIA Dynamo's KV router (cost of new
    prefill blocks plus load).
    """

    def __init__(self, scenario: Scenario) -> None:
        self.link = fleet_link(scenario)  # None: no fetching, the estimate is queue + prefill
        self.profile = profile_of(scenario)[0] if self.link is not None else None

    def estimate(self, view: View, i: int) -> float:
        """Seconds until the request's first token on replica `i`, as the router estimates them."""
        r = view.replicas[i]
        if self.link is None:
            return view.backlogs()[i] + r.prefill_s(view.request.prompt_tokens - view.matched(i))  # one pass
        return self._fetching(view, i, _top_two(view.matches()))

    def choose(self, view: View) -> int:
        if self.link is None:
            return min(view.replicas, key=lambda r: (self.estimate(view, r.index), r.last_routed, r.index)).index
        top = _top_two(view.matches())
        return min(view.replicas, key=lambda r: (self._fetching(view, r.index, top), r.last_routed, r.index)).index

    def _fetching(self, view: View, i: int, top: tuple[int, int]) -> float:
        """backlog + transfer of what the best other replica holds beyond i's match (if faster) + prefill of the rest."""
        matched = view.matched(i)
        peer = top[1] if matched == top[0] else top[0]  # the best other replica's match
        tokens, seconds = fetch_plan(self.profile, peer - matched, self.link)  # type: ignore[arg-type]
        rest = view.request.prompt_tokens - matched - tokens
        return view.backlogs()[i] + seconds + view.replicas[i].prefill_s(rest)

    def scores(self, view: View) -> tuple[str, list[float]]:
        """What it compares, per replica (the hindsight explainer's table)."""
        return "estimated TTFT (s): least wins", view.per_replica(lambda i: self.estimate(view, i))


POLICY = Cost  # what this file adds to the registry (model/routing/kinds.py)
