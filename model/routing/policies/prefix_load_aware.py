"""Prefix-aware routing with the locality note's load-aware fallback."""

from __future__ import annotations

import statistics

from model.config import Scenario
from model.routing.view import Policy, View


class PrefixLoadAware(Policy, key='prefix_load_aware', label='Prefix + load fallback',
                      rule=('follows the longest prefix unless that replica holds more than a multiple of the median '
                            'load'),
                      help=('Follows the cached prefix while loads are even, and the least busy replica once they '
                            'are not.'),
                      brief='the cached prefix while loads are even, else the least busy.'):
    """Prefix-aware routing with the locality note's load-aware fallback.

    Take the replica believed to hold the longest prefix (ties: least backlog,
    then as everywhere), unless its in-flight count exceeds
    `router.load_multiple` times the fleet's median in-flight count; then take
    the least loaded. The median is floored at one request, so that an idle
    fleet (median 0) does not make every busy replica "overloaded" and turn
    this into least-loaded routing: one request in flight is the least load
    that says anything about a replica. Source: the KV-locality note (reroute
    when a backend's in-flight count exceeds 2x the median).
    """

    def __init__(self, scenario: Scenario) -> None:
        self.multiple = scenario.router.load_multiple

    def choose(self, view: View) -> int:
        best = view.longest_match()
        loads = sorted(view.in_flight(i) for i in range(len(view)))
        median = statistics.median(loads)
        if view.in_flight(best) > self.multiple * max(median, 1):
            return view.least_loaded()
        return best

    def scores(self, view: View) -> tuple[str, list[float]]:
        """What it compares, per replica (the hindsight explainer's table)."""
        return ("believed cached tokens: most wins, unless it holds too many requests",
                view.per_replica(view.matched))


POLICY = PrefixLoadAware  # what this file adds to the registry (model/routing/kinds.py)
