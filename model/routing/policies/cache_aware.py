"""Longest cached match, unless it is too busy."""

from __future__ import annotations

from model.config import Scenario
from model.routing.view import Policy, View


class CacheAware(Policy, key='cache_aware', label='Cache-aware',
                 rule='follows the longest cached prefix, spilling to the least loaded past a backlog threshold',
                 help=('Sends a request where the longest part of its prompt is cached, unless that replica is too '
                       'far behind (the spill threshold).'),
                 brief='the longest cached match, unless that replica is too far behind.'):
    """Longest cached match, unless it is too busy.

    Take the replica whose tree holds the longest prefix of the prompt (ties:
    least backlog, then as every router breaks them). If its backlog exceeds
    the least-loaded replica's by more than `router.spill_threshold_s`
    seconds, spill to the least-loaded replica instead. With the threshold
    off, never spill. With no match anywhere, this is least-loaded routing.
    """

    def __init__(self, scenario: Scenario) -> None:
        self.threshold = scenario.router.spill_threshold_s

    def choose(self, view: View) -> int:
        best = view.longest_match()
        # the least backlog is the least-loaded replica's, whichever it is: its index (ties broken) is worked out
        # only for a spill
        spill = self.threshold is not None and view.backlog(best) - view.least_backlog() > self.threshold
        return view.least_loaded() if spill else best

    def scores(self, view: View) -> tuple[str, list[float]]:
        """What it compares, per replica (the hindsight explainer's table)."""
        return ("believed cached tokens: most wins, unless its backlog is too far behind",
                view.per_replica(view.matched))


POLICY = CacheAware  # what this file adds to the registry (model/routing/kinds.py)
